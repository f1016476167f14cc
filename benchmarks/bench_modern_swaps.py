"""Notebook 11's one-swap-at-a-time race, run five times longer: 600 steps instead of 120.

Notebook 11 trains six variants of a 2-layer x 64-wide GPT (the GPT-2 block, one modern
piece swapped in at a time, all four together) for 120 steps, three seeds each, and finds
RoPE and all four ahead. A race that short favours whatever learns fastest, so this script
runs the same variants, seeds, recipe and scoring (``minitx.course.modern_block``) for 600
steps, and prints each verdict by the notebook's rule: a gap counts only when it exceeds
three times the larger seed spread. The notebook quotes the record (a test checks it).

    python benchmarks/bench_modern_swaps.py            # about 10 minutes on one busy core
    python benchmarks/bench_modern_swaps.py --record   # ... and write results/modern_swaps.json
    python benchmarks/bench_modern_swaps.py --quick    # a few steps each: a smoke run
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import time
from pathlib import Path

import torch
from bench_cli import parse_args

from minitx.course import modern_block as mb
from minitx.data import load_text, train_val_split
from minitx.data.tokenizer import CharTokenizer
from minitx.train.runtime import plan_runtime

STEPS = 600
SEEDS = (0, 1, 2)  # the notebook's seeds
RECORD = Path(__file__).parent / "results" / "modern_swaps.json"


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per variant: mean, spread, gap and verdict, by the notebook's own rule."""
    runs = [mb.Run(r["variant"], r["seed"], None, r["val_loss"], r["parameters"], 1.0)
            for r in rows]
    table = mb.spread_table(runs)
    for name, row in table.items():
        row["verdict"] = "(baseline)" if name == mb.BASELINE else mb.verdict(row)
    return table


def quote(rows: list[dict]) -> str:
    """What notebook 11 says of the record: four means and the verdict."""
    table = summary(rows)
    base, rope, four = table[mb.BASELINE], table["RoPE"], table["all four"]
    swiglu = table["SwiGLU"]
    swaps = [n for n in table if n != mb.BASELINE]
    beyond = [n for n in swaps if table[n]["verdict"] != "no difference measured"]
    said = (", ".join(f"{n} {table[n]['verdict']}" for n in beyond) if beyond else
            "no swap's gap exceeds three times the larger seed spread")
    return (f"the GPT-2 block's mean loss is {base['mean']:.3f} (spread {base['spread']:.3f}), "
            f"RoPE's {rope['mean']:.3f}, SwiGLU's {swiglu['mean']:.3f} and all four's "
            f"{four['mean']:.3f}: {said}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, RECORD, argv)
    steps = 8 if args.quick else STEPS

    torch.set_num_threads(1)
    text = load_text("tinyshakespeare")
    tok = CharTokenizer.from_text(text)
    train, val = train_val_split(torch.tensor(tok.encode(text), dtype=torch.long), 0.9)
    runtime = plan_runtime("cpu", threads=1, compile=False)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"1 thread, {steps} steps", flush=True)
    rows, t0 = [], time.perf_counter()
    for seed in SEEDS:
        for name in mb.VARIANTS:
            run = mb.train_variant(name, seed, train, val, tok.vocab_size, runtime,
                                   max_steps=steps)
            rows.append({"variant": name, "seed": seed, "val_loss": round(run.val_loss, 4),
                         "parameters": run.parameters, "steps": steps})
            print(f"  {name:17s} seed {seed}: {run.val_loss:.4f}", flush=True)
    print(f"{len(rows)} runs in {time.perf_counter() - t0:.0f} s\n")

    print(f"{'variant':17s} {'mean':>7s} {'spread':>7s} {'gap':>7s} {'3 x spread':>10s}")
    for name, row in summary(rows).items():
        print(f"{name:17s} {row['mean']:7.4f} {row['spread']:7.4f} {row['gap']:+7.4f} "
              f"{row['noise']:10.4f}   {row['verdict']}")
    print(quote(rows))
    if args.record:
        RECORD.write_text(json.dumps({
            "command": "python benchmarks/bench_modern_swaps.py --record",
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "torch": torch.__version__, "threads": 1, "rows": rows,
        }, indent=1) + "\n")
        print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
