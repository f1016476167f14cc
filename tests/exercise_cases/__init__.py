"""Per-notebook exercise cases for the one table-driven test, tests/test_exercise_answers.py.

Each ``nbNN.py`` here gives ``CASES`` (exercise name -> :class:`Case`) and ``VALUE_CHECKS``,
functions that check the checkers' expected values against independent computations.
Right and wrong answers are worked out by hand, independently of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Case:
    """One checked exercise: answers that must pass; wrong answers, each with the hint text
    it must get (or None); strings no hint may contain; answers the checker cannot read."""

    right: tuple[Any, ...]
    wrong: tuple[tuple[Any, str | None], ...]
    never: tuple[str, ...] = ()
    unreadable: tuple[Any, ...] = ()
