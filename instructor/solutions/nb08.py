"""The instructor's answers to notebook 08's exercises, computed with the package."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import torch


def residual_std(n_layer: int, scaled: bool, seed: int = 0) -> float:
    """Std of the residual stream after the last block of an untrained GPT of the ``cpu``
    preset's width with ``n_layer`` blocks, on 8 random windows; ``scaled=False`` re-draws the
    two residual projections of every block with std 0.02 instead of 0.02 / sqrt(2 n_layer)."""
    from minitx.nn.gpt import GPT
    from minitx.train.presets import get_preset

    config = replace(get_preset("cpu").gpt_config(65), n_layer=n_layer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT(config).eval()
        if not scaled:
            for block in model.blocks:
                torch.nn.init.normal_(block.attn.out_proj.weight, std=0.02)
                torch.nn.init.normal_(block.ffn.fc2.weight, std=0.02)
        idx = torch.randint(0, 65, (8, config.block_size))
        with torch.no_grad():
            x = model.tok_emb(idx) + model.pos_emb(config.block_size)
            for block in model.blocks:
                x, _ = block(x)
    return float(x.std())


def depth_letter(ratio: float) -> str:
    """The letter of 08.deep_init's choices for a ratio of stds."""
    if ratio < 1.25:
        return "a"
    if ratio < 3:
        return "b"
    return "c" if ratio < 6 else "d"


@cache
def depth_truth() -> dict[str, str]:
    """The letters for 16 blocks against 4, with and without the scaled projections."""
    return {
        name: depth_letter(residual_std(16, scaled) / residual_std(4, scaled))
        for name, scaled in (("scaled", True), ("unscaled", False))
    }


def flops_per_token(n_layer: int = 3, n_embd: int = 96, block_size: int = 48,
                    vocab_size: int = 65) -> int:
    """Training FLOPs per token as notebook 08 counts them, 6 N + 12 L T C, with N the weights
    that multiply (every matrix of a GPT built on the meta device but the position table)."""
    from minitx.nn.gpt import GPT
    from minitx.train.presets import get_preset

    config = replace(get_preset("cpu").gpt_config(vocab_size), n_layer=n_layer, n_embd=n_embd,
                     block_size=block_size, n_head=4)
    with torch.device("meta"):
        model = GPT(config)
    n_mult = sum(p.numel() for p in model.parameters() if p.dim() == 2) - block_size * n_embd
    return 6 * n_mult + 12 * n_layer * block_size * n_embd


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
    "08.flops": flops_per_token,
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
