"""The ladder: a GPT assembled one piece at a time, each rung trained the same way (notebook 09).

    bigram         a (V, V) table: the next character from the current one only
    one head       + one causal self-attention head over the context
    multi-head     the same width split into several heads
    feed-forward   + a position-wise MLP after attention
    residual + LN  + residual connections and pre-LayerNorm around both
    positions      + learned position embeddings (every rung before has none)

Every rung sees the same batches, the same number of training tokens and the same
evaluation batches (:func:`train_rung`: ``minitx.train.trainer.Trainer`` with the one recipe
:func:`ladder_recipe`), so the ladder of validation losses measures what each piece buys on
this data and budget. The bigram table, an embedding (the recipe gives embeddings to AdamW,
not Muon), trains at its own swept rate :data:`TABLE_LR` (``benchmarks/bench_ladder_seeds.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.data.batches import BlockBatches
from minitx.nn import generation
from minitx.nn.attention import MultiHeadAttention
from minitx.nn.modes import evaluating
from minitx.nn.transformer import FeedForward, LayerNorm, LearnedPositions
from minitx.train.presets import Preset, get_preset
from minitx.train.runtime import Runtime, plan_runtime
from minitx.train.trainer import Trainer


@dataclass(frozen=True)
class Rung:
    """One rung: ``n_head`` 0 means no attention (the bigram table)."""

    name: str
    n_head: int = 0
    feed_forward: bool = False
    residual_norm: bool = False
    positions: bool = False


# AdamW's rate for the bigram table: the best of 6e-3 (the recipe's), 0.03, 0.1 and 0.3 over
# three seeds at 300 steps (benchmarks/bench_ladder_seeds.py); at 6e-3 it ends far from the
# counted bigram, so the ladder's first step would measure a slow baseline, not attention.
TABLE_LR = 0.3

RUNGS = (
    Rung("bigram"),
    Rung("one head", n_head=1),
    Rung("multi-head", n_head=4),
    Rung("+ feed-forward", n_head=4, feed_forward=True),
    Rung("+ residual + LayerNorm", n_head=4, feed_forward=True, residual_norm=True),
    Rung("+ positions", n_head=4, feed_forward=True, residual_norm=True, positions=True),
)


def ladder_recipe(
    max_steps: int = 800, seed: int | None = None, learning_rate: float | None = None
) -> Preset:
    """The recipe every rung trains with: 2 layers x 64 wide, context 32, 800 steps of
    16 windows, with the ``cpu`` preset's optimisers (Muon for the matrices, AdamW at
    lr 6e-3 for the rest) and schedule. Small enough for a minute on one CPU core, and
    the same on a GPU, so the ladder's numbers do not depend on the machine.

    ``max_steps`` shortens or lengthens the run (the schedule follows: warmup 20 steps, the
    last half a straight line down); ``seed`` replaces the preset's seed, which draws the
    training batches and the fixed evaluation batches (the initial weights come from
    ``torch.manual_seed``); ``learning_rate`` replaces AdamW's rate."""
    train = {"max_steps": max_steps, "batch_size": 16, "warmup_steps": 20,
             "eval_interval": 100, "eval_steps": 10, "log_interval": 10}
    if seed is not None:
        train["seed"] = seed
    if learning_rate is not None:
        train["learning_rate"] = learning_rate
    return get_preset("cpu").with_overrides(
        model={"n_layer": 2, "n_embd": 64, "block_size": 32}, train=train
    )


def counted_bigram(train_ids: Tensor, vocab_size: int, block_size: int) -> LadderModel:
    """The bigram rung with its table set from counts instead of trained: row ``a`` holds
    log P(b | a) counted over ``train_ids`` (every pair counted once more, so that none has
    probability 0). The best a bigram table can do on text like the training text, scored
    by the same code as the trained rungs."""
    counts = torch.bincount(train_ids[:-1] * vocab_size + train_ids[1:],
                            minlength=vocab_size * vocab_size)  # fmt: skip
    counts = counts.view(vocab_size, vocab_size).float() + 1  # (V, V)
    model = LadderModel(RUNGS[0], vocab_size, block_size)
    with torch.no_grad():
        model.table.weight.copy_((counts / counts.sum(1, keepdim=True)).log())
    return model


def train_rung(
    rung: Rung,
    train_data: Tensor,
    val_data: Tensor,
    vocab_size: int,
    max_steps: int = 800,
    seed: int | None = None,
    runtime: Runtime | None = None,
    table_lr: float = TABLE_LR,
) -> Trainer:
    """Train one rung with :func:`ladder_recipe` ``(max_steps, seed)`` on windows of
    ``train_data`` (N,) long, scored on the recipe's fixed batches of ``val_data``; the bigram
    table (``rung.n_head`` 0) trains at AdamW rate ``table_lr`` instead. The initial
    weights come from ``torch.manual_seed(seed or 0)``; ``seed`` None keeps the recipe's own
    batches. ``runtime`` defaults to one CPU thread without compiling (the models are tiny).
    Returns the :class:`~minitx.train.trainer.Trainer`: its ``history``, ``last_val_loss``
    and ``get_batch`` (the same batches for another model)."""
    if not isinstance(rung, Rung):
        raise TypeError(f"rung must be a Rung, got {type(rung).__name__}")
    recipe = ladder_recipe(max_steps, seed, None if rung.n_head else table_lr)
    config = recipe.gpt_config(vocab_size)
    runtime = plan_runtime("cpu", threads=1, compile=False) if runtime is None else runtime
    torch.manual_seed(seed or 0)  # the initial weights
    model = LadderModel(rung, vocab_size, config.block_size, n_embd=config.n_embd,
                        n_layer=config.n_layer)
    batches = BlockBatches(train_data, val_data, config.block_size, recipe.train.batch_size,
                           runtime.device)
    trainer = Trainer(model, recipe.train, batches, runtime=runtime, progress=False)
    trainer.train()
    return trainer


class LadderBlock(nn.Module):
    """Causal multi-head attention, then (optionally) a feed-forward layer; with
    ``residual_norm`` each is wrapped as x + f(LayerNorm(x)) (pre-LN, as in GPT).

    ``forward(x (B, T, C), need_weights=False)`` returns ``(x, weights | None)`` like
    every block of the course."""

    def __init__(self, rung: Rung, n_embd: int) -> None:
        super().__init__()
        self.rung = rung
        self.attn = MultiHeadAttention(n_embd, rung.n_head)
        self.ffn = FeedForward(n_embd, 4 * n_embd) if rung.feed_forward else None
        if rung.residual_norm:
            self.ln1, self.ln2 = LayerNorm(n_embd, fused=True), LayerNorm(n_embd, fused=True)

    def forward(self, x: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        if not self.rung.residual_norm:  # each layer replaces x
            x, w = self.attn(x, need_weights=need_weights, is_causal=True)
            return (self.ffn(x) if self.ffn is not None else x), w
        a, w = self.attn(self.ln1(x), need_weights=need_weights, is_causal=True)  # x + f(LN(x))
        x = x + a
        if self.ffn is not None:
            x = x + self.ffn(self.ln2(x))
        return x, w


class LadderModel(nn.Module):
    """A character model of one rung: idx (B, T) -> logits (B, T, V) (and the loss).

    ``forward(idx, targets=None)`` returns ``(logits, loss)`` like ``minitx.nn.gpt.GPT``, so
    ``minitx.train.trainer.Trainer`` trains every rung the same way.
    """

    def __init__(
        self, rung: Rung, vocab_size: int, block_size: int, n_embd: int = 64, n_layer: int = 2
    ) -> None:
        super().__init__()
        if not isinstance(rung, Rung):
            raise TypeError(f"rung must be a Rung, got {type(rung).__name__}")
        if rung.n_head and n_embd % rung.n_head:
            raise ValueError(f"n_embd={n_embd} is not divisible by n_head={rung.n_head}")
        self.rung, self.block_size = rung, block_size
        if rung.n_head == 0:
            self.table = nn.Embedding(vocab_size, vocab_size)  # row = logits of the next char
            return
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = LearnedPositions(block_size, n_embd) if rung.positions else None
        self.blocks = nn.ModuleList(LadderBlock(rung, n_embd) for _ in range(n_layer))
        self.ln_f = LayerNorm(n_embd, fused=True) if rung.residual_norm else nn.Identity()
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        B, T = idx.size()
        if self.block_size < T:
            raise ValueError(f"sequence length T={T} is longer than block_size={self.block_size}")
        if self.rung.n_head == 0:
            logits = self.table(idx)  # (B, T, V)
        else:
            x = self.tok_emb(idx)  # (B, T, C)
            if self.pos_emb is not None:
                x = x + self.pos_emb(T)
            for block in self.blocks:
                x, _ = block(x)
            logits = self.head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss

    def generate(self, idx: Tensor, max_new_tokens: int, generator: torch.Generator) -> Tensor:
        """Sample ``max_new_tokens`` characters after ``idx`` (B, T) (temperature 1), with
        the package's sampler (:func:`minitx.nn.generation.generate`), in eval mode without
        gradients. Returns (B, T + max_new_tokens) long."""
        with evaluating(self):
            return generation.generate(
                lambda context: self(context)[0][:, -1],  # (B, V): logits of the next char
                idx, max_new_tokens, self.block_size, generator=generator,
            )


__all__ = ["RUNGS", "TABLE_LR", "LadderBlock", "LadderModel", "Rung", "counted_bigram",
           "ladder_recipe", "train_rung"]
