"""A session's rules, pure: its spec, what it may reach on GitHub, its environment, its harness
and its setup snapshot's key and scope."""
