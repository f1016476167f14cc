"""MultiHeadAttention (minitx, fast path) against nn.MultiheadAttention: forward + backward.

    .venv/bin/python benchmarks/bench_attention.py [--repeats 7] [--iters 5]

Both modules hold the same weights (copied with ``from_torch``) and run in the same
process, interleaved, so that load from other processes hits both alike. Prints the
median time per forward+backward of each and their ratio (minitx / PyTorch).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from minitx.nn.attention import MultiHeadAttention
from minitx.nn.masks import causal_mask


def time_fwd_bwd(fn, x: torch.Tensor, iters: int) -> float:
    """Seconds per forward+backward, averaged over ``iters`` calls."""
    start = time.perf_counter()
    for _ in range(iters):
        out = fn(x)
        out.sum().backward()
        x.grad = None
    return (time.perf_counter() - start) / iters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sizes = {"batch": 8, "seq": 512, "d-model": 256, "heads": 8, "repeats": 7, "iters": 5}
    for name, default in sizes.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    B, T, C, h = args.batch, args.seq, args.d_model, args.heads

    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(C, h, batch_first=True)
    ours = MultiHeadAttention.from_torch(theirs)
    x = torch.randn(B, T, C, requires_grad=True)
    blocked = ~causal_mask(T)  # nn.MultiheadAttention: True = blocked

    # Same function first: the comparison is only meaningful if both compute the same.
    for causal in (False, True):
        y_ours = ours(x, is_causal=causal)[0]
        mask = blocked if causal else None
        y_theirs = theirs(x, x, x, attn_mask=mask, is_causal=causal, need_weights=False)[0]
        torch.testing.assert_close(y_ours, y_theirs, rtol=1e-4, atol=1e-5)

    cases = {
        "no mask": (
            lambda x: ours(x)[0],
            lambda x: theirs(x, x, x, need_weights=False)[0],
        ),
        "causal": (
            lambda x: ours(x, is_causal=True)[0],
            lambda x: theirs(x, x, x, attn_mask=blocked, is_causal=True, need_weights=False)[0],
        ),
    }
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"B={B} T={T} d_model={C} heads={h}; forward+backward, float32, CPU")
    print(f"{args.repeats} repeats x {args.iters} iterations, interleaved; median ms per call")
    for name, (f_ours, f_theirs) in cases.items():
        for f in (f_ours, f_theirs):  # warm-up
            time_fwd_bwd(f, x, 2)
        t_ours, t_theirs = [], []
        for _ in range(args.repeats):
            t_ours.append(time_fwd_bwd(f_ours, x, args.iters))
            t_theirs.append(time_fwd_bwd(f_theirs, x, args.iters))
        m_ours, m_theirs = statistics.median(t_ours), statistics.median(t_theirs)
        ratios = sorted(a / b for a, b in zip(t_ours, t_theirs, strict=True))
        print(
            f"{name:8s}: minitx {1e3 * m_ours:7.1f} ms   nn.MultiheadAttention "
            f"{1e3 * m_theirs:7.1f} ms   ratio {m_ours / m_theirs:.3f} "
            f"(per-repeat ratios {ratios[0]:.3f}..{ratios[-1]:.3f})"
        )


if __name__ == "__main__":
    main()
