"""Exercises of notebook 08 (Mini-GPT: build and train): the residual stream at
initialisation, the warmup-stable-decay schedule, a training step's FLOPs per token, and
what limits a training run's speed.

The prediction and the count are kept as seals (:mod:`~minitx.course.exercises.seal`) of the
answers the instructor's solutions compute with :mod:`minitx.nn.gpt`; the schedule is
compared with the trainer's own (:func:`minitx.train.optim.lr_at`), bound when this module is
imported, which may not stand in for an answer, nor may PyTorch's learning-rate schedulers.
"""

from __future__ import annotations

import random
from typing import Any

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import first_hint, implement, keyed_letters
from minitx.course.exercises.plain import plain_number
from minitx.course.exercises.seal import check_sealed
from minitx.train.optim import lr_at

DEPTH_CHOICES = {
    "a": "about the same, within 25%",
    "b": "between 1.25 and 3 times as large",
    "c": "between 3 and 6 times as large",
    "d": "more than 6 times as large",
}
_DEEP_INIT = "ef87110ff279ac0b4785b19334a396fcd7e720a4"
_FLOPS = "5810232e586f6a85eb9a497cabcf16fab3a29abb"
_FLOPS_HINTS = {  # the seals of known mistakes
    "7e6a67a1c106e0a804d90c0f70f7d4a1c51ca6cd":
        "the tied head multiplies too: count its V x C weights in N",
    "15c41318841bb020e59277a533f9e9755d81e81a":
        "add attention's own work, 12 L T C per token",
    "678f3d4249431f33cd7b58b1c7de9705ee7a068e":
        "N counts only the weights that multiply: the embedding lookups and the LayerNorm "
        "gains multiply nothing (the tied head does)",
    "5df7a67e9ea16972c18e557c5847ce99d80f0573":
        "the LayerNorm gains scale, they do not multiply a vector by a matrix: leave them "
        "out of N",
    "179de92e0e91c397b699f543e94507b040ff1332":
        "that is the forward pass: training also runs backward, twice the forward's work",
    "1d76ca7deea4a10944e5b712941cd19020f120e7":
        "the token embedding is a lookup; its V x C weights multiply once, as the head",
    "67a47d1a7ebc28daff6c65ac5214be1f81f4615c":
        "attention's 12 T C is per block: there are L blocks",
}
# The trainer's schedule (TrainConfig.lr_at calls it) and PyTorch's schedulers: every
# scheduler steps through LRScheduler.step; LinearLR is the straight line of warmup and decay.
_SCHEDULES = (
    "minitx.train.optim.lr_at",
    "torch.optim.lr_scheduler.LRScheduler.step",
    "torch.optim.lr_scheduler.LinearLR.get_lr",
    "torch.optim.lr_scheduler.CosineAnnealingLR.get_lr",
    "torch.optim.lr_scheduler.LambdaLR.get_lr",
)


# ---- predict: the residual stream of a deeper model at initialisation ----------------------


@exercise(
    "08.deep_init",
    "Build the GPT of the cpu preset with 16 blocks instead of 4, untrained, and measure the "
    "std of the residual stream after its last block, as the notebook did for 4 blocks. "
    "Predict how it compares with the 4-block model's, once with GPT's scaled residual "
    "projections (std 0.02 / sqrt(2 n_layer)) and once with every projection at std 0.02: "
    + "; ".join(f"({key}) {words}" for key, words in DEPTH_CHOICES.items())
    + ". Answer {'scaled': letter, 'unscaled': letter}.",
    kind="predict",
)
def _deep_init(answer: Any) -> str | None:
    return keyed_letters(answer, DEPTH_CHOICES, _DEEP_INIT, {
        "scaled": "each block adds a variance proportional to 1 / (2 n_layer); how much do "
                  "all n_layer blocks add together?",
        "unscaled": "independent additions add their variances, so the std grows like the "
                    "square root of the number of blocks, not like the number itself",
    }, "08.deep_init")


# ---- implement: the warmup-stable-decay schedule --------------------------------------------


def _package_lr(step: int, max_steps: int, peak: float, warmup: int, cooldown: int,
                _lr_at: Any = lr_at) -> float:
    return _lr_at(step, learning_rate=peak, min_lr=0.0, warmup_steps=warmup,
                 decay_steps=max_steps, schedule="wsd", cooldown_steps=cooldown)  # fmt: skip


def _wsd_cases() -> list[tuple[int, int, float, int, int]]:
    rng = random.Random(8)
    runs = [(800, 0.006, 20, 400), (520, 0.02, 20, 260), (100, 1.0, 10, 50), (40, 0.5, 0, 10)]
    cases = []
    for max_steps, peak, warmup, cooldown in runs:
        steps = {0, warmup - 1 if warmup else 0, warmup, max_steps - cooldown - 1,
                 max_steps - cooldown, max_steps - 1}  # fmt: skip
        steps |= {rng.randrange(max_steps) for _ in range(8)}
        cases += [(s, max_steps, peak, warmup, cooldown) for s in sorted(steps) if s >= 0]
    return cases


def _wsd_hint(got: Any, step: int, max_steps: int, peak: float, warmup: int, cooldown: int):
    want = _package_lr(step, max_steps, peak, warmup, cooldown)
    number = plain_number(got)  # a float, a NumPy scalar or a 0-d tensor, as plain data
    if number is None:
        return f"return a float, got {type(got).__name__}"
    got = float(number)
    if abs(got - want) <= 1e-6 * peak:  # float32 arithmetic is close enough
        return None
    where = ("warmup" if step < warmup else
             "stable part" if step < max_steps - cooldown else "decay")  # fmt: skip
    call = (f"wsd_lr({step}, max_steps={max_steps}, peak={peak}, warmup_steps={warmup}, "
            f"cooldown_steps={cooldown})")  # fmt: skip
    return f"{call} (the {where}) should be {want:.6g}, got {got:.6g}"


@implement(
    "08.wsd",
    "Write wsd_lr(step, max_steps, peak, warmup_steps, cooldown_steps), the learning rate of "
    "step `step` (0-based) under warmup-stable-decay: during warmup it rises in a straight "
    "line, peak * (step + 1) / warmup_steps; then it holds `peak` until `cooldown_steps` "
    "before the end; then it falls in a straight line, from `peak` at the first step of the "
    "decay towards 0 at step max_steps. Answer with the function.",
    forbid=_SCHEDULES,
)
def _wsd(answer: Any) -> str | None:
    return first_hint(answer, _wsd_cases(), _wsd_hint)


# ---- compute: FLOPs per token ----------------------------------------------------------------


@exercise(
    "08.flops",
    "How many FLOPs per token does training a GPT cost, counted as section 4 counts (6 N plus "
    "12 L T C, with N the weights that multiply: the blocks' matrices and the tied head), "
    "for L = 3 blocks, width C = 96, context T = 48 and the 65 symbols of tiny Shakespeare, "
    "without biases? Answer with an int.",
    kind="compute",
)
def _flops(answer: Any) -> str | None:
    return check_sealed(
        "08.flops", answer, _FLOPS, hints=_FLOPS_HINTS,
        advice="N = L 12 C^2 (each block's attention and feed-forward matrices) + V C (the "
        "tied head); then 6 N + 12 L T C",
    )


# ---- open question -------------------------------------------------------------------------


think(
    "08.throughput",
    "Section 4 found that the training run did a fraction of the arithmetic the "
    "processor can do. Name two reasons for a model of this size, and for each say what "
    "you would change (in the model, the batch or the way it runs) to use more of the "
    "machine, and what it would cost.",
)


teaching_notes(
    "08",
    60,
    "deep_init wsd flops throughput",
    goals=(
        "Count a GPT's parameters from its sizes, and reconcile the count with another "
        "implementation's (nanoGPT leaves the position embeddings out of its count).",
        "Train a small GPT (Muon for the block matrices + AdamW, warmup-stable-decay, "
        "clipping) and judge it against yardsticks: ln V for guessing, a counted bigram "
        "model, and the same model trained with AdamW alone at its best rate on the same "
        "batches and steps (what Muon buys).",
        "Save, load and resume a checkpoint, and know what weights_only=True protects against.",
        "Account for a training run: tokens per second, FLOPs per token (6N plus attention), "
        "achieved GFLOP/s, and the memory of weights, optimiser state and activations.",
    ),
    misconceptions=(
        "Initialisation does not matter once LayerNorm is there: without the scaled residual "
        "projections the residual stream grows with depth.",
        "A model trains at the processor's advertised speed: small models use a small "
        "fraction of it.",
        "The optimiser's memory is negligible: AdamW keeps two numbers per weight.",
    ),
)
