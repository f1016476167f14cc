"""Exercise cases of notebook 10: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import torch

from exercise_cases import Case, prediction, solution
from minitx.course.exercises import nb10 as E
from minitx.nn import encoder_decoder, generation


def shift_right(tgt, bos_id):
    out = torch.empty_like(tgt)
    out[:, 0] = bos_id
    out[:, 1:] = tgt[:, :-1]
    return out


def shift_in_place(tgt, bos_id):
    tgt[:, 1:] = tgt[:, :-1].clone()
    tgt[:, 0] = bos_id
    return tgt


def key_vectors_by_formula(steps, source_length):
    # step t reads a prefix of t tokens: 1 + 2 + ... + steps keys; with the cache, 1 per step
    return {"without": steps * (steps + 1) // 2, "with": steps}


def key_vectors_by_loop(steps, source_length):
    without = 0
    for t in range(1, steps + 1):
        without += t
    return {"without": without, "with": sum(1 for _ in range(steps))}


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
    "10.beam_step": Case(
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
            (lambda lp, s, w: beam_step(lp, s, 1), "(B, beam_width)"),
            (lambda lp, s, w: beam_step(lp, s, w)[0], "three tensors"),
            (lambda lp, s, w: beam_step(lp[:, :1], s[:, :1], w), "first wrong score"),
            (generation.beam_step, "package's own beam_step"),
        ),
    ),
    "10.kv_cache": Case(
        right=(key_vectors_by_formula, key_vectors_by_loop, solution("10.kv_cache")),
        wrong=(
            (lambda steps, S: {"without": steps * steps, "with": steps}, "not all of them"),
            (lambda steps, S: {"without": steps * S, "with": steps}, "not all of them"),
            (lambda steps, S: {"without": 2 * steps, "with": steps}, "add them up"),
            (lambda steps, S: {"without": steps * (steps + 1) // 2, "with": S}, "from the target"),
            (lambda steps, S: {"without": steps * (steps + 1) // 2, "with": 1}, "how many are new"),
            (lambda steps, S: {"without": steps * (steps + 1) / 2, "with": steps}, "ints"),
            (lambda steps, S: [steps, steps], "a dict"),
            ({"without": 15, "with": 5}, "a function"),
        ),
        never=("(steps + 1)", "sum(range"),
    ),
    "10.source_change": prediction(
        ("C", " (c) "),  # a letter in any case, with or without brackets
        {"a": "does the memory change", "b": "which mask, if any", "d": "untrained"},
        no_letter=("x", 3),
        never=("all 11", "every position"),
    ),
    "10.shift_right": Case(
        right=(
            shift_right,
            solution("10.shift_right"),
        ),
        wrong=(
            (lambda t, b: t, "first difference is at row 0, column 0"),
            (
                lambda t, b: torch.cat([torch.full_like(t[:, :1], b), t], 1),
                "yours has (1, 2)",
            ),
            (
                lambda t, b: torch.cat([t[:, 1:], torch.full_like(t[:, :1], b)], 1),
                "first difference",
            ),
            (shift_in_place, "in place"),
            (lambda t, b: shift_right(t, b).float(), "torch.int64 tensor"),
            (lambda t, b: shift_right(t, b).tolist(), "return a tensor"),
            (lambda t, b: 1 / 0, "ZeroDivisionError"),
            (3, "a function"),
            (encoder_decoder.shift_right, "package's own shift_right"),
        ),
        never=("cat", "[:, :-1]"),
    ),
}


def check_expected_values_agree_with_independent_reasoning():
    for steps, S in E.KV_CASES:
        assert E.expected_kv_keys(steps, S) == key_vectors_by_formula(steps, S)
    # The checkers' references (the package's) and the instructor's solutions.
    for tgt, bos in E._shift_cases():
        for ref in (encoder_decoder.shift_right, solution("10.shift_right")):
            assert torch.equal(shift_right(tgt, bos), ref(tgt, bos))
    for log_probs, scores, width in E._beam_cases():
        for reference in (generation.beam_step, solution("10.beam_step")):
            for mine, ref in zip(beam_step(log_probs, scores, width),
                                 reference(log_probs, scores, width), strict=True):  # fmt: skip
                assert torch.equal(mine, ref)
    # Cross-attention has no causal mask and the encoder none either: a changed source
    # character reaches every decoder position.
    assert E.source_change_truth() == "c"


VALUE_CHECKS = [check_expected_values_agree_with_independent_reasoning]
