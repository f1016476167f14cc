"""The exercises of notebook 06: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import pytest
import torch
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt
from minitx.exercises.nb06 import _planted_weights, expected_prev_head

NB06 = ["06.cross", "06.head_shape", "06.params", "06.prev_head", "06.torch_mask"]


def find_prev_head(weights):
    _, H, T, _ = weights.shape
    t = torch.arange(1, T)
    score = weights[:, :, t, t - 1].mean(-1)  # (L, H)
    i = int(score.argmax())
    return i // H, i % H


def sharpest_head(weights):
    H = weights.size(1)
    i = int(weights.max(-1).values.mean(-1).argmax())
    return i // H, i % H


def to_float_mask(mask):
    return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))


def test_registered():
    assert [n for n in names() if n.startswith("06.")] == NB06
    for name in NB06:
        assert len(prompt(name)) > 20


def test_planted_weights_are_attention_and_found_by_the_package():
    w = _planted_weights(3, 4, 16, (0, 3), seed=1)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 16))
    assert expected_prev_head(w) == (0, 3)
    assert sharpest_head(w) == (1, 0)  # the sink is sharper: a naive answer fails


@pytest.mark.parametrize(
    "name, answer",
    [
        ("06.params", 4 * 64 * 64 + 4 * 64),
        ("06.head_shape", (2, 6, 5, 8)),
        ("06.head_shape", [2, 6, 5, 8]),
        ("06.cross", {"out": (2, 3, 16), "weights": (2, 4, 3, 7)}),
        ("06.torch_mask", lambda m: ~m),
        ("06.torch_mask", lambda m: m.logical_not()),
        ("06.torch_mask", to_float_mask),
        ("06.prev_head", find_prev_head),
    ],
)
def test_right_answers_pass(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(
    "name, answer, hint",
    [
        ("06.params", 4 * 64 * 64, "biases"),
        ("06.params", 8 * (4 * 64 * 64 + 4 * 64), "full-size"),
        ("06.params", 1234, "number of heads should not matter"),
        ("06.params", "16640", "int"),
        ("06.head_shape", (2, 5, 6, 8), "wrong order"),
        ("06.head_shape", (2, 6, 5, 48), "d_model / n_heads"),
        ("06.head_shape", (2, 6, 5), "4 dimensions"),
        ("06.head_shape", "2, 6, 5, 8", "tuple of ints"),
        ("06.cross", {"out": (2, 7, 16), "weights": (2, 4, 3, 7)}, "one output per query"),
        ("06.cross", {"out": (2, 3, 16), "weights": (2, 4, 7, 3)}, "one row per query"),
        ("06.cross", [(2, 3, 16)], "dict"),
        ("06.torch_mask", lambda m: m, "unchanged"),
        ("06.torch_mask", lambda m: m.float(), "same keys"),
        ("06.torch_mask", lambda m: ~m.T, "same keys"),
        ("06.torch_mask", lambda m: 1 / 0, "ZeroDivisionError"),
        ("06.torch_mask", lambda m: ~m[:2], "same shape"),
        ("06.torch_mask", "~mask", "function"),
        ("06.prev_head", sharpest_head, "first token"),
        ("06.prev_head", lambda w: (0, 0), "average"),
        ("06.prev_head", lambda w: 3, "pair"),
    ],
)
def test_wrong_answers_get_a_hint(name, answer, hint, capsys):
    assert_hint(name, answer, capsys, hint)


def test_unanswered_and_rng_untouched(capsys):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for name in NB06:
        assert not check(name, None).ok
    check("06.torch_mask", lambda m: ~m)
    check("06.prev_head", find_prev_head)
    assert torch.equal(torch.rand(3), expected)  # checking does not move the learner's RNG
    assert "not answered yet" in capsys.readouterr().out
