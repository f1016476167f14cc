"""The ``cpu`` preset with the GPT-2 block against the same preset with the modern block.

``minitx train --arch modern`` swaps all four of notebook 11's pieces at once (RMSNorm,
rotary positions, SwiGLU, two key/value heads for four query heads) at the preset's sizes,
budget and schedule. This script decides whether that variant earns a preset of its own:
three seeds of each, every run the full 520 steps, scored on the whole validation split.
The modern variant wins only if its mean loss is lower by more than three times the larger
of the two seed spreads (max - min), and it is not more than 10% slower.

All six runs live in this one process on one thread and advance in alternating chunks
(an eighth of each run at a time), so a change in the machine's load hits every run about
equally.

    python benchmarks/bench_modern_arch.py            # about 12 minutes on one core
    python benchmarks/bench_modern_arch.py --record   # ... and write results/modern_arch.json
    python benchmarks/bench_modern_arch.py --quick    # a few steps each: a smoke run
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from bench_cli import parse_args

from minitx.data import load_text, train_val_split
from minitx.data.batches import BlockBatches
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT
from minitx.train.evaluate import split_loss
from minitx.train.presets import get_preset
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import Trainer

ARCHS = ("gpt2", "modern")
SEEDS = (1337, 1, 2)
CHUNKS = 8
MARGIN = 3.0  # a win is a mean gap larger than MARGIN x the larger seed spread
SLOWER_AT_MOST = 1.10
RECORD = Path(__file__).parent / "results" / "modern_arch.json"


def verdict(rows: list[dict]) -> dict:
    """Mean loss, spread and median wall of each arch, and whether 'modern' wins."""
    summary = {}
    for arch in ARCHS:
        losses = [r["val_loss"] for r in rows if r["arch"] == arch]
        walls = [r["wall_s"] for r in rows if r["arch"] == arch]
        summary[arch] = {"mean_loss": statistics.fmean(losses),
                         "spread": max(losses) - min(losses),
                         "median_wall_s": statistics.median(walls)}
    gap = summary["gpt2"]["mean_loss"] - summary["modern"]["mean_loss"]
    spread = max(s["spread"] for s in summary.values())
    slower = summary["modern"]["median_wall_s"] / summary["gpt2"]["median_wall_s"]
    return {**summary, "gap": gap, "slower": slower,
            "modern_wins": gap > MARGIN * spread and slower <= SLOWER_AT_MOST}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, RECORD, argv)

    text = load_text("tinyshakespeare")
    tok = CharTokenizer.from_text(text)
    train, val = train_val_split(torch.tensor(tok.encode(text), dtype=torch.long), 0.9)
    runs = []
    for seed in SEEDS:
        for arch in ARCHS:
            overrides = {"seed": seed}
            if args.quick:
                overrides.update(max_steps=16, eval_interval=8, warmup_steps=2)
            preset = get_preset("cpu").with_arch(arch).with_overrides(train=overrides)
            torch.manual_seed(seed)
            model = GPT(preset.gpt_config(tok.vocab_size))
            batches = BlockBatches(train, val, preset.model["block_size"], preset.train.batch_size)
            trainer = Trainer(model, preset.train, batches,
                              runtime=plan_runtime("cpu", threads=1), progress=False)
            runs.append({"arch": arch, "seed": seed, "trainer": trainer, "wall": 0.0})

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          "1 thread", flush=True)
    for chunk in range(1, CHUNKS + 1):
        for r in runs:
            trainer = r["trainer"]
            t0 = time.perf_counter()
            trainer.train(max_steps=math.ceil(trainer.config.max_steps * chunk / CHUNKS))
            r["wall"] += time.perf_counter() - t0
        print(f"  chunk {chunk}/{CHUNKS} done", flush=True)

    rows = []
    for r in runs:
        model = r["trainer"].model
        loss = split_loss(model, val, model.config.block_size)
        if not math.isfinite(loss):
            raise SystemExit(f"{r['arch']} seed {r['seed']} diverged")
        rows.append({"arch": r["arch"], "seed": r["seed"], "val_loss": round(loss, 4),
                     "wall_s": round(r["wall"], 1), "steps": r["trainer"].step,
                     "parameters": model.num_parameters()})
    print(f"\n{'arch':<8} {'seed':>5} {'params':>8} {'steps':>5} {'wall s':>7} {'val loss':>9}")
    for row in rows:
        print(f"{row['arch']:<8} {row['seed']:5d} {row['parameters']:8,} {row['steps']:5d} "
              f"{row['wall_s']:7.1f} {row['val_loss']:9.4f}")
    v = verdict(rows)
    for arch in ARCHS:
        print(f"{arch:<8} mean {v[arch]['mean_loss']:.4f}, spread {v[arch]['spread']:.4f}, "
              f"median wall {v[arch]['median_wall_s']:.0f} s")
    print(f"modern lower by {v['gap']:+.4f} (a win needs more than {MARGIN:g} x the larger "
          f"spread), {v['slower']:.2f}x the time: "
          f"{'a preset is earned' if v['modern_wins'] else 'no preset'}")
    if args.record:
        RECORD.write_text(json.dumps({
            "command": "python benchmarks/bench_modern_arch.py --record",
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "torch": torch.__version__, "threads": 1, "rows": rows,
        }, indent=1) + "\n")
        print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
