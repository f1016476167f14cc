"""One swap at a time: the GPT-2 block against each piece of the modern block (notebook 11).

Every variant is the same small GPT (2 layers x 64 wide, 4 heads, context 64) trained with
the same recipe, :func:`modern_recipe`; a variant changes one switch of ``GPTConfig``
(:data:`VARIANTS`). For a given seed every variant starts from ``torch.manual_seed(seed)``
and sees the same training batches; every final model is scored on the same validation
windows (:data:`VAL_WINDOWS`). :func:`train_variant` trains one, :func:`spread_table`
summarises the seeds, :func:`position_losses` scores each position of longer windows and
:func:`with_context` gives a position-free model a longer context.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from minitx.course.notebook import excerpt, show_excerpt
from minitx.data.batches import BlockBatches
from minitx.nn.gpt import GPT, GPTConfig, kv_cache_numel
from minitx.train.evaluate import estimate_loss
from minitx.train.presets import Preset, get_preset
from minitx.train.runtime import Runtime
from minitx.train.trainer import Trainer

# The swaps, each alone, then all four together (the Llama block); the first is the baseline.
VARIANTS: dict[str, dict[str, Any]] = {
    "GPT-2 block": {},
    "RMSNorm": {"norm": "rms"},
    "RoPE": {"positions": "rope"},
    "SwiGLU": {"mlp": "swiglu"},
    "GQA (2 KV heads)": {"n_kv_heads": 2},
    "all four": {"norm": "rms", "positions": "rope", "mlp": "swiglu", "n_kv_heads": 2},
}
BASELINE = "GPT-2 block"
# Validation windows every final model is scored on: (batches, batch size, seed).
VAL_WINDOWS = (16, 32, 0)


def modern_recipe(max_steps: int = 200, seed: int = 0) -> Preset:
    """The ``cpu`` preset cut down: 2 layers x 64 wide, 4 heads, context 64; ``max_steps``
    steps of 16 windows (warmup 20, the last half a straight line down); ``seed`` draws the
    training batches. The trainer evaluates 4 fixed batches at the start, halfway (where the
    decay begins) and at the end; the final score is :func:`final_loss`."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
    train = {"max_steps": max_steps, "batch_size": 16, "warmup_steps": 20,
             "eval_interval": max(1, max_steps // 2), "eval_steps": 4, "log_interval": 10,
             "seed": seed}
    return get_preset("cpu").with_overrides(
        model={"n_layer": 2, "n_embd": 64, "n_head": 4, "block_size": 64}, train=train
    )


def variant_config(name: str, vocab_size: int, block_size: int | None = None) -> GPTConfig:
    """The ``GPTConfig`` of variant ``name`` (a key of :data:`VARIANTS`)."""
    if name not in VARIANTS:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    config = replace(modern_recipe().gpt_config(vocab_size), **VARIANTS[name])
    return config if block_size is None else replace(config, block_size=block_size)


def final_loss(model: GPT, val_data: Tensor, block_size: int = 64) -> float:
    """Mean validation loss over :data:`VAL_WINDOWS` windows of ``block_size``."""
    n, b, seed = VAL_WINDOWS
    return estimate_loss(model, val_data, block_size, batch_size=b, n_batches=n, seed=seed)


@dataclass
class Run:
    """One trained variant: its name, seed, model, final validation loss, parameter count
    and training speed (tokens per second, the median of the logged windows)."""

    variant: str
    seed: int
    model: GPT
    val_loss: float
    parameters: int
    tokens_per_s: float


def train_variant(name: str, seed: int, train_data: Tensor, val_data: Tensor,
                  vocab_size: int, runtime: Runtime, max_steps: int = 200) -> Run:
    """Train variant ``name`` with :func:`modern_recipe` (``max_steps``, ``seed``): weights
    from ``torch.manual_seed(seed)``, the batches of ``seed``, the same for every variant."""
    recipe = modern_recipe(max_steps, seed)
    config = variant_config(name, vocab_size)
    torch.manual_seed(seed)
    model = GPT(config)
    batches = BlockBatches(train_data, val_data, config.block_size, recipe.train.batch_size,
                           runtime.device)
    trainer = Trainer(model, recipe.train, batches, runtime=runtime, progress=False)
    history = trainer.train()
    speed = statistics.median(history["tokens_per_s"])
    return Run(name, seed, model.eval(), final_loss(model, val_data, config.block_size),
               model.num_parameters(), speed)


def spread_table(runs: list[Run]) -> dict[str, dict[str, float]]:
    """Per variant: ``mean`` and ``spread`` (max - min over seeds) of the validation loss,
    ``gap`` (mean minus the baseline's mean; negative is better), ``noise`` (3 x the larger
    of the two spreads) and ``tokens_per_s`` (mean over seeds)."""
    by: dict[str, list[Run]] = {}
    for run in runs:
        by.setdefault(run.variant, []).append(run)
    if BASELINE not in by:
        raise ValueError(f"the runs hold no {BASELINE!r} baseline")
    table = {}
    for name, group in by.items():
        losses = [r.val_loss for r in group]
        table[name] = {"mean": statistics.fmean(losses), "spread": max(losses) - min(losses),
                       "tokens_per_s": statistics.fmean(r.tokens_per_s for r in group),
                       "parameters": group[0].parameters, "seeds": len(group)}
    base = table[BASELINE]
    for row in table.values():
        row["gap"] = row["mean"] - base["mean"]
        row["noise"] = 3 * max(row["spread"], base["spread"])
    return table


def verdict(row: dict[str, float]) -> str:
    """What a gap to the baseline supports: 'better' or 'worse' when it exceeds 3 x the
    seed spread, else 'no difference measured'."""
    if abs(row["gap"]) <= row["noise"]:
        return "no difference measured"
    return "better" if row["gap"] < 0 else "worse"


@torch.no_grad()
def position_losses(model: GPT, data: Tensor, T: int, n_windows: int = 256,
                    seed: int = 0, first: int | None = None) -> Tensor:
    """(T,) mean cross-entropy at each position 0 .. T-1 of ``n_windows`` random windows of
    ``data`` (the same windows for a given seed and T). With ``first``, the model reads only
    the first ``first`` characters of those same windows: a (first,) result."""
    if first is not None and not 1 <= first <= T:
        raise ValueError(f"first must be in 1 .. T={T}, got {first!r}")
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, data.numel() - T - 1, (n_windows,), generator=g)
    x = torch.stack([data[s : s + T] for s in starts.tolist()])  # (n, T)
    y = torch.stack([data[s + 1 : s + T + 1] for s in starts.tolist()])
    if first is not None:
        x, y = x[:, :first], y[:, :first]
    was = model.training
    model.eval()
    losses = []
    for i in range(0, n_windows, 64):
        logits, _ = model(x[i : i + 64])
        losses.append(F.cross_entropy(logits.transpose(1, 2), y[i : i + 64], reduction="none"))
    model.train(was)
    return torch.cat(losses).mean(0)  # (T,)


def with_context(model: GPT, block_size: int) -> GPT:
    """A copy of ``model`` that reads windows of ``block_size``: the same weights in a GPT
    whose config differs only in ``block_size``. A model with learned positions has one
    row per position it was trained for, so its table cannot fill the longer window: the
    copy raises ``RuntimeError`` (PyTorch's size mismatch) for it."""
    longer = GPT(replace(model.config, block_size=block_size))
    longer.load_state_dict(model.state_dict())
    return longer.eval()


def bytes_per_token(config: GPTConfig, bytes_per_number: int = 4) -> int:
    """KV-cache bytes per position of one sequence: a key and a value per layer and
    key/value head, each of head size numbers."""
    return kv_cache_numel(config, T=1) * bytes_per_number


def rounded(x: float, places: int = 2) -> str:
    """``x`` to ``places`` decimals, '-0.00' written '0.00'."""
    text = f"{x:.{places}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


__all__ = [
    "BASELINE",
    "VAL_WINDOWS",
    "VARIANTS",
    "Run",
    "bytes_per_token",
    "excerpt",
    "final_loss",
    "modern_recipe",
    "position_losses",
    "rounded",
    "show_excerpt",
    "spread_table",
    "train_variant",
    "variant_config",
    "verdict",
    "with_context",
]
