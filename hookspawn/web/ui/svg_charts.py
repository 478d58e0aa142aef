"""Charts drawn on the server as inline SVG: pure functions from lists of numbers to markup.

Every label is escaped, so a name taken from a payload is text in the chart, never markup.
The result is one `<svg>` element (markup, to be inserted as it is) with no script and no
outside reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT = 560, 160
_LABEL = 16  # room under the bars for the axis labels
_TOP = 14  # room above the tallest bar for its value
_WIDEST = 64  # a bar is at most this wide, however few there are


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def _empty(title: str, width: int, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart empty" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f"<title>{escape(title)}</title>"
        f'<text x="{width // 2}" y="{height // 2}" text-anchor="middle" '
        f'fill="#59636e" font-size="12">no data</text></svg>'
    )


def bar_chart(
    items: Sequence[tuple[str, float]],
    *,
    title: str,
    width: int = WIDTH,
    height: int = HEIGHT,
    colour: str = "#0969da",
) -> str:
    """One labelled bar per (label, value); each bar carries its value in `data-value`."""
    if not items:
        return _empty(title, width, height)
    top = max((value for _, value in items), default=0) or 1
    slot = width / len(items)
    bar = max(1.0, min(slot * 0.7, _WIDEST))
    room = height - _LABEL - _TOP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart bars" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f"<title>{escape(title)}</title>"
    ]
    for index, (label, value) in enumerate(items):
        tall = room * max(0.0, value) / top
        x = index * slot + (slot - bar) / 2
        y = _TOP + room - tall
        shown, name = _number(value), escape(str(label))
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{tall:.1f}" '
            f'fill="{escape(colour)}" data-label="{name}" data-value="{shown}">'
            f"<title>{name}: {shown}</title></rect>"
            f'<text x="{x + bar / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
            f'font-size="11" fill="#1f2328">{shown}</text>'
            f'<text x="{x + bar / 2:.1f}" y="{height - 4}" text-anchor="middle" '
            f'font-size="11" fill="#59636e">{escape(str(label)[:24])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def time_series(
    values: Sequence[float],
    *,
    title: str,
    first: str,
    last: str,
    width: int = WIDTH,
    height: int = HEIGHT,
    colour: str = "#1f883d",
) -> str:
    """Counts per time slot, oldest first, as columns; `first` and `last` label the two ends."""
    if not values:
        return _empty(title, width, height)
    top = max(values) or 1
    slot = width / len(values)
    room = height - _LABEL - _TOP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart series" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f"<title>{escape(title)}</title>"
        f'<line x1="0" y1="{_TOP + room}" x2="{width}" y2="{_TOP + room}" stroke="#d1d9e0"/>'
    ]
    for index, value in enumerate(values):
        tall = room * max(0.0, value) / top
        shown = _number(value)
        parts.append(
            f'<rect class="bar" x="{index * slot + 1:.1f}" y="{_TOP + room - tall:.1f}" '
            f'width="{max(1.0, slot - 2):.1f}" height="{tall:.1f}" fill="{escape(colour)}" '
            f'data-value="{shown}"><title>{shown}</title></rect>'
        )
    parts.append(
        f'<text x="0" y="{height - 4}" font-size="11" fill="#59636e">{escape(first)}</text>'
        f'<text x="{width}" y="{height - 4}" text-anchor="end" font-size="11" '
        f'fill="#59636e">{escape(last)}</text>'
        f'<text x="{width}" y="11" text-anchor="end" font-size="11" fill="#59636e">'
        f"max {_number(top)}</text></svg>"
    )
    return "".join(parts)
