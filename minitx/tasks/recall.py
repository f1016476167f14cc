"""Delayed recall: remember the first token through a gap of distractors.

A sequence is ``[s, d_1, ..., d_gap, ?]``: a symbol ``s`` (one of ``n_symbols``), then
``gap`` random distractor tokens, then a query token. The answer is ``s``. A model that
reads left to right must carry ``s`` for ``gap + 1`` steps, so ``gap`` dials how long
the memory has to be. Vocabulary: symbols ``0 .. n_symbols-1``, distractors next, the
query token last.

``RecallClassifier`` is the many-to-one model of notebook 02: one-hot tokens, a
recurrent layer from ``minitx.rnn``, a linear read-out of the last hidden state.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.rnn import GRU, LSTM, RNN, init_forget_bias

LAYERS = {"rnn": RNN, "lstm": LSTM, "gru": GRU}


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


class RecallClassifier(nn.Module):
    """Many-to-one: tokens (B, T) -> one-hot (B, T, V) -> RNN/LSTM/GRU -> logits (B, K)
    read from the last hidden state. An LSTM's forget-gate bias starts at ``forget_bias``."""

    def __init__(
        self, kind: str, vocab: int, hidden_size: int, n_classes: int, forget_bias: float = 2.0
    ) -> None:
        super().__init__()
        if kind not in LAYERS:
            raise ValueError(f"kind must be one of {sorted(LAYERS)}, got {kind!r}")
        self.vocab = vocab
        self.rnn = LAYERS[kind](vocab, hidden_size)
        self.head = nn.Linear(hidden_size, n_classes)
        if kind == "lstm":
            init_forget_bias(self.rnn, forget_bias)  # start with the highway (mostly) open

    def forward(self, tokens: Tensor) -> Tensor:
        x = F.one_hot(tokens, self.vocab).to(self.head.weight.dtype)  # (B, T, V)
        out, _ = self.rnn(x)  # (B, T, H)
        return self.head(out[:, -1])  # (B, K)


@torch.no_grad()
def accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    """Fraction of sequences whose arg-max prediction equals the answer."""
    return (model(x).argmax(-1) == y).float().mean().item()


def train_recall(
    kind: str,
    gap: int,
    *,
    steps: int = 100,
    batch_size: int = 128,
    hidden_size: int = 32,
    lr: float = 1e-2,
    n_symbols: int = 4,
    n_distractors: int = 4,
    forget_bias: float = 2.0,
    seed: int = 0,
) -> tuple[RecallClassifier, list[float]]:
    """Train a ``kind`` ('rnn', 'lstm' or 'gru') classifier on fresh batches with Adam.

    Returns the model and the loss of every step. Takes seconds on a CPU.
    """
    torch.manual_seed(seed)
    V = vocab_size(n_symbols, n_distractors)
    model = RecallClassifier(kind, V, hidden_size, n_symbols, forget_bias)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = make_recall_data(
            batch_size, gap, n_symbols=n_symbols, n_distractors=n_distractors,
            seed=seed * 1_000_003 + step + 1,
        )
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return model, losses
