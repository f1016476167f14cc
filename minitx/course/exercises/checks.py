"""Building blocks the notebooks' exercise modules share.

* :func:`predict` registers a multiple-choice prediction, checked against the seal of the
  right letter (:mod:`~minitx.course.exercises.seal`): nothing here computes it;
* :func:`compute` registers a small case the learner works out by hand;
* :func:`implement` registers a function the learner writes (never the package's or
  PyTorch's, nor a wrapper of one: see :mod:`~minitx.course.exercises.guard`);
  :func:`compare` checks one on cases against a reference bound when the exercise was
  registered, with :func:`outputs` (plain copies of the tensors it returns),
  :func:`shape_hint` and :func:`first_difference`; :func:`compare_attention` checks
  ``attention(Q, K, V)``; :func:`first_hint` checks a function that returns no tensors.

The solutions are not here: they are the instructor's (:mod:`minitx.course.exercises.answers`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import call_learner, exercise
from minitx.course.exercises.guard import (
    forbidden_call,
    package_function,
    patched,
    resolve_path,
    run_forbidding,
    wrapped_package_function,
)
from minitx.course.exercises.plain import base_tensor, plain_tensor
from minitx.course.exercises.seal import canonical, seal

# ---- multiple-choice predictions ----------------------------------------------------------


def letter(answer: Any, choices: Mapping[str, str]) -> str | None:
    """The choice a learner picked, by letter ('b', 'B', '(b)', 'b)', "'b'") or by the
    choice's own words; None if neither."""
    if not isinstance(answer, str):
        return None
    text = answer.strip().strip("()'\". ").lower()
    if text in choices:
        return text
    return next((key for key, words in choices.items() if words.lower() == text), None)


def _listing(items: Iterable[str]) -> str:
    quoted = [f"'{item}'" for item in items]
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def keyed_letters(answer: Any, choices: Mapping[str, str], truth: str,
                  hints: Mapping[str, str], name: str) -> str | None:
    """Check a prediction ``name`` answered as ``{key: letter}``, one letter of ``choices``
    per key of ``hints``; ``truth`` is the seal of the right letters (of
    ``canonical({key: letter})``), ``hints[key]`` what to think about for that key. None
    when every letter is right; else every key's hint (which ones are wrong is not said)."""
    keys = list(hints)
    if not isinstance(answer, dict) or set(answer) != set(keys):
        named = " and ".join(repr(k) for k in keys)
        return f"answer with a dict with the keys {named}, e.g. {{{keys[0]!r}: 'a', ...}}"
    got = {k: letter(v, choices) for k, v in answer.items()}
    for key in keys:
        if got[key] is None:
            return f"{key}: answer with one letter, {_listing(choices)}"
    if seal(name, canonical(got)) == truth:
        return None
    return "not every letter is right. " + " ".join(f"{key}: {hints[key]}" for key in keys)


def predict(
    name: str,
    question: str,
    choices: Mapping[str, str],
    truth: str,
    hint: str,
    *,
    ask: str = "Answer with a letter.",
    whole: bool = False,
    hints: Mapping[str, str] | None = None,
) -> Callable[[Any], str | None]:
    """Register the prediction ``name``: ``question``, then the ``choices`` as "(a) ...;
    (b) ..." and ``ask`` (``whole=True``: ``question`` is the whole prompt, for a notebook
    that words its choices another way). ``truth`` is the :func:`~.seal.seal` of the right
    letter; no function here computes it. A wrong choice gets its own hint from ``hints``
    (by letter), else ``hint``; an answer that names no choice is asked for one letter."""
    hints = hints or {}
    prompt = question
    if not whole:
        options = "; ".join(f"({key}) {words}" for key, words in choices.items())
        prompt = f"{question} {options}. {ask}"

    def checker(answer: Any) -> str | None:
        picked = letter(answer, choices)
        if picked is None:
            return f"answer with one letter: {_listing(choices)}"
        return None if seal(name, picked) == truth else hints.get(picked, hint)

    return exercise(name, prompt, kind="predict")(checker)


# ---- functions the learner writes ---------------------------------------------------------


def _guarded(
    name: str, prompt: str, kind: str, guard: Callable[[Any], Any], forbid: tuple[str, ...] = ()
) -> Callable[[Callable[[Any], str | None]], Callable[[Any], str | None]]:
    """Register the decorated checker as the ``kind`` exercise ``name``; an answer for which
    ``guard`` gives a hint gets it before the checker runs, which runs it with the package
    functions in ``forbid`` disabled (:func:`~minitx.course.exercises.guard.run_forbidding`)."""

    def register(checker: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
        def check_answer(answer: Any) -> str | None:
            return guard(answer) or run_forbidding(checker, answer, forbid)

        check_answer.forbid = forbid  # type: ignore[attr-defined]
        exercise(name, prompt, kind=kind)(check_answer)
        return checker

    return register


def implement(
    name: str, prompt: str, *, forbid: tuple[str, ...] = ()
) -> Callable[[Callable[[Any], str | None]], Callable[[Any], str | None]]:
    """Register the decorated checker as the ``implement`` exercise ``name``. An answer
    that is not a function, that is one of the package's own functions (which the notebook
    may have imported), or that only calls one, gets a hint before the checker runs; so
    does one that names any of ``forbid`` (dotted paths of the package functions that
    already do the exercise's work) anywhere in its code, and one that calls any of them
    while the checker runs it (:func:`~minitx.course.exercises.guard.forbidding`)."""

    originals = {path: resolve_path(path) for path in forbid}

    def guard(answer: Any) -> str | None:
        replaced = patched(originals)
        if replaced is not None:
            return (f"{replaced} is not the package's own any more (it was replaced): "
                    "restart the kernel and run the notebook again")
        if not callable(answer):
            return f"expected a function, got {type(answer).__name__}"
        own = package_function(answer)
        if own is not None:
            return f"that is the package's own {own}, imported at the top: write your own"
        wrapped = wrapped_package_function(answer)
        if wrapped is not None:
            return f"that only calls the package's own {wrapped}: write the steps yourself"
        used = forbidden_call(answer, forbid)
        if used is not None:
            return f"that uses {used}, which already does this: write the steps without it"
        return None

    return _guarded(name, prompt, "implement", guard, forbid)


def compute(
    name: str,
    prompt: str,
    *,
    expect: tuple[type, ...] = (),
    expected: str = "",
) -> Callable[[Callable[[Any], str | None]], Callable[[Any], str | None]]:
    """Register the decorated checker as the ``compute`` exercise ``name``. With
    ``expect``, an answer of none of those types (a bool is never a number) is asked for
    ``expected`` ("a float") before the checker runs."""

    def guard(answer: Any) -> str | None:
        if expect and (isinstance(answer, bool) or not isinstance(answer, expect)):
            return f"answer with {expected}, got {type(answer).__name__}"
        return None

    return _guarded(name, prompt, "compute", guard)


def first_hint(fn: Any, cases: Iterable[tuple], judge: Callable[..., str | None]) -> str | None:
    """Run the learner's ``fn`` on a copy of each tuple of arguments in ``cases`` and ask
    ``judge(result, *args)`` about the result: the first hint (a raised exception's
    included), or None when every case passes. For a function that returns no tensors."""
    for args in cases:
        result, hint = call_learner(fn, *(_fresh(a) for a in args))
        hint = hint or judge(result, *args)
        if hint is not None:
            return hint
    return None


_COUNTS = {2: "two", 3: "three"}


def outputs(
    fn: Any,
    args: tuple,
    where: str,
    names: tuple[str, ...],
    *,
    arrays: bool = False,
    inputs: tuple[str, ...] = (),
) -> tuple[tuple[Tensor, ...] | None, str | None]:
    """Run the learner's ``fn`` on a copy of ``args``: ``(tensors, None)``, one tensor per
    name (one name: ``fn`` returns a tensor; more: a tuple of them in that order), or
    ``(None, hint)``. ``arrays``: accept whatever ``torch.as_tensor`` reads (a NumPy array,
    a list) in place of a tensor. ``where`` names the case in a hint ("with T=4, d=6").
    ``inputs`` names the first arguments, tensors ``fn`` must leave as they are."""
    given = tuple(_fresh(a) for a in args)
    result, hint = call_learner(fn, *given)
    if hint is not None:
        return None, f"{where}: {hint}"
    for name, before, after in zip(inputs, args, given, strict=False):
        if not torch.equal(before, after):
            return (
                None,
                f"your function changed {name} in place: leave its input as it is and return "
                "a new tensor",
            )
    if len(names) > 1:
        if not isinstance(result, tuple | list) or len(result) != len(names):
            count = _COUNTS.get(len(names), len(names))
            return None, f"return a tuple ({', '.join(names)}) of {count} tensors"
    else:
        result = (result,)
    tensors = []
    for value in result:
        if arrays and not isinstance(value, Tensor):
            value = plain_tensor(value) if value is not None else None
        if not isinstance(value, Tensor):
            if len(names) == 1:
                return None, f"return a tensor, got {type(value).__name__}"
            every = "both" if len(names) == 2 else "all"
            return (
                None,
                f"{' and '.join(names)} must {every} be tensors, got a {type(value).__name__}",
            )
        tensors.append(_plain_keeping_dtype(value))
    return tuple(tensors), None


def _plain_keeping_dtype(value: Tensor) -> Tensor:
    """A base-class copy of a learner's tensor, of its own dtype: a subclass's methods
    (an ``allclose`` that always says True) never run again."""
    return base_tensor(value)


def _fresh(value: Any) -> Any:
    """A copy of an argument for the learner's function, which may change it in place."""
    return value.clone() if isinstance(value, Tensor) else copy.deepcopy(value)


def shape_hint(
    got: Tensor, want: Tensor, name: str, where: str, about: str | None = None
) -> str | None:
    """None if ``got`` has ``want``'s shape, else a hint (``about``: what the shape is)."""
    if got.shape == want.shape:
        return None
    hint = f"{where}, {name} should have shape {tuple(want.shape)}, yours has {tuple(got.shape)}"
    return f"{hint}: {about}" if about else hint


def first_difference(
    got: Tensor, want: Tensor, *, atol: float = 1e-6, rtol: float = 0.0
) -> tuple[int, ...] | None:
    """The first index where ``got`` is not within ``atol + rtol * |want|`` of ``want`` (NaN
    never is), or None."""
    bad = ~torch.isclose(got.double(), want.double(), atol=atol, rtol=rtol)
    return tuple(int(i) for i in bad.nonzero()[0]) if bad.any() else None


def shapes(**tensors: Tensor) -> str:
    """Tensors' shapes as a hint names a case: shapes(Q=Q, K=K) is "Q (5, 4), K (5, 4)"."""
    return ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())


def at(index: tuple[int, ...], axes: tuple[str, ...] = ()) -> str:
    """An index as a hint says it: "row 0, position 3" with ``axes``, else "(0, 3)"."""
    if axes:
        return ", ".join(f"{axis} {i}" for axis, i in zip(axes, index, strict=True))
    return str(index) if len(index) != 1 else str(index[0])


def compare(
    fn: Any,
    cases: Iterable[tuple[str, tuple]],
    reference: Callable[..., Any],
    *,
    names: tuple[str, ...] = ("your result",),
    order: tuple[str, ...] | None = None,
    arrays: bool = False,
    inputs: tuple[str, ...] = (),
    dtype: bool = False,
    atol: float = 1e-6,
    rtol: float = 0.0,
    about: Mapping[str, str] | None = None,
    axes: tuple[str, ...] = (),
    expected: str = "the expected values",
    advice: Mapping[str, str] | None = None,
    diagnose: Callable[[str, dict[str, Tensor], dict[str, Tensor], tuple], str | None]
    | None = None,
) -> str | None:
    """Run the learner's ``fn`` on each ``(where, args)`` of ``cases`` against
    ``reference(*args)``; the first hint, or None when every case agrees.

    For each case, in turn: ``fn`` runs, leaves the tensors ``inputs`` names as they are
    and returns one tensor per name (see :func:`outputs`); outputs that come back in the
    wrong order; shapes (``about``: what each output's shape is); dtypes, where ``dtype``;
    NaN where the reference has none; then the values, output by output in ``order``
    (default: ``names``), within ``atol`` and ``rtol``. An output that differs first goes
    to ``diagnose(name, got, want, args)`` (tensors by name, in float64), which may name
    the likely mistake; else the hint gives the first differing position (``axes``: the
    names of its axes) and ``advice[name]``.
    """
    about, advice = about or {}, advice or {}
    order = order or names
    for where, args in cases:
        want_raw = reference(*args)
        want_raw = want_raw if len(names) > 1 else (want_raw,)
        got_raw, hint = outputs(fn, args, where, names, arrays=arrays, inputs=inputs)
        if hint is not None:
            return hint
        got = {n: g.double() for n, g in zip(names, got_raw, strict=True)}
        want = {n: w.detach().double() for n, w in zip(names, want_raw, strict=True)}
        if len(names) == 2 and _swapped(list(got.values()), list(want.values()), atol, rtol):
            a, b = names
            return (
                f"your {a} and {b} come back in the wrong order: return them in the order "
                f"({a}, {b})"
            )
        for n in order:
            hint = shape_hint(got[n], want[n], n, where, about.get(n))
            if hint is not None:
                return hint
        for n, g, w in zip(names, got_raw, want_raw, strict=True):
            if dtype and g.dtype != w.dtype:
                return f"{where}, {n} should be a {w.dtype} tensor, got {g.dtype}"
        right = []
        for n in order:
            if torch.isnan(got[n]).any() and not torch.isnan(want[n]).any():
                return f"{where}, {n} holds NaN"
            index = first_difference(got[n], want[n], atol=atol, rtol=rtol)
            if index is None:
                right.append(n)
                continue
            hint = diagnose(n, got, want, args) if diagnose else None
            if hint is None:
                hint = _differs(n, right, expected, at(index, axes), advice.get(n))
            return f"{where}, {hint}"
    return None


def _differs(name: str, right: list[str], expected: str, position: str, advice: str | None) -> str:
    """The hint for output ``name`` differing first at ``position``, the outputs ``right``
    having passed before it."""
    if right:
        verb = "is" if len(right) == 1 else "are"
        hint = f"{' and '.join(right)} {verb} right but {name} differs first at {position}"
    else:
        hint = f"{name} differs from {expected} first at {position}"
    return f"{hint}: {advice}" if advice else hint


def compare_attention(
    fn: Any,
    inputs: Iterable[tuple[Tensor, Tensor, Tensor]],
    reference: Callable[..., tuple[Tensor, Tensor]],
    *,
    diagnose: Callable[[str, dict[str, Tensor], dict[str, Tensor], tuple], str | None]
    | None = None,
    advice: str | None = None,
) -> str | None:
    """:func:`compare` for a learner's attention ``fn(Q, K, V) -> (Z, A)`` on each
    ``(Q, K, V)`` of ``inputs``: the weights A are judged first (``diagnose``, ``advice``:
    what a wrong A may come from), then Z, the weighted sum of the values."""
    values = "Z is the weighted sum of the values"
    return compare(
        fn,
        ((f"on {shapes(Q=Q, K=K, V=V)}", (Q, K, V)) for Q, K, V in inputs),
        reference,
        names=("Z", "A"),
        order=("A", "Z"),
        arrays=True,
        about={"Z": values},
        diagnose=diagnose,
        advice={"Z": values, **({"A": advice} if advice else {})},
    )


def _swapped(got: list[Tensor], want: list[Tensor], atol: float, rtol: float) -> bool:
    """True when two outputs fit the reference only in the other order."""

    def fits(outputs: list[Tensor]) -> bool:
        return all(
            g.shape == w.shape and first_difference(g, w, atol=atol, rtol=rtol) is None
            for g, w in zip(outputs, want, strict=True)
        )

    if [g.shape for g in got] == [w.shape for w in want]:
        return not fits(got) and fits(got[::-1])
    return [g.shape for g in got[::-1]] == [w.shape for w in want]
