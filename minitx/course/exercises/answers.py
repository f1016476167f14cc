"""The instructor's answer key: solutions and model answers, kept out of the package.

The wheel a student installs holds the exercises' prompts and checkers, never their
answers. The answers live in the repository, one file per notebook,
``instructor/solutions/nbNN.py``, each with two dicts:

* ``SOLUTIONS``: exercise name -> a function of no arguments that returns an answer the
  checker accepts (for ``implement``, the function a learner would write);
* ``MODEL_ANSWERS``: open question name -> the model answer a teacher reads.

:func:`solutions_dir` finds that folder: ``$MINITX_SOLUTIONS`` if set, else
``instructor/solutions`` of the checkout minitx runs from. Without one, :func:`solution`
and :func:`model_answer` raise :class:`SolutionsUnavailable`, which says where the answers
are.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from minitx.course.exercises import NOTEBOOKS, get, names

ENV = "MINITX_SOLUTIONS"
_LOADED: dict[tuple[Path, str], ModuleType] = {}


class SolutionsUnavailable(FileNotFoundError):
    """No instructor's answer key here: minitx does not run from the instructor's checkout
    and ``$MINITX_SOLUTIONS`` names no folder."""


def _checkout_key() -> Path | None:
    root = Path(__file__).resolve().parents[3]  # minitx/course/exercises/answers.py
    if not (root / "pyproject.toml").is_file():
        return None
    folder = root / "instructor" / "solutions"
    return folder if folder.is_dir() else None


def solutions_dir() -> Path | None:
    """The folder of the answer files (``nbNN.py``), or None where there is none:
    ``$MINITX_SOLUTIONS`` if set (it must be a folder), else the checkout's
    ``instructor/solutions``."""
    override = os.environ.get(ENV)
    if override:
        folder = Path(override).expanduser()
        if not folder.is_dir():
            raise SolutionsUnavailable(f"{ENV}={override} is not a folder of answer files")
        return folder
    return _checkout_key()


def available() -> bool:
    """Whether the answer key can be read here."""
    try:
        return solutions_dir() is not None
    except SolutionsUnavailable:
        return False


def _missing() -> SolutionsUnavailable:
    return SolutionsUnavailable(
        "solutions and model answers ship only with the instructor's checkout of the minitx "
        "repository (instructor/solutions/), not with the installed package: run this from "
        f"that checkout, or set {ENV} to a copy of its instructor/solutions folder"
    )


def key(notebook: str) -> ModuleType:
    """The answer file of ``notebook`` ("04"), loaded once and checked against the
    exercises the package registers: a solution for every checked exercise and a model
    answer for every open question, nothing else."""
    if notebook not in NOTEBOOKS:
        raise ValueError(f"notebook must be one of {', '.join(NOTEBOOKS)}; got {notebook!r}")
    folder = solutions_dir()
    if folder is None:
        raise _missing()
    path = folder / f"nb{notebook}.py"
    if (folder, notebook) not in _LOADED:
        if not path.is_file():
            raise SolutionsUnavailable(f"the answer key has no file {path}")
        module_name = f"_minitx_answers_nb{notebook}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # inspect.getsource and the tests find it there
        spec.loader.exec_module(module)
        _check_key(module, notebook, path)
        _LOADED[folder, notebook] = module
    return _LOADED[folder, notebook]


def _check_key(module: ModuleType, notebook: str, path: Path) -> None:
    """A ``ValueError`` naming what ``path`` lacks or holds in excess."""
    exercises = names(notebook)
    want = {
        "SOLUTIONS": {n for n in exercises if get(n).kind != "think"},
        "MODEL_ANSWERS": {n for n in exercises if get(n).kind == "think"},
    }
    for attr, expected in want.items():
        given = getattr(module, attr, None)
        if not isinstance(given, dict):
            raise ValueError(f"{path}: expected a dict {attr}, got {type(given).__name__}")
        missing, extra = sorted(expected - set(given)), sorted(set(given) - expected)
        if missing or extra:
            raise ValueError(
                f"{path}: {attr} must hold exactly {sorted(expected)}; "
                f"missing {missing}, unknown {extra}"
            )


def solution(name: str) -> Any:
    """The instructor's answer to the checked exercise ``name``, one its checker accepts
    (for ``implement``, the function)."""
    kind = get(name).kind
    if kind == "think":
        raise ValueError(f"{name!r} is an open question: it has a model answer, not a solution")
    return key(name.split(".")[0]).SOLUTIONS[name]()


def model_answer(name: str) -> str:
    """The model answer to the open question ``name``."""
    kind = get(name).kind
    if kind != "think":
        raise ValueError(f"{name!r} is a {kind} exercise: it has a solution, not a model answer")
    return key(name.split(".")[0]).MODEL_ANSWERS[name]


__all__ = [
    "ENV",
    "SolutionsUnavailable",
    "available",
    "key",
    "model_answer",
    "solution",
    "solutions_dir",
]
