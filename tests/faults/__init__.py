"""Fault-injection suite: real redis-server, web and worker processes, killed and starved."""

__all__: list[str] = []
