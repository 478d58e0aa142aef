"""The HTTP server: uvicorn under per-connection limits, the listeners and `web --workers N`."""
