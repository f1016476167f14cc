"""What every exercise test asserts about ``minitx.course.exercises.check``'s verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from minitx.course.exercises import check


def assert_correct(name: str, answer: Any, capsys) -> None:
    """``answer`` passes, and the learner reads exactly "[name] Correct!"."""
    result = check(name, answer)
    assert result.ok and bool(result), result.message
    assert capsys.readouterr().out.strip() == f"[{name}] Correct!"


def assert_hint(name: str, answer: Any, capsys, hint: str | None = None) -> str:
    """``answer`` fails with a printed "[name] Not yet: ..." message (containing ``hint``
    when given); returns the hint text after the prefix."""
    result = check(name, answer)
    assert not result.ok and not bool(result)
    prefix = f"[{name}] Not yet: "
    assert result.message.startswith(prefix), result.message
    if hint is not None:
        assert hint in result.message, result.message
    assert capsys.readouterr().out.strip() == result.message
    return result.message.removeprefix(prefix)


def saved_notebook(path: Path, cells: list[str]) -> Path:
    """A saved notebook of code cells, as a learner's would be, at ``path``."""
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": source} for source in cells],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path
