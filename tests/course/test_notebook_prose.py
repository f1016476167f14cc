"""What a learner reads: no words about the test harness in any notebook, and the
README's course map gives each notebook's size as it is. Sizes are the student edition's
(``minitx.course.editions``): the repository's notebooks are the instructor's source, with
each exercise's solution and each experiment's explanation in them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
HARNESS = re.compile(r"nbval|pytest|stored outputs?|test harness|notebook tests|\bCI\b", re.I)


def learner_text(path: Path) -> list[tuple[int, str]]:
    """Markdown, code and text outputs, per cell."""
    out = []
    for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        out.append((i, "".join(cell["source"])))
        for o in cell.get("outputs", []):
            out.append((i, "".join(o.get("text", ""))))
            out.append((i, "".join(o.get("data", {}).get("text/markdown", ""))))
    return out


def sizes(path: Path) -> tuple[int, int]:
    """(words of prose, non-empty lines of code) of a notebook, outputs not counted; a word is
    whatever whitespace separates."""
    words = code = 0
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += len(text.split())
        elif cell["cell_type"] == "code":
            code += sum(1 for line in text.splitlines() if line.strip())
    return words, code


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The student edition of every notebook, by file name."""
    from minitx.course.editions import build_edition

    return {p.name: p for p in build_edition("student", tmp_path_factory.mktemp("student"))}


def test_the_harness_rule_catches_a_planted_word():
    assert HARNESS.search("this cell is not compared by nbval")
    assert not HARNESS.search("the model is tested against PyTorch")
    assert HARNESS.search("# NBVAL_IGNORE_OUTPUT")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_markers_are_cell_tags_not_comments(path):
    """Learners read code cells: what the notebook checker needs lives in cell metadata."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    commented = [i for i, c in enumerate(cells) if "NBVAL_" in "".join(c["source"])]
    assert not commented, f"cells {commented} carry NBVAL_ comments; use the cell tag"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_harness_words_for_learners(path):
    found = [(i, m.group(0)) for i, text in learner_text(path) for m in HARNESS.finditer(text)]
    assert not found, found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_course_map_gives_the_notebooks_size(path, student):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = re.search(rf"^\| `{re.escape(path.stem)}` \|.*\| ([\d,]+) \| ([\d,]+) \| \d+ \|$", readme,
                    re.M)
    assert row, f"no course-map row with word and code-line counts for {path.stem}"
    words, code = sizes(student[path.name])
    stated = [int(g.replace(",", "")) for g in row.groups()]
    assert stated == [words, code], (
        f"README says {stated}, the notebook has {words} words and {code} code lines"
    )


MAX_WORDS, MAX_CODE_LINES = 2800, 500  # one class period


@pytest.mark.parametrize("copy", ["student edition", "source"])
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_fits_one_class_period(path, copy, student):
    """The source too: a teacher teaches from it (the instructor's lesson), solutions and all."""
    words, code = sizes(student[path.name] if copy == "student edition" else path)
    assert words <= MAX_WORDS and code <= MAX_CODE_LINES, (
        f"{copy} {path.name}: {words} words and {code} code lines; a class period is at "
        f"most {MAX_WORDS} words and {MAX_CODE_LINES} code lines"
    )


# What figure_alt_text writes when a figure sets no sentence of its own: the kind of plot,
# its title and axes. A takeaway is the author's sentence (set_alt_text).
GENERATED_ALT = re.compile(
    r"(^|\. )(\d+ panels\. Panel 1:|(Heatmap|Line plot|Bar chart|Scatter plot|Panel)"
    r"( titled '|; [xy] axis: |\.$))"
)


def test_the_generated_alt_text_rule_catches_a_generated_sentence():
    from matplotlib.figure import Figure

    from minitx.viz.alt_text import figure_alt_text, set_alt_text

    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    fig.axes[0].set_title("Loss")
    assert GENERATED_ALT.search(figure_alt_text(fig))
    fig.add_subplot(2, 1, 2)
    assert GENERATED_ALT.search(figure_alt_text(fig))
    set_alt_text(fig, "Line plot of the loss against steps: it falls from 4.2 to 1.9.")
    assert not GENERATED_ALT.search(figure_alt_text(fig))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_states_its_takeaway(path):
    generated = []
    for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        for o in cell.get("outputs", []):
            if "image/png" in o.get("data", {}):
                alt = o.get("metadata", {}).get("image/png", {}).get("alt", "")
                if not alt or GENERATED_ALT.search(alt):
                    generated.append((i, alt[:80]))
    assert not generated, f"alt text that only names the plot (use set_alt_text): {generated}"
