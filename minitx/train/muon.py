"""Muon: momentum whose update is orthogonalised, for the hidden matrices of a network.

    orthogonalize   k Newton-Schulz steps on a stack of matrices at once (bfloat16)
    Muon            ``torch.optim.Muon`` with the matrices of one shape orthogonalised
                    together: the same state, settings and result, in fewer matrix products

For each matrix W with gradient G, Muon keeps a momentum buffer B <- mu B + (1 - mu) G,
takes the Nesterov look-ahead U = G + mu (B - G), and replaces U by the orthogonal matrix
nearest to it (every singular value pushed towards 1), so every direction of the update
moves at the same rate. The step is W <- W (1 - lr wd) - lr' O, with lr' = lr *
sqrt(max(1, rows / cols)).

``torch.optim.Muon`` does this one matrix at a time. A transformer has a few matrices of
each shape (one per layer), and on these small sizes the many small products cost more
than their arithmetic: here the four blocks' matrices of each shape go through one batched
product instead of four.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor


def orthogonalize(
    updates: Tensor,
    coefficients: tuple[float, float, float] = (3.4445, -4.7750, 2.0315),
    steps: int = 5,
    eps: float = 1e-7,
) -> Tensor:
    """The nearest orthogonal matrices to ``updates`` (k, m, n), approximately; bfloat16.

    Each matrix is scaled to Frobenius norm 1 (so its largest singular value is at most
    1), then ``steps`` quintic Newton-Schulz iterations X <- aX + (bA + cA^2) X with
    A = X X^T push its singular values towards 1. The default coefficients trade
    exactness for speed: five steps leave them between about 0.7 and 1.2, and cannot lift
    one that starts near 0. Tall matrices are iterated transposed, so A is the smaller
    Gram matrix. The arithmetic is that of ``torch.optim.Muon``, matrix for matrix.
    """
    if not isinstance(updates, Tensor) or updates.dim() != 3:
        got = tuple(updates.shape) if isinstance(updates, Tensor) else type(updates).__name__
        raise ValueError(f"updates must be a (k, m, n) stack of matrices, got {got}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps < 100:
        raise ValueError(f"steps must be an int in [0, 100), got {steps!r}")
    a, b, c = coefficients
    X = updates.bfloat16()
    tall = X.size(1) > X.size(2)
    if tall:
        X = X.mT  # (k, n, m): iterate on the wide side
    # One norm per matrix, each computed on its own, as torch.optim.Muon computes it.
    norms = torch.stack([x.norm() for x in X]).clamp(min=eps)  # (k,)
    X = X / norms[:, None, None]
    for _ in range(steps):
        A = X @ X.mT  # (k, m, m) with m the smaller side
        B = torch.baddbmm(A, A, A, beta=b, alpha=c)  # b A + c A^2
        X = torch.baddbmm(X, B, X, beta=a)  # a X + B X
    return X.mT if tall else X


def scaled_lr(lr: float, shape: torch.Size, adjust_lr_fn: str | None) -> float:
    """The rate a matrix of ``shape`` steps at (``torch.optim.Muon``'s adjustment).

    ``None`` / 'original': lr * sqrt(max(1, rows / cols)); 'match_rms_adamw':
    lr * 0.2 * sqrt(max(rows, cols)), the rate at which an update has AdamW's size.
    """
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    raise ValueError(
        f"adjust_lr_fn must be None, 'original' or 'match_rms_adamw', got {adjust_lr_fn!r}"
    )


class Muon(torch.optim.Muon):
    """``torch.optim.Muon`` that orthogonalises the matrices of one shape as one batch.

    Same constructor, ``param_groups``, state (a ``momentum_buffer`` per matrix) and
    ``state_dict`` as ``torch.optim.Muon``, so either can resume the other's run, and the
    same updates up to bfloat16 rounding (``tests/train/test_muon.py``).
    """

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params: list[Tensor] = []
            grads: list[Tensor] = []
            buffers: list[Tensor] = []
            self._init_group(group, params, grads, buffers)
            lr = float(group["lr"])
            momentum, decay, nesterov = group["momentum"], group["weight_decay"], group["nesterov"]
            by_shape: dict[tuple, list[int]] = {}
            for i, p in enumerate(params):
                if p.dim() != 2:
                    raise ValueError(f"Muon trains matrices only, got a parameter of shape "
                                     f"{tuple(p.shape)}")
                by_shape.setdefault((p.shape, p.device, p.dtype), []).append(i)
            for members in by_shape.values():
                looks = []
                for i in members:
                    buffers[i].lerp_(grads[i], 1 - momentum)
                    looks.append(grads[i].lerp(buffers[i], momentum) if nesterov else buffers[i])
                ortho = orthogonalize(torch.stack(looks), group["ns_coefficients"],
                                      group["ns_steps"], group["eps"])  # (k, m, n)
                for i, update in zip(members, ortho, strict=True):
                    p = params[i]
                    p.mul_(1 - lr * decay)
                    p.add_(update, alpha=-scaled_lr(lr, p.shape, group["adjust_lr_fn"]))
        return loss


__all__ = ["Muon", "orthogonalize", "scaled_lr"]
