"""httpx for the tests, with the process's one TLS context (`workers.tls`).

A bare `httpx.get()` or `httpx.Client()` builds a TLS context first, loading the CA bundle
(about 50 ms of CPU) even for the plain HTTP every test speaks on 127.0.0.1: a readiness
poll ten times a second spent half a core on it. Use these instead of httpx's own.
"""

from __future__ import annotations

from typing import Any

import httpx
import httpx2

from workers.tls import tls_context


def get(url: str, **options: Any) -> httpx.Response:
    return httpx.get(url, verify=tls_context(), **options)


def post(url: str, **options: Any) -> httpx.Response:
    return httpx.post(url, verify=tls_context(), **options)


def Client(**options: Any) -> httpx.Client:
    return httpx.Client(verify=tls_context(), **options)


def AsyncClient(**options: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(verify=tls_context(), **options)


def McpHttp(**options: Any) -> httpx2.AsyncClient:
    """The HTTP client of the MCP SDK's streamable HTTP transport (httpx2's)."""
    return httpx2.AsyncClient(verify=tls_context(), **options)
