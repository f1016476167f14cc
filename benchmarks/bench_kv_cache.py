"""Generation with and without a KV cache: the shipped Mini-GPT on CPU.

    .venv/bin/python benchmarks/bench_kv_cache.py [--repeats 3] [--threads 1 0]
        [--tokens 16 32 63 128 256 500] [--prompt "\\n"]

Times ``GPT.generate`` (seeded sampling, temperature 1) for each number of new tokens,
with ``use_cache=True`` and ``use_cache=False`` alternated (which one goes first
alternates too), best of ``--repeats``, for each thread count (0 = torch's default).
Both must give the same tokens; the script checks it.

What to expect: the model has learned positions and block_size 64. While the context
grows the cache runs one position per token; once the window is full it slides, every
position shifts, and each step rebuilds the cache with a full forward over 64 tokens,
which is what the uncached path does anyway. So the speed-up is largest for runs that
stay inside the window and fades for long runs. The table prints it as measured.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from minitx.data import shipped_model_path
from minitx.nn.gpt import GPT, kv_cache_numel
from minitx.train.checkpoint import load_gpt

CKPT = shipped_model_path("small")


def steps_split(prompt_len: int, n_new: int, block_size: int) -> tuple[int, int]:
    """(one-position steps, full forwards) of a cached run: step i sees a context of
    min(prompt_len + i, block_size) tokens; it is cached while the window still grows."""
    one = max(0, min(n_new - 1, block_size - prompt_len))
    return one, n_new - one


def time_generate(
    model: GPT, idx: torch.Tensor, n: int, use_cache: bool
) -> tuple[float, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    out = model.generate(idx, n, generator=generator, use_cache=use_cache)
    return time.perf_counter() - start, out


def bench(model: GPT, idx: torch.Tensor, tokens: list[int], repeats: int) -> None:
    block = model.config.block_size
    print(
        f"  {'new':>5} {'1-pos':>6} {'full':>5} {'no cache':>10} {'cache':>10} "
        f"{'speed-up':>9} {'no cache':>9} {'cache':>9}"
    )
    print(
        f"  {'tokens':>5} {'steps':>6} {'fwds':>5} {'ms':>10} {'ms':>10} {'':>9} "
        f"{'ms/tok':>9} {'ms/tok':>9}"
    )
    for n in tokens:
        time_generate(model, idx, min(n, 8), True)  # warm-up
        time_generate(model, idx, min(n, 8), False)
        best = {True: float("inf"), False: float("inf")}
        outs = {}
        for r in range(repeats):
            for use_cache in (True, False) if r % 2 == 0 else (False, True):
                t, outs[use_cache] = time_generate(model, idx, n, use_cache)
                best[use_cache] = min(best[use_cache], t)
        if not torch.equal(outs[True], outs[False]):
            raise SystemExit(f"cached and uncached tokens differ for {n} new tokens")
        one, full = steps_split(idx.size(1), n, block)
        print(
            f"  {n:5d} {one:6d} {full:5d} {1e3 * best[False]:10.1f} {1e3 * best[True]:10.1f} "
            f"{best[False] / best[True]:8.2f}x {1e3 * best[False] / n:9.2f} "
            f"{1e3 * best[True] / n:9.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=CKPT)
    parser.add_argument("--prompt", default="\n", help="text to continue (default a newline)")
    parser.add_argument("--tokens", type=int, nargs="+", default=[16, 32, 63, 128, 256, 500])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, 0],
        help="torch thread counts to try (0: the default)",
    )
    args = parser.parse_args()

    default_threads = torch.get_num_threads()
    model, tok, _ = load_gpt(args.checkpoint)
    cfg = model.config
    idx = torch.tensor([tok.encode(args.prompt)])  # (1, T)
    if idx.size(1) > cfg.block_size:
        raise SystemExit(f"the prompt is longer than block_size={cfg.block_size}")
    print(
        f"torch {torch.__version__}, CPU float32, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(
        f"{args.checkpoint.name}: {cfg.n_layer} layers, {cfg.n_head} heads, width "
        f"{cfg.n_embd}, block {cfg.block_size}, vocab {cfg.vocab_size}, "
        f"{model.num_parameters():,} parameters; prompt {args.prompt!r} "
        f"({idx.size(1)} tokens); seeded sampling, temperature 1"
    )

    # Memory: measured on a real cache of a full window, against the formula.
    with torch.no_grad():
        _, cache = model.forward_cached(torch.zeros(1, cfg.block_size, dtype=torch.long))
    numel = kv_cache_numel(cfg, cfg.block_size)
    assert cache.numel() == numel, (cache.numel(), numel)
    per_token = kv_cache_numel(cfg, 1)
    print(
        f"KV cache per sequence: 2 x n_layer x T x n_embd = 2 x {cfg.n_layer} x T x "
        f"{cfg.n_embd} = {per_token:,} numbers ({per_token * 4:,} bytes) per position; "
        f"full window T={cfg.block_size}: {numel:,} numbers = {cache.nbytes():,} bytes "
        f"({cache.nbytes() / 2**10:.0f} KiB) in float32, vs {model.num_parameters():,} "
        f"parameters ({4 * model.num_parameters() / 2**20:.1f} MiB)"
    )

    for threads in args.threads:
        n_threads = threads or default_threads
        torch.set_num_threads(n_threads)
        print(
            f"\n{n_threads} thread{'s' if n_threads != 1 else ''}"
            f"{' (default)' if threads == 0 else ''}: best of {args.repeats}, alternated; "
            f"1-pos = steps that run one position, full = full forwards (prefill + rebuilds)"
        )
        bench(model, idx, args.tokens, args.repeats)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
