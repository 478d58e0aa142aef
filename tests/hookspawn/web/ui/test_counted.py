"""/ui's pages say `1 delivery` and `2 deliveries`: the noun agrees with its number."""

from __future__ import annotations

from hookspawn.web.ui.pages import _templates


def test_nouns_agree_with_their_numbers() -> None:
    text = _templates.from_string(
        '{{ 1 | counted("delivery", "deliveries") }}, {{ 2 | counted("delivery", "deliveries") }}, '
        '{{ 0 | counted("session") }}, {{ 1 | counted("turn") }}'
    ).render()
    assert text == "1 delivery, 2 deliveries, 0 sessions, 1 turn"
