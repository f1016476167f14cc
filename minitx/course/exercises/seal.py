"""Sealed answers: what a checker keeps instead of the answer itself.

A prediction or a hand computation has one right answer, and the package must not hold
it, nor any function that computes it. A checker keeps the answer's *seal* instead: a
slow, salted hash of the answer's canonical text (one letter; numbers rounded to the
exercise's decimals; a dict's items sorted). The learner's answer is put in the same form
and sealed; equal seals mean a right answer.

    canonical   the text an answer is sealed as
    seal        the seal of an answer's canonical text, for one exercise
    sealed_in   whether any canonical form of an answer within a tolerance has a seal
    check_sealed  a compute exercise's checker: numbers, or a dict of them, against a seal

A prediction has a few choices, so anyone can try each of them (the checker itself says
which is right): feedback is not grading, and the teacher's report counts a prediction as
answered, never as right (:mod:`minitx.course.teacher`). For numbers, the slow hash makes
guessing cost seconds per try instead of nanoseconds.

Seals are computed from the instructor's solutions (``seal(name, canonical(answer))``), and
``tests/course/test_exercise_answers.py`` checks every seal against the instructor's
answer, so none can go stale.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from minitx.course.exercises.plain import numbers, plain_int, plain_number

SALT = "minitx-exercises-v1"
ROUNDS = 20_000


def _number(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.00"


def canonical(answer: Any, decimals: int | None = None) -> str:
    """The text ``answer`` is sealed as: a letter or word lower-cased and stripped; a number
    (an int, a float, a NumPy scalar, a 0-d tensor) with ``decimals`` digits (an int as it
    is when ``decimals`` is None); a list or tuple as its items joined by commas; a dict as
    its sorted ``key=value`` items. A ``TypeError`` for anything else."""
    if isinstance(answer, str):
        return answer.strip().strip("()'\". ").lower()
    number = plain_number(answer)
    if number is not None:
        if decimals is None:
            if float(number) != int(number):
                raise TypeError(f"a whole number was expected, got {number!r}")
            return str(int(number))
        return _number(float(number), decimals)
    if type(answer) in (list, tuple):
        return ",".join(canonical(a, decimals) for a in answer)
    if type(answer) is dict:
        items = sorted((str(k), canonical(v, decimals)) for k, v in answer.items())
        return ";".join(f"{k}={v}" for k, v in items)
    raise TypeError(f"expected a letter, a number, or a list or dict of them, got "
                    f"{type(answer).__name__}")


def seal(name: str, text: str) -> str:
    """The seal of the canonical ``text`` as the answer to exercise ``name`` (hex)."""
    salt = f"{SALT}:{name}".encode()
    return hashlib.pbkdf2_hmac("sha256", text.encode(), salt, ROUNDS).hex()[:40]


def _nearby(values: list[float], decimals: int, atol: float) -> Iterable[list[float]]:
    """The roundings of ``values`` that a tolerance ``atol`` allows: each value rounded, and
    moved by ``atol`` either way before rounding (at most 3 per value, few values)."""
    options = []
    for v in values:
        options.append(sorted({round(v + d, decimals) for d in (-atol, 0.0, atol)}))
    combos: list[list[float]] = [[]]
    for opts in options:
        combos = [[*c, o] for c in combos for o in opts]
        if len(combos) > 81:
            break
    return combos


def sealed_in(name: str, values: list[float], seals: Iterable[str], *, decimals: int,
              atol: float = 0.0) -> str | None:
    """The first of ``seals`` that ``values`` (floats) seal to, rounded to ``decimals``
    within ``atol`` of themselves; None if none."""
    wanted = set(seals)
    if any(not math.isfinite(v) for v in values):
        return None
    for combo in _nearby(values, decimals, atol):
        s = seal(name, canonical(combo, decimals))
        if s in wanted:
            return s
    return None


def hint_for(name: str, text: str, hints: Mapping[str, str]) -> str | None:
    """The hint ``hints`` keeps for the sealed ``text`` (a known mistake's seal), if any."""
    return hints.get(seal(name, text))


def check_sealed(name: str, answer: Any, truth: str, *, count: int | None = None,
                 decimals: int | None = None, atol: float = 0.0,
                 hints: Mapping[str, str] | None = None, advice: str = "") -> str | None:
    """Check a computed answer against the seal ``truth``: None when right, else a hint.

    ``decimals`` None: one whole number (an int, a NumPy integer, a 0-d tensor, ``28272.0``);
    else ``count`` numbers (a list, tuple, array or tensor; ``count`` None: one number),
    rounded to ``decimals`` within ``atol``. ``hints`` maps the seal of a known mistake to
    what to think about; ``advice`` is the hint for any other wrong answer."""
    hints = hints or {}
    if decimals is None:
        whole = plain_int(answer)
        if whole is None:
            got = "a string" if isinstance(answer, str) else type(answer).__name__
            return f"answer with a whole number, got {got}"
        text = canonical(whole)
        return None if seal(name, text) == truth else hints.get(seal(name, text), advice)
    values = numbers(answer, count or 1)
    if isinstance(values, str):
        return values
    found = sealed_in(name, values, [truth, *hints], decimals=decimals, atol=atol)
    if found == truth:
        return None
    return hints.get(found, advice) if found is not None else advice


__all__ = ["canonical", "check_sealed", "hint_for", "seal", "sealed_in"]
