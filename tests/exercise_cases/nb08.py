"""Exercise cases of notebook 08: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import math

import numpy as np
import torch

from exercise_cases import Case, solution, wrong, wrong_answers
from minitx.train.config import TrainConfig
from minitx.train.optim import lr_at

# ---- 08.wsd: learner functions, right and wrong --------------------------------------------


def wsd_by_pieces(step, max_steps, peak, warmup_steps, cooldown_steps):
    """Right, written as three cases with the fraction of the decay left."""
    if step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    first_decay_step = max(warmup_steps, max_steps - cooldown_steps)
    if step < first_decay_step:
        return peak
    left = (max_steps - step) / max(1, max_steps - first_decay_step)
    return peak * left


def wsd_in_numpy_float32(step, max_steps, peak, warmup_steps, cooldown_steps):
    """A NumPy float32 scalar, as np.interp gives it through the three corners."""
    start = max(warmup_steps, max_steps - cooldown_steps)
    if step < warmup_steps:
        return np.float32(peak * (step + 1) / warmup_steps)
    return np.float32(np.interp(step, [start, max_steps], [peak, 0.0]))


def wsd_as_a_tensor(step, max_steps, peak, warmup_steps, cooldown_steps):
    """A 0-d float64 tensor, from min() of the three lines."""
    warm = (step + 1) / warmup_steps if warmup_steps else 1.0
    start = max(warmup_steps, max_steps - cooldown_steps)
    decay = (max_steps - step) / max(1, max_steps - start)
    return torch.tensor(peak, dtype=torch.float64) * min(warm, 1.0, decay)


@wrong("08.wsd", "(the warmup)")
def warms_from_zero(step, max_steps, peak, warmup_steps, cooldown_steps):
    """Starts the warmup at 0 instead of peak / warmup_steps."""
    if step < warmup_steps:
        return peak * step / warmup_steps
    return wsd_by_pieces(step, max_steps, peak, warmup_steps, cooldown_steps)


@wrong("08.wsd", "(the decay)")
def decays_to_half(step, max_steps, peak, warmup_steps, cooldown_steps):
    """Stops the decay at half the peak."""
    rate = wsd_by_pieces(step, max_steps, peak, warmup_steps, cooldown_steps)
    return rate if step < max_steps - cooldown_steps else 0.5 * (peak + rate)


@wrong("08.wsd", "(the decay)")
def cosine_decay(step, max_steps, peak, warmup_steps, cooldown_steps):
    """A cosine in place of the straight line."""
    start = max(warmup_steps, max_steps - cooldown_steps)
    if step < start:
        return wsd_by_pieces(step, max_steps, peak, warmup_steps, cooldown_steps)
    return 0.5 * peak * (1 + math.cos(math.pi * (step - start) / (max_steps - start)))


@wrong("08.wsd", "return a float")
def returns_text(step, max_steps, peak, warmup_steps, cooldown_steps):
    return str(wsd_by_pieces(step, max_steps, peak, warmup_steps, cooldown_steps))


CASES = {
    "08.deep_init": Case(
        right=(
            {"scaled": "a", "unscaled": "b"},
            {"scaled": "(A)", "unscaled": "b)"},
            {"scaled": "about the same, within 25%", "unscaled": "'b'"},
        ),
        wrong=(
            ({"scaled": "b", "unscaled": "b"}, "scaled:"),
            ({"scaled": "a", "unscaled": "c"}, "unscaled:"),
            ({"scaled": "a", "unscaled": "a"}, "unscaled:"),
            ({"scaled": "a"}, "keys 'scaled' and 'unscaled'"),
            ("a", "keys 'scaled' and 'unscaled'"),
            ({"scaled": "e", "unscaled": "b"}, "scaled: answer with one letter"),
        ),
    ),
    "08.wsd": Case(
        right=(wsd_by_pieces, wsd_in_numpy_float32, wsd_as_a_tensor),
        wrong=wrong_answers("08.wsd", (5, "a function")),
    ),
    "08.flops": Case(
        right=(2193984, 2193984.0, np.int64(2193984), torch.tensor(2193984)),
        wrong=(
            (6 * 3 * 12 * 96**2 + 12 * 3 * 48 * 96, "tied head"),  # the head left out
            (6 * (3 * 12 * 96**2 + 65 * 96), "12 L T C"),  # attention left out
            (6 * (3 * 12 * 96**2 + 65 * 96) + 12 * 48 * 96, "per block"),
            (2 * (3 * 12 * 96**2 + 65 * 96) + 4 * 3 * 48 * 96, "backward"),  # forward only
            (6 * (3 * 12 * 96**2 + 2 * 65 * 96) + 12 * 3 * 48 * 96, "lookup"),
            (6 * 343296 + 12 * 3 * 48 * 96, "multiply nothing"),  # every parameter
            (6 * (343296 - 48 * 96) + 12 * 3 * 48 * 96, "gains"),
            (1234567, "6 N + 12 L T C"),
            (2193984.5, "whole number"),
            ("2193984", "whole number"),
        ),
        never=("2193984", "2,193,984"),
    ),
}


# ---- answers that only hand the work to the trainer's schedule or PyTorch's: refused ------


def wsd_by_the_trainers_function(step, max_steps, peak, warmup_steps, cooldown_steps):
    rate = lr_at(step, learning_rate=peak, min_lr=0.0, warmup_steps=warmup_steps,
                 decay_steps=max_steps, schedule="wsd", cooldown_steps=cooldown_steps)
    return float(rate) + 0


def wsd_by_the_trainers_config(step, max_steps, peak, warmup_steps, cooldown_steps):
    config = TrainConfig(max_steps=max_steps, learning_rate=peak, min_lr=0.0,
                         warmup_steps=warmup_steps, schedule="wsd",
                         cooldown_frac=cooldown_steps / max_steps)
    return config.lr_at(step)


def wsd_by_getattr(step, max_steps, peak, warmup_steps, cooldown_steps):
    schedule = getattr(importlib.import_module("minitx.train.optim"), "lr" + "_at")
    return schedule(step, learning_rate=peak, min_lr=0.0, warmup_steps=warmup_steps,
                    decay_steps=max_steps, schedule="wsd", cooldown_steps=cooldown_steps)


def wsd_by_torch_schedulers(step, max_steps, peak, warmup_steps, cooldown_steps):
    """LinearLR up, ConstantLR, LinearLR down, chained by SequentialLR, stepped `step` times."""
    sched = torch.optim.lr_scheduler
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=peak)
    start = max(warmup_steps, max_steps - cooldown_steps)
    parts, milestones = [], []
    if warmup_steps:
        parts.append(sched.LinearLR(optimizer, 1 / warmup_steps, 1.0, warmup_steps - 1))
        milestones.append(warmup_steps)
    parts.append(sched.ConstantLR(optimizer, 1.0, max(1, start - warmup_steps)))
    milestones.append(start)
    parts.append(sched.LambdaLR(optimizer, lambda i: 1 - i / max(1, max_steps - start)))
    schedule = sched.SequentialLR(optimizer, parts, milestones[-len(parts) + 1:])
    for _ in range(step):
        optimizer.step()
        schedule.step()
    return optimizer.param_groups[0]["lr"]


CHEATS = {
    "08.wsd": (
        lr_at,
        lambda step, max_steps, peak, warmup_steps, cooldown_steps: lr_at(
            step, learning_rate=peak, min_lr=0.0, warmup_steps=warmup_steps,
            decay_steps=max_steps, schedule="wsd", cooldown_steps=cooldown_steps),
        wsd_by_the_trainers_function,
        wsd_by_the_trainers_config,
        wsd_by_getattr,
        wsd_by_torch_schedulers,
    ),
}


def deep_init_by_the_square_root_rule():
    """Without the scaling, 4 times the blocks give about sqrt(4) = 2 times the std; with it,
    the stream after the last block is about as wide at 16 blocks as at 4."""
    from minitx.course.exercises import answers

    key = answers.key("08")  # the instructor's measurement
    scaled = key.residual_std(16, True) / key.residual_std(4, True)
    unscaled = key.residual_std(16, False) / key.residual_std(4, False)
    assert 0.8 < scaled < 1.2 and 1.6 < unscaled < 2.8
    assert solution("08.deep_init") == {"scaled": "a", "unscaled": "b"}


def wsd_against_the_trainers_schedule():
    """The checker's reference and the instructor's solution are the schedule the trainer
    follows (TrainConfig.lr_at, min_lr 0)."""
    from minitx.course.exercises import nb08
    from minitx.train.config import TrainConfig

    config = TrainConfig(max_steps=800, learning_rate=0.006, min_lr=0.0, warmup_steps=20,
                         schedule="wsd", cooldown_frac=0.5)  # fmt: skip
    for step in range(800):
        want = config.lr_at(step)
        assert math.isclose(nb08._package_lr(step, 800, 0.006, 20, 400), want, abs_tol=1e-12)
        assert math.isclose(solution("08.wsd")(step, 800, 0.006, 20, 400), want, abs_tol=1e-12)
        assert math.isclose(wsd_by_pieces(step, 800, 0.006, 20, 400), want, abs_tol=1e-12)


def flops_by_the_formula_and_by_a_model():
    """The key counts 6 N + 12 L T C with N the GPT's matrices but the position table: the
    blocks' 12 C^2 each and the tied head's V C, whichever way it is counted."""
    from minitx.course.exercises import answers
    from minitx.nn.gpt import GPT, GPTConfig

    key = answers.key("08")
    L, C, T, V = 3, 96, 48, 65
    assert solution("08.flops") == 6 * (L * 12 * C * C + V * C) + 12 * L * T * C == 2193984
    model = GPT(GPTConfig(vocab_size=V, block_size=T, n_layer=L, n_head=4, n_embd=C, bias=False))
    n_mult = model.num_parameters(non_embedding=True) - (2 * L + 1) * C  # less the gains
    assert key.flops_per_token(L, C, T, V) == 6 * n_mult + 12 * L * T * C
    assert key.flops_per_token(2, 64, 32) == 6 * (2 * 12 * 64**2 + 65 * 64) + 12 * 2 * 32 * 64


VALUE_CHECKS = [deep_init_by_the_square_root_rule, wsd_against_the_trainers_schedule,
                flops_by_the_formula_and_by_a_model]
