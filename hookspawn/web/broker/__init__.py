"""A session's own routes: git credentials, GitHub tools and MCP, served on the broker listener."""
