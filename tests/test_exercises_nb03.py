"""The exercises of notebook 03: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import datetime

import pytest
import torch
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, nb03, prompt

NB03 = ["03.additive", "03.context", "03.dot", "03.iso", "03.memory"]
RIGHT_ISO = ["2005-04-03", "1951-11-30", "2049-02-01", "1987-07-14"]


def test_registered():
    assert [n for n in names() if n.startswith("03.")] == NB03
    for name in NB03:
        assert len(prompt(name)) > 20


def test_expected_values_are_what_the_prompts_describe():
    sources = ["3/4/05", "nov 30 51", "01.02.2049", "tuesday the 14th of july 1987"]
    assert nb03.iso_sources() == sources
    assert [datetime.date.fromisoformat(s) for s in nb03.expected_iso()] == [
        d for d, _ in nb03.ISO_CASES
    ]
    # by hand: scores v . tanh(s + h_j) with s = [1, 0]
    scores = torch.tensor([2 * 0 + torch.tanh(torch.tensor(2.0)), 2 * torch.tanh(torch.tensor(1.0)),
                           torch.tanh(torch.tensor(2.0)) + torch.tanh(torch.tensor(1.0))],
                          dtype=torch.float64)  # fmt: skip
    weights, context = nb03.expected_additive()
    torch.testing.assert_close(weights, torch.softmax(scores, 0))
    torch.testing.assert_close(context, weights @ torch.tensor(nb03.H, dtype=torch.float64))
    torch.testing.assert_close(
        nb03.expected_dot(), torch.softmax(torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64), 0)
    )
    assert nb03.expected_memory() == {"without": 64, "with": 40 * 64}


def test_expected_values_leave_the_random_state_alone():
    torch.manual_seed(123)
    a = torch.rand(3)
    torch.manual_seed(123)
    nb03.expected_memory()
    nb03.expected_additive()
    assert torch.equal(torch.rand(3), a)


@pytest.mark.parametrize(
    "name, answer",
    [
        ("03.iso", RIGHT_ISO),
        ("03.iso", tuple(f" {s} " for s in RIGHT_ISO)),
        ("03.additive", [0.20, 0.36, 0.44]),
        ("03.additive", (0.2045, 0.3576, 0.4379)),
        ("03.context", [0.64, 0.80]),
        ("03.dot", [0.42, 0.16, 0.42]),
        ("03.memory", {"without": 64, "with": 2560}),
    ],
)
def test_right_answers_pass(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(
    "name, answer, hint",
    [
        ("03.iso", "2005-04-03", "list of 4 strings"),
        ("03.iso", RIGHT_ISO[:2], "give 4 dates"),
        ("03.iso", ["2005-03-04", *RIGHT_ISO[1:]], "#0: month and day are swapped"),
        ("03.iso", [RIGHT_ISO[0], "2051-11-30", *RIGHT_ISO[2:]], "#1: check the century rule"),
        ("03.iso", [*RIGHT_ISO[:2], "2049-2-1", RIGHT_ISO[3]], "#2: ISO is yyyy-mm-dd"),
        ("03.iso", [*RIGHT_ISO[:3], "1987-07-15"], "#3 is not right yet"),
        ("03.additive", [0.42, 0.16, 0.42], "dot-product weights"),
        ("03.additive", [0.3, 0.3, 0.3], "add up to 1"),
        ("03.additive", [0.5, 0.5], "give 3 weights"),
        ("03.additive", [0.33, 0.33, 0.34], "tanh of each entry"),
        ("03.context", [0.5, 0.5], "weighted sum"),
        ("03.context", [0.64], "2"),
        ("03.dot", [0.20, 0.36, 0.44], "additive weights"),
        ("03.dot", [0.33, 0.33, 0.34], "s . h_j"),
        ("03.memory", [64, 2560], "dict"),
        ("03.memory", {"without": 40, "with": 2560}, "one vector of hidden_size"),
        ("03.memory", {"without": 64, "with": 64}, "one state of hidden_size numbers per"),
    ],
)
def test_wrong_answers_get_a_hint(name, answer, hint, capsys):
    assert_hint(name, answer, capsys, hint)


def test_unreadable_answer_is_reported_not_raised():
    result = check("03.context", [None, "x"], quiet=True)
    assert not result.ok and "could not read your answer" in result.message


def test_hints_do_not_reveal_the_solution():
    for answer in ([0.33, 0.33, 0.34], [0.3, 0.3, 0.3], [0.42, 0.16, 0.42]):
        msg = check("03.additive", answer, quiet=True).message
        assert "0.20" not in msg and "0.36" not in msg and "0.44" not in msg
    msg = check("03.iso", ["2005-03-04", "2051-11-30", "x", "y"], quiet=True).message
    assert not any(s in msg for s in RIGHT_ISO)
    msg = check("03.memory", {"without": 1, "with": 1}, quiet=True).message
    assert "64" not in msg and "2560" not in msg
