"""Muon's step: minitx.train.muon.Muon (same-shape matrices as one batch) against torch.optim.Muon.

    .venv/bin/python benchmarks/bench_muon.py [--preset cpu] [--rounds 10] [--steps 5]

Both optimisers train a copy of the preset's GPT (same initial weights) on the same
batches, through ``minitx.train.optim.make_optimizer`` (Muon for the block matrices, AdamW for
the rest), taking turns in short rounds in alternating order, since this shared machine's
speed drifts. Printed: the optimiser's step alone and the whole training step (batch,
forward, backward, clipping, optimiser), median ms over the rounds, and whether the two
models are still equal at the end (to the bit, or the largest difference).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from minitx.nn.gpt import GPT
from minitx.train.muon import Muon
from minitx.train.optim import MuonWithAdamW, make_optimizer
from minitx.train.presets import get_preset
from minitx.train.runtime import activated, plan_runtime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu", help="whose model and optimiser settings")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=5, help="steps per optimiser per round")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    preset = get_preset(args.preset)
    runtime = plan_runtime(args.device, compile=False)
    cfg, train = preset.gpt_config(65), preset.train
    device = runtime.device
    g = torch.Generator().manual_seed(0)
    batches = torch.randint(0, 65, (args.rounds * args.steps + 3, train.batch_size,
                                    cfg.block_size + 1), generator=g)

    kinds = ("torch.optim.Muon", "minitx Muon")
    models, optimizers = {}, {}
    for name in kinds:
        torch.manual_seed(0)
        models[name] = GPT(cfg).to(device)
        opt = make_optimizer(
            models[name], learning_rate=train.learning_rate, weight_decay=train.weight_decay,
            betas=train.betas, fused=runtime.fused_adamw, optimizer=train.optimizer,
            muon_lr=train.muon_lr)
        if not isinstance(opt, MuonWithAdamW) or not isinstance(opt.muon, Muon):
            raise SystemExit(f"preset {preset.name!r} does not train with Muon")
        if name == "torch.optim.Muon":  # the same matrices and settings, stepped one by one
            matrices = [p for group in opt.muon.param_groups for p in group["params"]]
            opt = MuonWithAdamW(torch.optim.Muon(matrices, lr=train.muon_lr,
                                                 weight_decay=train.weight_decay), opt.adamw)
        optimizers[name] = opt

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    def run(name: str, first: int, n: int) -> tuple[float, float]:
        """Batches first .. first + n - 1: mean seconds per whole step, per optimiser step."""
        model, opt = models[name], optimizers[name]
        total = in_opt = 0.0
        for i in range(first, first + n):
            sync()
            start = time.perf_counter()
            block = batches[i].to(device)
            torch.manual_seed(i)  # the same dropout masks for both models
            _, loss = model(block[:, :-1], block[:, 1:])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), train.grad_clip)
            sync()
            mid = time.perf_counter()
            opt.step()
            opt.zero_grad(set_to_none=True)
            sync()
            end = time.perf_counter()
            total, in_opt = total + end - start, in_opt + end - mid
        return total / n, in_opt / n

    step_s: dict[str, list[float]] = {name: [] for name in kinds}
    opt_s: dict[str, list[float]] = {name: [] for name in kinds}
    with activated(runtime):
        for name in kinds:  # warm-up, on the same batches for both
            run(name, 0, 3)
        for r in range(args.rounds):
            order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
            for name in order:
                whole, in_opt = run(name, 3 + r * args.steps, args.steps)
                step_s[name].append(whole)
                opt_s[name].append(in_opt)

    a, b = (models[name].state_dict() for name in kinds)
    worst = max((a[k].float() - b[k].float()).abs().max().item() for k in a)
    print(f"torch {torch.__version__}, {device}, {runtime.num_threads} threads; preset "
          f"{preset.name}: {cfg.n_layer} layers x {cfg.n_embd}, batch {train.batch_size} x "
          f"{cfg.block_size}; {args.rounds} rounds x {args.steps} steps, interleaved")
    for name in kinds:
        print(f"  {name:17s} optimiser step {1e3 * statistics.median(opt_s[name]):7.2f} ms   "
              f"whole step {1e3 * statistics.median(step_s[name]):7.2f} ms")
    ref, ours = (statistics.median(step_s[n]) for n in kinds)
    ref_opt, ours_opt = (statistics.median(opt_s[n]) for n in kinds)
    print(f"minitx Muon: optimiser step x{ref_opt / ours_opt:.2f} faster, whole step "
          f"x{ref / ours:.2f} faster")
    print("weights after the run: " + ("equal to the bit" if worst == 0 else
                                       f"largest difference {worst:.2e}"))


if __name__ == "__main__":
    main()
