"""The ``cpu`` preset against the common laptop recipe, and what each of its levers buys.

The laptop recipe (nanoGPT's README, "I only have a MacBook"): 4 layers x 128 wide,
4 heads, block 64, no biases, batch 12, 2000 AdamW steps, the learning rate warmed up to
1e-3 over 100 steps and decayed to 1e-4 on a cosine, no dropout. The ``cpu`` preset
has to reach a lower validation loss in no more wall time.

Ablation: the ``cpu`` preset again with one lever switched back at a time (AdamW for
the matrices instead of Muon, cosine instead of warmup-stable-decay, the laptop
recipe's batch of 12 at the same number of tokens, a longer context at the same number
of tokens, an untied head, ReLU² instead of GELU, ``torch.compile``).

All runs happen in this one process, on the same machine, in alternating chunks (an
eighth of each run at a time), so that a change in the machine's load hits every run
about equally. Each run's wall time is the sum of its own chunks (training plus its
periodic evaluations, as ``minitx train`` would spend it, and compilation where it
compiles). After training every model is scored on the whole validation split in
non-overlapping windows of its own block size (``minitx.train.evaluate.split_loss``, not
timed).

    python benchmarks/bench_presets.py                 # the full table (about 20 minutes)
    python benchmarks/bench_presets.py --record        # ... and write presets_ablation.json
    python benchmarks/bench_presets.py --quick         # a few steps each: a smoke run
    python benchmarks/bench_presets.py --only cpu laptop-recipe
    OMP_NUM_THREADS=1 python benchmarks/bench_presets.py   # on a machine shared with others
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from minitx.data import load_text, train_val_split
from minitx.data.batches import BlockBatches
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT
from minitx.train.evaluate import split_loss
from minitx.train.presets import Preset, get_preset
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer, count_parameters

CHUNKS = 8
RECORD = Path(__file__).with_name("presets_ablation.json")


def laptop_recipe() -> Preset:
    """nanoGPT's laptop recipe, as its ``train.py`` runs it.

    ``config/train_shakespeare_char.py`` with the README's CPU flags (4 x 128, 4 heads,
    block 64, batch 12, 2000 iterations, lr decay over 2000, dropout 0) on top of
    ``train.py``'s defaults: no biases, AdamW at lr 1e-3 with 100 warmup steps and a
    cosine decay to 1e-4, betas (0.9, 0.99), weight decay 0.1, clipping at 1, and an
    evaluation of 20 batches of both splits every 250 steps. ``TrainConfig``'s defaults
    are that recipe.
    """
    recipe = get_preset("cpu").with_overrides(
        model={"bias": False}, train=asdict(TrainConfig(eval_train=True))
    )
    return replace(recipe, name="laptop-recipe",
                   description="nanoGPT: 4x128, block 64, batch 12, 2000 steps, lr 1e-3 -> 1e-4")


@dataclass
class Variant:
    """One row of the table: a recipe, and whether its step is compiled."""

    label: str
    preset: Preset
    compile: bool = False


def same_tokens(preset: Preset, batch_size: int, block_size: int | None = None) -> Preset:
    """``preset`` with another batch (and context), its step count scaled to the same tokens."""
    block_size = block_size or preset.model["block_size"]
    steps = round(preset.train.max_steps * preset.tokens_per_step / (batch_size * block_size))
    return preset.with_overrides(
        model={"block_size": block_size},
        train={"batch_size": batch_size, "max_steps": steps,
               "warmup_steps": round(preset.train.warmup_steps * steps / preset.train.max_steps)},
    )


def variants() -> list[Variant]:
    cpu = get_preset("cpu")
    return [
        Variant("laptop-recipe", laptop_recipe()),
        Variant("cpu", cpu),
        Variant("cpu, AdamW only", cpu.with_overrides(train={"optimizer": "adamw"})),
        Variant("cpu, cosine", cpu.with_overrides(train={"schedule": "cosine"})),
        Variant("cpu, batch 12", same_tokens(cpu, batch_size=12)),
        Variant("cpu, context 128", same_tokens(cpu, batch_size=16, block_size=128)),
        Variant("cpu, untied head", cpu.with_overrides(model={"tied_head": False})),
        Variant("cpu, ReLU²", cpu.with_overrides(model={"activation": "relu2"})),
        Variant("cpu, compiled", cpu, compile=True),
    ]


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "n/a"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps each (smoke run)")
    parser.add_argument("--only", nargs="+", metavar="LABEL", help="run only these rows")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--record", action="store_true",
                        help=f"write the table to {RECORD.name} (docs/benchmarks.md quotes it)")
    args = parser.parse_args(argv)

    text = load_text("tinyshakespeare")
    tok = CharTokenizer.from_text(text)
    data = torch.tensor(tok.encode(text), dtype=torch.long)
    train, val = train_val_split(data, 0.9)

    chosen = variants()
    if args.only:
        unknown = set(args.only) - {v.label for v in chosen}
        if unknown:
            raise SystemExit(f"unknown rows {sorted(unknown)}; known: {[v.label for v in chosen]}")
        chosen = [v for v in chosen if v.label in args.only]
    runs = []
    for v in chosen:
        overrides = {"seed": args.seed}
        if args.quick:
            overrides.update(max_steps=16, eval_interval=8, warmup_steps=2)
        preset = v.preset.with_overrides(train=overrides)
        torch.manual_seed(args.seed)
        model = GPT(preset.gpt_config(tok.vocab_size))
        batches = BlockBatches(train, val, preset.model["block_size"], preset.train.batch_size)
        runtime = plan_runtime("cpu", compile=v.compile)
        trainer = Trainer(model, preset.train, batches, runtime=runtime, progress=False)
        runs.append({"variant": v, "preset": preset, "trainer": trainer, "wall": 0.0})

    threads = runs[0]["trainer"].runtime.num_threads
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"{threads} thread(s) (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})"
    )
    print(f"load average at start: {load_average()}", flush=True)
    for chunk in range(1, CHUNKS + 1):
        for r in runs:
            trainer, max_steps = r["trainer"], r["preset"].train.max_steps
            t0 = time.perf_counter()
            trainer.train(max_steps=math.ceil(max_steps * chunk / CHUNKS))
            r["wall"] += time.perf_counter() - t0
        print(f"  chunk {chunk}/{CHUNKS} done: "
              + ", ".join(f"{r['variant'].label} {r['wall']:.0f} s" for r in runs), flush=True)
    print(f"load average at end: {load_average()}")

    print()
    header = (f"{'configuration':<18} {'params':>7} {'batch':>7} {'steps':>5} {'tokens':>9} "
              f"{'wall s':>7} {'tokens/s':>8} {'val (full split)':>16} {'vs cpu':>7}")
    print(header)
    print("-" * len(header))
    results = {}
    for r in runs:
        p, trainer = r["preset"], r["trainer"]
        tokens = trainer.step * p.tokens_per_step
        loss = split_loss(trainer.model, val, p.model["block_size"])
        results[r["variant"].label] = (loss, r["wall"])
        r["tokens"], r["loss"] = tokens, loss
    base = results.get("cpu", (math.nan, math.nan))[0]
    for r in runs:
        p, label = r["preset"], r["variant"].label
        batch = f"{p.train.batch_size}x{p.model['block_size']}"
        print(f"{label:<18} {count_parameters(r['trainer'].model) / 1e6:6.2f}M {batch:>7} "
              f"{r['trainer'].step:5d} {r['tokens']:9,d} {r['wall']:7.1f} "
              f"{r['tokens'] / r['wall']:8.0f} {r['loss']:16.4f} {r['loss'] - base:+7.4f}")
    if {"cpu", "laptop-recipe"} <= set(results):
        (cpu_loss, cpu_wall), (lap_loss, lap_wall) = results["cpu"], results["laptop-recipe"]
        print()
        print(f"cpu preset vs laptop recipe: val {cpu_loss:.4f} vs {lap_loss:.4f} "
              f"({cpu_loss - lap_loss:+.4f}), wall {cpu_wall:.0f} s vs {lap_wall:.0f} s "
              f"({cpu_wall / lap_wall:.2f}x)")
        verdict = cpu_loss <= 1.70 and cpu_wall <= lap_wall
        print(f"target (val <= 1.70 in no more wall time than the laptop recipe): "
              f"{'met' if verdict else 'NOT met'}")
    if not all(math.isfinite(loss) for loss, _ in results.values()):
        raise SystemExit("a run diverged")
    if args.record:
        if args.quick or args.only:
            raise SystemExit("--record needs the full table: drop --quick and --only")
        rows = [
            {"configuration": r["variant"].label, "val_loss": round(r["loss"], 4),
             "wall_s": round(r["wall"], 1), "steps": r["trainer"].step,
             "batch_size": r["preset"].train.batch_size,
             "block_size": r["preset"].model["block_size"], "tokens": r["tokens"]}
            for r in runs
        ]
        record = {
            "command": "python benchmarks/bench_presets.py --record",
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "threads": threads,
            "torch": torch.__version__,
            "rows": rows,
        }
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
