"""The course's exercises as a whole: kinds per notebook, no answer printed earlier, no
question asked twice, solutions a teacher can print (from the instructor's answer key, which
the package does not hold), a submitted function that is or only calls the package's own
refused, and the progress report.

Each rule is a small function tested on a planted counterexample first, so that its
pass over the real course means something.
"""

from __future__ import annotations

import ast
import csv
import difflib
import importlib
import io
import json
import math
import re
import shutil
from functools import partial
from pathlib import Path

import pytest

from minitx.course.exercises import (
    NOTEBOOKS,
    answers,
    check,
    get,
    names,
    notes,
    saved_check_cells,
)
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
    assert info is not None, f"minitx/course/exercises/nb{notebook}.py gives no teaching_notes()"
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
    """False for a cell tagged ``nbval-ignore-output`` (in its metadata; once a
    ``# NBVAL_IGNORE_OUTPUT`` comment): its numbers (timings, progress) change on every run,
    so they cannot show a learner a number that answers an exercise."""
    tags = cell.get("metadata", {}).get("tags", [])
    return "nbval-ignore-output" not in tags and not "".join(cell["source"]).startswith(
        "# NBVAL_IGNORE_OUTPUT")


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
    timing = {"cell_type": "code", "metadata": {"tags": ["nbval-ignore-output"]},
              "source": ["time_it()\n"]}
    assert not _stable(timing)
    assert not _stable({"cell_type": "code", "source": ["# NBVAL_IGNORE_OUTPUT\n", "t()\n"]})
    assert _stable({"cell_type": "code", "source": ["print(round(loss, 2))\n"]})


def test_the_printed_answer_rule_catches_a_planted_answer():
    outputs = "parameters: 16,640\nloss 2.1234 after 40 steps"
    assert printed_in(outputs, 16640) == "16640" or printed_in(outputs, 16640) == "16,640"
    assert printed_in(outputs, 2.1234) is not None
    assert printed_in(outputs, 0.5) is None and printed_in(outputs, 4) is None
    assert printed_in("116640", 16640) is None  # a longer number is not the answer


@pytest.mark.parametrize("name", CHECKED)
def test_no_answer_is_printed_earlier_in_the_course(name):
    answer = answers.solution(name)
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
    try:
        answer = answers.solution(name)
    except (OSError, ValueError) as err:  # a solution computed from the corpus
        why = str(err).splitlines()[0]
        pytest.skip(f"cannot compute the solution of {name} here: {why}")
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
    result = check(name, printed, quiet=True)
    if result.status == "cannot check":
        pytest.skip(result.message)
    assert result.ok, (name, text, result.message)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_solutions_command_prints_every_exercise(notebook, capsys):
    """(Notebooks 01 and 09 compute solutions from the corpus: without it the command
    fails, saying so, and the test is skipped with that reason.)"""
    code = main(["solutions", notebook])
    out, err = capsys.readouterr()
    assert code == 0, err
    for name in names(notebook):
        assert f"{name} ({get(name).kind})" in out
    assert out.strip() == solutions(notebook).strip()


def test_the_solutions_command_refuses_an_unknown_notebook(capsys):
    assert main(["solutions", "42"]) == 2
    assert "notebook must be one of 01, 02" in capsys.readouterr().err


def test_outside_the_instructors_checkout_the_solutions_command_says_where_they_are(
    monkeypatch, capsys
):
    """An installed package has no answer key: no solution, no model answer, a clear word."""
    monkeypatch.delenv(answers.ENV, raising=False)
    monkeypatch.setattr(answers, "_checkout_key", lambda: None)
    assert not answers.available()
    assert main(["solutions", "04"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ship only with the instructor's checkout" in captured.err
    with pytest.raises(answers.SolutionsUnavailable, match=answers.ENV):
        answers.model_answer("04.why_scale")
    text = guide()
    assert "in the instructor's checkout only" in text
    monkeypatch.undo()  # the real key again, to name every model answer the guide left out
    for name in (n for n in names() if get(n).kind == "think"):
        assert answers.model_answer(name) not in text, name


def test_a_copy_of_the_answer_key_named_by_the_environment_is_read(monkeypatch, tmp_path):
    copy = tmp_path / "key"
    shutil.copytree(ROOT / "instructor" / "solutions", copy)
    monkeypatch.setenv(answers.ENV, str(copy))
    assert answers.solutions_dir() == copy
    assert answers.key("04").__file__ == str(copy / "nb04.py")
    assert solution_text("04.why_scale") == answers.model_answer("04.why_scale")
    monkeypatch.setenv(answers.ENV, str(tmp_path / "missing"))
    with pytest.raises(answers.SolutionsUnavailable, match="is not a folder"):
        answers.solutions_dir()


def test_an_answer_file_must_answer_every_exercise_of_its_notebook(monkeypatch, tmp_path):
    (tmp_path / "nb04.py").write_text(
        'SOLUTIONS = {"04.tiny": lambda: [0.5, 0.5], "04.extra": lambda: 1}\n'
        "MODEL_ANSWERS = {}\n", encoding="utf-8")
    monkeypatch.setenv(answers.ENV, str(tmp_path))
    with pytest.raises(ValueError, match=r"missing \['04.attention'.*unknown \['04.extra'\]"):
        answers.key("04")


def test_solutions_and_model_answers_are_not_in_the_package():
    """Every solution's source and every model answer lives in instructor/, not minitx/."""
    package = "\n".join(p.read_text(encoding="utf-8")
                        for p in sorted((ROOT / "minitx").rglob("*.py")))
    for name in names():
        text = solution_text(name)
        if get(name).kind in ("implement", "think") or text.startswith("def "):
            assert _body(text) not in package, name


def _body(text: str) -> str:
    """A solution's text without its first line (a def's signature), or all of it."""
    lines = text.splitlines()
    return "\n".join(lines[1:]) if text.startswith("def ") and len(lines) > 1 else text


def test_teaching_md_is_the_guide_the_modules_give():
    """The guide holds model answers: it lives with the instructor's material, not at the
    root where a learner looks first."""
    assert not (ROOT / "TEACHING.md").exists(), "the guide lives in instructor/TEACHING.md"
    assert (ROOT / "instructor" / "TEACHING.md").read_text(encoding="utf-8") == guide(), (
        "regenerate with: python -m minitx.course.exercises guide > instructor/TEACHING.md"
    )


# ---- the checker without its data -------------------------------------------------------


def test_a_sealed_checker_needs_no_data(monkeypatch, tmp_path):
    """No corpus, no network: 01.batch_size keeps the seal of its answer, not the corpus it
    was computed from, so it still checks: one letter is right, the others get a hint."""
    from minitx.data import corpus

    monkeypatch.setenv("MINITX_DATA", str(tmp_path / "nothing-here"))

    def offline(*args, **kwargs):
        raise corpus.DownloadError("could not download https://example.org: network unreachable")

    monkeypatch.setattr(corpus, "_fetch", offline)
    assert check("01.batch_size", None, quiet=True).status == "unanswered"
    results = [check("01.batch_size", answer, quiet=True) for answer in ("a", "b", "c")]
    assert [r.status for r in results].count("correct") == 1
    assert all(r.ok or r.message.startswith("[01.batch_size] Not yet: ") for r in results)


# ---- the progress report: every answer checked again -------------------------------------


def test_every_checked_exercise_has_a_check_cell_in_its_notebook():
    found = [n for nb, path in NOTEBOOK_FILES.items() if nb != "00"
             for cell in saved_check_cells(path) for n in cell["names"]]
    assert sorted(found) == CHECKED


def test_the_student_edition_is_rechecked_as_unanswered_and_the_source_as_correct(tmp_path):
    """The student edition's check cells are blank: running them again says so; the
    source notebooks hold the instructor's answers, which the checkers accept."""
    from minitx.course.editions import build_edition

    student = build_edition("student", tmp_path / "student", ["01", "04"])
    expected = [n for n in CHECKED if n[:2] in ("01", "04")]
    rows = progress(student)
    assert sorted(r.exercise for r in rows) == expected
    assert {r.status for r in rows} == {"unanswered"}
    source = progress([NOTEBOOK_FILES["01"], NOTEBOOK_FILES["04"]])
    assert sorted(r.exercise for r in source) == expected
    for row in source:  # graded with the hidden cases: predictions are only answered
        assert row.status == ("answered" if row.kind == "predict" else "correct"), row


def _learner_copy(tmp_path: Path, notebook: str, cells: dict[str, tuple[str, str]]) -> Path:
    """A copy of the stored notebook in which the check cell of each exercise in ``cells``
    holds the given (source, printed output) instead."""
    nb = json.loads(NOTEBOOK_FILES[notebook].read_text(encoding="utf-8"))
    for name, (source, printed) in cells.items():
        cell = nb["cells"][_check_cell_index(nb["cells"], name)]
        cell["source"] = source
        cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": printed}]
    path = tmp_path / "learners" / f"ada_{NOTEBOOK_FILES[notebook].name}"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_progress_checks_each_answer_again_and_trusts_no_printed_text(tmp_path, capsys):
    attention = solution_text("04.attention")
    shapes = answers.solution("04.shapes")
    path = _learner_copy(tmp_path, "04", {
        # right answers, one a function that needs the notebook's imports (torch, math)
        "04.attention": (f"{attention}\n\nanswer = attention\nresult = check('04.attention', "
                         "answer)\n", "no output saved: the cell was never run\n"),
        "04.shapes": (f"answer = {shapes!r}\nresult = check('04.shapes', answer)\n", ""),
        # a wrong answer whose cell claims, in print, to be right
        "04.shift_keys": ("answer = 'b'\nresult = check('04.shift_keys', answer)\n"
                          "print('[04.shift_keys] Correct!')\n",
                          "[04.shift_keys] Correct!\n"),
        # no check at all, only the printed claim
        "04.tiny": ("print('[04.tiny] Correct!')\n", "[04.tiny] Correct!\n"),
        # a cell that never finishes
        "04.repeat_word": ("answer = 'a'\nwhile True:\n    pass\n"
                           "result = check('04.repeat_word', answer)\n", ""),
    })
    rows = {r.exercise: r for r in notebook_progress(path, timeout=5)}
    assert {n: r.status for n, r in rows.items()} == {  # a prediction is never judged
        "04.attention": "correct", "04.shapes": "correct", "04.shift_keys": "answered",
        "04.tiny": "not checked", "04.repeat_word": "not checked"}
    assert "no cell of the notebook checks it" in rows["04.tiny"].detail
    assert "ran out of time (5 s)" in rows["04.repeat_word"].detail

    csv_path = tmp_path / "p.csv"
    assert main(["progress", str(path.parent), "--csv", str(csv_path), "--timeout", "5"]) == 0
    out = capsys.readouterr().out
    assert ("2/3 correct (04.attention, 04.shapes); 1/2 predictions answered; "
            "2 not checked (see --csv)") in out
    table = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert {(r["exercise"], r["status"]) for r in table} == {
        (n, r.status) for n, r in rows.items()}
    assert set(table[0]) == {"path", "exercise", "kind", "status", "detail"}


def test_progress_refuses_what_is_not_a_notebook(tmp_path, capsys):
    bad = tmp_path / "essay.ipynb"
    bad.write_text("my essay", encoding="utf-8")
    assert main(["progress", str(bad)]) == 2
    assert "expected a saved Jupyter notebook" in capsys.readouterr().err
    assert main(["progress", str(tmp_path / "missing")]) == 2


def test_progress_with_nothing_to_check_says_so(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["progress", str(empty)]) == 1
    assert f"no saved notebooks (.ipynb) in {empty}" in capsys.readouterr().err
    notes_only = {"cells": [{"cell_type": "markdown", "source": ["# notes"]}]}
    (empty / "notes.ipynb").write_text(json.dumps(notes_only), encoding="utf-8")
    assert main(["progress", str(empty)]) == 1
    assert "calls check(...)" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["solutions", "progress", "guide"])
def test_the_teachers_commands_have_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0 and f"usage: minitx.course.exercises {command}" in (
        capsys.readouterr().out)


def _top_p_wrapper(logits, p):
    """Filter the logits."""
    from minitx.nn import generation

    return generation.top_p_filter(logits, p)


def _shift_wrapper(tgt, bos_id):
    from minitx.nn.encoder_decoder import shift_right

    return shift_right(tgt, bos_id=bos_id)


def _wrappers():
    from minitx.nn import attention, encoder_decoder, generation

    shift = encoder_decoder.shift_right
    return [
        ("09.top_p", lambda logits, p: generation.top_p_filter(logits, p), "top_p_filter"),
        ("10.shift_right", lambda tgt, bos: shift(tgt, bos), "shift_right"),
        ("09.top_p", _top_p_wrapper, "top_p_filter"),
        ("05.masked_softmax", lambda scores, mask: attention.masked_softmax(scores, mask, -1),
         "masked_softmax"),
        ("10.shift_right", _shift_wrapper, "shift_right"),
    ]


@pytest.mark.parametrize("name, answer, own", _wrappers(),
                         ids=["lambda", "lambda-closure", "def-with-docstring", "lambda-constant",
                              "def-with-import"])
def test_an_implement_exercise_rejects_a_function_that_only_calls_the_packages(
    name, answer, own
):
    result = check(name, answer, quiet=True)
    assert not result.ok
    assert f"only calls the package's own {own}" in result.message


def test_a_partial_of_the_packages_function_is_its_own_function():
    from minitx.nn.attention import masked_softmax

    result = check("05.masked_softmax", partial(masked_softmax, dim=-1), quiet=True)
    assert not result.ok and "package's own masked_softmax" in result.message


def test_a_function_that_uses_the_package_among_its_own_steps_is_judged_by_the_checker():
    """A pad_and_mask that asks the package's padding_stats for the padded length (nothing
    the exercise forbids), then pads and masks by itself."""
    import torch

    from minitx.data.sequences import padding_stats

    def pad_and_mask(seqs, pad_id):
        T = padding_stats([len(s) for s in seqs]).padded_length
        ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
        mask = torch.zeros(len(seqs), T, dtype=torch.bool)
        for b, s in enumerate(seqs):
            ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[b, : len(s)] = True
        return ids, mask

    result = check("01.pad_and_mask", pad_and_mask, quiet=True)
    assert result.ok, result.message
    assert check("01.pad_and_mask", answers.solution("01.pad_and_mask"), quiet=True).ok


@pytest.mark.parametrize("name, own", [
    ("09.top_p", "minitx.nn.generation:top_p_filter"),
    ("05.masked_softmax", "minitx.nn.attention:masked_softmax"),
    ("10.shift_right", "minitx.nn.encoder_decoder:shift_right"),
])
def test_an_implement_exercise_rejects_the_packages_own_function(name, own):
    """The notebooks import the package's functions; handing one in is not an answer."""
    module, _, attr = own.partition(":")
    result = check(name, getattr(importlib.import_module(module), attr), quiet=True)
    assert not result.ok and f"package's own {attr}" in result.message


def test_a_forbidden_package_function_is_found_wherever_the_answer_names_it():
    """``implement(..., forbid=...)``: 11.rope_half refuses apply_rope as a global, an
    attribute or inside a nested function, and not a learner's own function of that name."""
    from minitx.course.exercises.guard import forbidden_call
    from minitx.nn import rope

    forbid = ("minitx.nn.rope.apply_rope", "minitx.nn.rope.rope_angles")

    def by_attribute(x, base):
        return rope.apply_rope(x, base) * 1.0

    def nested(x, base):
        def inner(y):
            return rope.rope_angles(y.size(-2), y.size(-1), base)

        return x + inner(x).sum()

    assert forbidden_call(by_attribute, forbid) == "apply_rope"
    assert forbidden_call(nested, forbid) == "rope_angles"
    namespace = {"apply_rope": lambda x, base: x}  # the learner's own, defined earlier
    exec("def own(x, base):\n    return apply_rope(x, base) * 2\n", namespace)
    assert forbidden_call(namespace["own"], forbid) is None
    assert forbidden_call(answers.solution("11.rope_half"), forbid) is None
    result = check("11.rope_half", by_attribute, quiet=True)
    assert not result.ok and "uses apply_rope" in result.message


def test_a_forbidden_package_function_is_refused_however_the_answer_reaches_it():
    """What the code does not name, the run shows: an alias, getattr, or another package
    function that calls apply_rope; afterwards every binding is the package's own again."""
    import torch

    import minitx.nn.rope
    from minitx.course.exercises import nb11
    from minitx.nn import apply_rope

    turn = apply_rope
    order = lambda x: torch.arange(x.size(-1)).view(2, -1).T.flatten()

    def by_alias(x, base=10000.0):
        return turn(x[..., order(x)], base)[..., order(x).argsort()]

    def by_getattr(x, base=10000.0):
        rotate = getattr(minitx.nn.rope, "apply" + "_rope")
        return rotate(x[..., order(x)], base)[..., order(x).argsort()]

    def by_the_checkers_reference(x, base=10000.0):
        y = nb11._rope_half_reference(x, base)
        return y

    for answer in (by_alias, by_getattr, by_the_checkers_reference):
        result = check("11.rope_half", answer, quiet=True)
        assert not result.ok and "uses apply_rope" in result.message, answer.__name__
    assert minitx.nn.rope.apply_rope is apply_rope and minitx.nn.apply_rope is apply_rope
    assert check("11.rope_half", answers.solution("11.rope_half"), quiet=True).ok
