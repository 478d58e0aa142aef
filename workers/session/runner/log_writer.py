"""A session's log, written by the runner only: hookspawn's own lines, and every line of
command output prefixed, all within HOOKSPAWN_SESSION_LOG_LIMIT bytes."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

__all__ = ["OUTPUT_PREFIX", "SessionLog"]

#: what starts every line of command output in the log: no command can print a line that
#: reads as one of hookspawn's (`[hookspawn HH:MM:SS] …`)
OUTPUT_PREFIX = b"  | "
#: bytes at the end of the limit kept for hookspawn's own lines once command output has used
#: the rest (how much was dropped, the session's end); at most an eighth of the limit
_RESERVE = 8 * 1024


#: how much of the latest command output a log keeps at hand (git's error lines, to tell an
#: unreachable host from a refused credential)
RECENT = 8192


class SessionLog:
    """The log file of one session, open for appending. Command output (`write`, from the
    thread reading a command's pipe) is cut into prefixed lines; output past the limit (less
    a reserve kept for hookspawn's own lines) is dropped and counted, and `flush`, called
    when a command's output has ended, says how much in one line. The file never grows past
    `limit` bytes, counting every byte written to it."""

    def __init__(self, path: Path, limit: int) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self.limit = limit
        self.size = os.fstat(self._fd).st_size
        self._output_limit = limit - min(_RESERVE, limit // 8)
        self._lock = threading.Lock()
        self._line_start = True
        #: set once output was dropped: all later output is dropped too, so what the log
        #: keeps is its beginning, with no holes
        self._full = False
        #: command output bytes dropped since the last `flush`
        self.dropped = 0
        #: the last RECENT bytes of command output since `forget_output` (kept or dropped)
        self._recent = bytearray()

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.flush()
        os.close(self._fd)

    def _put(self, data: bytes, limit: int) -> bool:
        """Append `data` whole when it fits within `limit`; whether it did."""
        if not data:
            return True
        if self.size + len(data) > limit:
            return False
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        self.size += len(data)
        self._line_start = data.endswith(b"\n")
        return True

    def note(self, text: str) -> None:
        """One line of hookspawn's own (newlines in `text` shown as `\\n`, so it stays one)."""
        with self._lock:
            self._end_output()
            self._note(text)

    def _note(self, text: str) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        one_line = text.replace("\r", "\\r").replace("\n", "\\n")
        self._put(f"[hookspawn {stamp}] {one_line}\n".encode(), self.limit)

    def recent_output(self) -> str:
        """The end of what commands printed since `forget_output` (at most RECENT bytes)."""
        with self._lock:
            return self._recent.decode("utf-8", "replace")

    def forget_output(self) -> None:
        with self._lock:
            self._recent.clear()

    def write(self, data: bytes) -> int:
        """A chunk of a command's output, as read from its pipe."""
        with self._lock:
            self._recent += data
            del self._recent[:-RECENT]
            if self._full:
                self.dropped += len(data)
                return len(data)
            body = data.replace(b"\n", b"\n" + OUTPUT_PREFIX)
            if data.endswith(b"\n"):
                body = body[: -len(OUTPUT_PREFIX)]  # the next line's prefix comes with it
            if self._line_start:
                body = OUTPUT_PREFIX + body
            if not self._put(body, self._output_limit):
                self._cut(data)
            return len(data)

    def _cut(self, data: bytes) -> None:
        """The limit is reached within `data`: its whole lines that still fit, the rest
        dropped."""
        kept = 0
        for line in data.splitlines(keepends=True):
            piece = (OUTPUT_PREFIX if self._line_start else b"") + line
            if not self._put(piece, self._output_limit):
                break
            kept += len(line)
        self._full = True
        self.dropped += len(data) - kept

    def _end_output(self) -> None:
        """After a command's output: its last line ended, and what was dropped said."""
        if not self._line_start:
            self._put(b"\n", self.limit)
        if self.dropped:
            self._note(
                f"log limit reached (HOOKSPAWN_SESSION_LOG_LIMIT, {self.limit} bytes): "
                f"{self.dropped} bytes of output dropped"
            )
            self.dropped = 0

    def flush(self) -> None:
        """The command's output has ended (`run_command` calls this when its pipe closes)."""
        with self._lock:
            self._end_output()
