"""Notebook 09's ladder on three seeds, a rate sweep for its bigram table, and the full model
with one piece taken out.

The notebook trains each rung once (seed None: the recipe's batches, initial weights from
``torch.manual_seed(0)``), 300 steps of ``minitx.course.ladder.train_rung``. This script
trains every rung on seeds None, 1 and 2, so the notebook can say which steps are larger
than the seed spread, and measures three more things it quotes:

- the bigram table's AdamW rate (``TABLE_LR``): 6e-3 (the recipe's), 0.03, 0.1 and 0.3 on
  every seed, the best mean is the rate the ladder uses;
- the full model (rung 6) with one piece taken out, so a piece's worth is not read off the
  order in which the ladder adds it;
- positions added to one head, the same piece at the bottom of the ladder.

Each run is scored like the notebook's: the recipe's fixed validation batches of its seed,
and beside it the counted bigram on the same batches.

    python benchmarks/bench_ladder_seeds.py            # about 6 minutes on one core
    python benchmarks/bench_ladder_seeds.py --record   # ... and write results/ladder_seeds.json
    python benchmarks/bench_ladder_seeds.py --quick    # a few steps each: a smoke run
"""

from __future__ import annotations

import datetime
import itertools
import os
import platform
import statistics
import time
from dataclasses import replace
from pathlib import Path

import torch
from bench_cli import parse_args, write_record

from minitx.course.ladder import RUNGS, TABLE_LR, Rung, counted_bigram, train_rung
from minitx.data import load_text, train_val_split
from minitx.data.tokenizer import CharTokenizer
from minitx.train.trainer import Trainer

STEPS = 300  # the notebook's budget
SEEDS = (None, 1, 2)  # None: the notebook's own run
TABLE_RATES = (6e-3, 0.03, 0.1, 0.3)
FULL = RUNGS[-1]
VARIANTS = (  # the full model less one piece (less positions is rung 5), and one more rung
    replace(FULL, name="full, one head", n_head=1),
    replace(FULL, name="full, no feed-forward", feed_forward=False),
    replace(FULL, name="full, no residual + LayerNorm", residual_norm=False),
    Rung("one head + positions", n_head=1, positions=True),
)
RECORD = Path(__file__).parent / "results" / "ladder_seeds.json"


def summary(record: dict) -> dict:
    """Per seed, the final loss of every rung and variant; the mean and range (max - min)
    over seeds of each ladder step, of each cost of taking a piece out, and of positions on
    one head; and the best table rate."""
    loss = {}
    for row in record["rows"]:
        loss.setdefault(row["rung"], []).append(row["val_loss"])

    def stat(before: str, after: str) -> dict:
        steps = [b - a for b, a in zip(loss[before], loss[after], strict=True)]
        return {"mean": statistics.fmean(steps), "min": min(steps), "max": max(steps)}

    names = [r.name for r in RUNGS]
    full = names[-1]
    rates = {}
    for row in record["table_sweep"]:
        rates.setdefault(row["lr"], []).append(row["val_loss"])
    return {
        "steps": {after: stat(before, after) for before, after in itertools.pairwise(names)},
        "removed": {"multi-head": stat("full, one head", full),
                    "feed-forward": stat("full, no feed-forward", full),
                    "residual + LayerNorm": stat("full, no residual + LayerNorm", full),
                    "positions": stat(names[-2], full)},
        "positions on one head": stat("one head", "one head + positions"),
        "table rates": {lr: statistics.fmean(v) for lr, v in rates.items()},
        "best table rate": min(rates, key=lambda lr: statistics.fmean(rates[lr])),
        "counted": statistics.fmean(record["counted"]),
        "table vs counted": [t - c for t, c in zip(loss["bigram"], record["counted"],
                                                   strict=True)],
    }


def quotes(record: dict) -> list[str]:
    """The sentences notebook 09 quotes from the record (whitespace as one space)."""
    s = summary(record)

    def f(x: float) -> str:
        return f"{x:.2f}".replace("-0.00", "0.00")

    def q(stat: dict) -> str:
        if stat["min"] < 0 < stat["max"]:  # three decimals, so the range shows the sign change
            return f"{stat['mean']:.3f} ({stat['min']:.3f} to {stat['max']:.3f})"
        return f"{f(stat['mean'])} ({f(stat['min'])} to {f(stat['max'])})"

    steps, removed = s["steps"], s["removed"]
    return [
        f"table to one head {q(steps['one head'])}, one head to four "
        f"{q(steps['multi-head'])}, + feed-forward "
        f"{q(steps['+ feed-forward'])}, + residual + LayerNorm "
        f"{q(steps['+ residual + LayerNorm'])}, + positions {q(steps['+ positions'])}",
        f"feed-forward {q(removed['feed-forward'])}, residual + LayerNorm "
        f"{q(removed['residual + LayerNorm'])}, three of its four heads "
        f"{q(removed['multi-head'])}",
        f"positions added to one head buy {q(s['positions on one head'])}",
        "0.006, 0.03, 0.1 and 0.3 leave it at "
        + ", ".join(f"{v:.2f}" for v in s["table rates"].values()),
    ]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, RECORD, argv)
    steps = 20 if args.quick else STEPS

    text = load_text("tinyshakespeare")
    tok = CharTokenizer.from_text(text)
    train, val = train_val_split(torch.tensor(tok.encode(text), dtype=torch.long), 0.9)
    V = tok.vocab_size
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"1 thread, {steps} steps", flush=True)
    t0 = time.perf_counter()
    rows, sweep, counted = [], [], []
    for seed in SEEDS:
        for lr in TABLE_RATES:
            loss = train_rung(RUNGS[0], train, val, V, steps, seed, table_lr=lr).last_val_loss
            sweep.append({"lr": lr, "seed": seed, "val_loss": round(loss, 4)})
        for rung in RUNGS + VARIANTS:
            trainer = train_rung(rung, train, val, V, steps, seed)
            history = trainer.history["val_loss"]
            rows.append({"rung": rung.name, "seed": seed, "val_loss": round(history[-1], 4),
                         "still_falling": history[-2] > history[-1]})
            print(f"  seed {seed}: {rung.name:<30s} {history[-1]:.4f}", flush=True)
        first = trainer  # any rung of this seed: its batches are the seed's
        score = Trainer(counted_bigram(train, V, 32), first.config, first.get_batch,
                        runtime=first.runtime, progress=False).evaluate()["val"]
        counted.append(round(score, 4))
    record = {"command": "python benchmarks/bench_ladder_seeds.py --record",
              "date": datetime.date.today().isoformat(),
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "torch": torch.__version__, "threads": 1, "steps": steps, "table_lr": TABLE_LR,
              "seeds": list(SEEDS), "rows": rows, "table_sweep": sweep, "counted": counted}
    s = summary(record)
    print(f"\n{time.perf_counter() - t0:.0f} s; table rates: "
          + ", ".join(f"{lr} {v:.4f}" for lr, v in s["table rates"].items())
          + f"; counted bigram {s['counted']:.4f}")
    for sentence in quotes(record):
        print(" ", sentence)
    if not args.quick and s["best table rate"] != TABLE_LR:
        raise SystemExit(f"the sweep's best rate {s['best table rate']} is not TABLE_LR")
    if args.record:
        write_record(record, RECORD)


if __name__ == "__main__":
    main()
