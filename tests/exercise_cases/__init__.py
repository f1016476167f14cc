"""Per-notebook exercise cases for the one table-driven test, tests/course/test_exercise_answers.py.

Each ``nbNN.py`` here gives ``CASES`` (exercise name -> :class:`Case`) and ``VALUE_CHECKS``,
functions that check the checkers' expected values against independent computations.
Right and wrong answers are worked out by hand, independently of the package; where a case
needs the instructor's solution, :func:`solution` reads it from the answer key. A buggy
learner function says which exercise it answers and the hint it must get with
:func:`wrong`; :func:`wrong_answers` collects them for its exercise's :class:`Case`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minitx.course.exercises import answers

Answer = tuple[Any, str | None]


@dataclass(frozen=True)
class Case:
    """One checked exercise: answers that must pass; wrong answers, each with the hint text
    it must get (or None); strings no hint may contain; answers the checker cannot read."""

    right: tuple[Any, ...]
    wrong: tuple[Answer, ...]
    never: tuple[str, ...] = ()
    unreadable: tuple[Any, ...] = ()


_WRONG: dict[str, list[Answer]] = {}


def wrong(name: str, hint: str | None) -> Callable[[Callable], Callable]:
    """Record the decorated function as a wrong answer to exercise ``name`` whose hint must
    contain ``hint`` (None: any hint)."""

    def record(fn: Callable) -> Callable:
        _WRONG.setdefault(name, []).append((fn, hint))
        return fn

    return record


def prediction(
    right: tuple[str, ...],
    hints: dict[str, str],
    *,
    no_letter: tuple[Any, ...] = ("z", 7),
    never: tuple[str, ...] = (),
) -> Case:
    """The case of a multiple-choice prediction: answers that pass, each wrong letter with
    the hint text it must get, and answers that name no choice (``no_letter``), which must
    be asked for one letter."""
    return Case(right, (*hints.items(), *((a, "one letter") for a in no_letter)), never=never)


def solution(name: str) -> Any:
    """The instructor's solution to ``name``, from the answer key of this checkout
    (``instructor/solutions/``); the package holds none."""
    return answers.solution(name)


def wrong_answers(name: str, *more: Answer) -> tuple[Answer, ...]:
    """The wrong answers recorded for ``name`` with :func:`wrong`, then ``more``."""
    return (*_WRONG.get(name, ()), *more)
