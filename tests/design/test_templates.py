"""What every template must do, checked on the source: a box that scrolls sideways (class "scroll") can be
reached by keyboard and scrolled with the arrow keys (tabindex 0) and is announced by name (a named region),
as axe-core's scrollable-region-focusable asks. A browser scan sees such a box only where its content overflows
on the page it visits; this holds every one of them."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCROLL_BOX = re.compile(r"<(\w+)\s[^>]*\bclass=\"(?:[^\"]*\s)?scroll(?:\s[^\"]*)?\"[^>]*>")


def template_files() -> list[Path]:
    return sorted(path for path in REPO.glob("**/templates/**/*.html") if ".venv" not in path.parts)


def test_the_templates_are_found():
    assert len(template_files()) > 50


def test_every_sideways_scrolling_box_is_a_named_keyboard_stop():
    unreachable = [
        f"{path.relative_to(REPO)}: {tag.group(0)}"
        for path in template_files()
        for tag in SCROLL_BOX.finditer(path.read_text())
        if not all(attribute in tag.group(0) for attribute in ('tabindex="0"', 'role="region"', 'aria-label="'))
    ]
    assert unreachable == []
