"""The process's one TLS context for outgoing HTTPS (GitHub, the dispatch target, the broker).

httpx builds a context for every new client, loading the CA bundle each time (about 50 ms of
CPU), and githubkit makes a client for each request outside a `with` block (a mint, a
revocation, a tool call's token): every client here verifies with this one instead, built
on first use and shared by the process's threads.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The system's CA bundle (or SSL_CERT_FILE/SSL_CERT_DIR), loaded once."""
    return httpx.create_ssl_context()
