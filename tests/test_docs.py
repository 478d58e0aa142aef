"""The front door fits on a screen, and every link between README.md and docs/ lands."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of `page`."""
    found = set()
    for heading in re.findall(r"(?m)^#+ (.+)$", page.read_text()):
        found.add(re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-"))
    return found


def test_the_readme_is_at_most_150_lines_and_links_each_reference_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    for page in ("configuration", "cli", "http-api", "runner-and-sandbox", "operations"):
        assert f"(docs/{page}.md)" in readme, page
    assert "(docs/architecture.md)" in readme and "(docs/agents.md)" in readme


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for page in PAGES:
        text = re.sub(r"`[^`\n]*`", "", re.sub(r"(?s)```.*?```", "", page.read_text()))
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []
