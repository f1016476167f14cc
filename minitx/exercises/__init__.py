"""Auto-checked exercises.

Each notebook's exercises live in their own module (``minitx.exercises.nb04`` ...) and
register a checker with :func:`exercise`. A learner calls ``check("04.shapes", answer)``
and reads "Correct" or what is wrong; the checker never reveals the solution.

An unanswered exercise (``answer`` left as ``None`` or ``...``) prints a reminder
instead of raising, so a notebook runs top to bottom before the learner starts.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

_REGISTRY: dict[str, Exercise] = {}
_MODULES = ("nb01", "nb02", "nb03", "nb04", "nb05", "nb06", "nb07", "nb08", "nb09")


@dataclass(frozen=True)
class Result:
    """Outcome of one check: ``ok`` and a message for the learner."""

    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Exercise:
    name: str
    prompt: str
    checker: Callable[[Any], str | None]


def exercise(name: str, prompt: str) -> Callable[[Callable[[Any], str | None]], Callable]:
    """Register ``checker`` under ``name``. The checker returns None if the answer is
    right, else a short hint saying what is wrong (without giving the solution)."""

    def register(checker: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
        if name in _REGISTRY:
            raise ValueError(f"exercise {name!r} is registered twice")
        _REGISTRY[name] = Exercise(name, prompt, checker)
        return checker

    return register


def _load_all() -> None:
    for module in _MODULES:
        try:
            importlib.import_module(f"minitx.exercises.{module}")
        except ModuleNotFoundError as err:
            if err.name != f"minitx.exercises.{module}":
                raise


def names() -> list[str]:
    """All registered exercise names, sorted."""
    _load_all()
    return sorted(_REGISTRY)


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
    if answer is None or answer is Ellipsis:
        result = Result(False, f"[{name}] not answered yet: replace the placeholder and run again.")
    else:
        try:
            # A checker may build modules or draw test inputs; the learner's random
            # numbers must come out the same as if no check had run.
            with torch.random.fork_rng(devices=[]):
                hint = ex.checker(answer)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as err:
            hint = f"could not read your answer ({type(err).__name__}: {err})"
        if hint is None:
            result = Result(True, f"[{name}] Correct!")
        else:
            result = Result(False, f"[{name}] Not yet: {hint}")
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
