"""Delayed recall: remember the first token through a gap of distractors.

A sequence is ``[s, d_1, ..., d_gap, ?]``: a symbol ``s`` (one of ``n_symbols``), then
``gap`` random distractor tokens, then a query token. The answer is ``s``. A model that
reads left to right must carry ``s`` for ``gap + 1`` steps, so ``gap`` dials how long
the memory has to be. Vocabulary: symbols ``0 .. n_symbols-1``, distractors next, the
query token last.

The task is data only: ``RecallTask`` supplies batches and a loss to
``minitx.train.trainer.Trainer``; the model that learns it, the many-to-one
``RecallClassifier`` of notebook 02, is in ``minitx.nn.rnn``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["RecallTask", "make_recall_data", "vocab_size"]


def vocab_size(n_symbols: int = 4, n_distractors: int = 4) -> int:
    """Symbols + distractors + the query token."""
    return n_symbols + n_distractors + 1


def make_recall_data(
    n: int, gap: int, *, n_symbols: int = 4, n_distractors: int = 4, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """``n`` sequences of length ``gap + 2`` and their answers.

    Returns ``x`` (n, gap + 2) long tokens and ``y`` (n,) long, with ``y == x[:, 0]``.
    Same ``seed`` -> same data.
    """
    if n < 1 or gap < 0 or n_symbols < 2 or n_distractors < 1:
        raise ValueError(
            f"need n >= 1, gap >= 0, n_symbols >= 2, n_distractors >= 1; got n={n}, "
            f"gap={gap}, n_symbols={n_symbols}, n_distractors={n_distractors}"
        )
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, n_symbols, (n,), generator=g)
    distractors = torch.randint(n_symbols, n_symbols + n_distractors, (n, gap), generator=g)
    query = torch.full((n, 1), n_symbols + n_distractors)
    return torch.cat([y[:, None], distractors, query], dim=1), y


@dataclass(frozen=True)
class RecallTask:
    """The recall task as ``minitx.train.trainer.Trainer`` wants it: batches and a loss.

    ``get_batch(split, generator)`` draws ``batch_size`` fresh sequences with a gap of
    ``gap`` (its seed comes from ``generator``, so a seeded Trainer sees the same stream
    every run); ``loss(model, batch)`` is the cross-entropy of the model's answer.
    """

    gap: int
    batch_size: int = 128
    n_symbols: int = 4
    n_distractors: int = 4

    def __post_init__(self) -> None:
        make_recall_data(1, self.gap, n_symbols=self.n_symbols,
                         n_distractors=self.n_distractors)  # validates the sizes
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")

    @property
    def vocab(self) -> int:
        """Symbols + distractors + the query token."""
        return vocab_size(self.n_symbols, self.n_distractors)

    def get_batch(self, split: str, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """x (batch_size, gap + 2) tokens and y (batch_size,) answers, fresh each call
        (``split`` is ignored: every batch is new data)."""
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        return make_recall_data(self.batch_size, self.gap, n_symbols=self.n_symbols,
                                n_distractors=self.n_distractors, seed=seed)

    @staticmethod
    def loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
        """Cross-entropy (a scalar) of ``model(x)`` (B, K) against the answers y (B,)."""
        x, y = batch
        return F.cross_entropy(model(x), y)
