"""Notebook 03's model without attention, trained ten times longer: does one vector hold two dates?

Notebook 03 compares its two date models at 300 steps, where the model without attention is
still learning. This script trains that model on the notebook's data (10,000 inputs of one
or two dates, seed 1; the 20 validation inputs, seed 2; the 1,000 test inputs, seed 3) with
the notebook's recipe (``train_seq2seq``: batches of 32 drawn with the seed, Adam, learning
rate 2e-2 decayed along a cosine to a tenth of it, clipping at 1, initial weights from
``torch.manual_seed(seed)``), but for 3,000 steps, the cosine stretched over all of them, on
seeds 0, 1 and 2; and, for reference, the model with attention on seed 0. Recorded per run:
exact match on the test inputs of one date and of two dates, each date of a pair taken alone
(first, second, both together), the training loss (mean of each 100 steps) and its change
over the last 100 steps.

    python benchmarks/bench_date_bottleneck.py --jobs 2           # about 5 minutes on 2 quiet cores
    python benchmarks/bench_date_bottleneck.py --jobs 2 --record  # ... and write
                                                                  # results/date_bottleneck.json
    python benchmarks/bench_date_bottleneck.py --quick            # a few steps each: a smoke run
"""

from __future__ import annotations

import datetime
import os
import platform
import time
from pathlib import Path

import torch
from bench_cli import parse_args, write_record

from minitx.data import dates
from minitx.train.parallel import run_parallel

RECORD = Path(__file__).parent / "results" / "date_bottleneck.json"
STEPS, NOTEBOOK_STEPS, BATCH, LR, LOG_EVERY = 3000, 300, 32, 2e-2, 100
SEEDS = (0, 1, 2)
RUNS = [("without attention", s) for s in SEEDS] + [("with attention", 0)]
KINDS = {"with attention": "additive", "without attention": None}


def data() -> list[list]:
    """Notebook 03's training, validation and test inputs."""
    return [dates.generate(n, seed=seed, n_dates=(1, 2))
            for n, seed in ((10000, 1), (20, 2), (1000, 3))]


def run(name: str, seed: int, quick: bool = False) -> dict:
    """Train one model as notebook 03 does, for ``STEPS`` steps; score it on the test inputs."""
    from minitx.course.date_translation import train_seq2seq
    from minitx.nn.seq2seq import Seq2Seq, translate

    torch.set_num_threads(1)
    train, val, test = data()
    steps, log_every = (40, 10) if quick else (STEPS, LOG_EVERY)
    torch.manual_seed(seed)  # the initial weights; train_seq2seq's seed draws the batches
    model = Seq2Seq.for_dates(attention=KINDS[name])
    t0 = time.perf_counter()
    h = train_seq2seq(model, train, val=val, steps=steps, batch_size=BATCH, lr=LR, seed=seed,
                      eval_every=steps, log_every=log_every)
    wall = time.perf_counter() - t0
    max_len = max(len(ex.target) for ex in test) + 1  # the longest answer and </s>
    outputs = translate(model, [ex.source for ex in test], max_len=max_len)
    right = {1: [], 2: []}
    first, second = [], []  # each date of a two-date input, alone
    for ex, (out, _) in zip(test, outputs, strict=True):
        right[len(ex.dates)].append(out == ex.target)
        if len(ex.dates) == 2:
            got, want = [*out.split(), "", ""][:2], ex.target.split()
            first.append(got[0] == want[0])
            second.append(got[1] == want[1])
    loss = h["train_loss"]

    def share(xs: list[bool]) -> float:
        return round(sum(xs) / len(xs), 4)

    return {
        "model": name, "seed": seed, "steps": h["step"][-1], "wall_s": round(wall, 1),
        "one_date": share(right[1]), "two_dates": share(right[2]),
        "pair_first": share(first), "pair_second": share(second),
        "pair_each": share(first + second), "test_inputs": {k: len(v) for k, v in right.items()},
        "loss_curve": [[s, round(x, 4)] for s, x in zip(h["step"], loss, strict=True)],
        "last_100_loss_change": round(loss[-1] / loss[-2] - 1, 4),  # mean of the last 100 steps
    }  # fmt: skip                                                   # against the 100 before


def summary(rows: list[dict]) -> dict:
    """The range over the seeds without attention, and the attention model's run."""
    mine = [r for r in rows if r["model"] == "without attention"]
    keys = ("one_date", "two_dates", "pair_first", "pair_second", "pair_each",
            "last_100_loss_change")
    out = {"without attention": {k: {"min": min(r[k] for r in mine), "max": max(r[k] for r in mine)}
                                 for k in keys}}  # fmt: skip
    out["with attention"] = {k: r[k] for r in rows if r["model"] == "with attention" for k in keys}
    return out


def quote(record: dict) -> str:
    """The sentence notebook 03 quotes from the record (whitespace as one space)."""
    s = record["summary"]["without attention"]

    def rng(key: str) -> str:
        return f"{s[key]['min']:.2f}-{s[key]['max']:.2f}"

    return (f"one date right in {rng('one_date')} of the inputs but two dates in only "
            f"{rng('two_dates')}, each date of a pair alone in {rng('pair_each')}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, RECORD, argv, jobs=True)

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"1 thread per run, {args.jobs} at once", flush=True)
    jobs = [(name, seed, args.quick) for name, seed in RUNS]
    rows = []
    for row in run_parallel(run, jobs, workers=args.jobs):
        rows.append(row)
        print(f"  {row['model']:17s} seed {row['seed']}: one date {row['one_date']:.3f}, "
              f"two dates {row['two_dates']:.3f}, each date of a pair {row['pair_each']:.3f} "
              f"(first {row['pair_first']:.3f}, second {row['pair_second']:.3f}); loss "
              f"{row['loss_curve'][-1][1]:.4f}, {100 * row['last_100_loss_change']:+.1f}% "
              f"over the last {LOG_EVERY} steps; {row['wall_s']:.0f} s", flush=True)
    record = {
        "command": f"python benchmarks/bench_date_bottleneck.py --jobs {args.jobs} --record",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "torch": torch.__version__, "threads_per_run": 1,
        "recipe": {"steps": STEPS, "notebook_steps": NOTEBOOK_STEPS, "batch_size": BATCH,
                   "lr": LR, "min_lr_fraction": 0.1, "schedule": "cosine over all steps",
                   "train_inputs": 10000, "test_inputs": 1000, "log_every": LOG_EVERY},
        "rows": rows,
    }  # fmt: skip
    record["summary"] = summary(rows)
    print("\nnotebook 03:", quote(record))
    if args.record:
        write_record(record, RECORD)


if __name__ == "__main__":
    main()
