"""Data parallelism over CPU cores: a batch's rows split into shards that run at once.

On a CPU with a few cores, the matrix products of a small model are too small for every
core to help much with each one: two threads make a step of the laptop-sized GPT well
short of twice as fast as one. Giving each core its own rows of the batch instead, as data-parallel
training gives each GPU its own rows, keeps every core busy with a whole forward and
backward pass. ``ShardedGradients`` does that with threads: torch releases Python's
global lock inside its kernels, so the shards really run side by side.

The result is the whole batch's gradient. For a loss that is a mean over equally weighted
rows (a language model's loss over batches of equal-length rows, none of whose targets
are ignored),

    grad(loss(batch)) = sum_i (rows_i / rows) * grad(loss(shard_i)),

which is what ``ShardedGradients.backward`` computes, up to float rounding. The sum is
taken in a fixed order, so a run is as reproducible as one without shards.

Randomness is the exception: two threads drawing dropout masks from torch's one generator
would draw them in an unpredictable order, so a model with dropout (``has_dropout``) is
not sharded; nor is a batch that ``can_shard`` turns down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

import torch
from torch import Tensor, nn

from minitx.train.runtime import threads

BatchTuple = tuple[Tensor, ...]
ShardLoss = Callable[[nn.Module, BatchTuple], Tensor]


DROPOUTS = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
            nn.FeatureAlphaDropout)


def has_dropout(model: nn.Module) -> bool:
    """True when ``model`` holds a dropout module with p > 0 (active in training mode)."""
    return any(isinstance(m, DROPOUTS) and m.p > 0 for m in model.modules())


def can_shard(batch: object, shards: int) -> bool:
    """Whether ``batch`` splits into ``shards`` row shards: more than one shard, and a tuple
    or list of tensors with the same number of rows, at least ``shards``."""
    if shards < 2 or not isinstance(batch, (tuple, list)) or not batch:
        return False
    if not all(isinstance(t, Tensor) and t.dim() >= 1 for t in batch):
        return False
    rows = batch[0].size(0)
    return rows >= shards and all(t.size(0) == rows for t in batch)


def split_rows(batch: Sequence[Tensor], shards: int) -> list[BatchTuple]:
    """``batch`` (tensors with the same number of rows B) -> ``shards`` batches of about
    B / shards rows each, in order (the first ones one row longer when B does not divide)."""
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards must be an int >= 1, got {shards!r}")
    rows = {t.size(0) for t in batch}
    if len(rows) != 1:
        raise ValueError(f"every tensor of the batch needs the same rows, got {sorted(rows)}")
    if rows.pop() < shards:
        raise ValueError(f"a batch of {batch[0].size(0)} rows cannot make {shards} shards")
    parts = [t.tensor_split(shards) for t in batch]  # per tensor: shards pieces
    return [tuple(pieces) for pieces in zip(*parts, strict=True)]


class ShardedGradients:
    """Forward and backward of a batch's row shards at once, one thread and one core each.

    ``backward(model, loss_fn, batch)`` leaves the whole batch's gradient in each
    parameter's ``.grad`` (replacing what was there) and returns the batch's loss
    (detached). The calling thread runs the first shard itself; a pool of ``shards - 1``
    threads runs the others. Every thread computes with one torch thread. Call
    :meth:`close` (or use a ``with`` block) to end the pool.
    """

    def __init__(self, shards: int) -> None:
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 2:
            raise ValueError(f"ShardedGradients needs shards >= 2, got {shards!r}")
        self.shards = shards
        self._pool = ThreadPoolExecutor(
            shards - 1, thread_name_prefix="minitx-shard",
            initializer=torch.set_num_threads, initargs=(1,),
        )

    def backward(self, model: nn.Module, loss_fn: ShardLoss, batch: BatchTuple) -> Tensor:
        """``batch``: tensors of B rows each (B >= shards); ``loss_fn(model, shard)`` a
        scalar mean over the shard's rows. Returns the scalar loss of the whole batch."""
        params = [p for p in model.parameters() if p.requires_grad]
        pieces = split_rows(batch, self.shards)
        rows = batch[0].size(0)

        def weighted_loss_and_grads(piece: BatchTuple) -> tuple[Tensor, list[Tensor | None]]:
            # Weighting the shard's loss weights its whole gradient, at no extra cost.
            loss = loss_fn(model, piece) * (piece[0].size(0) / rows)
            return loss.detach(), list(torch.autograd.grad(loss, params, allow_unused=True))

        with threads(1):
            futures = [self._pool.submit(weighted_loss_and_grads, p) for p in pieces[1:]]
            try:
                first = weighted_loss_and_grads(pieces[0])
            finally:
                wait(futures)  # no thread may still be working when an error propagates
            results = [first] + [f.result() for f in futures]
        for i, p in enumerate(params):
            grads = [g[i] for _, g in results if g[i] is not None]
            for g in grads[1:]:  # a fixed order: the same sum on every run
                grads[0].add_(g)
            p.grad = grads[0] if grads else None
        return sum(loss for loss, _ in results)

    def close(self) -> None:
        """End the thread pool."""
        self._pool.shutdown(wait=True)

    def __enter__(self) -> ShardedGradients:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["ShardedGradients", "can_shard", "has_dropout", "split_rows"]
