"""The exercises of notebook 08: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import pytest
import torch
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt
from minitx.exercises import nb08 as E

NB08 = ["08.context", "08.longest_match", "08.params", "08.temperature", "08.top_p"]


def longest_match(sample, corpus):
    best = 0
    for i in range(len(sample)):
        for j in range(i + best + 1, len(sample) + 1):
            if sample[i:j] not in corpus:
                break
            best = j - i
    return best


def prefix_only(sample, corpus):
    n = 0
    while n < len(sample) and sample[: n + 1] in corpus:
        n += 1
    return n


def by_formula(V, T, L, C):
    """GPT parameters with bias=False and a tied head: embeddings, blocks, final norm."""
    return V * C + T * C + L * (4 * C * C + 8 * C * C + 2 * C) + C


def test_registered():
    assert [n for n in names() if n.startswith("08.")] == NB08
    for name in NB08:
        assert len(prompt(name)) > 20


def test_expected_values_agree_with_independent_reasoning():
    c = E.PARAMS_CONFIG
    assert E.expected_params() == by_formula(c["vocab_size"], c["block_size"], c["n_layer"],
                                             c["n_embd"])
    p = torch.softmax(torch.tensor(E.TOP_P_LOGITS), -1)
    cum_before = torch.cumsum(p, 0) - p  # logits are sorted already
    assert E.expected_top_p() == set((cum_before < E.TOP_P).nonzero().flatten().tolist())
    assert E.expected_temperature() == pytest.approx(
        torch.softmax(torch.tensor(E.TEMPERATURE_LOGITS) / E.TEMPERATURE, -1)[0].item(),
        abs=1e-6)
    n, T = E.CONTEXT["prompt_length"], E.CONTEXT["block_size"]
    assert E.expected_context() == list(range(n - T, n))


@pytest.mark.parametrize(
    "name, answer",
    [
        ("08.params", by_formula(65, 64, 4, 128)),
        ("08.top_p", {0, 1, 2}),
        ("08.top_p", [2, 1, 0]),
        ("08.temperature", 0.982),
        ("08.context", list(range(4, 12))),
        ("08.context", range(4, 12)),
        ("08.longest_match", longest_match),
    ],
)
def test_right_answers_pass(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(
    "name, answer, hint",
    [
        ("08.params", by_formula(65, 64, 4, 128) + 65 * 128, "count it once"),
        ("08.params", by_formula(65, 64, 4, 128) - 64 * 128, "position embedding"),
        ("08.params", 123, "too few"),
        ("08.params", "804096", "answer with an int"),
        ("08.top_p", {0, 1}, "crosses the line"),
        ("08.top_p", {0, 1, 2, 3}, "too many"),
        ("08.top_p", 3, "set of ints"),
        ("08.temperature", 0.881, "temperature 1"),
        ("08.temperature", 0.6, "more likely, not less"),
        ("08.context", list(range(12)), "last block_size"),
        ("08.context", list(range(8)), "which end"),
        ("08.longest_match", prefix_only, "start anywhere"),
        ("08.longest_match", lambda s, c: 1 / 0, "ZeroDivisionError"),
        ("08.longest_match", lambda s, c: 1.0, "return an int"),
        ("08.longest_match", 5, "a function"),
    ],
)
def test_wrong_answers_get_a_hint(name, answer, hint, capsys):
    assert_hint(name, answer, capsys, hint)


def test_checking_does_not_move_the_global_rng():
    torch.manual_seed(0)
    a = torch.rand(3)
    torch.manual_seed(0)
    check("08.params", 1, quiet=True)
    check("08.context", [1], quiet=True)
    assert torch.equal(torch.rand(3), a)
