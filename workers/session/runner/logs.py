"""Where a locally run session keeps its files under the data directory, and reading its log."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "TAIL_BYTES",
    "log_path",
    "read_log",
    "read_transcript",
    "tail",
    "transcript_path",
    "workspace_path",
]

#: how much of the log's end GET /sessions/{id} shows as `logTail`
TAIL_BYTES = 4096


def workspace_path(data_dir: Path, session_id: str) -> Path:
    """The default session root on the host (`workers.session.runner.roots` says where the runner
    puts it): mountPath `/workspace/w` lands at `<this>/workspace/w`."""
    return (data_dir / "workspaces" / session_id).absolute()


def log_path(data_dir: Path, session_id: str) -> Path:
    return (data_dir / "sessions" / session_id / "log").absolute()


def transcript_path(data_dir: Path, session_id: str) -> Path:
    """The harness's raw events, one JSON object a line, beside the log."""
    return (data_dir / "sessions" / session_id / "transcript.jsonl").absolute()


def tail(data_dir: Path, session_id: str, size: int = TAIL_BYTES) -> str | None:
    """The log's last `size` bytes (from a line start when it is cut); None with no log yet."""
    path = log_path(data_dir, session_id)
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            length = handle.tell()
            handle.seek(max(0, length - size))
            data = handle.read()
    except OSError:
        return None
    if length > size and b"\n" in data:
        data = data.split(b"\n", 1)[1]
    return data.decode(errors="replace")


def read_log(data_dir: Path, session_id: str, offset: int, limit: int) -> tuple[bytes, int]:
    """Up to `limit` bytes of the log from `offset`, and the offset after them."""
    path = log_path(data_dir, session_id)
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(limit)
    except OSError:
        return b"", offset
    return data, offset + len(data)


def read_transcript(
    data_dir: Path, session_id: str, offset: int, limit: int
) -> tuple[bytes, int] | None:
    """Up to `limit` bytes of the transcript from `offset`, cut after its last whole line
    (one line longer than `limit` whole), and the offset after them; None with no transcript."""
    path = transcript_path(data_dir, session_id)
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(limit)
            if len(data) == limit and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                data = data[:cut] if cut else data + handle.readline()
    except OSError:
        return None
    return data, offset + len(data)
