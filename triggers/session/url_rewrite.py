"""git's `insteadOf` URL rewriting, pure: the deployment's `FROM=TO` prefixes, parsed once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["Rewrite", "parse_rewrites", "rewritten"]

#: one `FROM=TO` rule: a URL starting with FROM is fetched from TO + the rest
Rewrite = tuple[str, str]


def parse_rewrites(items: Iterable[str]) -> list[Rewrite]:
    """`FROM=TO` items (HOOKSPAWN_GIT_URL_REWRITE) → (from, to) pairs; raises ValueError
    naming an item without `=` or with an empty side."""
    pairs = []
    for item in items:
        source, sep, target = item.partition("=")
        if not sep or not source or not target:
            raise ValueError(
                f"HOOKSPAWN_GIT_URL_REWRITE: {item!r} is not FROM=TO "
                "(e.g. https://github.com/=file:///srv/git/)"
            )
        pairs.append((source, target))
    return pairs


def rewritten(url: str, rewrites: Sequence[Rewrite]) -> str:
    """`url` as git's insteadOf rewrites it: the longest matching FROM prefix wins."""
    best = max(
        (pair for pair in rewrites if url.startswith(pair[0])),
        default=None,
        key=lambda pair: len(pair[0]),
    )
    return url if best is None else best[1] + url[len(best[0]) :]
