"""Exercises: predict, implement, compute, and open questions.

Each notebook's exercises live in their own module (``minitx.course.exercises.nb04`` ...).

* :func:`exercise` registers a checked exercise of one kind (``predict``: commit to an
  outcome before running the experiment; ``implement``: write the piece just taught, tested
  against the package; ``compute``: work a small case by hand) with its checker, which
  compares an answer with test vectors: expected values the package computes, or hashes;
* :func:`think` registers an open question, which no checker reads.

A learner calls ``check("04.shapes", answer)`` and reads "Correct" or what is wrong; the
checker never reveals the solution. Solutions and model answers are not in the package:
they ship with the instructor's checkout (:mod:`minitx.course.exercises.answers`), where
teachers print them with ``minitx solutions 04`` (see :mod:`minitx.course.teacher`).

An unanswered exercise (``answer`` left as ``None`` or ``...``) prints a reminder
instead of raising, so a notebook runs top to bottom before the learner starts. A checker
that cannot get the data it needs (the corpus, a shipped model) says "cannot check this
now" and why, never "Not yet": the answer was not judged. The teacher's progress report
grades saved notebooks with hidden cases, outside the checkers
(:mod:`minitx.course.exercises.grading`).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from minitx.data.corpus import CorpusError

_REGISTRY: dict[str, Exercise] = {}
NOTEBOOKS = ("01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12")
KINDS = ("predict", "implement", "compute", "think")
STATUSES = ("correct", "not yet", "unanswered", "cannot check")


@dataclass(frozen=True)
class Result:
    """Outcome of one check: ``ok``, a message for the learner, and a ``status`` of
    :data:`STATUSES` (by default "correct" when ``ok``, else "not yet")."""

    ok: bool
    message: str
    status: str = ""

    def __post_init__(self) -> None:
        if not self.status:
            object.__setattr__(self, "status", "correct" if self.ok else "not yet")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Exercise:
    """One exercise: its prompt and its checker, None for an open question (``think``).
    Its solution or model answer is the instructor's: see
    :func:`minitx.course.exercises.answers.solution`."""

    name: str
    prompt: str
    kind: str
    checker: Callable[[Any], str | None] | None

    @property
    def notebook(self) -> str:
        return self.name.split(".")[0]


@dataclass(frozen=True)
class TeachingNotes:
    """What the teacher's guide says of one notebook (``TEACHING.md`` is built from these)."""

    notebook: str
    goals: tuple[str, ...]
    misconceptions: tuple[str, ...]
    reading_minutes: int
    assign: tuple[str, ...]


_NOTES: dict[str, TeachingNotes] = {}


def teaching_notes(
    notebook: str,
    minutes: int,
    assign: str,
    *,
    goals: tuple[str, ...],
    misconceptions: tuple[str, ...],
) -> None:
    """Record the teacher's guide entry of ``notebook``: ``minutes`` of reading, and the
    exercises to assign by their short names, separated by spaces ("batch_size pad_and_mask")."""
    if notebook not in NOTEBOOKS or notebook in _NOTES:
        raise ValueError(f"teaching notes for notebook {notebook!r}: unknown or given twice")
    names = tuple(f"{notebook}.{short}" for short in assign.split())
    _NOTES[notebook] = TeachingNotes(notebook, goals, misconceptions, minutes, names)


def notes(notebook: str) -> TeachingNotes | None:
    """The teaching notes of ``notebook``, if its module gives them."""
    _load_all()
    return _NOTES.get(notebook)


def _register(ex: Exercise) -> None:
    notebook, _, short = ex.name.partition(".")
    if notebook not in NOTEBOOKS or not short:
        raise ValueError(f"exercise names look like '04.shapes' (notebook 01-12), got {ex.name!r}")
    if ex.kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {ex.kind!r}")
    if ex.name in _REGISTRY:
        raise ValueError(f"exercise {ex.name!r} is registered twice")
    _REGISTRY[ex.name] = ex


def exercise(
    name: str, prompt: str, *, kind: str
) -> Callable[[Callable[[Any], str | None]], Callable]:
    """Register ``checker`` under ``name``. The checker returns None if the answer is
    right, else a short hint saying what is wrong (without giving the solution)."""
    if kind == "think":
        raise ValueError("open questions have no checker: register them with think()")

    def register(checker: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
        _register(Exercise(name, prompt, kind, checker))
        return checker

    return register


def think(name: str, question: str) -> None:
    """Register an open question (its model answer is the instructor's)."""
    _register(Exercise(name, question, "think", None))


def _load_all() -> None:
    for notebook in NOTEBOOKS:
        module = f"minitx.course.exercises.nb{notebook}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise


def names(notebook: str | None = None) -> list[str]:
    """All registered exercise names (of one notebook, e.g. ``"04"``), sorted."""
    _load_all()
    return sorted(n for n in _REGISTRY if notebook is None or n.split(".")[0] == notebook)


def get(name: str) -> Exercise:
    """The exercise registered under ``name``."""
    return _get(name)


def prompt(name: str) -> str:
    """The question of exercise ``name``."""
    return _get(name).prompt


def _get(name: str) -> Exercise:
    _load_all()
    if name not in _REGISTRY:
        raise KeyError(f"no exercise named {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def check(name: str, answer: Any, *, quiet: bool = False) -> Result:
    """Check ``answer`` for exercise ``name``; print and return the verdict."""
    ex = _get(name)
    if ex.checker is None:
        raise ValueError(f"{name!r} is an open question: there is no checker, discuss it")
    if answer is None or answer is Ellipsis:
        result = Result(
            False, f"[{name}] not answered yet: replace the placeholder and run again.",
            "unanswered",
        )
    else:
        try:
            # A checker may build modules or draw test inputs; the learner's random
            # numbers must come out the same as if no check had run.
            with torch.random.fork_rng(devices=[]):
                hint = ex.checker(answer)
        except (CorpusError, OSError) as err:  # the data the checker needs is not there
            why = " ".join(str(err).split())
            return _say(Result(False, f"[{name}] cannot check this now: {why}", "cannot check"),
                        quiet)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as err:
            hint = f"could not read your answer ({type(err).__name__}: {err})"
        if hint is None:
            result = Result(True, f"[{name}] Correct!")
        else:
            result = Result(False, f"[{name}] Not yet: {hint}")
    return _say(result, quiet)


def _say(result: Result, quiet: bool) -> Result:
    if not quiet:
        print(result.message)
    return result


def call_learner(fn: Callable, *args: Any) -> tuple[Any, str | None]:
    """Run a function the learner wrote: ``(result, None)``, or ``(None, hint)`` if it raised.

    The learner's code may raise anything; the exception becomes a hint, not a traceback.
    """
    if not callable(fn):
        return None, f"expected a function, got {type(fn).__name__}"
    try:
        return fn(*args), None
    except Exception as err:
        return None, f"your function raised {type(err).__name__}: {err}"


def close(answer: Any, expected: Any, *, atol: float = 1e-2) -> bool:
    """True when ``answer`` has ``expected``'s shape and is within ``atol`` of it."""
    import numpy as np

    a = np.asarray(answer, dtype=float)
    e = np.asarray(expected, dtype=float)
    return a.shape == e.shape and bool(np.allclose(a, e, atol=atol, rtol=0))


# ---- re-checking saved notebooks (the teacher's progress report) --------------------------

# A learner's check cell; a reveal cell's ``check(..., quiet=True)`` is the notebook's own.
_CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](\d\d\.\w+)["'](?![^\n]*quiet\s*=\s*True)""")
_SETUP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _definitions(source: str) -> list[str]:
    """The imports, functions and classes a code cell defines at its top level."""
    magic = ("%", "!")  # IPython's magics and shell lines are not Python
    code = "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(magic))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [ast.unparse(node) for node in tree.body if isinstance(node, _SETUP)]


def saved_check_cells(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Each code cell of the saved notebook ``path`` that calls ``check``: ``names`` (the
    exercises it checks), ``source``, and ``setup``, the imports and definitions of the
    cells above it. A ``ValueError`` if ``path`` is not a saved notebook."""
    path = Path(path)
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: expected a saved Jupyter notebook (.ipynb): {err}") from err
    jobs, setup = [], []
    for source in code:
        found = list(dict.fromkeys(_CHECK_CALL.findall(source)))
        if found:
            jobs.append({"names": found, "setup": list(setup), "source": source})
        setup += _definitions(source)
    return jobs
