"""What a delivery came to, in the words `hookspawn deliveries list`, `deliveries show` and /ui
all use: pure, from the delivery's status and error and its latest run's outcomes (as JSON).

- `queued`: not processed yet (or queued again for a replay);
- `failed: CODE`: the delivery itself failed (retries ran out, an internal error, …);
- `no match`: processed, and no trigger of any agent fired;
- else one word per kind of outcome, what went wrong first: `failed: CODE`, `refused: CODE`,
  `suppressed: CODE` (each with `(N)` after it when N > 1 spawns ended so), then
  `dispatched N`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers.delivery.record import FAILED, QUEUED

__all__ = ["NO_MATCH", "OutcomeWord", "delivery_words", "words_text"]

NO_MATCH = "no match"
#: the kinds of outcome in the order their words come: what went wrong first
_ORDER = ("failed", "refused", "suppressed", "dispatched")


@dataclass(frozen=True)
class OutcomeWord:
    """One word: its kind (queued, failed, refused, suppressed, dispatched, no match: the UI
    colours by it) and its text."""

    kind: str
    text: str


def delivery_words(
    status: str, error: str | None, outcomes: Sequence[Mapping[str, Any]]
) -> tuple[OutcomeWord, ...]:
    """The words of a delivery (`status` and `error` as its record has them: the error is
    `CODE: message`)."""
    if status == QUEUED:
        return (OutcomeWord(QUEUED, QUEUED),)
    words: list[OutcomeWord] = []
    if status == FAILED:
        code = (error or "").partition(":")[0].strip() or "unknown"
        words.append(OutcomeWord(FAILED, f"failed: {code}"))
    counts = Counter(
        (str(o.get("outcome") or ""), str(o.get("code") or ""))
        for o in outcomes
        if o.get("outcome") in _ORDER
    )
    dispatched = sum(n for (kind, _), n in counts.items() if kind == "dispatched")
    for (kind, code), n in sorted(counts.items(), key=lambda kc: (_ORDER.index(kc[0][0]), kc[0])):
        if kind == "dispatched":
            continue
        text = f"{kind}: {code or 'unknown'}" + (f" ({n})" if n > 1 else "")
        if all(word.text != text for word in words):
            words.append(OutcomeWord(kind, text))
    if dispatched:
        words.append(OutcomeWord("dispatched", f"dispatched {dispatched}"))
    if not words:
        words.append(OutcomeWord(NO_MATCH, NO_MATCH))
    return tuple(words)


def words_text(words: Sequence[OutcomeWord]) -> str:
    """The words on one line: `dispatched 1, suppressed: repository_not_covered`."""
    return ", ".join(word.text for word in words)
