"""Muon: momentum whose update is orthogonalised, for the hidden matrices of a network.

    orthogonalize   k Newton-Schulz steps on a stack of matrices at once
    ortho_dtype     the dtype it iterates in where it runs: bfloat16 where that is fast
    scaled_lr       the rate a matrix of a given shape steps at
    Muon            the optimizer: ``torch.optim.Muon``'s update, with the matrices of one
                    shape orthogonalised together

For each matrix W with gradient G, Muon keeps a momentum buffer B <- mu B + (1 - mu) G,
takes the Nesterov look-ahead U = G + mu (B - G), and replaces U by the orthogonal matrix
nearest to it (every singular value pushed towards 1), so every direction of the update
moves at the same rate. The step is W <- W (1 - lr wd) - lr' O, with lr' = lr *
sqrt(max(1, rows / cols)).

Why not ``torch.optim.Muon`` itself? torch 2.13 has it, and it computes this very update
(2-D parameters only, the same lr adjustment; ``tests/train/test_muon.py`` checks that
the two agree and can resume each other's runs). But it orthogonalises one matrix at a
time. A transformer has a few matrices of each shape (one per layer), and at the course's
sizes many small products cost more than their arithmetic: here the blocks' matrices of
each shape go through one batched product instead (``benchmarks/bench_muon.py`` times
both). The class is written on ``torch.optim.Optimizer``'s public API only (its state in
``self.state[p]``, its settings in ``param_groups``), not by overriding
``torch.optim.Muon``'s step, whose helpers are private; it keeps ``torch.optim.Muon``'s
constructor, group settings and state (a ``momentum_buffer`` per matrix), so either
optimizer loads the other's ``state_dict``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)  # Keller Jordan's quintic, torch.optim.Muon's
ADJUST_LR_FNS = (None, "original", "match_rms_adamw")
ORTHO_DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}
_CHOSEN: dict[str, torch.dtype] = {}


def _seconds(dtype: torch.dtype, X: Tensor) -> float:
    """The fastest of three runs of one Newton-Schulz step on ``X`` in ``dtype``."""
    X = X.to(dtype)
    times = []
    for _ in range(4):
        start = time.perf_counter()
        A = X @ X.mT
        torch.baddbmm(X, torch.baddbmm(A, A, A), X)
        times.append(time.perf_counter() - start)
    return min(times[1:])  # the first run warms up


def ortho_dtype(device: torch.device | str = "cpu") -> torch.dtype:
    """The dtype :func:`orthogonalize` iterates in on ``device``: bfloat16 where its matrix
    products are fast, else float32. Chosen once per process and device type.

    ``MINITX_MUON_DTYPE=bfloat16|float32`` forces a choice. A GPU takes bfloat16, as
    ``torch.optim.Muon`` does, if it supports it. A CPU is *timed*: one Newton-Schulz step
    on a (4, 128, 512) stack in each dtype (a few milliseconds), and bfloat16 only if it is
    faster. Capability flags cannot tell: a CPU without bfloat16 instructions (most
    laptops: AVX2, no AVX-512) runs bfloat16 products 10-20x slower than float32, and one
    with AVX-512 but no AVX512_BF16 reports bfloat16 support and still runs them about 2x
    slower. The iteration's result differs between the two dtypes only by rounding.
    """
    kind = torch.device(device).type
    forced = os.environ.get("MINITX_MUON_DTYPE", "")
    if forced:
        if forced not in ORTHO_DTYPES:
            raise ValueError(f"MINITX_MUON_DTYPE must be one of {sorted(ORTHO_DTYPES)}, "
                             f"got {forced!r}")
        return ORTHO_DTYPES[forced]
    if kind not in _CHOSEN:
        if kind == "cuda":
            fast = torch.cuda.is_bf16_supported(including_emulation=False)
        elif kind == "cpu":
            X = torch.randn(4, 128, 512, generator=torch.Generator().manual_seed(0)) / 64
            fast = _seconds(torch.bfloat16, X) < _seconds(torch.float32, X)
        else:
            fast = True
        _CHOSEN[kind] = torch.bfloat16 if fast else torch.float32
    return _CHOSEN[kind]


def orthogonalize(
    updates: Tensor,
    coefficients: tuple[float, float, float] = NS_COEFFICIENTS,
    steps: int = 5,
    eps: float = 1e-7,
    dtype: torch.dtype | None = None,
) -> Tensor:
    """The nearest orthogonal matrices to ``updates`` (k, m, n), approximately, in ``dtype``
    (default: :func:`ortho_dtype` of their device).

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
    X = updates.to(dtype or ortho_dtype(updates.device))
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
    """The rate a matrix of ``shape`` (rows, cols) steps at (``torch.optim.Muon``'s rule).

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


def _check_matrix(p: Tensor) -> None:
    if p.dim() != 2:
        raise ValueError(f"Muon trains matrices only, got a parameter of shape {tuple(p.shape)}")
    if p.is_complex() or (p.grad is not None and p.grad.is_sparse):
        raise ValueError("Muon trains real matrices with dense gradients")


class Muon(torch.optim.Optimizer):
    """Muon over 2-D parameters, the matrices of one shape orthogonalised as one batch.

    Same arguments, defaults, ``param_groups`` settings and state (a ``momentum_buffer``
    per matrix) as ``torch.optim.Muon``, so either can resume the other's run, and the
    same updates up to rounding (``tests/train/test_muon.py``); it orthogonalises in
    :func:`ortho_dtype`.

    Args:
        params: matrices (m, n), or parameter groups of them.
        lr: the base rate, adjusted per shape by :func:`scaled_lr`.
        weight_decay: decoupled: W <- W (1 - lr weight_decay).
        momentum: mu of the momentum buffer; ``nesterov`` takes the look-ahead.
        ns_coefficients, ns_steps, eps: those of :func:`orthogonalize`.
        adjust_lr_fn: None, 'original' or 'match_rms_adamw' (see :func:`scaled_lr`).
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = NS_COEFFICIENTS,
        eps: float = 1e-7,
        ns_steps: int = 5,
        adjust_lr_fn: str | None = None,
    ) -> None:
        if not (lr >= 0 and momentum >= 0 and weight_decay >= 0):
            raise ValueError(f"need lr, momentum and weight_decay >= 0, got lr={lr}, "
                             f"momentum={momentum}, weight_decay={weight_decay}")
        if adjust_lr_fn not in ADJUST_LR_FNS:
            raise ValueError(f"adjust_lr_fn must be None, 'original' or 'match_rms_adamw', "
                             f"got {adjust_lr_fn!r}")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                _check_matrix(p)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One update of every matrix that has a gradient; returns ``closure()`` if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, momentum = float(group["lr"]), group["momentum"]
            same_shape: dict[tuple, list[Tensor]] = {}
            for p in group["params"]:
                if p.grad is None:
                    continue
                _check_matrix(p)  # a group added later is checked here
                same_shape.setdefault((p.shape, p.device, p.dtype), []).append(p)
            for params in same_shape.values():
                looks = []
                for p in params:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.zeros_like(p.grad)
                    buffer = state["momentum_buffer"]
                    buffer.lerp_(p.grad, 1 - momentum)
                    looks.append(p.grad.lerp(buffer, momentum) if group["nesterov"] else buffer)
                ortho = orthogonalize(torch.stack(looks), group["ns_coefficients"],
                                      group["ns_steps"], group["eps"])  # (k, m, n)
                rate = scaled_lr(lr, params[0].shape, group["adjust_lr_fn"])
                for p, update in zip(params, ortho, strict=True):
                    p.mul_(1 - lr * group["weight_decay"])
                    p.add_(update, alpha=-rate)
        return loss


__all__ = ["ADJUST_LR_FNS", "NS_COEFFICIENTS", "ORTHO_DTYPES", "Muon", "ortho_dtype",
           "orthogonalize", "scaled_lr"]
