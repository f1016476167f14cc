"""GPT training-step throughput on CPU: minitx.nn.gpt.GPT against a nanoGPT-style reference.

    .venv/bin/python benchmarks/bench_gpt_step.py [--repeats 15] [--steps 4] [--bias] [--compile]
        [--compile-mode default|reduce-overhead|max-autotune]

One step = draw a batch, forward, cross-entropy loss, backward, gradient clipping to
1.0, AdamW update. The script also prints the time of each of those phases, and the
speed-up that free batches and a free AdamW step would give the reference.

Default size: 4 layers, 4 heads, 128 wide, block 64, batch 12, vocab 65, no biases: the
laptop recipe's model as nanoGPT's ``train.py`` builds it (its ``bias = False`` default is
not overridden by the recipe).

The machine's speed drifts (the course's machine is shared), so the models take turns
in many short rounds, in the opposite order every other round, and the verdict is the
median over rounds of each round's own time ratio, printed with its spread.

Models of identical size and identical weights are timed, interleaved:
  minitx        GPT as shipped (LayerNorm computed by F.layer_norm: ``fused=True``),
                stepped as minitx's Trainer steps it on this CPU: batches from
                ``BlockBatches``, the optimiser from ``minitx.train.optim.make_optimizer`` with
                the runtime's choice of kernel (fused AdamW on the CPU), and the batch's
                rows split into the runtime's shards, one core each (``minitx.train.shards``;
                as many shards as threads)
  minitx-whole  the same with the whole batch in one forward and backward pass, every
                thread working on each product (``plan_runtime(shards=1)``); only with
                more than one thread (with one, minitx's own row does not split either)
  minitx-expl   the minitx row with the explicit, from-scratch LayerNorm (``fused=False``)
  reference     ``nanogpt_reference.RefGPT``, the REFERENCE model in nanoGPT's layout
                (c_attn/c_proj, F.scaled_dot_product_attention(is_causal=True),
                F.layer_norm, tied head), stepped as nanoGPT's train.py steps it on a
                CPU: ``get_batch`` re-opens a ``np.memmap`` of the uint16 token file and
                stacks one slice per row, and ``configure_optimizers`` gives AdamW its
                default kernel, which on a CPU is the loop over tensors (torch has no
                foreach kernels for the CPU, and nanoGPT asks for the fused one only on
                CUDA).
  minitx-compiled  with ``--compile`` only: the first model under ``torch.compile``
                (the CPU runtime does not compile by default; nanoGPT's laptop recipe
                passes ``--compile=False``)
Before timing, the script copies minitx's weights into the reference and checks that
both give the same logits, so the three really are the same network. AdamW's settings
(lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on matrices only) are the same for all
three; what differs is only how each codebase builds batches and which AdamW kernel it
runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from nanogpt_reference import RefConfig, RefGPT, memmap_batch
from torch import nn

from minitx.data.batches import BlockBatches
from minitx.nn.gpt import GPT, GPTConfig
from minitx.nn.transformer import LayerNorm
from minitx.train.optim import make_optimizer
from minitx.train.runtime import plan_runtime, threads
from minitx.train.shards import ShardedGradients

Batch = tuple[torch.Tensor, torch.Tensor]

# ----------------------------------------------------------------------------- reference


def copy_into_reference(ours: GPT, ref: RefGPT) -> None:
    """Put minitx's weights into the reference, tensor by tensor (the names differ)."""
    tr = ref.transformer
    pairs = [(tr.wte, ours.tok_emb), (tr.wpe, ours.pos_emb), (tr.ln_f, ours.ln_f)]
    for b_ref, b in zip(tr.h, ours.blocks, strict=True):
        pairs += [
            (b_ref.ln_1, b.norm1), (b_ref.ln_2, b.norm2), (b_ref.attn.c_attn, b.attn.in_proj),
            (b_ref.attn.c_proj, b.attn.out_proj), (b_ref.mlp.c_fc, b.ffn.fc1),
            (b_ref.mlp.c_proj, b.ffn.fc2),
        ]
    with torch.no_grad():
        for dst, src in pairs:
            dst.weight.copy_(src.weight)
            if getattr(src, "bias", None) is not None:
                dst.bias.copy_(src.bias)


# ----------------------------------------------------------------------------- timing


def set_fused(model: GPT, fused: bool) -> GPT:
    for module in model.modules():
        if hasattr(module, "fused"):
            module.fused = fused
    return model


def nanogpt_get_batch(path: Path, batch_size: int, block_size: int) -> Callable[[], Batch]:
    """nanoGPT's train.py ``get_batch`` on a CPU: a fresh memmap per call, one slice per row."""
    return lambda: memmap_batch(path, batch_size, block_size)


PHASES = ("batch", "forward+backward", "clip", "AdamW")


def whole_backward(model: nn.Module, batch: Batch) -> torch.Tensor:
    """Forward and backward of the whole batch; the gradient lands in ``.grad``."""
    _, loss = model(*batch)
    loss.backward()
    return loss


def sharded_backward(sharded: ShardedGradients) -> Callable[[nn.Module, Batch], torch.Tensor]:
    """The same through ``ShardedGradients``, as minitx's Trainer runs it on the CPU."""
    return lambda model, batch: sharded.backward(model, lambda m, piece: m(*piece)[1], batch)


def make_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    get_batch: Callable[[], Batch],
    backward: Callable[[nn.Module, Batch], torch.Tensor] = whole_backward,
    num_threads: int | None = None,
) -> Callable[[int], dict[str, float]]:
    """``run(n)`` takes n training steps (with ``num_threads`` torch threads if given) and
    returns the seconds spent in each phase."""

    def run(n: int) -> dict[str, float]:
        spent = dict.fromkeys(PHASES, 0.0)
        with threads(num_threads or torch.get_num_threads()):
            for _ in range(n):
                t0 = time.perf_counter()
                batch = get_batch()
                t1 = time.perf_counter()
                optimizer.zero_grad(set_to_none=True)
                backward(model, batch)
                t2 = time.perf_counter()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                t3 = time.perf_counter()
                optimizer.step()
                t4 = time.perf_counter()
                for phase, dt in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                    spent[phase] += dt
        return spent

    return run


def minitx_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return make_optimizer(model, learning_rate=1e-3, weight_decay=0.1, betas=(0.9, 0.99),
                          fused=plan_runtime("cpu").fused_adamw)


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
    parser.add_argument("--compile", action="store_true",
                        help="also time minitx's model under torch.compile (compiles first)")
    parser.add_argument("--compile-mode", default="default",
                        choices=["default", "reduce-overhead", "max-autotune"],
                        help="torch.compile's mode for --compile")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    cfg = GPTConfig(args.vocab, args.block_size, args.n_layer, args.n_head, args.n_embd,
                    bias=args.bias)
    torch.manual_seed(0)
    ours = GPT(cfg)
    ours_explicit = set_fused(GPT(cfg), False)
    ours_explicit.load_state_dict(ours.state_dict())
    ours_whole = GPT(cfg)
    ours_whole.load_state_dict(ours.state_dict())
    ref = RefGPT(RefConfig(cfg.block_size, cfg.vocab_size, cfg.n_layer, cfg.n_head,
                           cfg.n_embd, cfg.dropout, cfg.bias))
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
        x0, y0 = minitx_batch()
        torch.testing.assert_close(ref(x0, y0)[0], ours(x0)[0], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(ours_explicit(x0)[0], ours(x0)[0], rtol=1e-4, atol=1e-5)

    runtime = plan_runtime("cpu", threads=torch.get_num_threads())
    backward, step_threads = whole_backward, None  # one thread: the Trainer does not split
    if runtime.shards > 1:
        sharded = ShardedGradients(runtime.shards)
        backward, step_threads = sharded_backward(sharded), 1
        backward(ours, (x0, y0))
        whole_backward(ours_whole, (x0, y0))
        for p, q in zip(ours.parameters(), ours_whole.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)  # one gradient

    reference_adamw = ref.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cpu")
    runs = {
        "minitx": make_step(ours, minitx_optimizer(ours), minitx_batch, backward, step_threads),
        "minitx-expl": make_step(ours_explicit, minitx_optimizer(ours_explicit), minitx_batch,
                                 backward, step_threads),
        "reference": make_step(ref, reference_adamw,
                               nanogpt_get_batch(token_file, args.batch, cfg.block_size)),
    }
    if runtime.shards > 1:
        runs["minitx-whole"] = make_step(ours_whole, minitx_optimizer(ours_whole), minitx_batch)
    if args.compile:
        ours_compiled = GPT(cfg)
        ours_compiled.load_state_dict(ours.state_dict())
        runs["minitx-compiled"] = make_step(torch.compile(ours_compiled, mode=args.compile_mode),
                                            minitx_optimizer(ours_compiled), minitx_batch)
    tokens = args.steps * args.batch * cfg.block_size  # per model per round
    split = (f"minitx splits each batch into {runtime.shards} row shards" if runtime.shards > 1
             else "one thread, so minitx does not split batches")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), CPU float32; {split}")
    print(f"GPT {cfg.n_layer} layers, {cfg.n_head} heads, width {cfg.n_embd}, block "
          f"{cfg.block_size}, batch {args.batch}, vocab {cfg.vocab_size}: "
          f"{ours.num_parameters():,} parameters; step = batch + fwd + bwd + clip + AdamW")
    for run in runs.values():  # warm-up
        run(3)
    phases: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PHASES} for name in runs}
    for r in range(args.repeats):
        for name in runs if r % 2 == 0 else reversed(runs):
            for phase, seconds in runs[name](args.steps).items():
                phases[name][phase].append(seconds)
    times = {name: [sum(per_round) for per_round in zip(*by_phase.values(), strict=True)]
             for name, by_phase in phases.items()}  # seconds per round
    ref_median = statistics.median(times["reference"])
    print(f"{args.repeats} rounds x {args.steps} steps per model, interleaved; median "
          "tokens/s (min..max over rounds)")
    for name, ts in times.items():
        rates = sorted(tokens / t for t in ts)
        med = statistics.median(ts)
        print(f"  {name:15s} {tokens / med:9.0f} tok/s  ({rates[0]:.0f}..{rates[-1]:.0f})  "
              f"{1e3 * med / args.steps:6.1f} ms/step  time vs reference {med / ref_median:.3f}")
    ratios = sorted(r / m for r, m in zip(times["reference"], times["minitx"], strict=True))
    speedup = statistics.median(ratios)
    q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    print(f"minitx step vs reference: x{speedup:.2f} tokens/s, median of the rounds' ratios "
          f"(middle half x{q1:.2f}..x{q3:.2f}; target x1.10: "
          f"{'met' if speedup >= 1.1 else 'not met'})")
    if "minitx-whole" in times:
        ratios_s = sorted(w / m for w, m in zip(times["minitx-whole"], times["minitx"],
                                                strict=True))
        print(f"what the shards buy: x{statistics.median(ratios_s):.2f} tokens/s over the "
              f"whole batch in one pass (middle half x{ratios_s[len(ratios_s) // 4]:.2f}.."
              f"x{ratios_s[(3 * len(ratios_s)) // 4]:.2f})")
    if args.compile:
        ratios_c = sorted(r / m for r, m in
                          zip(times["reference"], times["minitx-compiled"], strict=True))
        print(f"minitx compiled vs reference: x{statistics.median(ratios_c):.2f} tokens/s "
              f"(middle half x{ratios_c[len(ratios_c) // 4]:.2f}.."
              f"x{ratios_c[(3 * len(ratios_c)) // 4]:.2f})")
    print("where a step's time goes, median ms per step:")
    print(f"  {'':15s}" + "".join(f"{p:>18s}" for p in PHASES))
    for name, by_phase in phases.items():
        print(f"  {name:15s}" + "".join(f"{1e3 * statistics.median(by_phase[p]) / args.steps:18.2f}"
                                      for p in PHASES))
    # The models are one network: with the whole batch in one pass, minitx can only win in
    # the phases around it. Even free batches and a free AdamW step would speed up only:
    ref_network = statistics.median(
        [f + c for f, c in zip(phases["reference"]["forward+backward"],
                               phases["reference"]["clip"], strict=True)])
    print(f"the reference step with batches and AdamW free: x{ref_median / ref_network:.2f} "
          "tokens/s (the most that faster batches and a faster AdamW can give)")
    ln = time_layernorm(args.batch, cfg.block_size, cfg.n_embd, args.repeats)
    n_norms = 2 * cfg.n_layer + 1
    print(f"LayerNorm alone, fwd+bwd on ({args.batch}, {cfg.block_size}, {cfg.n_embd}): explicit "
          f"{1e6 * ln['explicit']:.0f} us, fused {1e6 * ln['fused']:.0f} us "
          f"(x{ln['explicit'] / ln['fused']:.1f}); {n_norms} norms per step -> explicit adds "
          f"{1e3 * n_norms * (ln['explicit'] - ln['fused']):.1f} ms/step")


if __name__ == "__main__":
    main()
