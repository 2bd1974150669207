"""What every page takes for granted: an icon (linked from each page, and at /favicon.ico for what names none),
and each form's `pattern` attribute a regular expression the browser can compile (HTML compiles it with
JavaScript's `v` flag, where a `-` inside a class must be escaped: an invalid one is ignored and the field goes
unchecked)."""

import json
import re
import subprocess
from pathlib import Path

import playwright
from django.contrib.staticfiles import finders
from django.test import Client

from tests.conftest import REPO

# The JavaScript engine that ships with Playwright (a test dependency): V8, as in Chromium.
NODE = Path(playwright.__file__).parent / "driver" / "node"
TAG_WITH_PATTERN = re.compile(r'<[^>]*\bpattern="([^"]*)"[^>]*>')
ID = re.compile(r'\bid="([^"]*)"')


def template_patterns() -> dict[str, str]:
    """Each pattern attribute in the project's templates, by template and element id (or line)."""
    found = {}
    for template in REPO.glob("**/templates/**/*.html"):
        if ".venv" in template.parts:
            continue
        for number, line in enumerate(template.read_text().splitlines(), 1):
            for tag in TAG_WITH_PATTERN.finditer(line):
                named = ID.search(tag.group(0))
                found[f"{template.relative_to(REPO)}#{named.group(1) if named else number}"] = tag.group(1)
    return found


def compiled_in_the_browser(patterns: dict[str, str], tries: dict[str, list[str]]) -> dict:
    """Per place: the browser's error compiling its pattern, or which of its tries the whole value matches."""
    script = """
const [patterns, tries] = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {};
for (const [where, pattern] of Object.entries(patterns)) {
  try {
    const expression = new RegExp("^(?:" + pattern + ")$", "v");  // as HTML compiles a pattern attribute
    out[where] = Object.fromEntries((tries[where] || []).map((value) => [value, expression.test(value)]));
  } catch (error) {
    out[where] = error.message;
  }
}
console.log(JSON.stringify(out));
"""
    done = subprocess.run(
        [str(NODE), "-e", script],
        input=json.dumps([patterns, tries]),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def test_every_pattern_attribute_compiles_in_the_browser():
    patterns = template_patterns()
    clone = "templates/annotation/project_form.html#clone-slug"
    results = compiled_in_the_browser(patterns, {clone: ["my-copy_2", "a b", "copy/1"]})
    assert {where: result for where, result in results.items() if isinstance(result, str)} == {}
    # The clone form's slug: what Django's slug validator takes, and nothing else.
    assert results[clone] == {"my-copy_2": True, "a b": False, "copy/1": False}


def test_every_page_has_an_icon_and_favicon_ico_leads_to_it(db):
    home = Client().get("/")
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in home.text
    asked = Client().get("/favicon.ico")
    assert asked.status_code == 302 and asked["Location"] == "/static/favicon.svg"
    assert Path(finders.find("favicon.svg")).read_text().startswith('<svg xmlns="http://www.w3.org/2000/svg"')
