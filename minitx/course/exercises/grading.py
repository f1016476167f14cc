"""The teacher's grading of saved notebooks: hidden cases, a fresh process, plain data.

:func:`grade_notebook` grades one saved notebook, as ``minitx progress`` does:

1. It reads the notebook's JSON (never the learner's objects): which cells call ``check``,
   and what their code does (:mod:`minitx.course.exercises.review` refuses a patched module,
   a forbidden function, a look-up by name...).
2. It runs the check cells again in ONE fresh Python process (each cell after the imports
   and definitions of the cells above it, with a time limit), where a recording ``check``
   keeps each answer. An implement answer is run there on the hidden inputs (which this
   process wrote to a file, deleted before any of the learner's code runs) with the
   exercise's forbidden functions watched (:func:`~.guard.forbidding`); its outputs, and
   a compute answer, come back as plain data (:func:`~.plain.to_plain`, JSON).
3. Here, every verdict is computed from that plain data against the expected outputs: the
   instructor's solution run on the hidden inputs, or the instructor's answer within the
   hidden tolerance. They never leave this process, and nothing the child reports counts
   as a verdict (a report of a forbidden call or a patched module only refuses).

A prediction is reported as answered or unanswered, never right or wrong: each notebook
reveals its predictions a few cells later.

The hidden cases live with the instructor's material, ``instructor/hidden/nbNN.py`` (a
``HIDDEN`` dict of ``Hidden(cases, atol, points, forbid)``), found as ``$MINITX_HIDDEN``,
else the ``hidden`` folder beside the answer key (:mod:`~.answers`).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from minitx.course.exercises import _CHECK_CALL, NOTEBOOKS, _definitions, get, names
from minitx.course.exercises.review import (
    answer_refusal,
    forbidden_objects,
    loosen,
    same,
    tampering,
    unreadable,
)

ENV = "MINITX_HIDDEN"
GRADES = ("correct", "not yet", "answered", "unanswered", "refused", "not checked")
_PACKAGE = "_minitx_hidden"


# ---- the hidden cases --------------------------------------------------------------------


def hidden_dir() -> Path | None:
    """``$MINITX_HIDDEN``, else the ``hidden`` folder beside the instructor's answer key;
    None where there is none."""
    from minitx.course.exercises.answers import SolutionsUnavailable, solutions_dir

    override = os.environ.get(ENV)
    if override:
        folder = Path(override).expanduser()
        return folder if (folder / "__init__.py").is_file() else None
    try:
        key = solutions_dir()
    except SolutionsUnavailable:
        return None
    folder = key.parent / "hidden" if key is not None else None
    return folder if folder is not None and (folder / "__init__.py").is_file() else None


def hidden(notebook: str) -> dict[str, Any]:
    """``HIDDEN`` of ``instructor/hidden/nbNN.py`` ({} where there is no such file)."""
    folder = hidden_dir()
    if folder is None or not (folder / f"nb{notebook}.py").is_file():
        return {}
    package = sys.modules.get(_PACKAGE)
    if package is None or Path(package.__file__).parent != folder.resolve():
        for stale in [m for m in sys.modules if m == _PACKAGE or m.startswith(_PACKAGE + ".")]:
            del sys.modules[stale]
        spec = importlib.util.spec_from_file_location(
            _PACKAGE, folder.resolve() / "__init__.py",
            submodule_search_locations=[str(folder.resolve())])
        package = importlib.util.module_from_spec(spec)
        sys.modules[_PACKAGE] = package
        spec.loader.exec_module(package)
    module: ModuleType = importlib.import_module(f"{_PACKAGE}.nb{notebook}")
    return dict(module.HIDDEN)


# ---- the fresh process -------------------------------------------------------------------


class _TimeUp(BaseException):
    """A re-run cell used up its time (a BaseException: ``except Exception`` in the
    learner's code cannot swallow it)."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise ``_TimeUp`` in the main thread after ``seconds`` (where SIGALRM exists)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not \
            threading.main_thread():
        yield
        return

    def time_up(signum: int, frame: object) -> None:
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, time_up)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _record(answer: Any, cases: list[tuple] | None, forbid: tuple[str, ...],
            originals: dict[str, Any]) -> dict[str, Any]:
    """What the child sends back of one answer: plain data only."""
    from minitx.course.exercises.guard import forbidding, patched
    from minitx.course.exercises.plain import to_plain

    if answer is None or answer is Ellipsis:
        return {"answered": False}
    if cases is None:
        return {"answered": True, "value": to_plain(loosen(answer))}
    record: dict[str, Any] = {"answered": True, "patched": patched(originals)}
    if not callable(answer):
        return record | {"error": f"expected a function, got {type(answer).__name__}"}
    used: list[str] = []
    outputs = []
    watched = forbidding(answer, forbid, used) if forbid else answer
    for args in cases:
        try:
            outputs.append({"value": to_plain(loosen(watched(*copy.deepcopy(args))))})
        except Exception as err:  # the learner's code: anything
            outputs.append({"error": f"{type(err).__name__}: {' '.join(str(err).split())}"})
    return record | {"outputs": outputs, "used": sorted(set(used))}


def _child(job_file: str, out_file: str) -> None:
    """In the fresh process: run each cell again, one JSON line per cell."""
    import torch

    import minitx.course.exercises as exercises
    from minitx.course.exercises.guard import resolve_path

    job = json.loads(Path(job_file).read_text(encoding="utf-8"))
    inputs = torch.load(job["inputs"], weights_only=True)
    for used in (job_file, job["inputs"]):  # gone before the learner's code runs
        os.remove(used)
    forbid = {n: tuple(p) for n, p in job["forbid"].items()}
    originals = {n: {p: resolve_path(p) for p in paths} for n, paths in forbid.items()}
    seen: dict[str, Any] = {}

    def recording_check(name: str, answer: Any, *, quiet: bool = False) -> Any:
        if name in job["graded"]:
            seen[name] = _record(answer, inputs.get(name), forbid.get(name, ()),
                                 originals.get(name, {}))
        return exercises.Result(False, f"[{name}] kept for the teacher's report", "not yet")

    exercises.check = recording_check  # what `from minitx.course.exercises import check` gets
    with open(out_file, "a", encoding="utf-8") as out:
        for cell in job["cells"]:
            seen.clear()
            error = _run_cell(cell["setup"], cell["source"], job["timeout"])
            out.write(json.dumps({"records": seen, "error": error}) + "\n")
            out.flush()


def _run_cell(setup: list[str], source: str, timeout: float) -> str | None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), \
                _time_limit(timeout):
            for statement in setup:
                with contextlib.suppress(Exception):
                    exec(statement, namespace)
            try:
                exec(compile(source, "<saved cell>", "exec"), namespace)
            except _TimeUp:
                return f"the cell ran out of time ({timeout:g} s)"
            except BaseException as err:  # the learner's code: SystemExit included
                return f"the cell raised {type(err).__name__}: {' '.join(str(err).split())}"
    except _TimeUp:
        return f"the cell's imports ran out of time ({timeout:g} s)"
    return None


_CHILD = ("import sys; from minitx.course.exercises.grading import _child; "
          "_child(*sys.argv[1:])")


def _run_child(job: dict[str, Any], inputs: dict[str, list[tuple]], timeout: float,
               cwd: Path) -> list[dict[str, Any]]:
    """Run the job's cells in a fresh process started in ``cwd``: one result per cell."""
    import torch

    cells = job["cells"]
    with tempfile.TemporaryDirectory(prefix="minitx-grading-") as tmp:
        job_file, out_file = Path(tmp) / "job.json", Path(tmp) / "out.jsonl"
        torch.save(inputs, Path(tmp) / "inputs.pt")
        job_file.write_text(json.dumps({**job, "inputs": str(Path(tmp) / "inputs.pt"),
                                        "timeout": timeout}), encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, str(job_file), str(out_file)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True, timeout=timeout * len(cells) + 120, cwd=cwd,
            )
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            why = f"the checking process stopped early ({last})"
        except subprocess.TimeoutExpired:
            why = "the checking process ran out of time"
        lines = out_file.read_text(encoding="utf-8").splitlines() if out_file.exists() else []
    results = []
    for line in lines[: len(cells)]:
        with contextlib.suppress(ValueError):
            results.append(json.loads(line))
    if len(lines) > len(cells) or len(results) < len(lines):
        return [{"records": {}, "error": "the checking process's report was tampered with"}] \
            * len(cells)
    return results + [{"records": {}, "error": why}] * (len(cells) - len(results))


# ---- the verdicts, here --------------------------------------------------------------------


@dataclass(frozen=True)
class Grade:
    """One exercise of one saved notebook: ``status`` is one of :data:`GRADES`; ``detail``
    says what is wrong, why the answer was refused, or why it was not checked."""

    exercise: str
    kind: str
    status: str
    detail: str = ""


def code_cells(path: str | os.PathLike) -> list[str]:
    """The sources of the code cells of the saved notebook ``path`` (a ``ValueError`` if
    it is not one)."""
    path = Path(path)
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return ["".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: expected a saved Jupyter notebook (.ipynb): {err}") from err


def check_jobs(sources: list[str]) -> list[dict[str, Any]]:
    """Each code cell that calls ``check``: its ``index``, the exercises it checks
    (``names``), its ``source`` and ``setup``, the imports and definitions above it."""
    jobs, setup = [], []
    for index, source in enumerate(sources):
        found = [n for n in dict.fromkeys(_CHECK_CALL.findall(source)) if n in names()]
        if found:
            jobs.append({"index": index, "names": found, "setup": list(setup),
                         "source": source})
        setup += _definitions(source)
    return jobs


def _expected(name: str, cases: list[tuple] | None) -> tuple[list[Any] | None, str | None]:
    """The plain expected outputs (one per case; the answer for a compute exercise), or
    why there are none here."""
    from minitx.course.exercises.answers import SolutionsUnavailable, solution
    from minitx.course.exercises.plain import to_plain

    try:
        truth = solution(name)
    except (SolutionsUnavailable, ValueError) as err:
        return None, f"no answer key here: {err}"
    if cases is None:
        return [to_plain(loosen(truth))], None
    return [to_plain(loosen(truth(*copy.deepcopy(args)))) for args in cases], None


def _verdict(name: str, record: dict[str, Any], spec: Any, static: str | None) -> tuple[str, str]:
    """(status, detail) of one graded answer, from plain data only."""
    kind = get(name).kind
    if not record.get("answered"):
        return "unanswered", ""
    if kind == "predict":
        return "answered", ""
    if static:
        return "refused", static
    if record.get("patched"):
        return "refused", f"{record['patched']} was replaced while the notebook ran (a " \
                          "patched module)"
    if record.get("used"):
        return "refused", f"it calls {', '.join(record['used'])} (forbidden here) while it runs"
    if spec is None:
        return "not checked", f"no hidden cases for it in instructor/hidden/nb{name[:2]}.py"
    want, why = _expected(name, spec.cases() if spec.cases else None)
    if want is None:
        return "not checked", why
    if "error" in record:
        return "not yet", record["error"]
    got = [record["value"]] if spec.cases is None else record.get("outputs", [])
    for k, (g, w) in enumerate(zip(got, want, strict=False)):
        where = "" if spec.cases is None else f" on hidden case {k + 1} of {len(want)}"
        if spec.cases and "error" in g:
            return "not yet", f"it raised {g['error']}{where}"
        value = g.get("value") if spec.cases else g
        odd = unreadable(value)
        if odd:
            return "refused", f"it gave an object that is not plain data ({odd}){where}"
        if getattr(spec, "normalize", None) is not None:  # two forms of one answer
            value, w = spec.normalize(value), spec.normalize(w)
        if not same(value, w, spec.atol):
            return "not yet", f"the answer differs from the answer key{where}"
    if len(got) != len(want):
        return "not checked", "the checking process gave no result for every hidden case"
    return "correct", ""


def grade_notebook(path: str | os.PathLike, timeout: float = 60.0) -> list[Grade]:
    """Grade each checked exercise of the saved notebook ``path`` (see the module's
    docstring). An exercise of the notebook (by the number in its file name) that no cell
    checks is ``not checked``; open questions are not listed."""
    path = Path(path)
    sources = code_cells(path)
    jobs = check_jobs(sources)
    graded = [n for job in jobs for n in job["names"]]
    specs: dict[str, Any] = {}
    for notebook in sorted({n[:2] for n in graded}):
        specs |= hidden(notebook)
    forbid = {n: (*getattr(get(n).checker, "forbid", ()), *(specs[n].forbid if n in specs
              else ())) for n in graded}
    inputs = {n: list(specs[n].cases()) for n in graded
              if n in specs and specs[n].cases is not None and get(n).kind != "predict"}
    job = {"cells": [{k: j[k] for k in ("setup", "source")} for j in jobs],
           "forbid": {n: list(p) for n, p in forbid.items() if n in inputs}, "graded": graded}
    results = _run_child(job, inputs, timeout, path.parent) if jobs else []
    wide = tampering(sources)
    rows: dict[str, Grade] = {}  # an exercise checked in two cells: the later one counts
    for j, result in zip(jobs, results, strict=True):
        for name in j["names"]:
            kind = get(name).kind
            record = result["records"].get(name)
            if record is None:
                why = result["error"] or f"the cell did not call check({name!r}, ...)"
                rows[name] = Grade(name, kind, "not checked", why)
                continue
            static = None
            if kind != "predict" and record.get("answered"):
                static = wide or answer_refusal(sources, j["index"], name,
                                                forbidden_objects(forbid[name]))
            rows[name] = Grade(name, kind, *_verdict(name, record, specs.get(name), static))
    number = re.search(r"(?<!\d)(\d\d)_", path.name)
    for name in names(number.group(1)) if number and number.group(1) in NOTEBOOKS else []:
        if name not in rows and get(name).kind != "think":
            rows[name] = Grade(name, get(name).kind, "not checked",
                               "no cell of the notebook checks it")
    return list(rows.values())


__all__ = ["ENV", "GRADES", "Grade", "check_jobs", "code_cells", "grade_notebook", "hidden",
           "hidden_dir"]
