"""The session side: session records, credentials, the broker and its audit, the runner's queue."""
