"""What a computation costs: time, memory, arithmetic, and how long its chain of steps is.

    measure_time     smallest CPU time of a few calls (other programs do not inflate it)
    saved_bytes      bytes that autograd keeps for the backward pass (activation memory)
    count_flops      floating-point operations of the matrix products, counted by PyTorch
    attention_flops  the same, by formula, for softmax(Q K^T) V
    rnn_flops        the same, by formula, for an Elman RNN layer
    graph_depth      the longest chain of operations that must run one after another
    loglog_slope     the exponent k of cost ~ n^k, fitted on log-log axes

Notebook 07 uses these to show that attention's time and memory grow like n^2 while an
RNN's time grows like n, and that the RNN's n steps form a chain that cannot run in
parallel while attention's work does not.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode

__all__ = [
    "attention_flops",
    "count_flops",
    "graph_depth",
    "loglog_slope",
    "measure_time",
    "rnn_flops",
    "saved_bytes",
]


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def measure_time(
    fn: Callable[..., Any],
    *args: Any,
    repeats: int = 5,
    warmup: int = 1,
    clock: Callable[[], float] = time.thread_time,
) -> float:
    """Seconds taken by ``fn(*args)``: the smallest of ``repeats`` timed calls.

    ``warmup`` untimed calls come first (they pay for one-off allocations). The default
    ``clock`` is the CPU time of the calling thread, which does not advance while the
    operating system runs other programs, so a busy machine does not inflate the result.
    It only sees work done on this thread: time torch code inside
    ``minitx.train.runtime.threads(1)``.
    For GPU work pass ``clock=time.perf_counter`` and synchronise inside ``fn``.
    Python's garbage collector is paused during the timed calls, as ``timeit`` does.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    _check_int("repeats", repeats, 1)
    _check_int("warmup", warmup, 0)
    for _ in range(warmup):
        fn(*args)
    best = math.inf
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = clock()
            fn(*args)
            best = min(best, clock() - start)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best


def _storage_key(t: Tensor) -> tuple[str, int]:
    if t.device.type == "meta":
        raise ValueError("saved_bytes needs tensors with real storage, got a meta tensor")
    s = t.untyped_storage()
    return str(t.device), s.data_ptr()


def saved_bytes(fn: Callable[..., Any], *args: Any, exclude: Iterable[Tensor] = ()) -> int:
    """Bytes of the tensors autograd saves for the backward pass while ``fn(*args)`` runs.

    This is the activation memory that training holds between the forward and the
    backward pass. Each storage is counted once (a tensor saved by two operations, or
    two views of one buffer, count once), and storages shared with a tensor in
    ``exclude`` (say, the inputs, which exist anyway) are not counted. Nothing is saved
    unless some input or parameter requires grad; then the result is 0.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    skip = set()
    for t in exclude:
        if not isinstance(t, Tensor):
            raise TypeError(f"exclude must hold tensors, got {type(t).__name__}")
        skip.add(_storage_key(t))
    sizes: dict[tuple[str, int], int] = {}
    keep: list[Tensor] = []  # held until the end, so no storage address is reused meanwhile

    def pack(t: Tensor) -> Tensor:
        key = _storage_key(t)
        if key not in skip:
            sizes[key] = t.untyped_storage().nbytes()
        keep.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    keep.clear()
    return sum(sizes.values())


def count_flops(fn: Callable[..., Any], *args: Any) -> int:
    """Floating-point operations of the matrix products in ``fn(*args)``, counted by PyTorch's
    ``FlopCounterMode``: a multiply-add counts 2; elementwise work such as softmax or
    tanh is not counted, nor are kernels the counter does not know (on the CPU, the
    fused ``F.scaled_dot_product_attention``): count the explicit computation."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    counter = FlopCounterMode(display=False)
    with counter:
        fn(*args)
    return int(counter.get_total_flops())


def attention_flops(T: int, d_model: int, batch: int = 1) -> int:
    """FLOPs of the two products of self-attention over ``T`` positions, ``d_model`` wide.

    ``Q K^T`` is T x T dot products of length d_model, and so is ``weights @ V``:
    2 * (2 * T^2 * d_model). Splitting d_model into heads does not change it.
    The projections (W_Q, W_K, W_V, W_O) are extra and grow only like T.
    """
    _check_int("T", T, 1)
    _check_int("d_model", d_model, 1)
    _check_int("batch", batch, 1)
    return 4 * batch * T * T * d_model


def rnn_flops(T: int, input_size: int, hidden_size: int, batch: int = 1) -> int:
    """FLOPs of the matrix products of an Elman RNN layer over ``T`` steps:
    ``W_ih x_t`` and ``W_hh h_{t-1}`` at every step, 2 * T * H * (C + H)."""
    _check_int("T", T, 1)
    _check_int("input_size", input_size, 1)
    _check_int("hidden_size", hidden_size, 1)
    _check_int("batch", batch, 1)
    return 2 * batch * T * hidden_size * (input_size + hidden_size)


def graph_depth(output: Tensor) -> int:
    """Length of the longest chain of operations in the autograd graph behind ``output``.

    Every operation on the chain needs the result of the one before it, so no amount
    of parallel hardware can run the chain faster than one step after another. An RNN
    over T steps has a chain that grows with T; self-attention has a short chain of a
    fixed length, whatever T. Leaves (inputs, parameters) count 0.
    """
    if not isinstance(output, Tensor):
        raise TypeError(f"output must be a torch.Tensor, got {type(output).__name__}")
    if output.grad_fn is None:
        raise ValueError(
            "output has no autograd graph (grad_fn is None): compute it from a tensor that "
            "requires grad, outside torch.no_grad()"
        )
    depth: dict[Any, int] = {}
    stack: list[tuple[Any, bool]] = [(output.grad_fn, False)]
    while stack:  # iterative post-order: graphs of long sequences are deeper than recursion
        node, children_done = stack.pop()
        if node in depth:
            continue
        children = [n for n, _ in node.next_functions if n is not None]
        if children_done:
            ops = [depth[c] for c in children]
            leaf = type(node).__name__ == "AccumulateGrad"
            depth[node] = 0 if leaf else 1 + max(ops, default=0)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if c not in depth)
    return depth[output.grad_fn]


def loglog_slope(x: Sequence[float] | Tensor, y: Sequence[float] | Tensor) -> float:
    """Least-squares slope of log(y) against log(x): the k in y ~ c * x^k.

    A cost that doubles when n doubles has slope 1; one that quadruples has slope 2.
    ``x`` and ``y`` need at least two positive values each, and ``x`` two distinct ones.
    """
    xs = torch.as_tensor(x, dtype=torch.float64).flatten()
    ys = torch.as_tensor(y, dtype=torch.float64).flatten()
    if xs.numel() != ys.numel() or xs.numel() < 2:
        raise ValueError(
            f"x and y need the same length >= 2, got {xs.numel()} and {ys.numel()}"
        )
    if not bool((xs > 0).all() and (ys > 0).all()):
        raise ValueError("x and y must be positive to take logarithms")
    lx, ly = xs.log(), ys.log()
    lx_c = lx - lx.mean()
    denom = float((lx_c * lx_c).sum())
    if denom == 0.0:
        raise ValueError("x needs at least two different values to fit a slope")
    return float((lx_c * (ly - ly.mean())).sum()) / denom
