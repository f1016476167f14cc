"""Looking at what a trained language model writes: loss, repetition, memorisation, sampling.

    estimate_loss            mean loss of a model over fixed random blocks of a token tensor
    split_loss               mean loss over a whole split, in non-overlapping windows
    next_token_probs         the distribution a sampler draws the next token from
    continuation_log_probs   log-probability the model gives each token of a continuation
    repeated_ngram_fraction  how much of a text repeats itself (greedy decoding loops)
    match_lengths            for every position of a sample, the longest stretch starting
                             there that occurs verbatim in a corpus
    longest_verbatim_match   the longest passage of a sample found verbatim in a corpus
    occlusion_importance     how much the prediction changes when one input token is replaced

The verbatim search needs no index: ``match_lengths`` slides a window over the sample
and asks Python's substring search (``str.__contains__``, a fast C routine) whether the
window occurs in the corpus. Because a substring of a match is also a match, the window
only ever moves forward, so a sample of n characters costs at most 2n searches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from minitx import sampling
from minitx.batches import random_blocks, sequential_blocks
from minitx.runtime import evaluating, model_device


# ---------------------------------------------------------------- loss
@torch.no_grad()
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
    mode without gradients; the model's mode is restored.
    """
    if not isinstance(n_batches, int) or isinstance(n_batches, bool) or n_batches < 1:
        raise ValueError(f"n_batches must be an int >= 1, got {n_batches!r}")
    generator = torch.Generator().manual_seed(seed)
    device = model_device(model)
    with evaluating(model):
        total = 0.0
        for _ in range(n_batches):
            x, y = random_blocks(data, block_size, batch_size, generator)  # (B, T) each
            _, loss = model(x.to(device), y.to(device))
            total += float(loss)
    return total / n_batches


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
    that many tokens (a fixed subset, for a quick check). Eval mode, no gradients.
    """
    if not isinstance(data, Tensor) or data.dim() != 1:
        got = tuple(data.shape) if isinstance(data, Tensor) else type(data).__name__
        raise ValueError(f"data must be a 1-D tensor of token ids (N,), got {got}")
    if max_tokens is not None:
        if max_tokens <= block_size:
            raise ValueError(f"max_tokens must exceed block_size={block_size}, got {max_tokens}")
        data = data[: max_tokens + 1]  # +1: the last window's shifted target
    device = model_device(model)
    total, count = 0.0, 0
    with evaluating(model):
        for x, y in sequential_blocks(data, block_size, batch_size):  # (b, T) each
            _, loss = model(x.to(device), y.to(device))
            total += float(loss) * y.numel()
            count += y.numel()
    return total / count


@torch.no_grad()
def next_token_probs(
    model: nn.Module,
    idx: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Tensor:
    """Probabilities (V,) of the token that follows ``idx`` (1, T), after the filters.

    Exactly what ``GPT.generate`` draws its next token from: the logits of the last
    position (context cut to ``model.config.block_size``), then temperature, top-k and
    top-p (``minitx.sampling.filter_logits``), then softmax. Tokens a filter removed
    have probability 0.
    """
    if not isinstance(idx, Tensor) or idx.dim() != 2 or idx.size(0) != 1:
        got = tuple(idx.shape) if isinstance(idx, Tensor) else type(idx).__name__
        raise ValueError(f"idx must be a (1, T) tensor of token ids, got {got}")
    block = model.config.block_size
    with evaluating(model):
        logits, _ = model(idx[:, -block:].to(model_device(model)))
    filtered = sampling.filter_logits(logits[0, -1].float(), temperature, top_k, top_p)  # (V,)
    return torch.softmax(filtered, dim=-1).cpu()


@torch.no_grad()
def continuation_log_probs(model: nn.Module, ids: Tensor, start: int) -> Tensor:
    """Log-probability the model gives each token ``ids[t]``, ``t >= start``, of a sequence.

    ``ids`` (N,) or (1, N) token ids; ``start`` >= 1 is where the continuation begins (the
    length of the prompt). Token t is scored from the ``block_size`` tokens before it,
    the context ``GPT.generate`` used when it produced it. Returns (N - start,) float.
    """
    if not isinstance(ids, Tensor):
        raise TypeError(f"ids must be a tensor of token ids, got {type(ids).__name__}")
    ids = ids.reshape(-1).cpu()  # (N,)
    N = ids.numel()
    if isinstance(start, bool) or not isinstance(start, int) or not 1 <= start <= N:
        raise ValueError(f"start must be an int in [1, {N}], got {start!r}")
    block = model.config.block_size
    device = model_device(model)
    with evaluating(model):
        # Tokens 1 .. block are scored from one window ids[:block] (causal: position t-1
        # sees exactly ids[:t]); every later token from its own window ids[t-block:t].
        head = ids[: min(block, N)][None]  # (1, <=block)
        logits, _ = model(head.to(device))
        logp = [torch.log_softmax(logits[0].float(), -1).cpu()]  # row t-1 scores token t
        late = torch.arange(block + 1, max(block + 1, N))  # tokens with a cropped window
        if late.numel():
            windows = ids[late[:, None] - block + torch.arange(block)]  # (n_late, block)
            logits, _ = model(windows.to(device))
            logp.append(torch.log_softmax(logits[:, -1].float(), -1).cpu())  # (n_late, V)
    table = torch.cat(logp)  # row r scores token r + 1
    t = torch.arange(start, N)
    return table[t - 1, ids[t]]


# ---------------------------------------------------------------- repetition
def _check_str(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")


def repeated_ngram_fraction(text: str, n: int = 10) -> float:
    """Fraction of the n-grams (runs of ``n`` characters) of ``text`` that already
    occurred earlier in it: ``1 - distinct / total``.

    0 means no stretch of ``n`` characters comes twice; a text stuck in a loop scores
    close to 1. A text shorter than ``n`` has no n-grams and scores 0.
    """
    _check_str(text, "text")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    total = len(text) - n + 1
    if total <= 0:
        return 0.0
    distinct = len({text[i : i + n] for i in range(total)})
    return 1.0 - distinct / total


# ---------------------------------------------------------------- memorisation
@dataclass(frozen=True)
class VerbatimMatch:
    """A passage of a sample that occurs verbatim in a corpus."""

    length: int  # characters
    sample_start: int  # where it starts in the sample
    corpus_start: int  # where it first occurs in the corpus (-1 when length is 0)
    text: str


def match_lengths(sample: str, corpus: str) -> np.ndarray:
    """Matching statistics: entry i is the length of the longest prefix of ``sample[i:]``
    that occurs somewhere in ``corpus``. Returns an int64 array of ``len(sample)`` entries.

    If ``sample[i:j]`` occurs in the corpus, so does ``sample[i+1:j]``: the end of the
    window never moves back, so at most ``2 * len(sample)`` substring searches are run.
    """
    _check_str(sample, "sample")
    _check_str(corpus, "corpus")
    n = len(sample)
    out = np.zeros(n, dtype=np.int64)
    j = 0  # sample[i:j] occurs in the corpus
    for i in range(n):
        j = max(j, i)
        while j < n and sample[i : j + 1] in corpus:
            j += 1
        out[i] = j - i
    return out


def longest_verbatim_match(sample: str, corpus: str) -> VerbatimMatch:
    """The longest passage of ``sample`` that occurs verbatim in ``corpus`` (the first one
    when several are as long), with where it sits in both texts."""
    lengths = match_lengths(sample, corpus)
    if lengths.size == 0 or lengths.max() == 0:
        return VerbatimMatch(0, 0, -1, "")
    start = int(lengths.argmax())
    length = int(lengths[start])
    text = sample[start : start + length]
    return VerbatimMatch(length, start, corpus.find(text), text)


# ---------------------------------------------------------------- what the prediction uses
@torch.no_grad()
def occlusion_importance(model: nn.Module, idx: Tensor, replacement: int) -> Tensor:
    """How much each input token matters to the next-token prediction after ``idx`` (1, T).

    For every position j, token j is replaced by ``replacement`` and the drop in the
    log-probability of the token the model predicts from the intact input is measured.
    Returns (T,) float: entry j is ``log p(top | idx) - log p(top | idx with j replaced)``
    (large = the prediction relied on token j; positions already equal to ``replacement``
    score 0).
    """
    if not isinstance(idx, Tensor) or idx.dim() != 2 or idx.size(0) != 1:
        got = tuple(idx.shape) if isinstance(idx, Tensor) else type(idx).__name__
        raise ValueError(f"idx must be a (1, T) tensor of token ids, got {got}")
    T = idx.size(1)
    with evaluating(model):
        variants = idx.repeat(T + 1, 1)  # (T+1, T): row 0 intact, row j+1 has j replaced
        variants[torch.arange(1, T + 1), torch.arange(T)] = replacement
        logits, _ = model(variants.to(model_device(model)))
    logp = torch.log_softmax(logits[:, -1].float(), dim=-1).cpu()  # (T+1, V)
    top = int(logp[0].argmax())
    return logp[0, top] - logp[1:, top]  # (T,)


# ---------------------------------------------------------------- sampling widget
__all__ = [
    "VerbatimMatch",
    "continuation_log_probs",
    "estimate_loss",
    "longest_verbatim_match",
    "match_lengths",
    "next_token_probs",
    "occlusion_importance",
    "repeated_ngram_fraction",
    "split_loss",
]
