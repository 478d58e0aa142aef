"""Worker side: Celery app, spawn pipeline, stores, GitHub client, dispatchers, settings."""
