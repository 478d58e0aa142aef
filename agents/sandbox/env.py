"""`sandbox.env`: literal defaults for sandboxed commands, never the runtime's own variables."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "PROTECTED_ENV_NAMES",
    "PROTECTED_ENV_PREFIXES",
    "Problem",
    "protected_env_name",
    "sandbox_env",
]


@dataclass(frozen=True)
class Problem:
    """One rule a configuration breaks: the field (`sandbox.mounts[0].target`) and why."""

    field: str
    message: str

    def line(self, config: str) -> str:
        return f"{config}: {self.field}: {self.message}"


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: variables the runtime sets for its own confinement (proxies, credentials, git and TLS
#: trust, the sandbox's temporary directory); compared case-insensitively
PROTECTED_ENV_NAMES = frozenset(
    name.upper()
    for name in (
        "HOME",
        "TMPDIR",
        "SANDBOX_RUNTIME",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "FTP_PROXY",
        "GRPC_PROXY",
        "RSYNC_PROXY",
        "DOCKER_HTTP_PROXY",
        "DOCKER_HTTPS_PROXY",
        "GIT_SSH_COMMAND",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "SSH_AUTH_SOCK",
        "JAVA_TOOL_OPTIONS",
        "NODE_EXTRA_CA_CERTS",
        "SSL_CERT_FILE",
        "CURL_CA_BUNDLE",
        "REQUESTS_CA_BUNDLE",
        "PIP_CERT",
        "GIT_SSL_CAINFO",
        "AWS_CA_BUNDLE",
        "CARGO_HTTP_CAINFO",
        "DENO_CERT",
        "NIX_SSL_CERT_FILE",
        # the dynamic loader's: each makes every program load code the runtime did not choose
        "LD_PRELOAD",
        "LD_AUDIT",
        "LD_LIBRARY_PATH",
    )
)
PROTECTED_ENV_PREFIXES = ("XDG_", "HOOKSPAWN_", "SRT_", "GIT_CONFIG", "CLOUDSDK_PROXY_")


def protected_env_name(name: str) -> bool:
    """The runtime sets this variable itself: HOME, XDG_*, or a security setting."""
    upper = name.upper()
    return upper in PROTECTED_ENV_NAMES or upper.startswith(PROTECTED_ENV_PREFIXES)


def sandbox_env(raw: object, problems: list[Problem]) -> dict[str, str]:
    """`sandbox.env` → its variables; each broken rule is added to `problems`."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(Problem("sandbox.env", "must be an object of NAME: value strings"))
        return {}
    env: dict[str, str] = {}
    for name, value in raw.items():
        where = f"sandbox.env.{name}"
        if not _ENV_NAME.match(name):
            problems.append(Problem(where, "not an environment variable name"))
        elif protected_env_name(name):
            problems.append(
                Problem(
                    where,
                    "set by the runtime (HOME, XDG_* and security settings): "
                    "sandbox.env cannot override it",
                )
            )
        elif not isinstance(value, str):
            problems.append(Problem(where, "must be a string (values are taken literally)"))
        else:
            env[name] = value
    return env
