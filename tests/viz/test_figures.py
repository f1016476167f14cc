"""Every figure stored in the notebooks keeps the course's figure rule
(``minitx.course.notebook``: rendered at 100 dpi, no text under 9 pt, not wider than a notebook
column), so it reads on a classroom projector and in a PDF export."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import matplotlib
import pytest
from PIL import Image

from minitx.course.notebook import (
    FIGURE_DPI,
    FIGURE_RULE_WARNING,
    MAX_WIDTH_IN,
    check_figure_on_draw,
    figure_rule_violations,
)

matplotlib.use("Agg")
import matplotlib.pyplot as plt

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
# A tight bounding box may reach a little past the figure (a legend beside the axes).
MAX_PNG_WIDTH = int(1.1 * MAX_WIDTH_IN * FIGURE_DPI)


def _pngs(path: Path) -> list[tuple[int, bytes]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        (i, base64.b64decode(o["data"]["image/png"]))
        for i, c in enumerate(cells)
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    ]


def _texts(path: Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    outputs = [(i, o) for i, c in enumerate(cells) for o in c.get("outputs", [])]
    return [(i, "".join(o.get("text", ""))) for i, o in outputs]


def png_rule_violations(png: bytes) -> list[str]:
    image = Image.open(io.BytesIO(png))
    dpi = image.info.get("dpi", (0, 0))[0]
    problems = []
    if dpi < FIGURE_DPI - 0.5:
        problems.append(f"rendered at {dpi:.0f} dpi")
    if image.width > MAX_PNG_WIDTH:
        problems.append(f"{image.width} px wide")
    return problems


def _png_of(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def test_the_rule_catches_small_text_low_dpi_and_wide_figures(capsys):
    with plt.rc_context({"figure.dpi": FIGURE_DPI}):
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.set_title("fine")
        assert figure_rule_violations(fig) == []
        assert png_rule_violations(_png_of(fig)) == []

        fig, ax = plt.subplots(figsize=(14, 3))
        ax.text(0.5, 0.5, "tiny", fontsize=7)
        check_figure_on_draw(fig)
        png = _png_of(fig)
    assert FIGURE_RULE_WARNING in capsys.readouterr().err
    assert any("px wide" in p for p in png_rule_violations(png))
    with plt.rc_context({"figure.dpi": 80}):
        assert any("dpi" in p for p in png_rule_violations(_png_of(plt.figure(figsize=(4, 3)))))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_figures_keep_the_figure_rule(path):
    bad = [(cell, png_rule_violations(png)) for cell, png in _pngs(path)]
    assert not [b for b in bad if b[1]], bad
    warned = [cell for cell, text in _texts(path) if FIGURE_RULE_WARNING in text]
    assert not warned, f"cells {warned} drew a figure with text under 9 pt or too wide"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_stored_figure_has_alt_text(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    missing = [
        i
        for i, c in enumerate(cells)
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
        and not o.get("metadata", {}).get("image/png", {}).get("alt", "").strip()
    ]
    assert not missing, f"image outputs without alt text in cells {missing}"
