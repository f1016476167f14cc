"""Exercise cases of notebook 10: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib

import numpy as np
import torch

from exercise_cases import Case, prediction, solution
from minitx.course.exercises import answers
from minitx.course.exercises import nb10 as E
from minitx.course.exercises.seal import canonical, seal
from minitx.nn import encoder_decoder, generation
from minitx.nn.encoder_decoder import shift_right as package_shift_right
from minitx.nn.generation import beam_step as package_beam_step


def shift_right(tgt, bos_id):
    out = torch.empty_like(tgt)
    out[:, 0] = bos_id
    out[:, 1:] = tgt[:, :-1]
    return out


def shift_in_place(tgt, bos_id):
    tgt[:, 1:] = tgt[:, :-1].clone()
    tgt[:, 0] = bos_id
    return tgt


def shift_right_numpy(tgt, bos_id):
    """Right, in NumPy: the first column bos_id, then every column one step right."""
    x = tgt.numpy()
    out = np.concatenate([np.full((x.shape[0], 1), bos_id, dtype=x.dtype), x[:, :-1]], axis=1)
    return torch.from_numpy(out)


def shift_right_by_roll(tgt, bos_id):
    """Right: roll the columns one step, then overwrite the first with bos_id."""
    out = torch.roll(tgt, 1, dims=1)
    out[:, 0] = bos_id
    return out


def key_vectors_numpy(steps, source_length):
    """Right, with NumPy integers: the prefix lengths 1 .. steps, added up."""
    prefix = np.arange(1, steps + 1, dtype=np.int64)
    return {"without": prefix.sum(), "with": np.int64(len(prefix))}


def key_vectors_float(steps, source_length):
    """Right, with floats that are whole numbers, and 0-d tensors."""
    return {"without": steps * (steps + 1) / 2, "with": torch.tensor(float(steps))}


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


def beam_step_numpy(log_probs, beam_scores, beam_width):
    """Right, in NumPy: a stable sort of every candidate, best first."""
    lp, bs = log_probs.numpy(), beam_scores.numpy()
    B, W, V = lp.shape
    total = (bs[:, :, None] + lp).reshape(B, W * V)
    flat = np.argsort(-total, axis=-1, kind="stable")[:, :beam_width]
    scores = np.take_along_axis(total, flat, axis=-1)
    return torch.from_numpy(scores), torch.from_numpy(flat // V), torch.from_numpy(flat % V)


def beam_step_float32(log_probs, beam_scores, beam_width):
    """Right, with the candidates' scores added in float32 first, then taken in float64."""
    B, W, V = log_probs.shape
    total = (beam_scores[:, :, None] + log_probs).reshape(B, W * V)
    _, flat = total.float().topk(beam_width, dim=-1)  # ties within float32 are rare here
    return total.gather(1, flat), flat // V, flat % V


# ---- cheats: the package's own pieces, however reached; each must be refused ----------


def shift_one_line(tgt, bos_id):
    return package_shift_right(tgt, bos_id)


def shift_two_lines(tgt, bos_id):
    out = package_shift_right(tgt, bos_id)
    return out


def shift_plus_zero(tgt, bos_id):
    return package_shift_right(tgt.clone(), int(bos_id)) + 0


def shift_by_getattr(tgt, bos_id):
    module = importlib.import_module("minitx.nn." + "encoder_decoder")
    return getattr(module, "shift" + "_right")(tgt, bos_id).clone()


def beam_one_line(log_probs, beam_scores, beam_width):
    return package_beam_step(log_probs, beam_scores, beam_width)


def beam_two_lines(log_probs, beam_scores, beam_width):
    scores, parent, token = package_beam_step(log_probs, beam_scores, beam_width)
    return scores, parent, token


def beam_plus_zero(log_probs, beam_scores, beam_width):
    return tuple(t + 0 for t in package_beam_step(log_probs.clone(), beam_scores, beam_width))


def beam_double(log_probs, beam_scores, beam_width):
    scores, parent, token = generation.beam_step(log_probs.double(), beam_scores, beam_width)
    return scores.double(), parent.clone(), token.clone()


def beam_by_getattr(log_probs, beam_scores, beam_width):
    module = importlib.import_module("minitx.nn." + "generation")
    return tuple(getattr(module, "beam" + "_step")(log_probs, beam_scores, int(beam_width)))


CHEATS = {
    "10.shift_right": (encoder_decoder.shift_right, shift_one_line, shift_two_lines,
                       shift_plus_zero, shift_by_getattr,
                       lambda tgt, b: tuple([package_shift_right(tgt, b)])[-1]),
    "10.beam_step": (generation.beam_step, beam_one_line, beam_two_lines, beam_plus_zero,
                     beam_double, beam_by_getattr,
                     lambda lp, s, w: [t.clone() for t in package_beam_step(lp, s, w)]),
}


CASES: dict[str, Case] = {
    "10.beam_step": Case(
        right=(
            beam_step,
            beam_step_by_loop,
            beam_step_numpy,
            beam_step_float32,
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
        right=(key_vectors_by_formula, key_vectors_by_loop, key_vectors_numpy,
               key_vectors_float, solution("10.kv_cache")),
        wrong=(
            (lambda steps, S: {"without": steps * steps, "with": steps}, "not all of them"),
            (lambda steps, S: {"without": steps * S, "with": steps}, "not all of them"),
            (lambda steps, S: {"without": 2 * steps, "with": steps}, "add them up"),
            (lambda steps, S: {"without": steps * (steps + 1) // 2, "with": S}, "from the target"),
            (lambda steps, S: {"without": steps * (steps + 1) // 2, "with": 1}, "how many are new"),
            (lambda steps, S: {"without": steps * steps / 2, "with": steps}, "whole numbers"),
            (lambda steps, S: {"without": str(steps), "with": steps}, "whole numbers"),
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
            shift_right_numpy,
            shift_right_by_roll,
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
    key = answers.key("10")
    for steps, S in E.KV_CASES:
        counted = key.counted_kv_keys(steps, S)  # a hook on the package's decoder
        assert counted == key_vectors_by_formula(steps, S) == solution("10.kv_cache")(steps, S)
        assert E._KV_SEALS[steps, S] == tuple(
            seal("10.kv_cache", canonical([steps, S, k, counted[k]])) for k in ("without", "with"))
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
    assert solution("10.source_change") == "c"
    assert seal("10.source_change", "c") == E._SOURCE_CHANGE


VALUE_CHECKS = [check_expected_values_agree_with_independent_reasoning]
