"""The exercises of notebook 05: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import pytest
import torch
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt

NB05 = ["05.combined", "05.convention", "05.leak", "05.mask_row", "05.z2", "05.zeros"]
INF = float("-inf")


def test_registered():
    assert [n for n in names() if n.startswith("05.")] == NB05
    for name in NB05:
        assert len(prompt(name)) > 20


@pytest.mark.parametrize(
    "name, answer",
    [
        ("05.zeros", [(1, 2), (1, 3), (2, 3)]),
        ("05.zeros", [[2, 3], [1, 3], [1, 2]]),  # any order, lists as pairs
        ("05.mask_row", [0, 0, 0, INF, INF]),
        ("05.mask_row", torch.tensor([0.0, 0.0, 0.0, INF, INF])),
        ("05.mask_row", ["0", "0", "0", "-inf", "-inf"]),
        ("05.z2", [0.5, 1.0]),
        ("05.z2", (0.50, 1.00)),
        ("05.combined", 12),
        ("05.combined", 12.0),
        ("05.convention", "~mask"),
        ("05.convention", " mask.logical_not() "),
        ("05.leak", 7),
    ],
)
def test_right_answers_pass(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(
    "name, answer, hint",
    [
        ("05.zeros", [(0, 1), (0, 2), (1, 2)], "count rows and columns from 1"),
        ("05.zeros", [(1, 1), (1, 2), (1, 3), (2, 3)], "diagonal is never blocked"),
        ("05.zeros", [(2, 1), (3, 1), (3, 2)], "transpose"),
        ("05.zeros", [(1, 2)], "blocks every key that comes after"),
        ("05.zeros", [(1, 2, 3)], "pair"),
        ("05.mask_row", [1, 1, 1, 0, 0], "boolean mask"),
        ("05.mask_row", [0, 0, 0, -1e9, -1e9], "either 0"),
        ("05.mask_row", [0, 0, INF, INF, INF], "positions 1, 2 and 3"),
        ("05.mask_row", [0, 0, 0, INF], "5"),
        ("05.z2", [1.0, 1.0], "that is Z_1"),
        ("05.z2", [0.67, 1.0], "without a mask"),
        ("05.z2", [0.5], "2 entries"),
        ("05.combined", 15, "causal mask alone"),
        ("05.combined", 15.5, "whole number"),
        ("05.combined", 9, "both masks allow it"),
        ("05.convention", "mask", "opposite"),
        ("05.convention", "not sure", "'mask' or '~mask'"),
        ("05.convention", True, "string"),
        ("05.leak", 8, "last position"),
        ("05.leak", 1, "t + 1"),
        ("05.leak", 4, "position by position"),
        ("05.leak", True, "whole number"),
    ],
)
def test_wrong_answers_get_a_hint(name, answer, hint, capsys):
    assert_hint(name, answer, capsys, hint)


def test_unreadable_answer_is_reported_not_raised():
    for name, answer in (("05.zeros", 3), ("05.mask_row", ["x"]), ("05.combined", "many")):
        result = check(name, answer, quiet=True)
        assert not result.ok and "could not read your answer" in result.message


def test_hints_do_not_reveal_the_solution():
    msg = check("05.z2", [0.0, 0.0], quiet=True).message
    assert "0.5" not in msg
    for answer in (9, 15):
        assert "12" not in check("05.combined", answer, quiet=True).message
    for answer in (4, 8):
        assert "7" not in check("05.leak", answer, quiet=True).message
    assert "~mask" not in check("05.convention", "mask", quiet=True).message
    msg = check("05.zeros", [(1, 2)], quiet=True).message
    assert "(1, 3)" not in msg and "(2, 3)" not in msg


def test_checkers_leave_the_global_random_state_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    check("05.convention", "~mask", quiet=True)
    check("05.leak", 7, quiet=True)
    assert torch.equal(torch.get_rng_state(), before)
