"""The attention-only model of notebook 06 that learns the two relations of
:mod:`minitx.data.relations`, and the measurements of what its heads do.

:class:`RelationNet` is token embeddings + learned positions, ``n_layers`` residual layers
of :class:`minitx.nn.attention.MultiHeadAttention` (no MLP, no LayerNorm) and two linear
read-outs. ``RelationTask.get_batch`` and ``RelationTask.loss`` are all that
:class:`minitx.train.trainer.Trainer` needs to train it; :func:`train_relations` does so with
notebook 06's recipe, and :func:`train_from_seed` builds and trains a new model.
:func:`relation_scores` measures whether each relation got a head of its own.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import NamedTuple

import torch
from torch import Tensor, nn

from minitx.data import IGNORE_INDEX
from minitx.data.relations import RelationBatch, RelationOutput, RelationTask
from minitx.nn.attention import MultiHeadAttention
from minitx.nn.modes import evaluating
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer, accuracy


class RelationScores(NamedTuple):
    """Mean attention weight each head puts on each relation, both (L, H).

    ``previous[l, h]``: weight on position t-1, averaged over queries t >= 1;
    ``partner[l, h]``: weight on the partner, averaged over delimiter queries.
    """

    previous: Tensor
    partner: Tensor


class RelationNet(nn.Module):
    """Attention only: token + position embeddings, ``n_layers`` residual multi-head
    attention layers, then two linear read-outs.

    ``forward(x (B, T) long, need_weights=False) -> RelationOutput`` with
    ``prev_logits`` (B, T, vocab_size), ``partner_logits`` (B, T, seq_len) and, when
    ``need_weights``, ``weights`` (L, B, H, T, T), the layout of ``GPT.attention_maps``.
    No causal mask: a ``(`` must see its
    ``)`` further right.
    """

    def __init__(
        self, vocab_size: int, seq_len: int, d_model: int = 32, n_heads: int = 2, n_layers: int = 2
    ) -> None:
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        self.seq_len, self.n_layers, self.n_heads = seq_len, n_layers, n_heads
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(seq_len, d_model)
        self.layers = nn.ModuleList(MultiHeadAttention(d_model, n_heads) for _ in range(n_layers))
        self.prev_head = nn.Linear(d_model, vocab_size)
        self.partner_head = nn.Linear(d_model, seq_len)

    @classmethod
    def for_task(cls, task: RelationTask, **kwargs: int) -> RelationNet:
        """A model sized for ``task`` (vocabulary and sequence length)."""
        return cls(task.vocab_size, task.seq_len, **kwargs)

    def forward(self, x: Tensor, need_weights: bool = False) -> RelationOutput:
        T = self._check_ids(x)
        h = self.tok_emb(x) + self.pos_emb(torch.arange(T, device=x.device))  # (B, T, C)
        weights = []
        for attn in self.layers:
            a, w = attn(h, need_weights=need_weights)  # w: (B, H, T, T) or None
            h = h + a  # residual: each layer adds what its heads found
            weights.append(w)
        stacked = torch.stack(weights) if need_weights else None  # (L, B, H, T, T)
        return RelationOutput(self.prev_head(h), self.partner_head(h), stacked)

    def _check_ids(self, x: Tensor) -> int:
        if not isinstance(x, Tensor) or x.dim() != 2 or x.dtype != torch.long:
            raise ValueError(
                f"x must be a long tensor (B, T), got "
                f"{tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__}"
            )
        if x.size(1) != self.seq_len:
            raise ValueError(f"expected sequences of length {self.seq_len}, got {x.size(1)}")
        return x.size(1)

    def attention_maps(self, x: Tensor) -> Tensor:
        """Attention weights of every layer and head, in eval mode without gradients.

        ``x`` (T,) -> (L, H, T, T); ``x`` (B, T) -> (L, B, H, T, T), as ``GPT``'s.
        """
        single = isinstance(x, Tensor) and x.dim() == 1
        with evaluating(self):
            weights = self(x[None] if single else x, need_weights=True).weights
        return weights[:, 0] if single else weights


def train_relations(model: RelationNet, task: RelationTask, seed: int = 0,
                    steps: int = 200, lr: float = 1e-2) -> list[float]:
    """Train ``model`` on ``task`` in place with notebook 06's recipe; return the loss of
    every step.

    ``steps`` of plain Adam (a constant rate ``lr``, default 1e-2; no warm-up, decay or clipping) on
    fresh batches of ``task.batch_size`` sequences drawn from ``seed``, on one CPU thread.
    The same ``model`` initialisation and ``seed`` give the same model.
    """
    if not isinstance(model, RelationNet):
        raise TypeError(f"model must be a RelationNet, got {type(model).__name__}")
    for name, value, minimum in (("seed", seed, 0), ("steps", steps, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    if not (isinstance(lr, int | float) and not isinstance(lr, bool) and lr > 0):
        raise ValueError(f"lr must be a number > 0, got {lr!r}")
    adam = TrainConfig(max_steps=steps, batch_size=task.batch_size, learning_rate=lr,
                       min_lr=lr, warmup_steps=0, weight_decay=0.0, betas=(0.9, 0.999),
                       grad_clip=0.0, eval_interval=steps, eval_steps=1, log_interval=1,
                       seed=seed)  # plain Adam at a constant rate, a loss logged every step
    trainer = Trainer(model, adam, task.get_batch, loss_fn=task.loss,
                      runtime=plan_runtime("cpu", threads=1), progress=False)
    return trainer.train()["train_loss"]


def train_from_seed(task: RelationTask, seed: int, n_layers: int = 2, n_heads: int = 2,
                    steps: int = 200, lr: float = 1e-2) -> tuple[RelationNet, list[float]]:
    """A new ``RelationNet.for_task(task, n_layers=..., n_heads=...)`` with weights from
    ``torch.manual_seed(seed)``, trained by :func:`train_relations` (``seed``, ``steps``,
    ``lr``):
    (the model, the loss of every step). A package function, so that
    :func:`minitx.train.parallel.run_parallel` can train several side by side."""
    torch.manual_seed(seed)
    model = RelationNet.for_task(task, n_layers=n_layers, n_heads=n_heads)
    return model, train_relations(model, task, seed=seed, steps=steps, lr=lr)


def relation_accuracy(model: RelationNet, batch: RelationBatch) -> dict[str, float]:
    """:func:`minitx.train.evaluate.accuracy` of each read-out on ``batch``, dropout off:
    ``{"previous": ..., "partner": ...}`` (positions marked ``IGNORE_INDEX`` left out)."""
    with evaluating(model):
        out = model(batch.x)
    return {
        "previous": accuracy(out.prev_logits, batch.prev, ignore_index=IGNORE_INDEX),
        "partner": accuracy(out.partner_logits, batch.partner, ignore_index=IGNORE_INDEX),
    }


def relation_scores(weights: Tensor, batch: RelationBatch) -> RelationScores:
    """How much weight each head puts on each relation.

    ``weights`` (L, B, H, T, T) from ``RelationNet(..., need_weights=True)`` on
    ``batch.x``. Returns :class:`RelationScores` with two (L, H) tensors in [0, 1]: the
    mean weight on the previous token (queries t >= 1) and on the partner (delimiter
    queries). A score near 1 means the head does that one thing.
    """
    T = batch.x.size(-1)
    if weights.dim() != 5 or tuple(weights.shape[-2:]) != (T, T) or weights.size(1) != len(batch.x):
        raise ValueError(
            f"weights must be (L, B, H, T, T) for x of shape {tuple(batch.x.shape)}, "
            f"got {tuple(weights.shape)}"
        )
    t = torch.arange(1, T)
    previous = weights[:, :, :, t, t - 1].mean(dim=(1, 3))  # (L, H)
    b, q = (batch.partner != IGNORE_INDEX).nonzero(as_tuple=True)
    on_partner = weights[:, b, :, q, batch.partner[b, q]]  # (N, L, H): indexed dims go first
    return RelationScores(previous, on_partner.mean(dim=0))


def ablate_heads(model: RelationNet, heads: Iterable[tuple[int, int]]) -> RelationNet:
    """A copy of ``model`` with the given ``(layer, head)`` pairs switched off.

    The output projection W_O reads head h from columns ``h*d_head : (h+1)*d_head`` of
    ``out_proj.weight``; zeroing them removes exactly that head's contribution and
    leaves every attention weight of its layer (and of the layers before) unchanged.
    """
    heads = list(heads)
    for layer, head in heads:
        if not (0 <= layer < model.n_layers and 0 <= head < model.n_heads):
            raise ValueError(
                f"no head ({layer}, {head}) in a model of {model.n_layers} layers x "
                f"{model.n_heads} heads"
            )
    ablated = copy.deepcopy(model)
    for layer, head in heads:
        attn = ablated.layers[layer]
        cols = slice(head * attn.d_head, (head + 1) * attn.d_head)
        with torch.no_grad():
            attn.out_proj.weight[:, cols] = 0.0
    return ablated


def head_contributions(model: RelationNet, x: Tensor) -> Tensor:
    """What each head adds to the residual stream: (B, L, H, T, d_model).

    Head h of a layer adds ``W_O[:, cols_h] (A_h V_h)``: concatenating the heads and
    projecting with W_O is the same as projecting each head with its own block of W_O's
    columns and summing. So, per layer, the H contributions plus ``out_proj.bias`` add
    up to the layer's output. Eval mode, no gradients.
    """
    T = x.size(1)
    per_layer = []
    with evaluating(model):
        h = model.tok_emb(x) + model.pos_emb(torch.arange(T, device=x.device))  # (B, T, C)
        for attn in model.layers:
            a, w = attn(h, need_weights=True)  # w: (B, H, T, T)
            z = w @ attn.project(h, "v")  # (B, H, T, hs): each head's weighted values
            w_o = attn.out_proj.weight.view(-1, attn.n_heads, attn.d_head)  # (C, H, hs)
            per_layer.append(torch.einsum("bhtd,chd->bhtc", z, w_o))  # (B, H, T, C)
            h = h + a
    return torch.stack(per_layer, dim=1)  # (B, L, H, T, C)


__all__ = [
    "RelationNet",
    "RelationScores",
    "ablate_heads",
    "head_contributions",
    "relation_accuracy",
    "relation_scores",
    "train_from_seed",
    "train_relations",
]
