"""The instructor's answers to notebook 08's exercises."""

from __future__ import annotations

from minitx.course.exercises.nb08 import depth_truth


def wsd_lr(step: int, max_steps: int, peak: float, warmup_steps: int, cooldown_steps: int) -> float:
    """The learning rate of step ``step`` (0-based): linear warmup to ``peak`` over
    ``warmup_steps``, ``peak`` until ``cooldown_steps`` before the end, then a straight line
    towards 0, reached at ``max_steps``."""
    if step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    start = max(warmup_steps, max_steps - cooldown_steps)
    if step < start:
        return peak
    return peak * (1 - (step - start) / max(1, max_steps - start))


SOLUTIONS = {
    "08.deep_init": depth_truth,
    "08.wsd": lambda: wsd_lr,
}

MODEL_ANSWERS = {
    "08.throughput": (
        "Small matrices: with a width of 64 and batches of 16 x 32 tokens every matrix product is "
        "tiny, so time goes to launching operations, Python and the optimiser's per-tensor work "
        "rather than to arithmetic; larger batches or a wider model fill the units better (more "
        "memory, and for the batch, fewer steps for the same tokens). Memory traffic: layer norms, "
        "GELU, softmax and the optimiser update read and write every number once or twice for "
        "very little arithmetic, so they run at the speed of memory; fusing them "
        "(torch.compile) or using fused optimisers helps, at the price of compile time. One "
        "thread: the run used one core on purpose; more threads help only when the matrices are "
        "large enough to split."
    ),
}
