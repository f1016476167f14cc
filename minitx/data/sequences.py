"""Why sequences are awkward for a fixed-size network: the measurements of notebook 01.

Words and their order (``bag_of_words``, over the words of
``minitx.data.tokenizer.word_tokenize``), fixed windows (``context_window``, ``token_distance``),
and what padding and truncation cost on a batch of sequences of unequal length
(``pad_batch``, ``padding_stats``, ``corpus_padding_waste``, ``plot_padded_batch``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "CAT_SENTENCE",
    "PaddingStats",
    "bag_of_words",
    "build_vocab",
    "context_window",
    "corpus_padding_waste",
    "line_lengths",
    "pad_batch",
    "padding_stats",
    "plot_padded_batch",
    "token_distance",
]

CAT_SENTENCE = (
    "The cat, which had been sleeping on the warm windowsill all afternoon while the rain "
    "poured outside, finally woke up."
)


def build_vocab(tokens: Sequence[str]) -> dict[str, int]:
    """Token -> id for the sorted distinct tokens: a *word* vocabulary, for
    :func:`bag_of_words` (characters have :class:`minitx.data.tokenizer.CharTokenizer`)."""
    return {t: i for i, t in enumerate(sorted(set(tokens)))}


def bag_of_words(tokens: Sequence[str], vocab: Mapping[str, int]) -> Tensor:
    """Count vector of ``tokens`` over ``vocab``: shape ``(len(vocab),)``, float.

    Entry ``vocab[w]`` is how often ``w`` occurs; where it occurs is forgotten.
    """
    unknown = sorted({t for t in tokens if t not in vocab})
    if unknown:
        raise ValueError(f"tokens not in the vocabulary: {unknown!r}")
    counts = torch.zeros(len(vocab))
    for t in tokens:
        counts[vocab[t]] += 1
    return counts


def token_distance(tokens: Sequence[str], source: str, target: str) -> int:
    """How many positions after the first ``source`` the first later ``target`` comes."""
    if source not in tokens:
        raise ValueError(f"{source!r} is not among the tokens {list(tokens)!r}")
    i = list(tokens).index(source)
    rest = list(tokens[i + 1 :])
    if target not in rest:
        raise ValueError(f"{target!r} does not occur after {source!r} in {list(tokens)!r}")
    return rest.index(target) + 1


def context_window(tokens: Sequence[str], position: int, size: int) -> list[str]:
    """The ``size`` tokens just before ``position``: all that a model with a fixed window
    of ``size`` previous tokens sees when it predicts ``tokens[position]``."""
    if not 0 <= position < len(tokens):
        raise ValueError(f"position must be in [0, {len(tokens) - 1}], got {position}")
    if size < 1:
        raise ValueError(f"window size must be >= 1, got {size}")
    return list(tokens[max(0, position - size) : position])


def line_lengths(text: str, *, skip_empty: bool = True) -> list[int]:
    """Length in characters of every line of ``text`` (blank lines skipped by default)."""
    lines = text.split("\n")
    return [len(line) for line in lines if line.strip() or not skip_empty]


def pad_batch(
    seqs: Sequence[Sequence[int]], pad_id: int = 0, max_len: int | None = None
) -> tuple[Tensor, Tensor]:
    """Stack sequences of unequal length into one ``(B, T)`` tensor of ids.

    ``T`` is the longest length, or ``max_len`` when given (longer sequences are
    truncated, keeping their start). Positions past a sequence's end hold ``pad_id``.
    Returns ``(ids (B, T) long, lengths (B,) long)``, lengths after truncation.
    """
    if len(seqs) == 0:
        raise ValueError("pad_batch needs at least one sequence")
    longest = max(len(s) for s in seqs)
    T = longest if max_len is None else max_len
    if T < 1:
        raise ValueError(f"padded length must be >= 1, got {T} (max_len={max_len!r})")
    kept = [s[:T].tolist() if hasattr(s, "tolist") else list(s[:T]) for s in seqs]
    rows = [k + [pad_id] * (T - len(k)) for k in kept]
    ids = torch.tensor(rows, dtype=torch.long).view(len(seqs), T)  # (B, T)
    lengths = torch.tensor([len(k) for k in kept], dtype=torch.long)  # (B,)
    return ids, lengths


@dataclass(frozen=True)
class PaddingStats:
    """What a padded (and possibly truncated) batch of sequences costs.

    ``real`` tokens are kept, ``padding`` slots hold nothing, ``truncated`` tokens were cut.
    """

    batch_size: int
    padded_length: int
    real: int
    padding: int
    truncated: int
    truncated_sequences: int

    @property
    def slots(self) -> int:
        """``batch_size * padded_length``: what the model computes on."""
        return self.batch_size * self.padded_length

    @property
    def waste(self) -> float:
        """Fraction of the batch that is padding."""
        return self.padding / self.slots

    @property
    def lost(self) -> float:
        """Fraction of the original tokens removed by truncation."""
        total = self.real + self.truncated
        return self.truncated / total if total else 0.0


def _check_lengths(lengths: Sequence[int] | Tensor) -> list[int]:
    if isinstance(lengths, Tensor):
        lengths = lengths.tolist()
    lengths = list(lengths)
    if not lengths:
        raise ValueError("need at least one sequence length")
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in lengths):
        raise ValueError(f"lengths must be non-negative ints, got {lengths[:8]!r}...")
    return lengths


def padding_stats(lengths: Sequence[int] | Tensor, max_len: int | None = None) -> PaddingStats:
    """Padding and truncation of one batch with these sequence ``lengths``, padded to the
    longest, or to ``max_len`` (cutting what is longer)."""
    lengths = _check_lengths(lengths)
    T = max(lengths) if max_len is None else max_len
    if T < 1:
        raise ValueError(f"padded length must be >= 1, got {T}")
    kept = [min(n, T) for n in lengths]
    return PaddingStats(
        batch_size=len(lengths),
        padded_length=T,
        real=sum(kept),
        padding=sum(T - k for k in kept),
        truncated=sum(n - k for n, k in zip(lengths, kept, strict=True)),
        truncated_sequences=sum(n > T for n in lengths),
    )


def corpus_padding_waste(
    lengths: Sequence[int] | Tensor, batch_size: int, *, sort_by_length: bool = False
) -> float:
    """Fraction of padding when ``lengths`` (in the given order, or sorted) are cut into
    consecutive batches of ``batch_size``, each padded to its own longest sequence."""
    lengths = _check_lengths(lengths)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if sort_by_length:
        lengths = sorted(lengths)
    padding = slots = 0
    for start in range(0, len(lengths), batch_size):
        stats = padding_stats(lengths[start : start + batch_size])
        padding += stats.padding
        slots += stats.slots
    return padding / slots


def plot_padded_batch(
    lengths: Sequence[int] | Tensor,
    max_len: int | None = None,
    ax: Any = None,
    title: str | None = None,
) -> Any:
    """Draw a batch as a grid: one row per sequence, kept tokens, padding, and (beyond
    ``max_len``) the truncated tokens. Returns the matplotlib ``Axes``."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    lengths = _check_lengths(lengths)
    stats = padding_stats(lengths, max_len)
    T = stats.padded_length
    width = max(max(lengths), T)
    grid = torch.zeros(len(lengths), width)  # 0 = nothing, 1 = kept, 2 = padding, 3 = cut
    for b, n in enumerate(lengths):
        grid[b, : min(n, T)] = 1
        grid[b, n:T] = 2
        grid[b, T:n] = 3
    colors = ["white", "tab:blue", "lightgray", "tab:red"]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3), layout="constrained")
    ax.imshow(grid.numpy(), cmap=ListedColormap(colors), vmin=0, vmax=3, aspect="auto",
              interpolation="nearest")
    ax.axvline(T - 0.5, color="black", linewidth=1)
    ax.set_xlabel("position in the sequence (tokens)")
    ax.set_ylabel("sequence in batch")
    ax.set_title(
        title or f"padded to {T}: {stats.waste:.0%} padding, {stats.lost:.0%} of tokens cut"
    )
    labels = ["kept", "padding", "cut"]
    handles = [Patch(color=c, label=l) for c, l in zip(colors[1:], labels, strict=True)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    return ax
