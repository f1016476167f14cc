"""Exercise cases of notebook 03: see tests/test_exercise_answers.py."""

from __future__ import annotations

import datetime

import torch

from exercise_cases import Case
from minitx.exercises import nb03

RIGHT_ISO = ["2005-04-03", "1951-11-30", "2049-02-01", "1987-07-14"]

CASES: dict[str, Case] = {
    "03.iso": Case(
        right=(RIGHT_ISO, tuple(f" {s} " for s in RIGHT_ISO)),
        wrong=(
            ("2005-04-03", "list of 4 strings"),
            (RIGHT_ISO[:2], "give 4 dates"),
            (["2005-03-04", *RIGHT_ISO[1:]], "#0: month and day are swapped"),
            ([RIGHT_ISO[0], "2051-11-30", *RIGHT_ISO[2:]], "#1: check the century rule"),
            ([*RIGHT_ISO[:2], "2049-2-1", RIGHT_ISO[3]], "#2: ISO is yyyy-mm-dd"),
            ([*RIGHT_ISO[:3], "1987-07-15"], "#3 is not right yet"),
            (["2005-03-04", "2051-11-30", "x", "y"], None),
        ),
        never=tuple(RIGHT_ISO),
    ),
    "03.additive": Case(
        right=([0.20, 0.36, 0.44], (0.2045, 0.3576, 0.4379)),
        wrong=(
            ([0.42, 0.16, 0.42], "dot-product weights"),
            ([0.3, 0.3, 0.3], "add up to 1"),
            ([0.5, 0.5], "give 3 weights"),
            ([0.33, 0.33, 0.34], "tanh of each entry"),
        ),
        never=("0.20", "0.36", "0.44"),
    ),
    "03.context": Case(
        right=([0.64, 0.80],),
        wrong=(([0.5, 0.5], "weighted sum"), ([0.64], "2")),
        unreadable=([None, "x"],),
    ),
    "03.dot": Case(
        right=([0.42, 0.16, 0.42],),
        wrong=(([0.20, 0.36, 0.44], "additive weights"), ([0.33, 0.33, 0.34], "s . h_j")),
    ),
    "03.memory": Case(
        right=({"without": 64, "with": 2560},),
        wrong=(
            ([64, 2560], "dict"),
            ({"without": 40, "with": 2560}, "one vector of hidden_size"),
            ({"without": 64, "with": 64}, "one state of hidden_size numbers per"),
            ({"without": 1, "with": 1}, None),
        ),
        never=("64", "2560"),
    ),
}


def check_nb03_expected_values_are_what_the_prompts_describe():
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


def check_nb03_expected_values_leave_the_random_state_alone():
    torch.manual_seed(123)
    a = torch.rand(3)
    torch.manual_seed(123)
    nb03.expected_memory()
    nb03.expected_additive()
    assert torch.equal(torch.rand(3), a)


VALUE_CHECKS = [
    check_nb03_expected_values_are_what_the_prompts_describe,
    check_nb03_expected_values_leave_the_random_state_alone,
]
