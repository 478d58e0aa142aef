"""The agent-file event checks of `hookspawn check`: paths against GitHub's event schemas."""
