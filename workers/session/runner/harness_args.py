"""hookspawn's own variables in the harness command's words: `$HOOKSPAWN_X` and `${HOOKSPAWN_X}`.

The command is split like a shell would and run without one, so nothing else expands it; these
references are replaced from the harness's environment, so a command such as
`claude -p --mcp-config $HOOKSPAWN_MCP_CONFIG` works as written. Any other `$` is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["expand_harness_args"]

_REFERENCE = re.compile(r"\$(?:\{(HOOKSPAWN_[A-Z0-9_]+)\}|(HOOKSPAWN_[A-Z0-9_]+))")


def expand_harness_args(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Each word with its `$HOOKSPAWN_…` references replaced (an unset one by nothing)."""

    def value(found: re.Match[str]) -> str:
        return env.get(found.group(1) or found.group(2), "")

    return [_REFERENCE.sub(value, word) for word in argv]
