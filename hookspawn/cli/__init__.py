"""The `hookspawn` command line: its parser, its verbs' commands, the client of a running server."""
