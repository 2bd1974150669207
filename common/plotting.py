"""What every plot of the app shares: a matplotlib Figure written as an <svg> element to embed in a page.

Figures are built with matplotlib.figure.Figure, never pyplot, so no GUI backend or global figure state is
involved (safe in a web server); text is written as SVG <text> elements, which matplotlib escapes. Import
this module where a plot is drawn, not at start-up: matplotlib is heavy (web processes stay lean).
"""

from __future__ import annotations

import io

import matplotlib
from matplotlib.figure import Figure

ACCENT = "#2454c5"
ACCENT_LIGHT = "#dbe4f8"
WARNING = "#f5a623"


def figure_svg(figure: Figure) -> str:
    """The figure as an <svg> element: the XML prologue dropped, so it can sit inside HTML, and no date or
    random ids, so the same data draws the same text."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "nli-studio"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]
