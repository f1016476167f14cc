"""The course's exercises as a whole: kinds per notebook, no answer printed earlier, no
question asked twice, solutions a teacher can print, and the progress report.

Each rule is a small function tested on a planted counterexample first, so that its
pass over the real course means something.
"""

from __future__ import annotations

import ast
import copy
import csv
import difflib
import importlib
import io
import json
import math
import re
from pathlib import Path

import pytest

from minitx.course.exercises import NOTEBOOKS, check, get, names, notes
from minitx.course.teacher import (
    guide,
    main,
    notebook_progress,
    progress,
    solution_text,
    solutions,
)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_FILES = {p.name[:2]: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
CHECKED = [n for n in names() if get(n).kind != "think"]


def _cells(notebook: str) -> list[dict]:
    return json.loads(NOTEBOOK_FILES[notebook].read_text(encoding="utf-8"))["cells"]


def _output_text(cell: dict) -> str:
    parts = []
    for o in cell.get("outputs", []):
        if "text" in o:
            parts.append("".join(o["text"]))
        for mime in ("text/plain", "text/markdown", "text/html"):
            parts.append("".join(o.get("data", {}).get(mime, "")))
    return "\n".join(parts)


def _check_cell_index(cells: list[dict], name: str) -> int:
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code" and re.search(
            rf"""check\(\s*["']{re.escape(name)}["']""", "".join(cell["source"])
        ):
            return i
    raise AssertionError(f"no cell of notebook {name[:2]} calls check({name!r}, ...)")


# ---- rule 1: every notebook has each kind ------------------------------------------------


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_notebook_has_a_predict_an_implement_and_a_think_exercise(notebook):
    kinds = {get(n).kind for n in names(notebook)}
    assert {"predict", "implement", "think"} <= kinds, (notebook, sorted(kinds))


@pytest.mark.parametrize("name", names())
def test_every_exercise_is_in_its_notebook(name):
    cells = _cells(name[:2])
    if get(name).kind == "think":
        assert any(
            f"`{name}`" in "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
        )
    else:
        _check_cell_index(cells, name)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_teachers_notes_name_exercises_of_their_notebook(notebook):
    info = notes(notebook)
    assert info is not None, f"minitx/exercises/nb{notebook}.py gives no teaching_notes()"
    assert info.goals and info.misconceptions and 5 <= info.reading_minutes <= 75
    assert info.assign and set(info.assign) <= set(names(notebook))


# ---- rule 2: no answer is printed before its exercise -------------------------------------


def _numbers(value) -> list[float]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list | tuple | set):
        return [x for v in value for x in _numbers(v)]
    if hasattr(value, "tolist"):
        return _numbers(value.tolist())
    return []


def distinctive_forms(x: float) -> list[str]:
    """How ``x`` would look printed, if it is distinctive enough that seeing it printed
    gives the answer away: integers of two or more digits, and fractions other than the
    halves and quarters that appear everywhere."""
    if not math.isfinite(x):
        return []
    if x == int(x):
        n = int(x)
        return [str(n), f"{n:,}"] if abs(n) >= 10 else []
    if abs(x) * 4 == int(abs(x) * 4):
        return []
    return sorted({f"{x:.{d}f}" for d in (2, 3, 4)} | {f"{x:.3g}"})


def printed_in(text: str, x: float) -> str | None:
    for form in distinctive_forms(x):
        if re.search(rf"(?<![\d.]){re.escape(form)}(?!\d)", text):
            return form
    return None


def _stable(cell: dict) -> bool:
    """False for a cell marked ``# NBVAL_IGNORE_OUTPUT``: its numbers (timings, progress)
    change on every run, so they cannot show a learner a number that answers an exercise."""
    return not "".join(cell["source"]).startswith("# NBVAL_IGNORE_OUTPUT")


def earlier_outputs(name: str) -> str:
    notebook = name[:2]
    text = []
    for nb in NOTEBOOK_FILES:
        if nb < notebook:
            text += [_output_text(c) for c in _cells(nb) if _stable(c)]
    cells = _cells(notebook)
    text += [_output_text(c) for c in cells[: _check_cell_index(cells, name)] if _stable(c)]
    return "\n".join(text)


def test_the_printed_answer_rule_skips_only_outputs_that_change_every_run():
    timing = {"cell_type": "code", "source": ["# NBVAL_IGNORE_OUTPUT\n", "time_it()\n"]}
    assert not _stable(timing)
    assert _stable({"cell_type": "code", "source": ["print(round(loss, 2))\n"]})


def test_the_printed_answer_rule_catches_a_planted_answer():
    outputs = "parameters: 16,640\nloss 2.1234 after 40 steps"
    assert printed_in(outputs, 16640) == "16640" or printed_in(outputs, 16640) == "16,640"
    assert printed_in(outputs, 2.1234) is not None
    assert printed_in(outputs, 0.5) is None and printed_in(outputs, 4) is None
    assert printed_in("116640", 16640) is None  # a longer number is not the answer


@pytest.mark.parametrize("name", CHECKED)
def test_no_answer_is_printed_earlier_in_the_course(name):
    answer = get(name).solution()
    text = earlier_outputs(name)
    leaked = {x: printed_in(text, x) for x in _numbers(answer)}
    assert not any(leaked.values()), f"{name}: printed before the exercise: {leaked}"


# ---- rule 3: no question is asked twice ---------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+|\d+", text.lower())


def same_questions(prompts: dict[str, str], threshold: float = 0.8) -> list[tuple[str, str]]:
    """Pairs of prompts whose words are at least ``threshold`` alike."""
    items = sorted(prompts.items())
    pairs = []
    for i, (a, pa) in enumerate(items):
        for b, pb in items[i + 1 :]:
            if difflib.SequenceMatcher(None, _words(pa), _words(pb)).ratio() >= threshold:
                pairs.append((a, b))
    return pairs


def test_the_same_question_rule_catches_a_planted_copy():
    prompts = {n: get(n).prompt for n in names()}
    name = CHECKED[0]
    prompts["99.copy"] = prompts[name].replace("Give", "give")
    assert (name, "99.copy") in same_questions(prompts)


def test_no_two_exercises_ask_the_same_question():
    assert same_questions({n: get(n).prompt for n in names()}) == []


# ---- solutions --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CHECKED)
def test_the_printed_solution_is_accepted_by_the_checker(name):
    text = solution_text(name)
    answer = get(name).solution()
    if callable(answer):
        namespace = dict(vars(importlib.import_module(answer.__module__)))
        exec(compile(text, f"<solution of {name}>", "exec"), namespace)
        printed = namespace[answer.__name__]
    else:
        namespace = dict(vars(importlib.import_module(f"minitx.course.exercises.nb{name[:2]}")))
        try:
            printed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            printed = eval(text, namespace)  # a tensor's repr
    assert check(name, printed, quiet=True).ok, (name, text)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_solutions_command_prints_every_exercise(notebook, capsys):
    assert main(["solutions", notebook]) == 0
    out = capsys.readouterr().out
    for name in names(notebook):
        assert f"{name} ({get(name).kind})" in out
    assert out.strip() == solutions(notebook).strip()


def test_the_solutions_command_refuses_an_unknown_notebook(capsys):
    assert main(["solutions", "42"]) == 2
    assert "notebook must be one of 01, 02" in capsys.readouterr().err


def test_teaching_md_is_the_guide_the_modules_give():
    assert (ROOT / "TEACHING.md").read_text(encoding="utf-8") == guide(), (
        "regenerate with: python -m minitx.course.exercises guide > TEACHING.md"
    )


# ---- the progress report ----------------------------------------------------------------


def test_progress_of_the_stored_notebooks_is_all_unanswered():
    """Notebook 00 demonstrates a wrong answer on purpose; 01-09 are stored unanswered."""
    rows = progress([path for nb, path in NOTEBOOK_FILES.items() if nb != "00"])
    assert sorted(r.exercise for r in rows) == CHECKED
    assert {r.status for r in rows} == {"unanswered"}


def _answered_copy(tmp_path: Path, notebook: str, answers: dict[str, object]) -> Path:
    """A copy of the stored notebook where ``answers`` are typed into their check cells and
    the cells' outputs are what running them prints; one other check cell is cleared."""
    nb = json.loads(NOTEBOOK_FILES[notebook].read_text(encoding="utf-8"))
    cleared = next(n for n in names(notebook) if get(n).kind != "think" and n not in answers)
    for name, answer in answers.items():
        cell = nb["cells"][_check_cell_index(nb["cells"], name)]
        cell["source"] = f"answer = {answer!r}\nresult = check({name!r}, answer)\n"
        message = check(name, answer, quiet=True).message
        cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": message + "\n"}]
    nb["cells"][_check_cell_index(nb["cells"], cleared)]["outputs"] = []
    path = tmp_path / f"learner_{NOTEBOOK_FILES[notebook].name}"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_progress_reads_answers_from_a_saved_notebook(tmp_path, capsys):
    literal = [n for n in CHECKED if n.startswith("04.") and not callable(get(n).solution())]
    assert len(literal) >= 1
    right = literal[0]
    wrong_name = next((n for n in CHECKED if n.startswith("04.") and n != right), None)
    answers = {right: copy.deepcopy(get(right).solution())}
    if wrong_name is not None and not callable(get(wrong_name).solution()):
        answers[wrong_name] = "surely not this"
    path = _answered_copy(tmp_path, "04", answers)
    status = {r.exercise: r.status for r in notebook_progress(path)}
    assert status[right] == "correct"
    if wrong_name in answers:
        assert status[wrong_name] == "not yet"
    assert "not run" in status.values()
    assert main(["progress", str(tmp_path), "--csv", str(tmp_path / "p.csv")]) == 0
    assert f"1/{len(status)} correct ({right})" in capsys.readouterr().out
    table = list(csv.DictReader(io.StringIO((tmp_path / "p.csv").read_text())))
    assert {(r["exercise"], r["status"]) for r in table} == set(status.items())


def test_progress_refuses_what_is_not_a_notebook(tmp_path, capsys):
    bad = tmp_path / "essay.ipynb"
    bad.write_text("my essay", encoding="utf-8")
    assert main(["progress", str(bad)]) == 2
    assert "expected a saved Jupyter notebook" in capsys.readouterr().err
    assert main(["progress", str(tmp_path / "missing")]) == 2
