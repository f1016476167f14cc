"""The parts of the laptop-recipe GPT's training step, each against the alternatives tried.

    .venv/bin/python benchmarks/bench_step_parts.py [--rounds 15] [--calls 10]

``bench_gpt_step.py`` shows that minitx's forward and backward passes take as long as the
nanoGPT-style reference's, since both run the same kernels. This script times, at the
shapes of that model (batch 12, block 64, width 128, 4 heads), the kernels that dominate
the step and the cheaper-looking ways of computing the same thing:

  attention   forward + backward of causal attention, (12, 4, 64, 32): PyTorch's fused
              kernel (what both models run), the same call restricted to its math backend,
              and minitx's explicit ``scaled_dot_product_attention`` with a causal mask
  GELU        forward + backward on (12, 64, 512): ``F.gelu`` (both models), and an autograd
              Function whose backward is written out from erf and exp
  matmuls     the three products of each Linear (forward, input gradient, weight gradient)
              with the weight stored (out, in) as ``nn.Linear`` does, and stored transposed

Every variant is checked against the first of its group before timing; the variants take
turns in rounds (the machine's speed drifts) and the medians over rounds are printed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from minitx.nn.attention import scaled_dot_product_attention
from minitx.nn.masks import causal_mask

B, T, C, N_HEAD, HIDDEN = 12, 64, 128, 4, 512


class WrittenOutGELU(torch.autograd.Function):
    """Exact GELU, x * Phi(x), with its derivative Phi(x) + x * phi(x) written out."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return F.gelu(x)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        cdf = torch.erf(x / math.sqrt(2)).add_(1).mul_(0.5)  # Phi(x)
        pdf = torch.exp(-0.5 * x * x).mul_(1 / math.sqrt(2 * math.pi))  # phi(x)
        return grad * cdf.addcmul_(x, pdf)


def time_groups(groups: dict[str, dict[str, Callable[[], None]]], rounds: int,
                calls: int) -> dict[str, dict[str, float]]:
    """Median seconds per call of every variant, variants interleaved round by round."""
    for variants in groups.values():
        for fn in variants.values():  # warm-up
            fn()
    spent = {g: {name: [] for name in v} for g, v in groups.items()}
    for r in range(rounds):
        for group, variants in groups.items():
            names = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in names:
                start = time.perf_counter()
                for _ in range(calls):
                    variants[name]()
                spent[group][name].append((time.perf_counter() - start) / calls)
    return {g: {n: statistics.median(ts) for n, ts in v.items()} for g, v in spent.items()}


def fwd_bwd(fn: Callable[..., Tensor], inputs: list[Tensor], grad: Tensor) -> Callable[[], None]:
    def run() -> None:
        for t in inputs:
            t.grad = None
        fn(*inputs).backward(grad)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=10, help="calls per variant per round")
    args = parser.parse_args()
    torch.manual_seed(0)
    hs = C // N_HEAD

    q, k, v = (torch.randn(B, N_HEAD, T, hs, requires_grad=True) for _ in range(3))
    mask = causal_mask(T)

    def fused(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def math_backend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def explicit(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        return scaled_dot_product_attention(q, k, v, mask)[0]

    attention = {"fused (both models)": fused, "math backend": math_backend,
                 "minitx explicit": explicit}
    for fn in attention.values():
        torch.testing.assert_close(fn(q, k, v), fused(q, k, v), rtol=1e-5, atol=1e-5)

    h = torch.randn(B, T, HIDDEN, requires_grad=True)
    gelu = {"F.gelu (both models)": F.gelu, "written-out backward": WrittenOutGELU.apply}
    g_ref = torch.autograd.grad(F.gelu(h), h, torch.ones_like(h))[0]
    g_new = torch.autograd.grad(WrittenOutGELU.apply(h), h, torch.ones_like(h))[0]
    torch.testing.assert_close(g_new, g_ref, rtol=1e-5, atol=1e-5)

    groups = {
        "attention fwd+bwd": {n: fwd_bwd(fn, [q, k, v], torch.randn(B, N_HEAD, T, hs))
                              for n, fn in attention.items()},
        "GELU fwd+bwd": {n: fwd_bwd(fn, [h], torch.randn_like(h)) for n, fn in gelu.items()},
    }
    # name: (in, out, how many such Linears one step runs)
    linears = {"qkv": (C, 3 * C, 4), "attention out": (C, C, 4), "MLP in": (C, HIDDEN, 4),
               "MLP out": (HIDDEN, C, 4), "head": (C, 65, 1)}
    product_groups = {}  # group name -> Linears of that shape per step
    for name, (n_in, n_out, per_step) in linears.items():
        x, w, gy = torch.randn(B * T, n_in), torch.randn(n_out, n_in), torch.randn(B * T, n_out)
        wt = w.t().contiguous()  # (in, out)
        torch.testing.assert_close(x @ wt, x @ w.t())

        def as_linear(x: Tensor = x, w: Tensor = w, gy: Tensor = gy) -> None:
            x @ w.t(), gy @ w, gy.t() @ x  # forward, input gradient, weight gradient

        def transposed(x: Tensor = x, wt: Tensor = wt, gy: Tensor = gy) -> None:
            x @ wt, gy @ wt.t(), x.t() @ gy

        group = f"{name} {n_in}->{n_out}: 3 products"
        product_groups[group] = per_step
        groups[group] = {
            "weight (out, in) (both models)": as_linear, "weight stored (in, out)": transposed}

    medians = time_groups(groups, args.rounds, args.calls)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU float32; "
          f"{args.rounds} rounds x {args.calls} calls, interleaved; median per call")
    for group, by_name in medians.items():
        first = next(iter(by_name.values()))
        print(group)
        for name, seconds in by_name.items():
            print(f"  {name:32s} {1e6 * seconds:8.0f} us   x{seconds / first:.2f}")
    a, b = (sum(medians[group][layout] * n for group, n in product_groups.items())
            for layout in ("weight (out, in) (both models)", "weight stored (in, out)"))
    print(f"all Linear products of one step (4 layers + head): (out, in) {1e3 * a:.2f} ms, "
          f"(in, out) {1e3 * b:.2f} ms, x{b / a:.2f}")


if __name__ == "__main__":
    main()
