"""The teacher's hidden cases: what ``minitx progress`` (and the nbgrader export) grades
the implement and compute exercises with. They live with the instructor's answer key, never
in the package a student installs.

One file per notebook, ``nbNN.py``, with ``HIDDEN: dict[str, Hidden]``:

* an ``implement`` exercise gives ``cases``, a function of no arguments that returns the
  argument tuples to call the learner's function with: other seeds, shapes and edge cases
  than the public test inputs of the package's exercise module. The expected outputs come
  from the instructor's solution (``instructor/solutions/nbNN.py``), in the grading process
  only;
* a ``compute`` exercise gives no cases: its truth is the instructor's solution, within
  ``atol``.

``points`` is what the exercise is worth in an nbgrader export; ``forbid`` adds dotted
paths (the package's reference itself, say) to the exercise's own ``forbid`` list;
``normalize``, where two forms of an answer mean the same (a bool mask and an additive
float one), maps the plain data of both the answer and the key to one form before they are
compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Hidden:
    cases: Callable[[], list[tuple]] | None = None
    atol: float = 1e-6
    points: int = 1
    forbid: tuple[str, ...] = ()
    normalize: Callable[[Any], Any] | None = None
