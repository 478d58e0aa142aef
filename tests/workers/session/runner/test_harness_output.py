"""The harness's output on its way out: events into log lines and the transcript, secrets
redacted however the output is cut, the transcript bounded, a refused key flagged."""

from __future__ import annotations

import json
from pathlib import Path

from triggers.session.harness_events import EventReader
from workers.session.runner.harness import HarnessOutput, Redacting, Transcript
from workers.session.runner.log_writer import SessionLog

KEY = "sk-secret-key-123"
SAMPLES = Path(__file__).parents[3] / "triggers" / "session" / "harness_samples"


class Collected:
    def __init__(self) -> None:
        self.data = b""
        self.flushed = 0

    def write(self, data: bytes, /) -> int:
        self.data += data
        return len(data)

    def flush(self) -> None:
        self.flushed += 1


def _output(tmp_path: Path, limit: int = 1 << 20) -> tuple[HarnessOutput, list[str], Collected]:
    notes: list[str] = []
    plain = Collected()
    out = HarnessOutput(
        EventReader("claude-code"),
        Transcript(tmp_path / "transcript.jsonl", limit),
        notes.append,
        plain,
        [KEY, ""],
    )
    return out, notes, plain


def test_events_cut_anywhere_become_notes_and_transcript_lines_without_the_key(
    tmp_path: Path,
) -> None:
    out, notes, plain = _output(tmp_path)
    stream = (SAMPLES / "claude-success.jsonl").read_bytes()
    stream += json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "x", "content": f"KEY={KEY}", "is_error": True}
    ]}}).encode() + b"\nnot an event " + KEY.encode() + b"\n"  # fmt: skip
    for start in range(0, len(stream), 7):  # a key split between two reads
        out.write(stream[start : start + 7])
    out.flush()
    out.transcript.close()
    transcript = (tmp_path / "transcript.jsonl").read_bytes()
    assert KEY.encode() not in transcript and KEY.encode() not in plain.data
    assert len(transcript.splitlines()) == 8
    assert b"KEY=[redacted]" in transcript
    assert plain.data == b"not an event [redacted]\n"
    assert "answer: All done: read and ran." in notes
    assert "tool error: ?: KEY=[redacted]" in notes
    assert not out.fatal.is_set()


def test_a_refused_key_is_flagged_as_soon_as_it_is_read(tmp_path: Path) -> None:
    out, notes, _ = _output(tmp_path)
    lines = (SAMPLES / "claude-refused-key-retries.jsonl").read_bytes().splitlines(keepends=True)
    out.write(lines[0])
    assert not out.fatal.is_set()
    out.write(lines[1])
    assert out.fatal.is_set()
    assert notes[-1].startswith("model request refused: ")


def test_the_transcript_keeps_its_start_within_the_limit(tmp_path: Path) -> None:
    out, _, _ = _output(tmp_path, limit=300)
    lines = [json.dumps({"type": "system", "n": n}).encode() + b"\n" for n in range(20)]
    for line in lines:
        out.write(line)
    out.transcript.close()
    kept = (tmp_path / "transcript.jsonl").read_bytes()
    assert len(kept) <= 300
    assert b"".join(lines).startswith(kept)  # whole lines, the first ones
    assert out.transcript.dropped == len(b"".join(lines)) - len(kept)


def test_standard_error_is_redacted_line_by_line_into_the_log(tmp_path: Path) -> None:
    path = tmp_path / "log"
    with SessionLog(path, 1 << 20) as log:
        stderr = Redacting(log, [KEY])
        stderr.write(b"starting\nusing sk-secret")
        stderr.write(b"-key-123 now\nlast words")
        stderr.flush()
        assert stderr.last_line == "last words"
    text = path.read_text()
    assert text == "  | starting\n  | using [redacted] now\n  | last words\n"
