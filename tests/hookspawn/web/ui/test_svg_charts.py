"""The overview's SVG charts: well-formed XML, labels as text (never markup), empty data drawn."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hookspawn.web.ui.svg_charts import bar_chart, time_series

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script>&amp;'


def _rects(markup: str) -> list[ET.Element]:
    root = ET.fromstring(markup)
    assert root.tag == f"{SVG}svg"
    return [r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]


def test_bars_are_as_tall_as_their_values() -> None:
    rects = _rects(bar_chart([("processed", 4), ("failed", 2), ("queued", 0)], title="t"))
    assert [r.get("data-value") for r in rects] == ["4", "2", "0"]
    heights = [float(r.get("height") or "nan") for r in rects]
    assert heights[0] > heights[1] > 0
    assert heights[0] == 2 * heights[1]
    assert heights[2] == 0


def test_labels_are_escaped_text() -> None:
    markup = bar_chart([(HOSTILE, 1)], title=HOSTILE)
    assert "<script" not in markup
    root = ET.fromstring(markup)  # well-formed: the label did not break out
    assert root.find(f"{SVG}title") is not None
    assert root.findtext(f"{SVG}title") == HOSTILE
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert HOSTILE in texts
    (rect,) = _rects(markup)
    assert rect.get("data-label") == HOSTILE


def test_labels_too_wide_for_columns_are_rows_read_whole() -> None:
    items = [(f"suppressed: repository_not_covered{n}", n) for n in range(8)]
    markup = bar_chart(items, title="t")
    root = ET.fromstring(markup)
    assert "rows" in (root.get("class") or "")
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert all(label in texts for label, _ in items)
    assert [r.get("data-label") for r in _rects(markup)] == [label for label, _ in items]
    # the bars still measure their values
    widths = [float(r.get("width") or "nan") for r in _rects(markup)]
    assert widths[0] == 0 < widths[1] and abs(widths[7] - 7 * widths[1]) < 1
    # short labels stay columns
    assert "rows" not in (ET.fromstring(bar_chart([("failed", 1)], title="t")).get("class") or "")


def test_a_label_longer_than_half_the_chart_is_cut_before_escaping() -> None:
    label = "a" * 40 + "&b" + "c" * 60
    root = ET.fromstring(bar_chart([(label, 1)], title="t"))
    (shown,) = [t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("a")]
    assert shown.endswith("…") and label.startswith(shown[:-1]) and "&b" in shown
    assert [r.get("data-label") for r in root.iter(f"{SVG}rect")] == [label]


def test_time_series_columns_and_ends() -> None:
    markup = time_series([0, 3, 1], title="deliveries", first="<10:00>", last="11:00")
    rects = _rects(markup)
    assert [r.get("data-value") for r in rects] == ["0", "3", "1"]
    assert float(rects[1].get("height") or 0) > float(rects[2].get("height") or 0) > 0
    texts = [t.text for t in ET.fromstring(markup).iter(f"{SVG}text")]
    assert "<10:00>" in texts
    assert "11:00" in texts


def test_empty_data_says_so() -> None:
    for markup in (bar_chart([], title="none"), time_series([], title="none", first="", last="")):
        root = ET.fromstring(markup)
        assert not _rects(markup)
        assert "no data" in [t.text for t in root.iter(f"{SVG}text")]


def test_all_zero_values_draw_flat_bars() -> None:
    rects = _rects(time_series([0, 0], title="t", first="a", last="b"))
    assert [float(r.get("height") or 1) for r in rects] == [0, 0]
