"""The exercises of notebook 09: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import pytest
import torch
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt
from minitx.exercises import nb09 as E

NB09 = ["09.beam_step", "09.kv_cache", "09.no_causal", "09.shift_right"]


def shift_right(tgt, bos_id):
    out = torch.empty_like(tgt)
    out[:, 0] = bos_id
    out[:, 1:] = tgt[:, :-1]
    return out


def shift_in_place(tgt, bos_id):
    tgt[:, 1:] = tgt[:, :-1].clone()
    tgt[:, 0] = bos_id
    return tgt


def beam_step(log_probs, beam_scores, beam_width):
    B, W, V = log_probs.shape
    total = (beam_scores[:, :, None] + log_probs).reshape(B, W * V)
    scores, flat = total.topk(beam_width, dim=-1)
    return scores, flat // V, flat % V


def beam_step_by_loop(log_probs, beam_scores, beam_width):
    """The same, one candidate at a time, with float32 outputs and int32 indices."""
    B, W, V = log_probs.shape
    out = []
    for b in range(B):
        cands = sorted(((float(beam_scores[b, w] + log_probs[b, w, v]), w, v)
                        for w in range(W) for v in range(V)), reverse=True)[:beam_width]
        out.append(cands)
    s = torch.tensor([[c[0] for c in row] for row in out])
    p = torch.tensor([[c[1] for c in row] for row in out], dtype=torch.int32)
    t = torch.tensor([[c[2] for c in row] for row in out], dtype=torch.int32)
    return s, p, t


def test_registered():
    assert [n for n in names() if n.startswith("09.")] == NB09
    for name in NB09:
        assert len(prompt(name)) > 20


def test_expected_values_agree_with_independent_reasoning():
    steps = E.KV_QUESTION["steps"]
    assert E.expected_kv_keys(**E.KV_QUESTION) == {"without": steps * (steps + 1) // 2,
                                                   "with": steps}
    for tgt, bos in E._shift_cases():
        assert torch.equal(shift_right(tgt, bos), E.shift_right(tgt, bos))


@pytest.mark.parametrize(
    "name, answer",
    [
        ("09.no_causal", {"loss": "lower", "accuracy": "lower"}),
        ("09.no_causal", {"loss": " Lower", "accuracy": "LOWER "}),
        ("09.shift_right", shift_right),
        ("09.shift_right", E.shift_right),
        ("09.beam_step", beam_step),
        ("09.beam_step", beam_step_by_loop),
        ("09.kv_cache", {"without": 253, "with": 22}),
    ],
)
def test_right_answers_pass(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(
    "name, answer, hint",
    [
        ("09.no_causal", {"loss": "higher", "accuracy": "lower"}, "loss: during training"),
        ("09.no_causal", {"loss": "lower", "accuracy": "same"}, "accuracy: when it writes on"),
        ("09.no_causal", {"loss": "down", "accuracy": "lower"}, "loss: answer one of"),
        ("09.no_causal", "lower", "a dict with the keys"),
        ("09.shift_right", lambda t, b: t, "first difference is at row 0, column 0"),
        ("09.shift_right", lambda t, b: torch.cat([torch.full_like(t[:, :1], b), t], 1),
         "you return shape (1, 2)"),
        ("09.shift_right", lambda t, b: torch.cat([t[:, 1:], torch.full_like(t[:, :1], b)], 1),
         "first difference"),
        ("09.shift_right", shift_in_place, "in place"),
        ("09.shift_right", lambda t, b: shift_right(t, b).float(), "integer ids"),
        ("09.shift_right", lambda t, b: shift_right(t, b).tolist(), "torch.Tensor"),
        ("09.shift_right", lambda t, b: 1 / 0, "ZeroDivisionError"),
        ("09.shift_right", 3, "a function"),
        ("09.beam_step", lambda lp, s, w: beam_step(lp, torch.zeros_like(s), w),
         "add the score of the beam"),
        ("09.beam_step", lambda lp, s, w: tuple(t.flip(-1) for t in beam_step(lp, s, w)),
         "best first"),
        ("09.beam_step", lambda lp, s, w: (beam_step(lp, s, w)[0], *beam_step(lp, s, w)[2:0:-1]),
         "do not name the candidate"),
        ("09.beam_step", lambda lp, s, w: beam_step(lp, s, 1), "must be (B, beam_width)"),
        ("09.beam_step", lambda lp, s, w: beam_step(lp, s, w)[0], "three tensors"),
        ("09.beam_step", lambda lp, s, w: beam_step(lp[:, :1], s[:, :1], w), "first wrong score"),
        ("09.kv_cache", {"without": 22 * 22, "with": 22}, "not all of them"),
        ("09.kv_cache", {"without": 100, "with": 22}, "add them up"),
        ("09.kv_cache", {"without": 253, "with": 18}, "come from the target"),
        ("09.kv_cache", {"without": 253, "with": 1}, "how many are new"),
        ("09.kv_cache", {"without": 253.0, "with": 22}, "ints"),
        ("09.kv_cache", [253, 22], "a dict"),
    ],
)
def test_wrong_answers_get_a_hint(name, answer, hint, capsys):
    assert_hint(name, answer, capsys, hint)


def test_hints_never_give_the_solution(capsys):
    text = assert_hint("09.shift_right", lambda t, b: t, capsys)
    assert "cat" not in text and "[:, :-1]" not in text
    text = assert_hint("09.kv_cache", {"without": 1, "with": 1}, capsys)
    assert "253" not in text and "22" not in text


def test_checking_does_not_move_the_global_rng():
    torch.manual_seed(0)
    a = torch.rand(3)
    torch.manual_seed(0)
    check("09.shift_right", shift_right, quiet=True)
    check("09.beam_step", beam_step, quiet=True)
    check("09.kv_cache", {"without": 1, "with": 1}, quiet=True)
    assert torch.equal(torch.rand(3), a)
