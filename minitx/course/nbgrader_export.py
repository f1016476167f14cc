"""The course as an nbgrader course folder: hidden tests with points, for a class of hundreds.

    minitx edition nbgrader --out DIR [--only 01 04]

writes (from the instructor's ``notebooks/``, the answer key ``instructor/solutions`` and
the hidden cases ``instructor/hidden``, so from a checkout)::

    DIR/nbgrader_config.py
    DIR/source/nb01/01_sequence_problem.ipynb      one assignment a notebook
    DIR/source/nb04/04_self_attention.ipynb        ...

Then, in ``DIR``: ``nbgrader generate_assignment nb04`` gives the release (no solution, no
hidden test), and ``nbgrader autograde nb04`` grades ``submitted/<student>/nb04/``.

What the export does with each cell of a source notebook (the tags of
:mod:`minitx.course.editions`):

``solution``
    becomes an nbgrader solution cell. Its source is the edition's stub, then the solution
    between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, then the ``check(...)`` line
    they share. ``generate_assignment`` removes the solution (the config's
    ``ClearSolutions.code_stub`` is empty), so the release cell is the student edition's
    stub. In the source the stub runs first and the solution then redefines what it binds.
    After it comes a locked test cell (``grade_id`` ``nbNN_<short>_test``):

    * implement: the hidden cases of ``instructor/hidden/nbNN.py``, inline as plain data,
      with the outputs of the instructor's solution on them, computed at export time;
    * compute: the instructor's answer, as plain data, within the hidden ``atol``;
    * predict: :data:`PREDICTION_POINTS` for a prediction given (one of its letters), never
      for a right one: the notebook reveals the outcome a few cells later, so a right letter
      proves nothing. ``prediction_points=0`` leaves predictions ungraded.

    The test's body lies between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``:
    it calls :func:`hidden_test` (or :func:`prediction_given`), which holds no answer, on
    ``answer`` as the solution cell left it; an answer counts only where a cell gave it to
    ``check(NAME, answer)``, as the stub does.
``reveal``, ``model-answer``
    left out: nbgrader cannot hide a markdown cell from the release.

Other cells are copied; the release has no outputs (nbgrader clears them). Open questions
are not graded. An implement or compute exercise without hidden cases gets no test cell,
with a warning (what ``minitx progress`` reports as "not checked").

:func:`hidden_test` runs in the learner's kernel, as every nbgrader test does. Before any
verdict it reads the code the kernel ran (IPython's input history) as ``minitx progress``
does (:mod:`minitx.course.exercises.review`): a patched module, ``exec``, a forbidden
function in the answer's code are refused. It calls an implement answer on fresh copies of
the hidden inputs with the forbidden functions watched (:func:`~.exercises.guard.forbidding`),
and compares plain data only (:func:`~.exercises.plain.to_plain`,
:func:`~.exercises.review.same`), never asking the learner's objects. What it cannot stop
is code that rewrites the grading functions inside the kernel without any of the refused
statements; ``minitx progress`` on the same notebooks grades in a fresh process.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minitx.course.editions import (
    TAGS,
    default_source,
    edition_tags,
    notebook_paths,
    stub_of,
)

PREDICTION_POINTS = 1
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_TESTS, END_TESTS = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_DELIMITERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
CONFIG = '''\
"""nbgrader configuration of the minitx course (written by `minitx edition nbgrader`).

In this folder: `nbgrader generate_assignment nb04` writes release/nb04 (no solution, no
hidden test); `nbgrader autograde nb04` grades submitted/<student>/nb04. The autograder runs
every notebook top to bottom in a kernel where minitx is installed, with the course's data
and checkpoints where the notebooks load them.
"""

c = get_config()  # noqa: F821  (nbgrader's config loader defines it)

c.CourseDirectory.course_id = "minitx"
# The edition's stub stands above each solution region: the region is replaced by nothing.
c.ClearSolutions.code_stub = {"python": ""}
# Some notebooks train a small model or load a checkpoint: more than nbgrader's 30 s a cell.
c.Execute.timeout = 600
'''


# ---- the export --------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _grade_id(name: str, suffix: str = "") -> str:
    number, _, short = name.partition(".")
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"nb{number}_{short}{suffix}")


def _nbgrader(grade_id: str, *, solution: bool, points: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"grade": points is not None, "grade_id": grade_id,
                            "locked": not solution, "schema_version": 3,
                            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def solution_source(solution: str, stub: str) -> str:
    """The nbgrader source of a solution cell: the stub's own lines, the solution's between
    the solution delimiters, then the lines that both end with (the ``check`` call)."""
    sol, sub = solution.rstrip("\n").split("\n"), stub.rstrip("\n").split("\n")
    if any(d in line for line in sol + sub for d in _DELIMITERS):
        raise ValueError("a solution or stub line holds an nbgrader delimiter")
    same = 0
    while same < min(len(sol), len(sub)) - 1 and sol[-1 - same] == sub[-1 - same]:
        same += 1
    tail = sol[len(sol) - same:]
    lines = [*sub[: len(sub) - same], BEGIN_SOLUTION, *sol[: len(sol) - same], END_SOLUTION,
             *tail]
    return "\n".join(lines)


def _choices(stub: str) -> str:
    """The letters a prediction's stub offers ("a", "b" or "c"), or every letter."""
    turn = next((ln for ln in stub.splitlines() if "# your turn" in ln), "")
    return "".join(dict.fromkeys(re.findall(r"""["']([a-z])["']""", turn))) or \
        "abcdefghijklmnopqrstuvwxyz"


def _spec(name: str, kind: str, hidden: Any) -> dict[str, Any]:
    """What the test of ``name`` needs, as plain data: the hidden inputs and the outputs
    of the instructor's solution on them (implement), or the instructor's answer."""
    from minitx.course.exercises import get
    from minitx.course.exercises.answers import solution
    from minitx.course.exercises.plain import to_plain
    from minitx.course.exercises.review import loosen

    forbid = [*getattr(get(name).checker, "forbid", ()), *hidden.forbid]
    spec: dict[str, Any] = {"kind": kind, "atol": hidden.atol,
                            "forbid": list(dict.fromkeys(forbid))}
    truth = solution(name)
    if kind == "compute":
        return spec | {"expected": to_plain(loosen(truth))}
    if hidden.cases is None:
        raise ValueError(f"{name} is an implement exercise: its Hidden needs cases")
    cases = [to_plain(list(args)) for args in hidden.cases()]
    expected = [to_plain(loosen(truth(*from_plain(c)))) for c in cases]
    return spec | {"cases": cases, "expected": expected}


def _test_cell(name: str, kind: str, stub: str, hidden: Any,
               prediction_points: int) -> dict[str, Any] | None:
    if kind == "predict":
        if prediction_points <= 0:
            return None
        points, what = prediction_points, "for a prediction given (one of its letters), " \
            "right or not,"
        call = f"prediction_given({name!r}, answer, {_choices(stub)!r})"
        function = "prediction_given"
    else:
        if hidden is None:
            warnings.warn(f"{name}: no hidden cases in instructor/hidden/nb{name[:2]}.py, "
                          "so no test cell: it is not graded", stacklevel=3)
            return None
        spec = json.dumps(_spec(name, kind, hidden), separators=(",", ":"))
        points = hidden.points
        what = "your function, run on the teacher's hidden cases," if kind == "implement" \
            else "your answer, compared with the teacher's answer key,"
        call, function = f"hidden_test({name!r}, answer, {spec!r})", "hidden_test"
    source = "\n".join([
        f"# {name}, {points} point{'s' * (points != 1)}: {what} when your notebook is graded.",
        BEGIN_TESTS,
        f"from minitx.course.nbgrader_export import {function}",
        "",
        call,
        END_TESTS,
    ])
    return {"cell_type": "code", "execution_count": None,
            "id": f"hidden-{name.replace('.', '-')}",
            "metadata": {"nbgrader": _nbgrader(_grade_id(name, "_test"), solution=False,
                                               points=points)},
            "outputs": [], "source": _lines(source)}


def nbgrader_notebook(nb: dict[str, Any], hidden: dict[str, Any],
                      prediction_points: int = PREDICTION_POINTS) -> dict[str, Any]:
    """The nbgrader source of the course notebook ``nb`` (a new dict), with ``hidden`` the
    ``HIDDEN`` dict of its notebook."""
    from minitx.course.exercises import get

    cells = []
    for cell in nb["cells"]:
        tags = edition_tags(cell)
        if tags and tags[0] in ("reveal", "model-answer"):
            continue
        new = copy.deepcopy(cell)
        cells.append(new)
        if not tags or tags[0] != "solution":
            continue
        name, stub = stub_of(cell)
        meta = new["metadata"]
        meta["tags"] = [t for t in meta["tags"] if t not in TAGS]
        del meta["minitx"]["stub"]
        for key in ("tags", "minitx"):
            if not meta[key]:
                del meta[key]
        meta["nbgrader"] = _nbgrader(_grade_id(name), solution=True)
        new["source"] = _lines(solution_source("".join(cell["source"]), stub))
        kind = get(name).kind
        test = _test_cell(name, kind, stub, hidden.get(name), prediction_points)
        if test is not None:
            cells.append(test)
    return {**nb, "cells": cells}


def export_nbgrader(out_dir: str | os.PathLike, notebooks: Sequence[str] | None = None,
                    source: str | os.PathLike | None = None, *,
                    prediction_points: int = PREDICTION_POINTS) -> list[Path]:
    """Write an nbgrader course folder into ``out_dir`` (see the module's docstring):
    ``nbgrader_config.py`` and ``source/nbNN/NN_name.ipynb`` for each notebook (all, or
    those whose numbers are in ``notebooks``). Returns the notebooks written."""
    from minitx.course.exercises.grading import hidden

    folder = Path(source) if source is not None else default_source()
    out = Path(out_dir)
    built = []
    for path in notebook_paths(folder, notebooks):
        number = path.name[:2]
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
            specs = hidden(number) if any(
                "solution" in edition_tags(c) for c in nb["cells"]) else {}
            nb = nbgrader_notebook(nb, specs, prediction_points)
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: {err}") from err
        target = out / "source" / f"nb{number}" / path.name
        built.append((target, json.dumps(nb, indent=1, ensure_ascii=False) + "\n"))
    for target, text in built:  # nothing is written unless every notebook could be built
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (out / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    return [target for target, _ in built]


# ---- the tests, in the learner's kernel ----------------------------------------------------


def from_plain(value: Any) -> Any:
    """Plain data back as inputs: ``{"shape", "dtype", "data"}`` as a tensor of that dtype,
    lists as lists (a tuple comes back as a list)."""
    import torch

    if type(value) is dict and set(value) == {"shape", "dtype", "data"}:
        data = torch.tensor(value["data"], dtype=torch.float64).reshape(value["shape"])
        return data.to(getattr(torch, value["dtype"]))
    if type(value) is dict:
        return {k: from_plain(v) for k, v in value.items()}
    if type(value) is list:
        return [from_plain(v) for v in value]
    return value


def _kernel_sources() -> list[str] | None:
    """The code cells the kernel ran, in order (IPython's input history), or None."""
    with contextlib.suppress(ImportError, AttributeError):
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            return [str(s) for s in shell.history_manager.input_hist_raw]
    return None


def _static_refusal(name: str, forbid: list[str]) -> str | None:
    """Why the code the kernel ran cannot be credited for ``name``, read from that code."""
    from minitx.course.exercises import _CHECK_CALL
    from minitx.course.exercises.review import answer_refusal, forbidden_objects, tampering

    sources = _kernel_sources()
    if sources is None:
        return None  # not in a kernel: a plain Python run of the test (the runtime checks hold)
    ran = sources[:-1]  # the last one is this test cell
    cells = [i for i, s in enumerate(ran) if name in _CHECK_CALL.findall(s)]
    if not cells:
        return f"no cell gave the answer to check({name!r}, answer)"
    return tampering(ran) or answer_refusal(ran, cells[-1], name, forbidden_objects(forbid))


def _fail(name: str, why: str) -> None:
    raise AssertionError(f"[{name}] {why}")


def hidden_test(name: str, answer: Any, spec: str) -> None:
    """Grade ``answer`` to the implement or compute exercise ``name`` with ``spec`` (the JSON
    an export wrote): print a line when right, raise ``AssertionError`` saying why not
    (never what the answer is). Nothing reaches stderr, which nbgrader counts as a failure."""
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        why, passed = _judge(name, answer, json.loads(spec))
    if why:
        _fail(name, why)
    print(f"[{name}] {passed}")


def _judge(name: str, answer: Any, job: dict[str, Any]) -> tuple[str | None, str]:
    """(why the answer gets no points or None, what it passed)."""
    from minitx.course.exercises.guard import forbidding
    from minitx.course.exercises.plain import to_plain
    from minitx.course.exercises.review import loosen, same, unreadable

    if answer is None or answer is Ellipsis:
        return "not answered", ""
    why = _static_refusal(name, job["forbid"])
    if why:
        return f"refused: {why}", ""
    if job["kind"] == "compute":
        got = to_plain(loosen(answer))
        if unreadable(got):
            return f"refused: the answer is not plain data ({unreadable(got)})", ""
        if not same(got, job["expected"], job["atol"]):
            return "the answer differs from the answer key", ""
        return None, "passed the hidden test"
    if not callable(answer):
        return f"expected a function, got {type(answer).__name__}", ""
    used: list[str] = []
    watched = forbidding(answer, tuple(job["forbid"]), used) if job["forbid"] else answer
    total = len(job["cases"])
    for k, (case, want) in enumerate(zip(job["cases"], job["expected"], strict=True), 1):
        where = f"on hidden case {k} of {total}"
        try:
            value = watched(*from_plain(case))
        except Exception as err:  # the learner's code: anything
            return f"it raised {type(err).__name__} {where}", ""
        if used:
            return f"refused: it calls {', '.join(sorted(set(used)))} (forbidden here)", ""
        got = to_plain(loosen(value))
        if unreadable(got):
            return f"refused: it gave an object that is not plain data {where}", ""
        if not same(got, want, job["atol"]):
            return f"the answer differs from the answer key {where}", ""
    return None, f"passed {total} hidden cases"


def prediction_given(name: str, answer: Any, choices: str) -> None:
    """Return quietly when ``answer`` is one of the letters ``choices`` (a prediction given,
    right or not); raise ``AssertionError`` otherwise."""
    if type(answer) is not str or answer.strip().lower() not in set(choices):
        _fail(name, f"no prediction given (one of {', '.join(choices)})")
    print(f"[{name}] prediction given")


__all__ = [
    "CONFIG",
    "PREDICTION_POINTS",
    "export_nbgrader",
    "from_plain",
    "hidden_test",
    "nbgrader_notebook",
    "prediction_given",
    "solution_source",
]
