"""The classroom editions (minitx.course.editions): the student edition holds no solution,
no explanation of a prediction's outcome and no stored output that answers an exercise, keeps
every other cell as it is, and runs with its exercises blank; the instructor edition is the
source with a note on top."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minitx.course import editions
from minitx.course.editions import (
    INSTALL_NOTE,
    PIP_SPEC,
    build_edition,
    edition_tags,
    install_cell_source,
)
from minitx.course.exercises import check, get, names

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "notebooks"
SOURCES = sorted(SOURCE.glob("[0-9][0-9]_*.ipynb"))
CHECKED = [n for n in names() if get(n).kind != "think"]
_CHECK_NAME = re.compile(r"""\bcheck\(\s*["'](\d\d\.\w+)["']""")


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _everything(nb: dict) -> str:
    """Every source and every text output of a notebook, joined."""
    parts = []
    for cell in nb["cells"]:
        parts.append(_text(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append(_text(out.get("text", "")))
            parts += [_text(v) for v in out.get("data", {}).values() if isinstance(v, str | list)]
    return "\n".join(parts)


def _tagged(tag: str) -> list[tuple[Path, int, dict]]:
    return [(path, i, cell) for path in SOURCES for i, cell in enumerate(_load(path)["cells"])
            if tag in edition_tags(cell)]


def solution_only(cell: dict) -> list[str]:
    """The lines of a solution cell that its stub does not have: the solution itself."""
    stub = set(cell["metadata"]["minitx"]["stub"].splitlines())
    return [line for line in _text(cell["source"]).splitlines() if line.strip()
            and line not in stub]


@pytest.fixture(scope="module", params=["edition", "course"])
def student(request, tmp_path_factory) -> dict[str, dict]:
    """The student edition as ``minitx edition student`` builds it from the source, and as
    ``minitx course DIR`` writes it from the package into an empty folder: every check of
    the student edition below holds for both."""
    out = tmp_path_factory.mktemp("student")
    if request.param == "edition":
        paths = build_edition("student", out)
    else:
        from minitx import cli

        assert cli.main(["course", str(out / "course")]) == 0
        paths = sorted((out / "course").iterdir())
    assert [p.name for p in paths] == [p.name for p in SOURCES]
    return {p.name: _load(p) for p in paths}


@pytest.fixture(scope="module")
def instructor(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("instructor")
    return {p.name: _load(p) for p in build_edition("instructor", out)}


# ---- the source's tags ---------------------------------------------------------------------


def test_every_checked_exercise_has_exactly_one_solution_cell():
    found = sorted(_CHECK_NAME.search(_text(c["source"])).group(1) for _, _, c in
                   _tagged("solution"))
    assert found == sorted(CHECKED)


def test_every_prediction_has_its_experiment_and_its_reveal_tagged():
    experiments = {}
    for path, i, cell in _tagged("answer-output"):
        m = re.search(r"""\bcheck\(\s*["'](\d\d\.\w+)["'].*quiet\s*=\s*True""",
                      _text(cell["source"]), re.S)
        assert m, f"{path.name} cell {i} is tagged answer-output but checks no outcome"
        experiments[m.group(1)] = (path, i)
    assert sorted(experiments) == sorted(n for n in CHECKED if get(n).kind == "predict")
    for name, (path, i) in experiments.items():
        after = _load(path)["cells"][i + 1]
        assert "reveal" in edition_tags(after), f"{name}: the cell after its experiment"


def test_the_source_notebooks_never_call_dot_solution():
    calls = [p.name for p in SOURCES if ".solution(" in _everything(_load(p))]
    assert calls == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name[:2])
def test_the_first_code_cell_installs_the_package_and_says_so(path):
    cells = _load(path)["cells"]
    first = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    assert _text(cells[first]["source"]) == install_cell_source()
    assert PIP_SPEC in install_cell_source() and cells[first]["outputs"] == []
    note = cells[first - 1]
    assert note["cell_type"] == "markdown" and _text(note["source"]) == INSTALL_NOTE


# ---- the student edition -------------------------------------------------------------------


def _code(line: str) -> str:
    return line.split("  #")[0].strip()


def test_no_solution_is_left_in_the_student_edition(student):
    """Neither a solution's body nor any line of its code (12 characters or more, comments
    aside) is anywhere in the student edition."""
    texts = {name: _everything(nb) for name, nb in student.items()}
    code = {_code(line) for nb in student.values() for c in nb["cells"]
            if c["cell_type"] == "code" for line in _text(c["source"]).splitlines()}
    solutions = _tagged("solution")
    assert len(solutions) == len(CHECKED)
    for path, i, cell in solutions:
        body = solution_only(cell)
        assert any(line.startswith("answer = ") for line in body), (path.name, i, body)
        block = "\n".join(body)
        leaked = [name for name, text in texts.items() if block in text]
        assert not leaked, f"{path.name} cell {i}: its solution is in {leaked}"
        lines = [_code(line) for line in body if len(_code(line)) >= 12]
        assert not [line for line in lines if line in code], (path.name, i)


def test_no_student_notebook_calls_dot_solution(student):
    assert [n for n, nb in student.items() if ".solution(" in _everything(nb)] == []


def test_the_student_edition_drops_reveals_and_blanks_exercises_only(student):
    """Walking source and student edition side by side: every cell without an edition tag
    is identical; a solution became its stub with the checker's reminder as its output; an
    experiment kept its code and lost its outputs; reveals are gone."""
    for path in SOURCES:
        source, copy = _load(path), student[path.name]
        assert copy["metadata"] == source["metadata"]
        kept = [c for c in source["cells"] if not {"reveal", "model-answer"} & set(
            edition_tags(c))]
        assert len(copy["cells"]) == len(kept)
        for src, new in zip(kept, copy["cells"], strict=True):
            tags = edition_tags(src)
            if not tags:
                assert new == src
            elif tags == ["solution"]:
                name = _CHECK_NAME.search(_text(src["source"])).group(1)
                assert _text(new["source"]) == src["metadata"]["minitx"]["stub"]
                assert "answer = None  # your turn" in _text(new["source"])
                assert new["outputs"] == [{"name": "stdout", "output_type": "stream",
                                           "text": [check(name, None, quiet=True).message
                                                    + "\n"]}]
                assert "minitx" not in new["metadata"] and "solution" not in new[
                    "metadata"].get("tags", [])
            else:
                assert new["source"] == src["source"] and new["outputs"] == []
                assert "nbval-ignore-output" in new["metadata"]["tags"]
                assert "answer-output" not in new["metadata"]["tags"]


def test_every_stub_output_is_the_unanswered_reminder(student):
    for name, nb in student.items():
        for cell in nb["cells"]:
            source = _text(cell["source"])
            if cell["cell_type"] == "code" and re.search(r"\bcheck\(.*, answer\)", source):
                printed = "".join(_text(o.get("text", "")) for o in cell["outputs"])
                assert "Correct!" not in printed, name
                assert name.startswith("00") or "not answered yet" in printed, (name, source)


# ---- the instructor edition ----------------------------------------------------------------


def test_the_instructor_edition_is_the_source_with_a_note(instructor):
    for path in SOURCES:
        source, copy = _load(path), instructor[path.name]
        assert copy["metadata"] == source["metadata"]
        assert copy["cells"][1:] == source["cells"]
        note = copy["cells"][0]
        assert note["cell_type"] == "markdown" and "Instructor edition" in _text(note["source"])


# ---- the builder's input -------------------------------------------------------------------


def _notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_model_answers_and_reveals_stay_out_of_the_student_edition(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    cells = [
        {"cell_type": "markdown", "id": "q", "metadata": {}, "source": ["An open question."]},
        {"cell_type": "markdown", "id": "m", "metadata": {"tags": ["model-answer"]},
         "source": ["Model answer: because."]},
        {"cell_type": "markdown", "id": "r", "metadata": {"tags": ["reveal"]},
         "source": ["It moved."]},
    ]
    (src / "01_x.ipynb").write_text(json.dumps(_notebook(*cells)), encoding="utf-8")
    (student,) = build_edition("student", tmp_path / "s", source=src)
    assert _load(student)["cells"] == cells[:1]
    (teacher,) = build_edition("instructor", tmp_path / "i", source=src)
    assert _load(teacher)["cells"][1:] == cells


def test_a_solution_without_its_stub_is_refused_and_nothing_is_written(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    bad = {"cell_type": "code", "id": "s", "metadata": {"tags": ["solution"]}, "outputs": [],
           "execution_count": None, "source": ['answer = "b"\n', 'check("04.tiny", answer)']}
    (src / "04_x.ipynb").write_text(json.dumps(_notebook(bad)), encoding="utf-8")
    for edition in ("student", "instructor"):
        with pytest.raises(ValueError, match=r"04_x\.ipynb: .*metadata\.minitx\.stub"):
            build_edition(edition, tmp_path / edition, source=src)
        assert not (tmp_path / edition).exists()
    bad["metadata"] = {"tags": ["reveal"]}
    (src / "04_x.ipynb").write_text(json.dumps(_notebook(bad)), encoding="utf-8")
    with pytest.raises(ValueError, match="a markdown cell one of"):
        build_edition("student", tmp_path / "student", source=src)


def test_build_edition_names_what_it_expects(tmp_path):
    with pytest.raises(ValueError, match="edition must be one of student, instructor; got 'x'"):
        build_edition("x", tmp_path)
    with pytest.raises(ValueError, match=r"among 00, 01.*; got 4, 99"):
        build_edition("student", tmp_path, ["04", "4", "99"])
    with pytest.raises(FileNotFoundError, match="is not a folder of notebooks"):
        build_edition("student", tmp_path, source=tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no course notebooks"):
        build_edition("student", tmp_path / "out", source=tmp_path)
    with pytest.raises(ValueError, match="is the source folder"):
        build_edition("student", SOURCE)


def test_the_default_source_outside_a_checkout_says_what_to_do(monkeypatch, tmp_path):
    fake = tmp_path / "site-packages" / "minitx" / "course" / "editions.py"
    monkeypatch.setattr(editions, "__file__", str(fake))
    with pytest.raises(FileNotFoundError, match="checkout of the repository; give the "
                       "notebooks folder as source"):
        build_edition("student", tmp_path / "out")


def test_only_the_chosen_notebooks_are_built(tmp_path):
    paths = build_edition("student", tmp_path, ["04", "00"])
    assert [p.name[:2] for p in paths] == ["00", "04"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]


# ---- the student notebooks run, with every exercise blank ----------------------------------


def run_nbval(paths: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    """pytest --nbval on ``paths`` in a separate process, with the repository's options."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
           "--nbval-current-env", "--nbval-sanitize-with", str(ROOT / "tests" /
                                                                 "nbval_sanitize.cfg"),
           "--nbval-cell-timeout=600", *map(str, paths)]
    env = {**os.environ, "MINITX_DEVICE": "cpu"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_student_notebooks_00_and_04_pass_nbval_with_exercises_blank(tmp_path):
    paths = build_edition("student", tmp_path, ["00", "04"])
    t0 = time.perf_counter()
    done = run_nbval(paths, tmp_path)
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, tail
    assert re.search(r"\b\d+ passed", done.stdout), tail
    print(f"nbval on student 00 and 04: {time.perf_counter() - t0:.0f} s")
