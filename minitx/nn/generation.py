"""Decoding: turning next-token logits into tokens.

Pure functions on logits, so each step can be looked at on its own:

    apply_temperature   logits / T: T < 1 sharpens the distribution, T > 1 flattens it
    top_k_filter        keep the k largest logits, set the rest to -inf
    top_p_filter        keep the smallest set of tokens whose probability adds up to >= p
    filter_logits       temperature, then top-k, then top-p
    sample_next         one token per row: argmax (greedy) or a draw from the softmax
    generate            the decoding loop: sample_next on a model's logits, token by token
    beam_step           one step of beam search on log-probabilities
    beam_search         beam search with any model given as a function idx -> logits
    KVCache             the keys and values a model keeps between decoding steps
    next_token_probs    the distribution a sampler draws the next token from
    continuation_log_probs  log-probability a model gives each token of a continuation

Every model of the package decodes through these: ``GPT.generate`` and ``GPT.beam_search``,
``DateTransformer.greedy_decode`` and ``DateTransformer.beam_search``, ``LadderModel.generate``.
A model enters as a function ``next_logits(ids (N, T)) -> (N, V)``; one that keeps a
:class:`KVCache` follows the beams through ``KVCache.reorder``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from minitx.nn.modes import evaluating, model_device


def _check_logits(logits: Tensor) -> None:
    if not isinstance(logits, Tensor) or not logits.is_floating_point():
        got = logits.dtype if isinstance(logits, Tensor) else type(logits).__name__
        raise TypeError(f"logits must be a floating-point torch.Tensor, got {got}")
    if logits.dim() < 1:
        raise ValueError("logits must have a vocabulary dimension (..., V), got shape ()")


def check_temperature(temperature: float) -> None:
    """Raise ``ValueError`` unless ``temperature`` is a number > 0."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")


def check_top_k(top_k: int | None) -> None:
    """Raise ``ValueError`` unless ``top_k`` is None or an int >= 1."""
    if top_k is None:
        return
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be None or an int >= 1, got {top_k!r}")


def check_top_p(top_p: float | None) -> None:
    """Raise ``ValueError`` unless ``top_p`` is None or a number in (0, 1]."""
    if top_p is None:
        return
    if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise ValueError(f"top_p must be None or a number in (0, 1], got {top_p!r}")


def check_beam_width(beam_width: int) -> None:
    """Raise ``ValueError`` unless ``beam_width`` is an int >= 1."""
    if isinstance(beam_width, bool) or not isinstance(beam_width, int) or beam_width < 1:
        raise ValueError(f"beam_width must be an int >= 1, got {beam_width!r}")


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    """``logits / temperature``, shape unchanged (..., V).

    softmax(logits / T): T -> 0 approaches greedy (all mass on the argmax), T = 1
    leaves the model's distribution as it is, T -> infinity approaches uniform.
    """
    _check_logits(logits)
    check_temperature(temperature)
    return logits / temperature


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """Keep the ``k`` largest logits of each row (last dim), set the others to -inf.

    Exactly ``k`` survive per row even when values tie (ties are broken by
    ``torch.topk``). ``k`` >= V keeps everything. Shape unchanged (..., V).
    """
    _check_logits(logits)
    check_top_k(k)
    if k >= logits.size(-1):
        return logits
    values, indices = torch.topk(logits, k, dim=-1)  # (..., k)
    out = torch.full_like(logits, float("-inf"))
    return out.scatter(-1, indices, values)


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Nucleus filtering: keep the smallest set of tokens whose probability sums to >= p.

    Tokens are taken in order of decreasing probability until their cumulative
    probability reaches ``p``; the rest get -inf. The most likely token is always
    kept, and ``p = 1`` keeps everything. Shape unchanged (..., V).
    """
    _check_logits(logits)
    check_top_p(p)
    if p >= 1.0:
        return logits
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # (..., V)
    probs = torch.softmax(sorted_logits, dim=-1)
    # Mass strictly before each token: once it reaches p, the token is not needed.
    before = torch.cumsum(probs, dim=-1) - probs
    drop_sorted = before >= p
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def filter_logits(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Tensor:
    """Temperature, then top-k, then top-p: the logits a sampler draws from. (..., V)."""
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def sample_next(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None, greedy: bool = False,
                generator: torch.Generator | None = None) -> Tensor:
    """Pick one token per row from next-token ``logits`` (B, V); returns (B, 1) long.

    ``greedy=True`` takes the argmax (temperature, top-k and top-p cannot change it,
    but are still validated). Otherwise filter with :func:`filter_logits` and draw
    from the softmax with ``generator`` (for reproducible samples).
    """
    _check_logits(logits)
    if logits.dim() != 2:
        raise ValueError(f"logits must be (B, V), got {tuple(logits.shape)}")
    check_temperature(temperature)
    check_top_k(top_k)
    check_top_p(top_p)
    if greedy:
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1)
    if logits.dtype in (torch.float16, torch.bfloat16):  # e.g. under autocast
        logits = logits.float()
    probs = torch.softmax(filter_logits(logits, temperature, top_k, top_p), dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)


def stream(next_logits: Callable[[Tensor], Tensor], idx: Tensor, max_new_tokens: int,
           block_size: int | None = None, *, temperature: float = 1.0,
           top_k: int | None = None, top_p: float | None = None, greedy: bool = False,
           generator: torch.Generator | None = None,
           stop_id: int | None = None) -> Iterator[Tensor]:
    """The decoding loop, one step at a time: yield each new token (B, 1) as it is picked.

    ``next_logits`` maps the context (B, t) long, the last ``block_size`` tokens when given,
    to the (B, V) logits of the next token; :func:`sample_next` picks it (greedy, or
    temperature / top-k / top-p sampling with ``generator``). With ``stop_id`` the loop
    ends early once every row has written that token. The caller chooses the mode (eval,
    no gradients) the model runs in.
    """
    check_max_new_tokens(max_new_tokens)
    ended = torch.zeros(idx.size(0), dtype=torch.bool, device=idx.device)
    for _ in range(max_new_tokens):
        context = idx if block_size is None else idx[:, -block_size:]
        nxt = sample_next(next_logits(context), temperature, top_k, top_p, greedy=greedy,
                          generator=generator)  # (B, 1)
        idx = torch.cat([idx, nxt], dim=1)
        yield nxt
        if stop_id is not None:
            ended |= nxt[:, 0] == stop_id
            if bool(ended.all()):  # a sync per step: decoding, not training
                return


def generate(next_logits: Callable[[Tensor], Tensor], idx: Tensor, max_new_tokens: int,
             block_size: int | None = None, **sampling: Any) -> Tensor:
    """:func:`stream` run to the end: ``idx`` (B, T) with the new tokens appended,
    (B, T + n) long, n <= ``max_new_tokens`` (fewer when ``stop_id`` ended every row)."""
    new = list(stream(next_logits, idx, max_new_tokens, block_size, **sampling))
    return torch.cat([idx, *new], dim=1)


def check_max_new_tokens(max_new_tokens: int) -> None:
    """Raise ``ValueError`` unless ``max_new_tokens`` is an int >= 0."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")


def beam_step(
    log_probs: Tensor, beam_scores: Tensor, beam_width: int
) -> tuple[Tensor, Tensor, Tensor]:
    """One step of beam search.

    ``log_probs`` (B, W, V): log-probabilities of the next token for each of the W
    beams; ``beam_scores`` (B, W): the summed log-probability of each beam so far
    (-inf for beams that do not exist yet). Every beam is extended by every token,
    and the ``beam_width`` best of the W * V candidates are kept.

    Returns ``(scores, parent, token)``, each (B, beam_width): the new scores, which
    old beam each new beam extends, and the token appended to it.
    """
    check_beam_width(beam_width)
    if log_probs.dim() != 3 or beam_scores.shape != log_probs.shape[:2]:
        raise ValueError(
            f"expected log_probs (B, W, V) and beam_scores (B, W), got "
            f"{tuple(log_probs.shape)} and {tuple(beam_scores.shape)}"
        )
    B, W, V = log_probs.size()
    total = (beam_scores[:, :, None] + log_probs).view(B, W * V)  # (B, W*V)
    scores, flat = torch.topk(total, beam_width, dim=-1)  # (B, beam_width)
    return scores, flat // V, flat % V


def beam_search(
    next_logits: Callable[[Tensor], Tensor],
    idx: Tensor,
    max_new_tokens: int,
    beam_width: int = 4,
    block_size: int | None = None,
    *,
    reorder: Callable[[Tensor], None] | None = None,
) -> tuple[Tensor, Tensor]:
    """Beam search: keep the ``beam_width`` most likely continuations at every step.

    ``next_logits`` maps a (N, T) long tensor of token ids to the (N, V) logits of
    the next token. ``idx`` (B, T) is the prompt; contexts are cropped to the last
    ``block_size`` tokens when given. There is no end-of-sequence token, so every
    beam has the same length and no length penalty is needed.

    ``reorder``, if given, is called after each step with ``rows`` (B * beam_width,)
    long: new beam i continues old beam ``rows[i]``. A ``next_logits`` that keeps state
    per beam (a KV cache) uses it to follow the beams.

    Returns ``(sequences (B, T + max_new_tokens), scores (B,))``: the best beam of
    each prompt and its summed log-probability. ``beam_width=1`` is greedy decoding.
    """
    check_beam_width(beam_width)
    check_max_new_tokens(max_new_tokens)
    if idx.dim() != 2:
        raise ValueError(f"idx must be (B, T), got {tuple(idx.shape)}")
    B = idx.size(0)
    W = beam_width
    beams = idx.repeat_interleave(W, dim=0)  # (B*W, T)
    # All beams start as the same prompt: only the first may be extended at step 1,
    # otherwise the W best would be W copies of the same continuation.
    scores = torch.full((B, W), float("-inf"), device=idx.device)
    scores[:, 0] = 0.0
    for _ in range(max_new_tokens):
        context = beams if block_size is None else beams[:, -block_size:]
        logits = next_logits(context)  # (B*W, V)
        log_probs = torch.log_softmax(logits.float(), dim=-1).view(B, W, -1)  # (B, W, V)
        scores, parent, token = beam_step(log_probs, scores, W)  # (B, W) each
        rows = (torch.arange(B, device=idx.device)[:, None] * W + parent).view(-1)  # (B*W,)
        beams = torch.cat([beams[rows], token.view(-1, 1)], dim=1)  # (B*W, T+1)
        if reorder is not None:
            reorder(rows)
    best = scores.argmax(dim=-1)  # (B,)
    sequences = beams.view(B, W, -1)[torch.arange(B, device=idx.device), best]
    return sequences, scores[torch.arange(B, device=idx.device), best]


@dataclass
class KVCache:
    """The keys and values of every layer, kept between decoding steps.

    ``layers[l]`` is a tuple of tensors (B, nh, T, hs), what layer l's attention computed
    so far: ``(k, v)`` for the T positions seen by a GPT block (nh = n_kv_heads heads);
    ``(k_self, v_self, k_mem, v_mem)`` for a decoder block of an encoder-decoder, whose
    cross-attention keys and values (of the S source positions) are computed once.
    ``cache[l]`` is ``layers[l]``. Made by ``GPT.forward_cached`` and
    ``EncoderDecoder.decode_cached``.
    """

    layers: list[tuple[Tensor, ...]]

    def __post_init__(self) -> None:
        if not isinstance(self.layers, list) or not self.layers:
            raise ValueError(
                f"KVCache.layers must be a non-empty list of per-layer (k, v, ...) tuples, "
                f"got {self.layers!r}"
            )

    def __getitem__(self, layer: int) -> tuple[Tensor, ...]:
        return self.layers[layer]

    @property
    def length(self) -> int:
        """T, the number of positions cached (those of the first tensor of each layer)."""
        return self.layers[0][0].size(2)

    @property
    def batch_size(self) -> int:
        """B, the number of sequences."""
        return self.layers[0][0].size(0)

    def numel(self) -> int:
        """Numbers stored: 2 * n_layer * B * T * n_kv_heads * hs for a GPT (``kv_cache_numel``)."""
        return sum(t.numel() for layer in self.layers for t in layer)

    def nbytes(self) -> int:
        """Bytes those numbers take (4 each in float32)."""
        return sum(t.numel() * t.element_size() for layer in self.layers for t in layer)

    def reorder(self, rows: Tensor) -> KVCache:
        """A cache whose sequence i is sequence ``rows[i]`` of this one; rows (B',) long.

        Beam search uses it: each new beam continues some old beam and takes its cache.
        """
        return KVCache([tuple(t[rows] for t in layer) for layer in self.layers])


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
    top-p (``minitx.nn.filter_logits``), then softmax. Tokens a filter removed
    have probability 0.
    """
    if not isinstance(idx, Tensor) or idx.dim() != 2 or idx.size(0) != 1:
        got = tuple(idx.shape) if isinstance(idx, Tensor) else type(idx).__name__
        raise ValueError(f"idx must be a (1, T) tensor of token ids, got {got}")
    block = model.config.block_size
    with evaluating(model):
        logits, _ = model(idx[:, -block:].to(model_device(model)))
    filtered = filter_logits(logits[0, -1].float(), temperature, top_k, top_p)  # (V,)
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


__all__ = [
    "KVCache",
    "apply_temperature",
    "beam_search",
    "beam_step",
    "check_beam_width",
    "check_max_new_tokens",
    "check_temperature",
    "check_top_k",
    "check_top_p",
    "continuation_log_probs",
    "filter_logits",
    "generate",
    "next_token_probs",
    "sample_next",
    "stream",
    "top_k_filter",
    "top_p_filter",
]
