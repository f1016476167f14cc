"""The ``cpu`` preset against the common laptop recipe, trained side by side with minitx.

The laptop recipe (nanoGPT's README, "I only have a MacBook"): 4 layers x 128 wide,
4 heads, block 64, batch 12, 2000 AdamW steps at a constant learning rate of 1e-3, no
dropout. The ``cpu`` preset has to reach a lower validation loss in no more wall time.

Both runs happen in this one process, on the same machine, in alternating chunks of
``--chunk`` steps (baseline chunk, preset chunk, baseline chunk, ...), so that a
change in the machine's load during the benchmark hits both about equally. Each run's
wall time is the sum of its own chunks (training plus its periodic evaluations, as
``minitx train`` would spend it); so is its CPU time (``time.process_time``), which on a
machine shared with other busy processes is the steadier measure of the work done
(with one thread, CPU time is what the wall time would be on an idle core). After
training, both models are scored on the whole validation split in non-overlapping
windows of their own block size (not timed).

    python benchmarks/bench_presets.py              # the full comparison (minutes)
    python benchmarks/bench_presets.py --quick      # 100 steps each: a smoke run
    OMP_NUM_THREADS=1 python benchmarks/bench_presets.py   # on a machine shared with others
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from dataclasses import replace

import torch

from minitx.batches import BlockBatches, sequential_blocks
from minitx.data import load_text, train_val_split
from minitx.gpt import GPT
from minitx.presets import Preset, get_preset
from minitx.runtime import plan_runtime
from minitx.tokenizer import CharTokenizer
from minitx.trainer import Trainer, count_parameters


def laptop_baseline() -> Preset:
    """The common laptop recipe: the cpu preset's shape, with biases and a constant lr 1e-3."""
    recipe = get_preset("cpu").with_overrides(
        model={"bias": True},
        train={"learning_rate": 1e-3, "min_lr": 1e-3, "warmup_steps": 0},
    )
    return replace(
        recipe,
        name="laptop-baseline",
        description="4x128, block 64, batch 12, 2000 steps, constant lr 1e-3, no dropout",
    )


@torch.no_grad()
def full_val_loss(model: torch.nn.Module, val: torch.Tensor, block_size: int) -> float:
    """Mean next-token loss over the whole validation split (non-overlapping windows)."""
    model.eval()
    total, n = 0.0, 0
    for x, y in sequential_blocks(val, block_size, batch_size=64):
        _, loss = model(x, y)
        total += loss.item() * y.numel()
        n += y.numel()
    return total / n


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "n/a"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 steps each (smoke run)")
    parser.add_argument("--chunk", type=int, default=250, help="steps per alternating chunk")
    parser.add_argument("--seed", type=int, default=1337)
    args = parser.parse_args(argv)

    text = load_text("tinyshakespeare")
    tok = CharTokenizer.from_text(text)
    data = torch.tensor(tok.encode(text), dtype=torch.long)
    train, val = train_val_split(data, 0.9)

    runs = []
    for preset in (laptop_baseline(), get_preset("cpu")):
        overrides = {"seed": args.seed}
        if args.quick:
            overrides.update(
                max_steps=100, eval_interval=50, warmup_steps=min(10, preset.train.warmup_steps)
            )
        preset = preset.with_overrides(train=overrides)
        torch.manual_seed(args.seed)
        model = GPT(preset.gpt_config(tok.vocab_size))
        batches = BlockBatches(train, val, preset.model["block_size"], preset.train.batch_size)
        runs.append(
            {
                "preset": preset,
                "trainer": Trainer(model, preset.train, batches, runtime=plan_runtime("cpu"),
                                   progress=False),
                "wall": 0.0,
                "cpu": 0.0,
                "curve": [],
            }
        )

    threads = runs[0]["trainer"].runtime.num_threads
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"{threads} thread(s) (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})"
    )
    print(f"load average at start: {load_average()}")

    while any(r["trainer"].step < r["preset"].train.max_steps for r in runs):
        for r in runs:
            trainer, max_steps = r["trainer"], r["preset"].train.max_steps
            if trainer.step >= max_steps:
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            trainer.train(max_steps=min(trainer.step + args.chunk, max_steps))
            r["wall"] += time.perf_counter() - t0
            r["cpu"] += time.process_time() - c0
            r["curve"].append((r["wall"], trainer.last_val_loss))
            print(
                f"  {r['preset'].name:>15}: step {trainer.step:5d}  {r['wall']:7.1f} s  "
                f"val {trainer.last_val_loss:.4f}",
                flush=True,
            )
    print(f"load average at end: {load_average()}")

    print()
    header = (
        f"{'configuration':<16} {'params':>8} {'steps':>6} {'tokens':>10} {'wall s':>8} "
        f"{'CPU s':>8} {'tokens/s':>9} {'val (20 batches)':>17} {'val (full split)':>17}"
    )
    print(header)
    print("-" * len(header))
    results = {}
    for r in runs:
        p, trainer = r["preset"], r["trainer"]
        tokens = trainer.step * p.tokens_per_step
        full = full_val_loss(trainer.model, val, p.model["block_size"])
        results[p.name] = (full, r["wall"], r["cpu"])
        print(
            f"{p.name:<16} {count_parameters(trainer.model) / 1e6:7.2f}M {trainer.step:6d} "
            f"{tokens:10,d} {r['wall']:8.1f} {r['cpu']:8.1f} {tokens / r['wall']:9.0f} "
            f"{trainer.last_val_loss:17.4f} {full:17.4f}"
        )
    print()
    print("validation loss (20 fixed batches) against wall time, after each chunk:")
    for r in runs:
        points = [f"{t:.0f}s:{loss:.3f}" for t, loss in r["curve"]]
        print(f"  {r['preset'].name:>15}: " + "  ".join(points))

    (base_loss, base_wall, base_cpu) = results["laptop-baseline"]
    (cpu_loss, cpu_wall, cpu_cpu) = results["cpu"]
    print()
    print(
        f"cpu preset vs laptop recipe: val {cpu_loss:.4f} vs {base_loss:.4f} "
        f"({cpu_loss - base_loss:+.4f}), wall {cpu_wall:.0f} s vs {base_wall:.0f} s "
        f"({cpu_wall / base_wall:.2f}x), CPU time {cpu_cpu:.0f} s vs {base_cpu:.0f} s "
        f"({cpu_cpu / base_cpu:.2f}x)"
    )
    if not math.isfinite(cpu_loss):
        raise SystemExit("the cpu preset diverged")


if __name__ == "__main__":
    main()
