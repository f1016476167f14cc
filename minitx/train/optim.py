"""The optimiser and its learning-rate schedule, as the trainer uses them.

    lr_at            warmup, then cosine decay or warmup-stable-decay (WSD) to a floor
    param_groups     weight decay on matrices only
    make_optimizer   AdamW over those groups, or Muon (``minitx.train.muon``) for the hidden
                     matrices + AdamW
    MuonWithAdamW    the two optimisers of the "muon" choice, stepped as one

Every parameter group carries ``peak_lr``; the trainer sets each group's ``lr`` to
``peak_lr * schedule factor`` so one schedule drives groups with different rates.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from minitx.train.muon import Muon

SCHEDULES = ("cosine", "wsd")
OPTIMIZERS = ("adamw", "muon")


def lr_at(
    step: int,
    *,
    learning_rate: float,
    min_lr: float,
    warmup_steps: int,
    decay_steps: int,
    schedule: str = "cosine",
    cooldown_steps: int = 0,
) -> float:
    """Learning rate for optimisation step ``step`` (0-based).

    - ``step < warmup_steps``: rises linearly, ``learning_rate * (step + 1) / warmup_steps``;
    - ``schedule="cosine"``: cosine from ``learning_rate`` down to ``min_lr`` at ``decay_steps``;
    - ``schedule="wsd"`` (warmup-stable-decay): ``learning_rate`` until the last
      ``cooldown_steps`` before ``decay_steps``, then a straight line down to ``min_lr``;
    - ``step >= decay_steps``: ``min_lr``.

    With ``min_lr == learning_rate`` and ``warmup_steps == 0`` the rate is constant.
    """
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    if warmup_steps < 0 or decay_steps < warmup_steps:
        raise ValueError(
            f"need 0 <= warmup_steps <= decay_steps, got warmup_steps={warmup_steps}, "
            f"decay_steps={decay_steps}"
        )
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if step < warmup_steps:
        return learning_rate * (step + 1) / warmup_steps
    if step >= decay_steps:
        return min_lr
    if schedule == "wsd":
        cooldown_start = max(warmup_steps, decay_steps - cooldown_steps)
        if step < cooldown_start:
            return learning_rate
        ratio = (step - cooldown_start) / max(1, decay_steps - cooldown_start)  # in [0, 1)
        return learning_rate + ratio * (min_lr - learning_rate)
    ratio = (step - warmup_steps) / max(1, decay_steps - warmup_steps)  # in [0, 1)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))  # 1 -> 0
    return min_lr + coeff * (learning_rate - min_lr)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Split trainable parameters for AdamW: decay on matrices (dim >= 2), none on the rest.

    Decayed: Linear weights and embedding tables (with a tied output head the token
    embedding *is* the output matrix, so it is treated like one). Not decayed: biases and
    LayerNorm gains/shifts (dim 1), whose scale has nothing to do with overfitting.
    Tied parameters are counted once (``parameters()`` yields a tied tensor once).
    """
    return param_groups_of([p for p in model.parameters() if p.requires_grad], weight_decay)


def param_groups_of(params: list[nn.Parameter], weight_decay: float) -> list[dict]:
    """``params`` split as :func:`param_groups` splits a model's: decay on dim >= 2."""
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def hidden_matrices(model: nn.Module) -> list[nn.Parameter]:
    """The weights of the ``nn.Linear`` layers inside the network: the matrices Muon
    orthogonalises. Embeddings and the output layer (``model.lm_head`` when there is one,
    tied to the token embedding or not) stay with AdamW, as Muon's authors advise."""
    head = getattr(model, "lm_head", None)
    keep_out = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    if isinstance(head, nn.Linear):
        keep_out.add(id(head.weight))
    return [
        m.weight
        for m in model.modules()
        if isinstance(m, nn.Linear) and m.weight.requires_grad and id(m.weight) not in keep_out
    ]


class MuonWithAdamW:
    """Muon for the hidden matrices, AdamW for embeddings, head and gains, as one optimiser.

    Muon (:class:`minitx.train.muon.Muon`) replaces each matrix's momentum update by the nearest
    orthogonal matrix (5 Newton-Schulz steps), so every direction of the update moves
    at the same rate. It only applies to 2-D weights, hence the AdamW partner (None when
    a model has nothing else to train). ``param_groups``, ``step``, ``zero_grad``,
    ``state_dict`` and ``load_state_dict`` behave as one ``torch.optim.Optimizer``'s.
    """

    def __init__(self, muon: Muon, adamw: torch.optim.AdamW | None) -> None:
        self.muon, self.adamw = muon, adamw
        self._parts = [muon] if adamw is None else [muon, adamw]

    @property
    def param_groups(self) -> list[dict]:
        return [group for part in self._parts for group in part.param_groups]

    @torch.no_grad()
    def step(self) -> None:
        for part in self._parts:
            part.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for part in self._parts:
            part.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        return {"muon": self.muon.state_dict(),
                "adamw": None if self.adamw is None else self.adamw.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if set(state) != {"muon", "adamw"}:
            raise ValueError(
                f"expected the state of a MuonWithAdamW (keys 'muon', 'adamw'), got keys "
                f"{sorted(state)}: was this run trained with optimizer='adamw'?"
            )
        self.muon.load_state_dict(state["muon"])
        if (self.adamw is None) != (state["adamw"] is None):
            raise ValueError("the saved state and this optimiser disagree on having an AdamW part")
        if self.adamw is not None:
            self.adamw.load_state_dict(state["adamw"])


def make_optimizer(
    model: nn.Module,
    *,
    learning_rate: float,
    weight_decay: float,
    betas: tuple[float, float],
    fused: bool = False,
    optimizer: str = "adamw",
    muon_lr: float = 0.02,
) -> torch.optim.AdamW | MuonWithAdamW:
    """AdamW over ``param_groups(model, weight_decay)`` at ``learning_rate``; or, with
    ``optimizer="muon"``, Muon at ``muon_lr`` for :func:`hidden_matrices` and that AdamW
    for every other parameter. A model with no hidden matrix (a bigram table, say) has
    nothing for Muon and gets the plain AdamW. Each group records its ``peak_lr``."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    kwargs = {"fused": True} if fused else {}
    matrices = hidden_matrices(model) if optimizer == "muon" else []
    if not matrices:
        adamw = torch.optim.AdamW(
            param_groups(model, weight_decay), lr=learning_rate, betas=betas, **kwargs
        )
        for group in adamw.param_groups:
            group["peak_lr"] = learning_rate
        return adamw
    muon_ids = {id(p) for p in matrices}
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in muon_ids]
    groups = [g for g in param_groups_of(rest, weight_decay) if g["params"]]
    adamw = torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **kwargs) if groups else None
    muon = Muon(matrices, lr=muon_lr, weight_decay=weight_decay)
    for group in muon.param_groups:
        group["peak_lr"] = muon_lr
    for group in [] if adamw is None else adamw.param_groups:
        group["peak_lr"] = learning_rate
    return MuonWithAdamW(muon, adamw)


__all__ = [
    "OPTIMIZERS",
    "SCHEDULES",
    "MuonWithAdamW",
    "hidden_matrices",
    "lr_at",
    "make_optimizer",
    "param_groups",
    "param_groups_of",
]
