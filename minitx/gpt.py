"""A small GPT: a decoder-only transformer that predicts the next token.

    idx (B, T) -> token embedding + position embedding -> n_layer pre-LN causal blocks
    -> final LayerNorm -> linear head (tied to the token embedding) -> logits (B, T, V)

The structure and initialisation follow GPT-2 (and Karpathy's nanoGPT); the blocks
come from ``minitx.transformer`` and the decoding rules from ``minitx.sampling``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx import sampling
from minitx.transformer import LayerNorm, LearnedPositions, TransformerBlock


@dataclass
class GPTConfig:
    """Sizes of a GPT.

    ``block_size`` is the context window (longest sequence the model can read);
    ``n_embd`` must be divisible by ``n_head``. ``causal=False`` removes the causal
    mask: such a model can look at the very token it is asked to predict, which only
    serves to show that leak (notebook 05); never train a real language model so.
    """

    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    dropout: float = 0.0
    bias: bool = True
    causal: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GPTConfig.{name} must be an int >= 1, got {value!r}")
        if self.n_embd % self.n_head != 0:
            raise ValueError(
                f"n_embd (d_model) must be divisible by n_head: got n_embd={self.n_embd}, "
                f"n_head={self.n_head}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig.dropout must be in [0, 1), got {self.dropout!r}")


@contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Dropout off (and gradients off) for the duration; the previous mode comes back."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


class GPT(nn.Module):
    """Decoder-only transformer language model (GPT-2 layout, pre-LN).

    ``forward(idx, targets=None)``: idx (B, T) long token ids, T <= block_size;
    returns ``(logits (B, T, vocab_size), loss)`` where loss is the mean cross-entropy
    against ``targets`` (B, T) (entries -1 are ignored), or None without targets.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"expected a GPTConfig, got {type(config).__name__}")
        self.config = config
        C = config.n_embd
        self.tok_emb = nn.Embedding(config.vocab_size, C)
        self.pos_emb = LearnedPositions(config.block_size, C)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(
                C,
                config.n_head,
                4 * C,
                dropout=config.dropout,
                activation="gelu",
                norm_first=True,
                causal=config.causal,
                bias=config.bias,
                fused_norm=True,
            )
            for _ in range(config.n_layer)
        )
        self.ln_f = LayerNorm(C, bias=config.bias, fused=True)
        self.lm_head = nn.Linear(C, config.vocab_size, bias=False)
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
            nn.init.normal_(block.ffn.fc2.weight, mean=0.0, std=std)

    def num_parameters(self, non_embedding: bool = False) -> int:
        """Number of parameters (the tied embedding/head matrix counted once).

        ``non_embedding=True`` leaves out the position embeddings, as nanoGPT does;
        the token embedding stays in because, tied, it is also the output layer.
        """
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.pos_emb.weight.numel()
        return n

    def _check_idx(self, idx: Tensor, name: str = "idx", crop: bool = False) -> None:
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
        V = self.config.vocab_size
        if torch.compiler.is_compiling():
            return  # a data-dependent branch would break the compiled graph
        if bool(((idx < 0) | (idx >= V)).any()):
            raise ValueError(
                f"{name} holds token ids outside [0, vocab_size={V}): min {int(idx.min())}, "
                f"max {int(idx.max())}"
            )

    def _hidden(self, idx: Tensor, need_weights: bool = False) -> tuple[Tensor, list[Tensor]]:
        T = idx.size(1)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(T))  # (B, T, C)
        maps = []
        for block in self.blocks:
            if need_weights:
                x, w = block(x, need_weights=True)  # w: (B, nh, T, T)
                maps.append(w)
            else:
                x = block(x)
        return self.ln_f(x), maps

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        self._check_idx(idx)
        x, _ = self._hidden(idx)
        logits = self.lm_head(x)  # (B, T, V)
        if targets is None:
            return logits, None
        if not isinstance(targets, Tensor) or targets.dtype != torch.long:
            got = targets.dtype if isinstance(targets, Tensor) else type(targets).__name__
            raise ValueError(f"targets must be a torch.long tensor, got {got}")
        if targets.shape != idx.shape:
            raise ValueError(
                f"targets must have the shape of idx {tuple(idx.shape)}, got "
                f"{tuple(targets.shape)}"
            )
        loss = F.cross_entropy(
            logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1
        )
        return logits, loss

    def attention_maps(self, idx: Tensor) -> Tensor:
        """Attention weights of every layer and head for ``idx`` (B, T).

        Runs in eval mode without gradients (the explicit attention path) and returns
        a (n_layer, B, n_head, T, T) tensor: entry [l, b, h, i, j] is how much position
        i attends to position j in head h of layer l. Each row sums to 1.
        """
        self._check_idx(idx)
        with evaluating(self):
            _, maps = self._hidden(idx, need_weights=True)
        return torch.stack(maps)  # (n_layer, B, nh, T, T)

    def next_token_logits(self, idx: Tensor) -> Tensor:
        """Logits (B, V) for the token after ``idx`` (B, T). Only the last ``block_size``
        tokens are seen: whatever lies further back is cropped away."""
        logits, _ = self(idx[:, -self.config.block_size :])
        return logits[:, -1, :]  # (B, V)

    def generate(
        self,
        idx: Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        greedy: bool = False,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Append ``max_new_tokens`` tokens to ``idx`` (B, T), one at a time.

        Each step feeds the last ``block_size`` tokens (older ones fall out of the
        context window), takes the logits of the last position and picks a token with
        :func:`minitx.sampling.sample_next` (greedy, or temperature / top-k / top-p
        sampling). Runs in eval mode without gradients; the previous mode is restored.
        Returns (B, T + max_new_tokens) long.
        """
        sampling.check_temperature(temperature)
        sampling.check_top_k(top_k)
        sampling.check_top_p(top_p)
        _check_max_new_tokens(max_new_tokens)
        self._check_idx(idx, crop=True)
        with evaluating(self):
            for _ in range(max_new_tokens):
                logits = self.next_token_logits(idx)  # (B, V)
                nxt = sampling.sample_next(
                    logits, temperature, top_k, top_p, greedy=greedy, generator=generator
                )  # (B, 1)
                idx = torch.cat([idx, nxt], dim=1)
        return idx

    def beam_search(self, idx: Tensor, max_new_tokens: int, beam_width: int = 4) -> Tensor:
        """The most likely continuation found by beam search (see ``minitx.sampling``).

        Keeps ``beam_width`` candidate continuations of each prompt and returns the best
        one, (B, T + max_new_tokens) long; ``beam_width=1`` is greedy decoding.
        """
        sampling.check_beam_width(beam_width)
        _check_max_new_tokens(max_new_tokens)
        self._check_idx(idx, crop=True)
        with evaluating(self):
            sequences, _ = sampling.beam_search(
                self.next_token_logits, idx, max_new_tokens, beam_width, self.config.block_size
            )
        return sequences


def _check_max_new_tokens(max_new_tokens: int) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")


__all__ = ["GPT", "GPTConfig"]
