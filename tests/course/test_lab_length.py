"""Every notebook is a lab of at most 90 minutes with its exercises, counted on the student
edition by the course's rule (:mod:`minitx.course.lab_length`), and README and the teacher's
guide quote the figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from minitx.course.lab_length import LIMIT, LabLength, lab_length

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from minitx.course.editions import build_edition

    return {p.name: p for p in build_edition("student", tmp_path_factory.mktemp("student"))}


def _notebook(tmp_path: Path, cells: list[tuple[str, str]], name: str = "04_x.ipynb") -> Path:
    nb = {"cells": [{"cell_type": k, "source": s, "metadata": {}} for k, s in cells],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / name
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_the_rule_on_a_counted_notebook(tmp_path):
    # 240 words (2 min) + 24 code lines, one blank and one comment among 26 (2 min) +
    # a predict (3) and an implement (12) named in the cells, one exercise left unnamed.
    path = _notebook(tmp_path, [
        ("markdown", " ".join(["word"] * 240)),
        ("markdown", "**Exercise 1** (`04.repeat_word`, predict)."),
        ("code", "\n".join(["x = 1"] * 23 + ["", "# a comment"])),
        ("code", 'check("04.attention", my_attention)'),
    ])
    got = lab_length(path)
    assert (got.words, got.code_lines) == (240 + 4, 25)
    assert got.exercises == {"predict": 1, "implement": 1, "compute": 0, "think": 0}
    assert got.minutes == pytest.approx((240 + 4) / 120 + 25 / 12 + 3 + 12)


def test_a_name_inside_a_longer_name_is_not_counted(tmp_path):
    path = _notebook(tmp_path, [("markdown", "see `04.attention_map` and 04.attention.x")])
    assert sum(lab_length(path).exercises.values()) == 0


def test_a_badly_named_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"NN_name\.ipynb"):
        lab_length(_notebook(tmp_path, [], name="lab.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_lab_fits_90_minutes(path, student):
    got: LabLength = lab_length(student[path.name])
    assert got.minutes <= LIMIT, (
        f"{path.stem}: {got.minutes:.1f} minutes ({got.words} words, {got.code_lines} code "
        f"lines, exercises {got.exercises}); at most {LIMIT}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_readme_and_guide_quote_the_lab_length(path, student):
    minutes = round(lab_length(student[path.name]).minutes)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = re.search(rf"^\| `{re.escape(path.stem)}` \|.*\| (\d+) \|$", readme, re.M)
    assert row and int(row.group(1)) == minutes, f"README's course map: {path.stem} {minutes} min"
    guide = (ROOT / "instructor" / "TEACHING.md").read_text(encoding="utf-8")
    assert _guide_says(guide, path.stem[:2], minutes), f"TEACHING.md: {path.stem} {minutes} min"


def _guide_says(guide: str, notebook: str, minutes: int) -> bool:
    for section in re.split(r"^## ", guide, flags=re.M):
        if section.startswith(f"{notebook} "):
            return f"lab of about {minutes} min" in section
    return False
