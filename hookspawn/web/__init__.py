"""The HTTP app: the intake route, the admin API, the UI and the per-connection limits."""
