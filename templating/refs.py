"""Safe git ref names: git check-ref-format --allow-onelevel rules plus hookspawn's own."""

from __future__ import annotations

__all__ = ["check_ref", "is_safe_ref"]


def check_ref(ref: str) -> None:
    raise NotImplementedError


def is_safe_ref(ref: str) -> bool:
    raise NotImplementedError
