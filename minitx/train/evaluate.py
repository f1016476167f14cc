"""Scoring a model on data it does not train on: the one loop that averages a loss over
batches (the Trainer's evaluations, ``estimate_loss`` and ``split_loss`` all run it).

    mean_loss            mean of ``loss_fn(model, batch)`` over batches, eval mode, no grad
    estimate_loss        a language model's mean loss over fixed random blocks (quick, seeded)
    split_loss           a language model's mean loss over a whole split (exact)
    language_model_loss  the loss of the ``model(x, y) -> (logits, loss)`` contract
    checked_loss         a loss, once it is known to be a scalar tensor
    accuracy             the fraction of positions whose arg-max is the target
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor, nn

from minitx.data.batches import random_blocks, sequential_blocks
from minitx.data.tokenizer import IGNORE_INDEX
from minitx.nn.modes import evaluating, model_device

Batch = Any  # whatever a batch source yields; (x, y) for a language model
LossFn = Callable[[nn.Module, Batch], Tensor]


def language_model_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    """The loss of a model with the language-model contract ``model(x, y) -> (logits, loss)``:
    ``batch`` is ``(x, y)``, both (B, T) token ids; returns the scalar loss."""
    x, y = batch
    return model(x, y)[1]


def checked_loss(loss: object) -> Tensor:
    """``loss`` when it is a scalar (0-d) tensor; else a ValueError that names what the
    loss function returned instead."""
    if not isinstance(loss, Tensor) or loss.ndim != 0:
        raise ValueError(
            "loss_fn must return a scalar tensor, got "
            f"{tuple(loss.shape) if isinstance(loss, Tensor) else type(loss).__name__}"
        )
    return loss


def mean_loss(
    model: nn.Module,
    batches: Iterable[Batch],
    loss_fn: LossFn = language_model_loss,
    weight: Callable[[Batch], float] | None = None,
) -> float:
    """Mean of ``loss_fn(model, batch)`` (a scalar tensor) over ``batches``, in eval mode
    without gradients; the model's mode is restored.

    Every batch counts alike, or in proportion to ``weight(batch)`` (say its number of
    target tokens, so that a short last batch counts less). The losses stay on the
    model's device until the end: one device sync per call, not one per batch. They are
    summed in float64 (half-precision losses are first made float32 on the device). The
    batches are drawn inside the eval-mode block, so a generator of them is fine.
    """
    losses: list[Tensor] = []
    weights: list[float] = []
    with evaluating(model):
        for batch in batches:
            loss = checked_loss(loss_fn(model, batch)).detach()
            losses.append(loss if loss.dtype == torch.float64 else loss.float())
            weights.append(1.0 if weight is None else float(weight(batch)))
    if not losses:
        raise ValueError("batches yielded no batch: there is no loss to average")
    per_batch = torch.stack(losses).cpu().double()  # (n,), the one sync
    w = torch.tensor(weights, dtype=torch.float64)  # (n,)
    return float((per_batch * w).sum() / w.sum())


def estimate_loss(
    model: nn.Module,
    data: Tensor,
    block_size: int,
    batch_size: int = 32,
    n_batches: int = 10,
    seed: int = 0,
) -> float:
    """Mean cross-entropy of ``model`` over ``n_batches`` random blocks of ``data``.

    ``data`` (N,) token ids; ``model(x, y)`` returns ``(logits, loss)``. The block offsets
    come from a ``torch.Generator`` seeded with ``seed``, so the same call always scores
    the same ``n_batches * batch_size`` windows of ``block_size`` tokens. Runs in eval
    mode without gradients (:func:`mean_loss`); the model's mode is restored.
    """
    if not isinstance(n_batches, int) or isinstance(n_batches, bool) or n_batches < 1:
        raise ValueError(f"n_batches must be an int >= 1, got {n_batches!r}")
    generator = torch.Generator().manual_seed(seed)
    device = model_device(model)
    batches = (
        tuple(t.to(device) for t in random_blocks(data, block_size, batch_size, generator))
        for _ in range(n_batches)
    )  # (x, y), (B, T) each
    return mean_loss(model, batches)


def split_loss(
    model: nn.Module,
    data: Tensor,
    block_size: int,
    batch_size: int = 64,
    max_tokens: int | None = None,
) -> float:
    """Mean cross-entropy (nats per token) of ``model`` over the whole of ``data``.

    Where :func:`estimate_loss` samples windows (quick, and noisy from one seed to the
    next), this walks ``data`` (N,) once in non-overlapping windows of ``block_size``
    tokens, so two models, or two machines, scoring one split get comparable numbers.
    Each window's first prediction has no context. ``max_tokens`` scores only the first
    that many tokens (a fixed subset, for a quick check). Eval mode, no gradients; each
    batch counts by its number of tokens (:func:`mean_loss`).
    """
    if not isinstance(data, Tensor) or data.dim() != 1:
        got = tuple(data.shape) if isinstance(data, Tensor) else type(data).__name__
        raise ValueError(f"data must be a 1-D tensor of token ids (N,), got {got}")
    if max_tokens is not None:
        if max_tokens <= block_size:
            raise ValueError(f"max_tokens must exceed block_size={block_size}, got {max_tokens}")
        data = data[: max_tokens + 1]  # +1: the last window's shifted target
    device = model_device(model)
    batches = (
        (x.to(device), y.to(device)) for x, y in sequential_blocks(data, block_size, batch_size)
    )  # (b, T) each; the last b may be smaller
    return mean_loss(model, batches, weight=lambda batch: batch[1].numel())


@torch.no_grad()
def accuracy(logits: Tensor, targets: Tensor, ignore_index: int = IGNORE_INDEX) -> float:
    """Fraction of positions whose arg-max prediction is the target, the course's one
    accuracy: ``logits`` (..., K), ``targets`` (...) long; positions whose target is
    ``ignore_index`` (``minitx.data.IGNORE_INDEX`` by default) are left out, as the
    losses leave them out."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"logits (..., K) and targets (...) must agree: got logits "
            f"{tuple(logits.shape)} and targets {tuple(targets.shape)}"
        )
    keep = targets != ignore_index
    if not bool(keep.any()):
        raise ValueError("every target is ignore_index: there is nothing to score")
    return (logits.argmax(-1) == targets)[keep].float().mean().item()


__all__ = [
    "accuracy",
    "checked_loss",
    "estimate_loss",
    "language_model_loss",
    "mean_loss",
    "split_loss",
]
