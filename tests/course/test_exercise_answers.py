"""Every checked exercise of the course, driven by one table.

The table is the union of ``CASES`` in ``tests/exercise_cases/nbNN.py``. For each exercise
it gives the answers that must pass, the wrong answers (each with the hint text it must
get, where one is named), the strings no hint may contain, and the answers the checker
cannot read. Every case is checked the same way:

* a right answer passes, and the learner reads exactly "[name] Correct!";
* a wrong or unreadable answer fails with a printed "[name] Not yet: <hint>", the hint is
  more than a few words, contains the named text, and reveals neither a right answer nor
  any of the exercise's ``never`` strings (unless the named hint text itself contains it);
* the instructor's solution (``instructor/solutions/nbNN.py``, outside the package) passes;
* checking any answer leaves the learner's global torch RNG where it was.

Right and wrong answers are worked out by hand, independently of the package the checkers
use; each case file's ``VALUE_CHECKS`` compare the checkers' expected values with
independent computations.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import torch

from minitx.course.exercises import NOTEBOOKS, answers, call_learner, check, close, get, names

if not answers.available():  # the cases hold the instructor's solutions
    pytest.skip("the instructor's answer key (instructor/solutions/) is not here",
                allow_module_level=True)

from exercise_asserts import assert_correct, assert_hint
from exercise_cases import Case

UNREADABLE = "could not read your answer"
MODULES = {nb: importlib.import_module(f"exercise_cases.nb{nb}") for nb in NOTEBOOKS if names(nb)}
TABLE: dict[str, Case] = {name: case for m in MODULES.values() for name, case in m.CASES.items()}
CHECKED = [n for n in names() if get(n).kind != "think"]


def _id(answer: Any) -> str:
    text = getattr(answer, "__name__", None) if callable(answer) else None
    return text or repr(answer)[:40]


RIGHT_CASES = [
    pytest.param(name, answer, id=f"{name}={_id(answer)}")
    for name, case in TABLE.items()
    for answer in case.right
]
WRONG_CASES = [
    pytest.param(name, answer, hint, id=f"{name}={_id(answer)}")
    for name, case in TABLE.items()
    for answer, hint in (*case.wrong, *((a, UNREADABLE) for a in case.unreadable))
]
VALUE_CHECKS = [
    pytest.param(fn, id=f"{nb}.{fn.__name__}") for nb, m in MODULES.items() for fn in m.VALUE_CHECKS
]


def test_every_checked_exercise_is_in_the_table_and_every_entry_is_registered():
    assert sorted(TABLE) == CHECKED


@pytest.mark.parametrize("name", CHECKED)
def test_the_table_has_a_right_and_a_wrong_answer(name):
    assert TABLE[name].right and TABLE[name].wrong, name


@pytest.mark.parametrize(("name", "answer"), RIGHT_CASES)
def test_right_answer_passes(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(("name", "answer", "hint"), WRONG_CASES)
def test_wrong_answer_gets_a_hint_that_does_not_reveal_the_solution(name, answer, hint, capsys):
    said = assert_hint(name, answer, capsys, hint)
    assert len(said) > 10
    secrets = (*TABLE[name].never, *(str(a) for a in TABLE[name].right if not callable(a)))
    for secret in secrets:
        assert (hint is not None and secret in hint) or secret not in said, (secret, said)


@pytest.mark.parametrize("name", CHECKED)
def test_the_instructors_solution_passes(name, capsys):
    assert_correct(name, answers.solution(name), capsys)


@pytest.mark.parametrize("name", CHECKED)
def test_unanswered_prints_a_reminder_and_never_passes(name, capsys):
    assert len(get(name).prompt) > 20
    for placeholder in (None, ...):
        result = check(name, placeholder)
        assert not result.ok
        assert capsys.readouterr().out.strip() == (
            f"[{name}] not answered yet: replace the placeholder and run again."
        )


@pytest.mark.parametrize("name", CHECKED)
def test_an_answer_of_the_wrong_kind_is_a_hint_not_a_crash(name):
    result = check(name, object(), quiet=True)
    assert not result.ok
    assert result.message.startswith(f"[{name}] Not yet: ")


@pytest.mark.parametrize("name", list(TABLE))
def test_checking_leaves_the_global_rng_alone(name, capsys):
    case = TABLE[name]
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for answer in (*case.right, *(a for a, _ in case.wrong), *case.unreadable):
        check(name, answer, quiet=True)
    assert torch.equal(torch.rand(3), expected)  # checking does not move the learner's RNG


@pytest.mark.parametrize("fn", VALUE_CHECKS)
def test_the_checkers_expected_values_agree_with_independent_computations(fn):
    fn()


def test_open_questions_cannot_be_checked():
    open_questions = [n for n in names() if get(n).kind == "think"]
    for name in open_questions:
        assert len(answers.model_answer(name)) > 40
        with pytest.raises(ValueError, match="open question"):
            check(name, "anything")


def test_unknown_exercise_names_the_known_ones():
    with pytest.raises(KeyError, match=r"04\.\w+"):
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
