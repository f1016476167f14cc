"""A small GPT: a decoder-only transformer that predicts the next token.

    idx (B, T) -> token embedding + position embedding -> n_layer pre-LN causal blocks
    -> final LayerNorm -> linear head (tied to the token embedding) -> logits (B, T, V)

``GPTConfig`` (in :mod:`minitx.nn.gpt_config`, importable from here) switches to the
modern (Llama) block piece by piece: ``norm="rms"``, ``positions="rope"`` (or ``"none"``),
``mlp="swiglu"``, ``n_kv_heads`` < ``n_head``.

The structure and initialisation follow GPT-2 (and Karpathy's nanoGPT); the blocks
come from ``minitx.nn.transformer`` and the decoding rules from ``minitx.nn.generation``.

Generation keeps a KV cache (:class:`minitx.nn.generation.KVCache`) by default: each
layer's keys and values of the positions already seen are kept, so a new token costs one
position's forward instead of one over the whole context, until the context window is full.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.data import IGNORE_INDEX
from minitx.nn import generation
from minitx.nn.generation import KVCache
from minitx.nn.gpt_config import GPTConfig, kv_cache_numel
from minitx.nn.modes import evaluating
from minitx.nn.swiglu import SwiGLU, swiglu_hidden
from minitx.nn.transformer import LearnedPositions, TransformerBlock, make_norm


class GPT(nn.Module):
    """Decoder-only transformer language model (GPT-2 layout, pre-LN).

    ``forward(idx, targets=None)``: idx (B, T) long token ids, T <= block_size;
    returns ``(logits (B, T, vocab_size), loss)`` where loss is the mean cross-entropy
    against ``targets`` (B, T) (entries ``IGNORE_INDEX`` = -100 are left out), or None
    without targets. Token ids are checked where users arrive (``generate``,
    ``beam_search``, ``attention_maps``, ``forward_cached``) and where training batches
    are made, not in ``forward``: that check would wait for the device at every step.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"expected a GPTConfig, got {type(config).__name__}")
        self.config = config
        C = config.n_embd
        self.tok_emb = nn.Embedding(config.vocab_size, C)
        # RoPE turns queries and keys inside attention; 'none' relies on the causal mask alone.
        learned = config.positions == "learned"
        self.pos_emb = LearnedPositions(config.block_size, C) if learned else None
        self.drop = nn.Dropout(config.dropout)
        d_ff = 4 * C if config.mlp == "gelu" else swiglu_hidden(C)
        self.blocks = nn.ModuleList(
            TransformerBlock(
                C, config.n_head, d_ff, dropout=config.dropout, activation=config.activation,
                norm_first=True, causal=config.causal, bias=config.bias, fused_norm=True,
                norm=config.norm, mlp=config.mlp, n_kv_heads=config.n_kv_heads,
                rope=config.positions == "rope",
            )
            for _ in range(config.n_layer)
        )
        self.ln_f = make_norm(config.norm, C, bias=config.bias, fused=True)
        self.lm_head = nn.Linear(C, config.vocab_size, bias=False)
        if config.tied_head:
            # Weight tying: the output layer reuses the token embedding matrix (V, C).
            self.lm_head.weight = self.tok_emb.weight
        self._init_weights()

    def _init_weights(self) -> None:
        """GPT-2 initialisation: N(0, 0.02), zero biases, and the two projections that
        write into the residual stream scaled by 1/sqrt(2 * n_layer), so the stream's
        variance does not grow with depth."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
        std = 0.02 / math.sqrt(2 * self.config.n_layer)
        for block in self.blocks:
            nn.init.normal_(block.attn.out_proj.weight, mean=0.0, std=std)
            ffn_out = block.ffn.w2 if isinstance(block.ffn, SwiGLU) else block.ffn.fc2
            nn.init.normal_(ffn_out.weight, mean=0.0, std=std)

    def num_parameters(self, non_embedding: bool = False) -> int:
        """Number of parameters (the tied embedding/head matrix counted once).

        ``non_embedding=True`` leaves out the position embeddings, as nanoGPT does;
        the token embedding stays in because, tied, it is also the output layer.
        """
        n = sum(p.numel() for p in self.parameters())
        if non_embedding and self.pos_emb is not None:
            n -= self.pos_emb.weight.numel()
        return n

    def _check_idx(self, idx: Tensor, name: str = "idx", crop: bool = False) -> None:
        """Type, dtype and shape of ``idx``: checks that never wait for the device."""
        if not isinstance(idx, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(idx).__name__}")
        if idx.dtype != torch.long:
            raise ValueError(f"{name} must be a torch.long tensor of token ids, got {idx.dtype}")
        if idx.dim() != 2 or idx.size(1) < 1:
            raise ValueError(f"{name} must be (B, T) with T >= 1, got {tuple(idx.shape)}")
        if not crop and idx.size(1) > self.config.block_size:
            raise ValueError(
                f"sequence length T={idx.size(1)} is longer than block_size="
                f"{self.config.block_size}"
            )

    def _check_tokens(self, idx: Tensor, crop: bool = False) -> None:
        """``_check_idx``, and every id in [0, vocab_size): for the public entry points."""
        self._check_idx(idx, crop=crop)
        V = self.config.vocab_size
        if bool(((idx < 0) | (idx >= V)).any()):  # syncs the device: never in forward
            raise ValueError(
                f"idx holds token ids outside [0, vocab_size={V}): min {int(idx.min())}, "
                f"max {int(idx.max())}"
            )

    def _check_targets(self, idx: Tensor, targets: Tensor) -> None:
        if not isinstance(targets, Tensor) or targets.dtype != torch.long:
            got = targets.dtype if isinstance(targets, Tensor) else type(targets).__name__
            raise ValueError(f"targets must be a torch.long tensor, got {got}")
        if targets.shape != idx.shape:
            raise ValueError(
                f"targets must have the shape of idx {tuple(idx.shape)}, got "
                f"{tuple(targets.shape)}"
            )

    def _embed(self, idx: Tensor, P: int = 0) -> Tensor:
        """(B, T, C): the embeddings of ``idx`` (B, T), the tokens at positions P .. P + T - 1,
        plus their rows of the learned position table when there is one."""
        x = self.tok_emb(idx)  # (B, T, C)
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[P : P + idx.size(1)]  # rows of positions P .. P + T - 1
        return self.drop(x)

    def _hidden(self, idx: Tensor, need_weights: bool = False) -> tuple[Tensor, list[Tensor]]:
        x = self._embed(idx)  # (B, T, C)
        maps = []
        for block in self.blocks:
            x, w = block(x, need_weights=need_weights)  # w: (B, nh, T, T) or None
            maps.append(w)
        return self.ln_f(x), maps

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Logits (B, T, V) of the token after each position of ``idx`` (B, T), and the mean
        cross-entropy against ``targets`` (B, T), or None without targets."""
        # Shapes and dtypes only: checking the ids' range here would sync the device at
        # every training step, so they are checked where users and batches come in.
        self._check_idx(idx)
        if targets is not None:
            self._check_targets(idx, targets)
        B, T = idx.size()
        x, _ = self._hidden(idx)  # (B, T, C): embeddings, the blocks, final LayerNorm
        logits = self.lm_head(x)  # (B, T, V)
        if targets is None:
            return logits, None
        # Targets equal to IGNORE_INDEX (padding, a prompt not to learn) add nothing.
        loss = F.cross_entropy(
            logits.view(B * T, -1), targets.reshape(B * T), ignore_index=IGNORE_INDEX
        )
        return logits, loss

    def attention_maps(self, idx: Tensor) -> Tensor:
        """Attention weights of every layer and head for ``idx`` (B, T).

        Runs in eval mode without gradients (the explicit attention path) and returns
        a (n_layer, B, n_head, T, T) tensor: entry [l, b, h, i, j] is how much position
        i attends to position j in head h of layer l. Each row sums to 1.
        """
        self._check_tokens(idx)
        with evaluating(self):
            _, maps = self._hidden(idx, need_weights=True)
        return torch.stack(maps)  # (n_layer, B, nh, T, T)

    def forward_cached(self, idx: Tensor, cache: KVCache | None = None) -> tuple[Tensor, KVCache]:
        """Forward of new tokens only, reusing the keys and values of the earlier ones.

        ``idx`` (B, T) holds the new tokens; ``cache`` those of the P tokens before them
        (None: there are none), so the new tokens sit at positions P .. P + T - 1, and
        P + T <= block_size. Returns ``(logits (B, T, V), cache)`` with the cache now
        holding P + T positions. The logits equal those of ``forward`` on the whole
        sequence (up to rounding). Causal models only.
        """
        self._check_tokens(idx)
        if not self.config.causal:
            raise ValueError(
                "a KV cache needs a causal model (config.causal=True), got causal=False"
            )
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
            if len(cache.layers) != self.config.n_layer or cache.batch_size != idx.size(0):
                raise ValueError(
                    f"cache holds {len(cache.layers)} layers x {cache.batch_size} sequences, "
                    f"expected {self.config.n_layer} layers x B={idx.size(0)}"
                )
            if cache.length + idx.size(1) > self.config.block_size:
                raise ValueError(
                    f"{cache.length} cached + {idx.size(1)} new positions exceed block_size="
                    f"{self.config.block_size}: crop the context and start a new cache"
                )
        return self._forward_cached(idx, cache)

    def _forward_cached(self, idx: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        P = 0 if cache is None else cache.length  # RoPE's blocks read P from their cache
        x = self._embed(idx, P)  # (B, T, C)
        pasts = [None] * len(self.blocks) if cache is None else cache.layers
        layers = []
        for block, past in zip(self.blocks, pasts, strict=True):
            x, kv = block.forward_cached(x, past)  # kv: k, v each (B, n_kv, P + T, hs)
            layers.append(kv)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        return logits, KVCache(layers)

    def next_token_logits(self, idx: Tensor) -> Tensor:
        """Logits (B, V) for the token after ``idx`` (B, T). Only the last ``block_size``
        tokens are seen: whatever lies further back is cropped away."""
        logits, _ = self(idx[:, -self.config.block_size :])
        return logits[:, -1, :]  # (B, V)

    def generate(self, idx: Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, top_p: float | None = None, greedy: bool = False,
                 generator: torch.Generator | None = None, use_cache: bool = True) -> Tensor:
        """Append ``max_new_tokens`` tokens to ``idx`` (B, T), one at a time.

        Each step feeds the last ``block_size`` tokens (older ones fall out of the
        context window), takes the logits of the last position and picks a token with
        :func:`minitx.nn.generation.sample_next` (greedy, or temperature / top-k / top-p
        sampling). Runs in eval mode without gradients; the previous mode is restored.
        Returns (B, T + max_new_tokens) long.

        ``use_cache=True`` (the default) keeps a :class:`KVCache`: after a first forward
        over the prompt, each step runs only the newest token, attending to the keys
        and values kept from earlier steps. Positions count from the window's start (a
        learned row or a RoPE angle each), so once the window is full and slides by one
        token every position shifts and the cached keys are stale: from then on each
        step rebuilds the cache with a full forward over the last ``block_size`` tokens.
        The cache thus helps until the window is full, and the tokens are the same as
        with ``use_cache=False`` (the logits agree up to float rounding). A model
        without the causal mask (``config.causal=False``) cannot be cached: its earlier
        positions change with every new token, so it always runs the full forward.
        """
        new = self.stream(idx, max_new_tokens, temperature, top_k, top_p, greedy, generator,
                          use_cache)
        return torch.cat([idx, *new], dim=1)

    def stream(self, idx: Tensor, max_new_tokens: int, temperature: float = 1.0,
               top_k: int | None = None, top_p: float | None = None, greedy: bool = False,
               generator: torch.Generator | None = None,
               use_cache: bool = True) -> Iterator[Tensor]:
        """:meth:`generate`, one token at a time: yields each new token (B, 1) as soon as
        it is picked (same draws, same cache), so a caller can print text as it comes."""
        generation.check_temperature(temperature)
        generation.check_top_k(top_k)
        generation.check_top_p(top_p)
        self._check_decoding(idx, max_new_tokens, use_cache)
        with evaluating(self):
            yield from generation.stream(
                self._next_logits_fn(use_cache), idx, max_new_tokens, self.config.block_size,
                temperature=temperature, top_k=top_k, top_p=top_p, greedy=greedy,
                generator=generator,
            )

    def beam_search(
        self, idx: Tensor, max_new_tokens: int, beam_width: int = 4, use_cache: bool = True
    ) -> Tensor:
        """The most likely continuation found by beam search (see ``minitx.nn.generation``).

        Keeps ``beam_width`` candidate continuations of each prompt and returns the best
        one, (B, T + max_new_tokens) long; ``beam_width=1`` is greedy decoding.
        ``use_cache`` as in :meth:`generate`: each beam keeps a KV cache, which follows
        the beam when beams are reselected; same result as ``use_cache=False``.
        """
        generation.check_beam_width(beam_width)
        self._check_decoding(idx, max_new_tokens, use_cache)
        with evaluating(self):
            next_logits = self._next_logits_fn(use_cache)
            reorder = next_logits.reorder if isinstance(next_logits, _CachedLogits) else None
            sequences, _ = generation.beam_search(
                next_logits,
                idx,
                max_new_tokens,
                beam_width,
                self.config.block_size,
                reorder=reorder,
            )
        return sequences

    def _check_decoding(self, idx: Tensor, max_new_tokens: int, use_cache: bool) -> None:
        generation.check_max_new_tokens(max_new_tokens)
        _check_use_cache(use_cache)
        self._check_tokens(idx, crop=True)

    def _next_logits_fn(self, use_cache: bool) -> Callable[[Tensor], Tensor]:
        if use_cache and self.config.causal:
            return _CachedLogits(self)
        return self.next_token_logits


class _CachedLogits:
    """``GPT.next_token_logits`` with a KV cache, for a decoding loop.

    Call it with each step's context (B, T <= block_size): the previous context plus one
    token, cropped to the window. If the window grew by that token, only the token is
    run; if it slid (full window), every position moved and the cache is rebuilt.
    """

    def __init__(self, model: GPT) -> None:
        self.model = model
        self.cache: KVCache | None = None

    def __call__(self, context: Tensor) -> Tensor:
        if self.cache is not None and context.size(1) == self.cache.length + 1:
            logits, self.cache = self.model._forward_cached(context[:, -1:], self.cache)
        else:  # first step, or the window slid: positions shifted, cached keys are stale
            logits, self.cache = self.model._forward_cached(context, None)
        return logits[:, -1, :]  # (B, V)

    def reorder(self, rows: Tensor) -> None:
        """Sequence i continues sequence rows[i] (beam search): its cache follows."""
        if self.cache is not None:
            self.cache = self.cache.reorder(rows)


def _check_use_cache(use_cache: bool) -> None:
    if not isinstance(use_cache, bool):
        raise TypeError(
            f"use_cache must be a bool (True or False), got {use_cache!r} "
            f"({type(use_cache).__name__})"
        )


# KVCache lives in minitx.nn.generation (every model's cache); importable from here too.
__all__ = ["GPT", "GPTConfig", "kv_cache_numel"]
