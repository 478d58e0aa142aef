"""The local runner: stage, set up and run a session, confined, bounded and logged."""
