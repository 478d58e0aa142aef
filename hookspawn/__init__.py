"""The front door: the HTTP app (intake, admin API, UI) and the `hookspawn` command line."""
