"""The agent-file compiler: a .auto directory → compiled agents, environments and diagnostics."""

from agents.compiler import compile_dir
from agents.errors import AgentsError, Diagnostic, SourceError
from agents.import_resolver import MAX_IMPORT_DEPTH
from agents.model import (
    Auth,
    Capabilities,
    CompiledAgent,
    CompileResult,
    Filter,
    Mount,
    Trigger,
)
from agents.source import MAX_FILE_BYTES

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_IMPORT_DEPTH",
    "AgentsError",
    "Auth",
    "Capabilities",
    "CompileResult",
    "CompiledAgent",
    "Diagnostic",
    "Filter",
    "Mount",
    "SourceError",
    "Trigger",
    "compile_dir",
]
