"""GPT training-step throughput on CPU: minitx.gpt.GPT against a nanoGPT-style reference.

    .venv/bin/python benchmarks/bench_gpt_step.py [--repeats 15] [--steps 4] [--bias]

One step = draw a batch, forward, cross-entropy loss, backward, gradient clipping to
1.0, AdamW update. Default size: 4 layers, 4 heads, 128 wide, block 64, batch 12,
vocab 65, no biases: the laptop recipe's model as nanoGPT's ``train.py`` builds it (its
``bias = False`` default is not overridden by the recipe).

The machine's speed drifts (the course's machine is shared), so the models take turns
in many short rounds, in the opposite order every other round, and the verdict is the
median over rounds of each round's own time ratio, printed with its spread.

Three models of identical size and identical weights are timed, interleaved:
  minitx        GPT as shipped (LayerNorm computed by F.layer_norm: ``fused=True``),
                stepped as minitx's Trainer steps it: batches from ``BlockBatches`` and
                the optimiser from ``minitx.optim.make_optimizer`` with the runtime's
                choice of kernel (fused AdamW on the CPU)
  minitx-expl   the same, with the explicit, from-scratch LayerNorm (``fused=False``)
  reference     REFERENCE MODEL written in this script in the standard nanoGPT layout
                (c_attn/c_proj, F.scaled_dot_product_attention(is_causal=True),
                nn.LayerNorm, tied head), stepped as nanoGPT's train.py steps it on a
                CPU: ``get_batch`` re-opens a ``np.memmap`` of the uint16 token file and
                stacks one slice per row, and AdamW takes its default (foreach) kernel,
                since nanoGPT asks for the fused one only on CUDA. It is not imported
                from nanoGPT; it is the usual structure written out.
Before timing, the script copies minitx's weights into the reference and checks that
both give the same logits, so the three really are the same network. AdamW's settings
(lr 1e-3, betas (0.9, 0.99), weight decay 0.1) are the same for all three; what differs
is only how each codebase builds batches and which AdamW kernel it runs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from minitx.batches import BlockBatches
from minitx.gpt import GPT, GPTConfig
from minitx.optim import make_optimizer
from minitx.runtime import plan_runtime
from minitx.transformer import LayerNorm

Batch = tuple[torch.Tensor, torch.Tensor]

# ----------------------------------------------------------------------------- reference


class RefSelfAttention(nn.Module):
    def __init__(self, C: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(C, 3 * C, bias=bias)
        self.c_proj = nn.Linear(C, C, bias=bias)
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class RefMLP(nn.Module):
    def __init__(self, C: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * C, C, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class RefBlock(nn.Module):
    def __init__(self, C: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, bias=bias)
        self.attn = RefSelfAttention(C, n_head, dropout, bias)
        self.ln_2 = nn.LayerNorm(C, bias=bias)
        self.mlp = RefMLP(C, dropout, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ReferenceGPT(nn.Module):
    """REFERENCE: the standard nanoGPT-style GPT layout, written for this benchmark."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        C = cfg.n_embd
        self.block_size = cfg.block_size
        self.wte = nn.Embedding(cfg.vocab_size, C)
        self.wpe = nn.Embedding(cfg.block_size, C)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList(
            RefBlock(C, cfg.n_head, cfg.dropout, cfg.bias) for _ in range(cfg.n_layer)
        )
        self.ln_f = nn.LayerNorm(C, bias=cfg.bias)
        self.lm_head = nn.Linear(C, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * cfg.n_layer))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def copy_into_reference(ours: GPT, ref: ReferenceGPT) -> None:
    with torch.no_grad():
        ref.wte.weight.copy_(ours.tok_emb.weight)
        ref.wpe.weight.copy_(ours.pos_emb.weight)
        for b_ref, b in zip(ref.h, ours.blocks, strict=True):
            pairs = [
                (b_ref.ln_1, b.norm1), (b_ref.ln_2, b.norm2), (b_ref.attn.c_attn, b.attn.in_proj),
                (b_ref.attn.c_proj, b.attn.out_proj), (b_ref.mlp.c_fc, b.ffn.fc1),
                (b_ref.mlp.c_proj, b.ffn.fc2),
            ]
            for dst, src in pairs:
                dst.weight.copy_(src.weight)
                if src.bias is not None:
                    dst.bias.copy_(src.bias)
        ref.ln_f.weight.copy_(ours.ln_f.weight)
        if ours.ln_f.bias is not None:
            ref.ln_f.bias.copy_(ours.ln_f.bias)


# ----------------------------------------------------------------------------- timing


def set_fused(model: GPT, fused: bool) -> GPT:
    for module in model.modules():
        if hasattr(module, "fused"):
            module.fused = fused
    return model


def nanogpt_get_batch(path: Path, batch_size: int, block_size: int) -> Callable[[], Batch]:
    """nanoGPT's train.py ``get_batch`` on a CPU: a fresh memmap per call, one slice per row."""

    def get_batch() -> Batch:
        data = np.memmap(path, dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([torch.from_numpy(data[i : i + block_size].astype(np.int64)) for i in ix])
        y = torch.stack(
            [torch.from_numpy(data[i + 1 : i + 1 + block_size].astype(np.int64)) for i in ix]
        )
        return x, y

    return get_batch


def make_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, get_batch: Callable[[], Batch]
) -> Callable[[int], float]:
    def run(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            x, y = get_batch()
            _, loss = model(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        return time.perf_counter() - start

    return run


def minitx_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    runtime = plan_runtime("cpu")
    return make_optimizer(model, learning_rate=1e-3, weight_decay=0.1, betas=(0.9, 0.99),
                          fused=runtime.fused_adamw)


def time_layernorm(B: int, T: int, C: int, repeats: int, iters: int = 50) -> dict[str, float]:
    """Median seconds per forward+backward of one LayerNorm at the training shape."""
    x = torch.randn(B, T, C, requires_grad=True)
    norms = {"explicit": LayerNorm(C, fused=False), "fused": LayerNorm(C, fused=True)}
    times: dict[str, list[float]] = {name: [] for name in norms}
    for _ in range(repeats):
        for name, ln in norms.items():
            start = time.perf_counter()
            for _ in range(iters):
                ln(x).sum().backward()
            times[name].append((time.perf_counter() - start) / iters)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=128)
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=65)
    parser.add_argument("--bias", action="store_true",
                        help="biases in every Linear and LayerNorm (nanoGPT's train.py has none)")
    parser.add_argument("--repeats", type=int, default=15, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=4, help="steps per model per round")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    cfg = GPTConfig(args.vocab, args.block_size, args.n_layer, args.n_head, args.n_embd,
                    bias=args.bias)
    torch.manual_seed(0)
    ours = GPT(cfg)
    ours_explicit = set_fused(GPT(cfg), False)
    ours_explicit.load_state_dict(ours.state_dict())
    ref = ReferenceGPT(cfg)
    copy_into_reference(ours, ref)
    n_ref = sum(p.numel() for p in ref.parameters())
    assert n_ref == ours.num_parameters(), (n_ref, ours.num_parameters())

    g = torch.Generator().manual_seed(0)
    tokens_np = torch.randint(0, cfg.vocab_size, (1_000_000,), generator=g).numpy()
    token_file = Path(tempfile.mkdtemp()) / "train.bin"
    tokens_np.astype(np.uint16).tofile(token_file)
    tokens = torch.from_numpy(tokens_np.astype(np.int64))
    source = BlockBatches(tokens[:900_000], tokens[900_000:], cfg.block_size, args.batch)

    def minitx_batch() -> Batch:
        return source("train", g)

    with torch.no_grad():
        x0 = minitx_batch()[0]
        torch.testing.assert_close(ref(x0)[0], ours(x0)[0], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(ours_explicit(x0)[0], ours(x0)[0], rtol=1e-4, atol=1e-5)

    reference_adamw = torch.optim.AdamW(ref.parameters(), lr=1e-3, betas=(0.9, 0.99),
                                        weight_decay=0.1)
    runs = {
        "minitx": make_step(ours, minitx_optimizer(ours), minitx_batch),
        "minitx-expl": make_step(ours_explicit, minitx_optimizer(ours_explicit), minitx_batch),
        "reference": make_step(ref, reference_adamw,
                               nanogpt_get_batch(token_file, args.batch, cfg.block_size)),
    }
    tokens = args.steps * args.batch * cfg.block_size  # per model per round
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU float32")
    print(f"GPT {cfg.n_layer} layers, {cfg.n_head} heads, width {cfg.n_embd}, block "
          f"{cfg.block_size}, batch {args.batch}, vocab {cfg.vocab_size}: "
          f"{ours.num_parameters():,} parameters; step = batch + fwd + bwd + clip + AdamW")
    for run in runs.values():  # warm-up
        run(3)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(args.repeats):
        for name in runs if r % 2 == 0 else reversed(runs):
            times[name].append(runs[name](args.steps))
    ref_median = statistics.median(times["reference"])
    print(f"{args.repeats} rounds x {args.steps} steps per model, interleaved; median "
          "tokens/s (min..max over rounds)")
    for name, ts in times.items():
        rates = sorted(tokens / t for t in ts)
        med = statistics.median(ts)
        print(f"  {name:12s} {tokens / med:9.0f} tok/s  ({rates[0]:.0f}..{rates[-1]:.0f})  "
              f"{1e3 * med / args.steps:6.1f} ms/step  time vs reference {med / ref_median:.3f}")
    ratios = sorted(r / m for r, m in zip(times["reference"], times["minitx"], strict=True))
    speedup = statistics.median(ratios)
    q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    print(f"minitx step vs reference: x{speedup:.2f} tokens/s, median of the rounds' ratios "
          f"(middle half x{q1:.2f}..x{q3:.2f}; target x1.10: "
          f"{'met' if speedup >= 1.1 else 'not met'})")
    ln = time_layernorm(args.batch, cfg.block_size, cfg.n_embd, args.repeats)
    n_norms = 2 * cfg.n_layer + 1
    print(f"LayerNorm alone, fwd+bwd on ({args.batch}, {cfg.block_size}, {cfg.n_embd}): explicit "
          f"{1e6 * ln['explicit']:.0f} us, fused {1e6 * ln['fused']:.0f} us "
          f"(x{ln['explicit'] / ln['fused']:.1f}); {n_norms} norms per step -> explicit adds "
          f"{1e3 * n_norms * (ln['explicit'] - ln['fused']):.1f} ms/step")


if __name__ == "__main__":
    main()
