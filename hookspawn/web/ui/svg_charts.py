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
_CHAR = 6.5  # the width of a character of an 11px label, about
_ROW = 20  # a row's height, when the bars are rows


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
    """One labelled bar per (label, value); each bar carries its label in `data-label` and its
    value in `data-value`. Columns when every label fits under its column, else one row per
    bar with its label before it (`suppressed: repository_not_covered` is read whole)."""
    if not items:
        return _empty(title, width, height)
    slot = width / len(items)
    if max(len(str(label)) for label, _ in items) * _CHAR > slot - 4:
        return _rows(items, title=title, width=width, colour=colour)
    top = max((value for _, value in items), default=0) or 1
    bar = max(1.0, min(slot * 0.7, _WIDEST))
    room = height - _LABEL - _TOP
    parts = [_head("bars", title, width, height)]
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
            f'font-size="11" fill="#59636e">{name}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _rows(items: Sequence[tuple[str, float]], *, title: str, width: int, colour: str) -> str:
    """The bars as rows: the label, then the bar, then its value. A label longer than half
    the width is cut (with …); the bar's title and `data-label` keep it whole."""
    most = int(width * 0.5 / _CHAR)
    labels = [str(label) for label, _ in items]
    cut = [label if len(label) <= most else label[: most - 1] + "…" for label in labels]
    room = max(len(label) for label in cut) * _CHAR + 8
    value_room = 8 + _CHAR * max(len(_number(value)) for _, value in items)
    span = max(1.0, width - room - value_room)
    top = max((value for _, value in items), default=0) or 1
    height = len(items) * _ROW + 4
    parts = [_head("bars rows", title, width, height)]
    for index, ((_, value), label, shown_label) in enumerate(zip(items, labels, cut, strict=True)):
        y = 2 + index * _ROW
        long = span * max(0.0, value) / top
        shown, name = _number(value), escape(label)
        parts.append(
            f'<text x="{room - 6:.1f}" y="{y + _ROW - 6}" text-anchor="end" font-size="11" '
            f'fill="#59636e">{escape(shown_label)}</text>'
            f'<rect class="bar" x="{room:.1f}" y="{y + 2}" width="{long:.1f}" '
            f'height="{_ROW - 6}" fill="{escape(colour)}" data-label="{name}" '
            f'data-value="{shown}"><title>{name}: {shown}</title></rect>'
            f'<text x="{room + long + 4:.1f}" y="{y + _ROW - 6}" font-size="11" '
            f'fill="#1f2328">{shown}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _head(kind: str, title: str, width: int, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f"<title>{escape(title)}</title>"
    )


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
