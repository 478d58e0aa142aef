"""GitHub: the App client, its tokens, and the connections (which installation covers what)."""
