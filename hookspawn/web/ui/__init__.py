"""The web UI: its pages, sign-ins, the overview and its charts."""
