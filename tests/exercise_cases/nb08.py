"""Exercise cases of notebook 08: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import math

from exercise_cases import Case, solution, wrong, wrong_answers

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
        right=(wsd_by_pieces,),
        wrong=wrong_answers("08.wsd", (5, "a function")),
    ),
}


def deep_init_by_the_square_root_rule():
    """Without the scaling, 4 times the blocks give about sqrt(4) = 2 times the std; with it,
    the stream after the last block is about as wide at 16 blocks as at 4."""
    from minitx.course.exercises import nb08

    scaled = nb08.residual_std(16, True) / nb08.residual_std(4, True)
    unscaled = nb08.residual_std(16, False) / nb08.residual_std(4, False)
    assert 0.8 < scaled < 1.2 and 1.6 < unscaled < 2.8
    assert nb08.depth_truth() == {"scaled": "a", "unscaled": "b"}


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


VALUE_CHECKS = [deep_init_by_the_square_root_rule, wsd_against_the_trainers_schedule]
