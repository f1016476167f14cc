"""Batches for next-token prediction: random contiguous blocks of a 1-D token tensor.

A language model learns from pairs (x, y) where y is x shifted by one token:

    data = [t0 t1 t2 t3 t4 ...]
    x    = [t0 t1 t2 t3]        y = [t1 t2 t3 t4]

Every row of a batch starts at a random offset drawn from a ``torch.Generator`` that the
caller owns. Saving that generator's state in a checkpoint (``generator.get_state()``)
is what lets a resumed run draw exactly the batches an uninterrupted run would have.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

__all__ = ["SPLITS", "BlockBatches", "random_blocks", "sequential_blocks"]

SPLITS = ("train", "val")


def _check_tokens(data: Tensor, block_size: int, name: str = "data") -> None:
    if not isinstance(data, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(data).__name__}")
    if data.dim() != 1:
        raise ValueError(f"{name} must be 1-D (N,), got shape {tuple(data.shape)}")
    if data.dtype.is_floating_point or data.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {data.dtype}")
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    if data.numel() < block_size + 1:
        raise ValueError(
            f"{name} has {data.numel()} tokens; a block of {block_size} needs at least "
            f"{block_size + 1} (inputs plus the shifted targets)"
        )


def _check_ids(data: Tensor, name: str, vocab_size: int | None) -> None:
    """Once per tensor, not per batch: ``data`` (N,) must be int64 ids in 0 .. vocab_size - 1
    (only >= 0 when ``vocab_size`` is None). One min/max pass over the data."""
    if data.dtype != torch.long:
        raise TypeError(
            f"{name} must hold int64 token ids (torch.long), got dtype {data.dtype}; "
            f"convert it with {name}.long()"
        )
    lo, hi = (int(v) for v in torch.aminmax(data))
    if lo < 0:
        where = int((data < 0).nonzero()[0, 0])
        raise ValueError(
            f"{name} holds the negative token id {lo} (the first negative id is at position "
            f"{where}); token ids are 0 .. vocab_size - 1"
        )
    if vocab_size is not None and hi >= vocab_size:
        where = int((data >= vocab_size).nonzero()[0, 0])
        raise ValueError(
            f"{name} holds the token id {hi} (the first out-of-range id is at position "
            f"{where}), but vocab_size is {vocab_size}: ids must lie in 0 .. {vocab_size - 1}"
        )


def random_blocks(
    data: Tensor, block_size: int, batch_size: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """Draw ``batch_size`` random windows of ``data``.

    Args:
        data: (N,) integer token ids.
        block_size: T, the length of each window.
        batch_size: B, the number of windows.
        generator: where the random offsets come from (CPU generator).

    Returns:
        ``(x, y)``, both (B, T) int64 on ``data``'s device, with ``y[:, t] == x[:, t + 1]``
        for t < T - 1 and ``y[:, -1]`` the token after the window.
    """
    _check_tokens(data, block_size)
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    # Last valid start is N - T - 1 so that the shifted target still fits.
    ix = torch.randint(data.numel() - block_size, (batch_size,), generator=generator)  # (B,)
    offsets = ix.unsqueeze(1) + torch.arange(block_size)  # (B, T)
    offsets = offsets.to(data.device)
    x = data[offsets].long()
    y = data[offsets + 1].long()
    return x, y


def sequential_blocks(
    data: Tensor, block_size: int, batch_size: int
) -> Iterator[tuple[Tensor, Tensor]]:
    """Walk over ``data`` once in non-overlapping windows, for a deterministic full evaluation.

    Yields ``(x, y)`` batches of shape (b, T), b <= ``batch_size`` (the last one may be
    smaller). Tokens that do not fill a whole window at the end are skipped.
    """
    _check_tokens(data, block_size)
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    n_windows = (data.numel() - 1) // block_size
    starts = torch.arange(n_windows) * block_size  # (W,)
    for i in range(0, n_windows, batch_size):
        offsets = (starts[i : i + batch_size].unsqueeze(1) + torch.arange(block_size)).to(
            data.device
        )  # (b, T)
        yield data[offsets].long(), data[offsets + 1].long()


class BlockBatches:
    """A ``get_batch(split, generator) -> (x, y)`` source over a train and a val tensor.

    This is the shape of batch source ``minitx.train.trainer.Trainer`` expects: a callable that
    knows nothing about models. Batches are moved to ``device`` (pinned and copied
    asynchronously on CUDA).

    The token ids are checked once, here, rather than by the model at every step (a check
    in the forward pass would wait for the GPU): both tensors must be 1-D int64 ids >= 0,
    and below ``vocab_size`` when it is given.

    Args:
        train: (N_train,) int64 token ids.
        val: (N_val,) int64 token ids.
        block_size: T.
        batch_size: B.
        device: where the batches go.
        vocab_size: the model's vocabulary size; every id must be below it (None: only
            checks that no id is negative).
    """

    def __init__(
        self,
        train: Tensor,
        val: Tensor,
        block_size: int,
        batch_size: int,
        device: torch.device | str = "cpu",
        vocab_size: int | None = None,
    ) -> None:
        _check_tokens(train, block_size, "train")
        _check_tokens(val, block_size, "val")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if vocab_size is not None and (
            not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1
        ):
            raise ValueError(f"vocab_size must be None or a positive int, got {vocab_size!r}")
        # Sampling indexes on the CPU; the generator is a CPU generator.
        self.data = {"train": train.cpu(), "val": val.cpu()}
        for split, data in self.data.items():
            _check_ids(data, split, vocab_size)
        self.block_size = block_size
        self.batch_size = batch_size
        self.vocab_size = vocab_size
        self.device = torch.device(device)

    def __call__(
        self, split: str, generator: torch.Generator | None = None
    ) -> tuple[Tensor, Tensor]:
        """Return one batch ``(x, y)``, each (B, T) int64, from ``split`` ('train' or 'val')."""
        if split not in self.data:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        x, y = random_blocks(self.data[split], self.block_size, self.batch_size, generator)
        if self.device.type == "cuda":
            x = x.pin_memory().to(self.device, non_blocking=True)
            y = y.pin_memory().to(self.device, non_blocking=True)
        elif self.device.type != "cpu":
            x, y = x.to(self.device), y.to(self.device)
        return x, y

    def __repr__(self) -> str:
        n_train, n_val = self.data["train"].numel(), self.data["val"].numel()
        return (
            f"BlockBatches(train={n_train:,} tokens, val={n_val:,} tokens, "
            f"block_size={self.block_size}, batch_size={self.batch_size}, device={self.device})"
        )
