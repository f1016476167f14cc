"""REFERENCE: a GPT in the layout of Karpathy's nanoGPT ``model.py``, for the benchmarks.

It is not imported from nanoGPT: it is that structure written out, so that minitx's
model and training step can be timed against the one most learners know. Only what
training needs: no ``generate``, no ``from_pretrained``.

    RefConfig   the model's sizes (nanoGPT's ``GPTConfig``; defaults: the "baby GPT")
    RefGPT      ``transformer.{wte, wpe, drop, h, ln_f}`` and a tied ``lm_head``;
                ``forward(idx, targets)`` -> ``(logits, loss)``, with targets the logits
                of every position, without them only the last one's, as in nanoGPT
    memmap_batch  nanoGPT's ``get_batch``: a fresh ``np.memmap`` per call, one slice a row

Used by ``bench_gpt_step.py`` (one training step on a CPU) and ``bench_gpu_train.py``
(whole training runs on a GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class RefConfig:
    block_size: int = 256
    vocab_size: int = 65
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    dropout: float = 0.2
    bias: bool = False


class RefLayerNorm(nn.Module):
    """LayerNorm whose bias can be switched off (nn.LayerNorm had no bias=False once)."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class RefCausalSelfAttention(nn.Module):
    def __init__(self, cfg: RefConfig) -> None:
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)  # q, k, v at once
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.n_head, self.n_embd, self.dropout = cfg.n_head, cfg.n_embd, cfg.dropout

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0.0,
            is_causal=True,
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class RefMLP(nn.Module):
    def __init__(self, cfg: RefConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class RefBlock(nn.Module):
    def __init__(self, cfg: RefConfig) -> None:
        super().__init__()
        self.ln_1 = RefLayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = RefCausalSelfAttention(cfg)
        self.ln_2 = RefLayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = RefMLP(cfg)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class RefGPT(nn.Module):
    """REFERENCE GPT in nanoGPT's layout: ``forward(idx, targets) -> (logits, loss)``."""

    def __init__(self, cfg: RefConfig) -> None:
        super().__init__()
        self.config = cfg
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(cfg.vocab_size, cfg.n_embd),
            "wpe": nn.Embedding(cfg.block_size, cfg.n_embd),
            "drop": nn.Dropout(cfg.dropout),
            "h": nn.ModuleList(RefBlock(cfg) for _ in range(cfg.n_layer)),
            "ln_f": RefLayerNorm(cfg.n_embd, bias=cfg.bias),
        })
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # residual projections, GPT-2 style
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        _, t = idx.size()
        assert t <= self.config.block_size, f"sequence of {t} > block_size"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        tr = self.transformer
        x = tr.drop(tr.wte(idx) + tr.wpe(pos))
        for block in tr.h:
            x = block(x)
        x = tr.ln_f(x)
        if targets is None:  # inference: only the last position's logits
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        loss = F.cross_entropy(
            logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1
        )
        return logits, loss

    def configure_optimizers(
        self, weight_decay: float, learning_rate: float, betas: tuple[float, float],
        device_type: str,
    ) -> torch.optim.AdamW:
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        extra = {"fused": True} if device_type == "cuda" else {}
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra)


CPU = torch.device("cpu")


def memmap_batch(
    path: Path, batch_size: int, block_size: int, device: torch.device = CPU
) -> tuple[Tensor, Tensor]:
    """nanoGPT's ``get_batch``: open the uint16 token file afresh (as train.py does, to
    avoid a memory leak it ran into), stack one slice per row; x, y (B, T) int64."""
    data = np.memmap(path, dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64))
                     for i in ix])
    if device.type == "cuda":
        return (x.pin_memory().to(device, non_blocking=True),
                y.pin_memory().to(device, non_blocking=True))
    return x.to(device), y.to(device)
