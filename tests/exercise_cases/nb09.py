"""Exercise cases of notebook 09: see tests/test_exercise_answers.py."""

from __future__ import annotations

import torch

from exercise_cases import Case
from minitx.exercises import nb09 as E


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
        cands = sorted(
            (
                (float(beam_scores[b, w] + log_probs[b, w, v]), w, v)
                for w in range(W)
                for v in range(V)
            ),
            reverse=True,
        )[:beam_width]
        out.append(cands)
    s = torch.tensor([[c[0] for c in row] for row in out])
    p = torch.tensor([[c[1] for c in row] for row in out], dtype=torch.int32)
    t = torch.tensor([[c[2] for c in row] for row in out], dtype=torch.int32)
    return s, p, t


CASES: dict[str, Case] = {
    "09.beam_step": Case(
        right=(
            beam_step,
            beam_step_by_loop,
        ),
        wrong=(
            (lambda lp, s, w: beam_step(lp, torch.zeros_like(s), w), "add the score of the beam"),
            (lambda lp, s, w: tuple(t.flip(-1) for t in beam_step(lp, s, w)), "best first"),
            (
                lambda lp, s, w: (beam_step(lp, s, w)[0], *beam_step(lp, s, w)[2:0:-1]),
                "do not name the candidate",
            ),
            (lambda lp, s, w: beam_step(lp, s, 1), "must be (B, beam_width)"),
            (lambda lp, s, w: beam_step(lp, s, w)[0], "three tensors"),
            (lambda lp, s, w: beam_step(lp[:, :1], s[:, :1], w), "first wrong score"),
        ),
    ),
    "09.kv_cache": Case(
        right=({"without": 253, "with": 22},),
        wrong=(
            ({"without": 22 * 22, "with": 22}, "not all of them"),
            ({"without": 100, "with": 22}, "add them up"),
            ({"without": 253, "with": 18}, "come from the target"),
            ({"without": 253, "with": 1}, "how many are new"),
            ({"without": 253.0, "with": 22}, "ints"),
            ([253, 22], "a dict"),
        ),
        never=("253",),
    ),
    "09.no_causal": Case(
        right=(
            {"loss": "lower", "accuracy": "lower"},
            {"loss": " Lower", "accuracy": "LOWER "},
        ),
        wrong=(
            ({"loss": "higher", "accuracy": "lower"}, "loss: during training"),
            ({"loss": "lower", "accuracy": "same"}, "accuracy: when it writes on"),
            ({"loss": "down", "accuracy": "lower"}, "loss: answer one of"),
            ("lower", "a dict with the keys"),
        ),
    ),
    "09.shift_right": Case(
        right=(
            shift_right,
            E.shift_right,
        ),
        wrong=(
            (lambda t, b: t, "first difference is at row 0, column 0"),
            (
                lambda t, b: torch.cat([torch.full_like(t[:, :1], b), t], 1),
                "you return shape (1, 2)",
            ),
            (
                lambda t, b: torch.cat([t[:, 1:], torch.full_like(t[:, :1], b)], 1),
                "first difference",
            ),
            (shift_in_place, "in place"),
            (lambda t, b: shift_right(t, b).float(), "integer ids"),
            (lambda t, b: shift_right(t, b).tolist(), "torch.Tensor"),
            (lambda t, b: 1 / 0, "ZeroDivisionError"),
            (3, "a function"),
        ),
        never=("cat", "[:, :-1]"),
    ),
}


def check_expected_values_agree_with_independent_reasoning():
    steps = E.KV_QUESTION["steps"]
    assert E.expected_kv_keys(**E.KV_QUESTION) == {
        "without": steps * (steps + 1) // 2,
        "with": steps,
    }
    for tgt, bos in E._shift_cases():
        assert torch.equal(shift_right(tgt, bos), E.shift_right(tgt, bos))


VALUE_CHECKS = [check_expected_values_agree_with_independent_reasoning]
