"""The contract every registered exercise keeps (each notebook's own file tests its answers)."""

from __future__ import annotations

import pytest

from minitx.exercises import call_learner, check, close, names, prompt

ALL = names()


def test_every_notebook_has_three_to_six_exercises():
    per_notebook: dict[str, int] = {}
    for name in ALL:
        per_notebook[name.split(".")[0]] = per_notebook.get(name.split(".")[0], 0) + 1
    assert sorted(per_notebook) == ["01", "02", "03", "04", "05", "06", "07", "08", "09"]
    assert all(3 <= count <= 6 for count in per_notebook.values()), per_notebook


@pytest.mark.parametrize("name", ALL)
def test_unanswered_prints_a_reminder_and_never_passes(name, capsys):
    assert len(prompt(name)) > 20
    for placeholder in (None, ...):
        result = check(name, placeholder)
        assert not result.ok
        assert capsys.readouterr().out.strip() == (
            f"[{name}] not answered yet: replace the placeholder and run again."
        )


@pytest.mark.parametrize("name", ALL)
def test_an_answer_of_the_wrong_kind_is_a_hint_not_a_crash(name):
    result = check(name, object(), quiet=True)
    assert not result.ok
    assert result.message.startswith(f"[{name}] Not yet: ")


def test_unknown_exercise_names_the_known_ones():
    with pytest.raises(KeyError, match=r"04\.shapes"):
        check("99.nothing", 1)


def test_call_learner_turns_exceptions_into_hints():
    assert call_learner(lambda x: x + 1, 1) == (2, None)
    result, hint = call_learner(lambda x: 1 / x, 0)
    assert result is None and "ZeroDivisionError" in hint
    assert call_learner(42)[1] == "expected a function, got int"


def test_close_needs_the_same_shape():
    assert close([0.5, 0.25], [0.501, 0.249])
    assert not close([0.5, 0.25], [0.5, 0.26], atol=1e-3)
    assert not close([0.5], [0.5, 0.25])
