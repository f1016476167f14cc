"""A curious student against the feedback checks: every route that once passed without the
work, tried on every exercise it applies to. Each must be refused.

* truths in the package: every value of an exercise module, and what every callable of it
  (private ones too) returns when called with no argument;
* the checker's own closures, defaults and globals;
* unsalted hashes of a choice, as an earlier checker kept them;
* objects that lie: an ``__eq__`` that is always True, a tensor subclass whose comparisons
  all say True, returned by an implement answer too;
* the package's and PyTorch's own pieces, wrapped in every way the case files list
  (``CHEATS``), and wrappers of every function an exercise forbids;
* a patched reference: the package function replaced by a wrong answer, then that answer.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import types
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from minitx.course.exercises import NOTEBOOKS, answers, check, get, names
from minitx.course.exercises.guard import resolve_path

if not answers.available():  # the lying answers are built from the instructor's solutions
    pytest.skip("the instructor's answer key (instructor/solutions/) is not here",
                allow_module_level=True)

CHECKED = [n for n in names() if get(n).kind in ("predict", "compute")]
IMPLEMENT = [n for n in names() if get(n).kind == "implement"]
CASES = {nb: importlib.import_module(f"exercise_cases.nb{nb}") for nb in NOTEBOOKS if names(nb)}
CHEATS = {name: cheats for m in CASES.values() for name, cheats in getattr(m, "CHEATS", {}).items()}


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(f"minitx.course.exercises.nb{name[:2]}")


def _no_arguments(fn: Any) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in signature.parameters.values())


def _called(fn: Any) -> list[Any]:
    """What ``fn`` returns when called with no argument; a callable that raises hands the
    student nothing, so it gives no candidate."""
    try:
        return [fn()]
    except Exception:  # the student's call fails the same way: no answer to hand in
        return []


def module_candidates(module: types.ModuleType) -> list[Any]:
    """Every module-level value of ``module``, and every value its callables return."""
    found = []
    for key, value in vars(module).items():
        if key.startswith("__") or isinstance(value, types.ModuleType):
            continue
        found.append(value)
        if callable(value) and _no_arguments(value):
            found += _called(value)
    return found


def _functions_of(fn: Any, seen: set[int]) -> Iterator[Any]:
    """``fn``'s closure, defaults and (exercise-module) globals, and theirs, recursively."""
    if id(fn) in seen:
        return
    seen.add(id(fn))
    inner = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
             if c.cell_contents is not None] if hasattr(fn, "__closure__") else []
    inner += list(getattr(fn, "__defaults__", None) or ())
    for value in inner:
        yield value
        if isinstance(value, types.FunctionType | functools.partial):
            yield from _functions_of(value, seen)
        if isinstance(value, dict) and not all(isinstance(v, str) for v in value.values()):
            yield from value.values()  # (the choices' words are every choice: not a leak)


def checker_candidates(name: str) -> list[Any]:
    found = []
    for value in _functions_of(get(name).checker, set()):
        found.append(value)
        if callable(value) and not isinstance(value, type) and _no_arguments(value):
            found += _called(value)
    return found


class AlwaysEqual:
    """An answer that says it equals anything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__

    def __len__(self) -> int:
        return 2

    def __getitem__(self, key: Any) -> AlwaysEqual:
        return self

    def __iter__(self) -> Iterator[AlwaysEqual]:
        return iter([self, self])


class LyingTensor(torch.Tensor):
    """A tensor whose every comparison says True."""

    @classmethod
    def __torch_function__(cls, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.__name__ in ("allclose", "equal"):
            return True
        if func.__name__ in ("isclose", "eq", "__eq__"):
            return torch.ones(args[0].shape, dtype=torch.bool)
        return super().__torch_function__(func, types_, args, kwargs)


def lying(value: Any) -> Any:
    """``value`` with every tensor in it replaced by a lying one of the same shape, full of 7."""
    if isinstance(value, torch.Tensor):
        return torch.full_like(value.detach(), 7).as_subclass(LyingTensor)
    if isinstance(value, tuple | list) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(lying(v) for v in value)
    return value


def _refused(name: str, answer: Any) -> bool:
    return not check(name, answer, quiet=True).ok


# ---- predict and compute ---------------------------------------------------------------


@pytest.mark.parametrize("name", CHECKED)
def test_no_value_or_callable_of_the_package_is_an_answer(name):
    """Truth functions, module values, closures, defaults: none is accepted."""
    candidates = module_candidates(_module(name)) + checker_candidates(name)
    assert len(candidates) > 3
    passed = [repr(c)[:60] for c in candidates if not _refused(name, c)]
    assert not passed, f"{name} accepted what the package holds: {passed}"


@pytest.mark.parametrize("name", [n for n in CHECKED if get(n).kind == "predict"])
def test_no_unsalted_hash_of_a_choice_is_kept(name):
    held = {v for v in module_candidates(_module(name)) + checker_candidates(name)
            if isinstance(v, str)}
    for letter in "abcdefgh":
        for text in (f"{name}:{letter}", letter):
            assert hashlib.sha256(text.encode()).hexdigest() not in held
            assert hashlib.md5(text.encode()).hexdigest() not in held


@pytest.mark.parametrize("name", CHECKED)
def test_objects_that_lie_are_refused(name):
    assert _refused(name, AlwaysEqual())
    assert _refused(name, torch.zeros(2).as_subclass(LyingTensor))
    assert _refused(name, {k: AlwaysEqual() for k in "abcd"})


# ---- implement ------------------------------------------------------------------------


def test_every_implement_exercise_lists_its_cheats():
    missing = [n for n in IMPLEMENT if len(CHEATS.get(n, ())) < 3]
    assert not missing, f"CHEATS in tests/exercise_cases lack: {missing}"


CHEAT_CASES = [pytest.param(name, cheat, id=f"{name}-{i}")
               for name, cheats in CHEATS.items() for i, cheat in enumerate(cheats)]


@pytest.mark.parametrize(("name", "cheat"), CHEAT_CASES)
def test_every_cheat_is_refused(name, cheat):
    result = check(name, cheat, quiet=True)
    assert not result.ok, f"{name} accepted a cheat: {getattr(cheat, '__name__', cheat)}"


@pytest.mark.parametrize("name", IMPLEMENT)
def test_every_implement_exercise_forbids_the_package_and_pytorch(name):
    forbid = getattr(get(name).checker, "forbid", ())
    assert any(p.startswith("minitx.") for p in forbid), forbid
    for path in forbid:
        resolve_path(path)  # each names something that exists


@pytest.mark.parametrize("name", IMPLEMENT)
def test_wrappers_of_what_is_forbidden_are_refused(name):
    for path in getattr(get(name).checker, "forbid", ()):
        target = resolve_path(path)

        def one_line(*args, target=target):
            return target(*args)

        def two_lines(*args, target=target):
            result = target(*args)
            return result

        def plus_zero(*args, target=target):
            result = target(*args)
            return tuple(r + 0 for r in result) if isinstance(result, tuple) else result + 0

        for cheat in (one_line, two_lines, plus_zero):
            assert _refused(name, cheat), f"{name} accepted a wrapper of {path}"


@pytest.mark.parametrize("name", IMPLEMENT)
def test_an_answer_returning_lying_tensors_is_refused(name):
    solution = answers.solution(name)
    lies = []

    def liar(*args, **kwargs):
        honest = solution(*args, **kwargs)
        lies.append(lying(honest) is not honest)
        return lying(honest)

    assert check(name, solution, quiet=True).ok  # the honest answer passes
    refused = _refused(name, liar)
    if not any(lies):
        pytest.skip(f"{name}'s answer returns no tensor to lie with")
    assert refused


@pytest.mark.parametrize("name", IMPLEMENT)
def test_patching_the_reference_changes_nothing(name, monkeypatch):
    """The package function replaced by a wrong answer, then that wrong answer submitted."""
    case = CASES[name[:2]].CASES.get(name)
    wrong = [a for a, _ in (case.wrong if case else ()) if callable(a)]
    if not wrong:
        pytest.skip(f"{name} has no wrong function in its case file")
    forbid = [p for p in getattr(get(name).checker, "forbid", ()) if p.startswith("minitx.")]
    for path in forbid:
        module, _, attr = path.rpartition(".")
        with contextlib.suppress(ImportError):
            monkeypatch.setattr(importlib.import_module(module), attr, wrong[0])
        if hasattr(_module(name), attr):
            monkeypatch.setattr(_module(name), attr, wrong[0])
    assert _refused(name, wrong[0])


def test_honest_answers_written_from_scratch_pass_in_many_types():
    """The case files hold at least 25 right answers to implement and compute exercises that
    are not the instructor's own (float32, float64, NumPy, other types); each passes
    (tests/course/test_exercise_answers.py checks every one)."""
    written = []
    for name in (n for n in names() if get(n).kind in ("implement", "compute")):
        case = CASES[name[:2]].CASES.get(name)
        key = answers.solution(name)
        written += [a for a in (case.right if case else ()) if a is not key]
    assert len(written) >= 25, len(written)
    assert all(check(n, a, quiet=True).ok for n, a in _right_pairs())


def _right_pairs() -> Iterator[tuple[str, Any]]:
    for name in (n for n in names() if get(n).kind in ("implement", "compute")):
        case = CASES[name[:2]].CASES.get(name)
        yield from ((name, a) for a in (case.right if case else ()))
