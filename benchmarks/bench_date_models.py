"""Notebook 03's GRU date model against notebook 10's transformer, both trained to the end.

Notebook 10 trains both for 140 steps, an illustration. This script runs the comparison
that holds: the same data (20,000 one-date inputs), training function (``train_seq2seq``:
Adam, cosine decay, no warm-up, clipping, teacher forcing) and batch size for both; each
model's learning rate swept (seed 0, three rates a factor 2 apart) and the best kept; then
three seeds per model at that rate. Every run stops at the first evaluation (every 50
steps) where it writes at least 99% of 500 validation inputs right, or after 2,000 steps
(the cosine schedule's length). Recorded per run: the steps to 95% and to 99% on
validation, and exact-match accuracy on notebook 10's 1,000 test inputs, overall, per
length group and per format.

The seed-0 models at the best rates are saved, with the recipe, to
``minitx/data/checkpoints/date_models.pt`` (package data; notebook 10 draws its maps and
runs beam search on them, :func:`minitx.course.date_translation.load_date_models`).

    python benchmarks/bench_date_models.py --jobs 2           # about 15 minutes on 2 cores
    python benchmarks/bench_date_models.py --jobs 2 --record  # ... and write the record and
                                                              # the checkpoint
    python benchmarks/bench_date_models.py --quick            # a few steps each: a smoke run
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from minitx.course.date_translation import SHIPPED_DATE_MODELS, build_date_model
from minitx.data import dates
from minitx.train.parallel import run_parallel

RECORD = Path(__file__).parent / "results" / "date_models.json"
MODELS = ("Bahdanau (GRU)", "transformer")
LRS = {"Bahdanau (GRU)": (1e-2, 2e-2, 4e-2), "transformer": (5e-3, 1e-2, 2e-2)}
SEEDS = (0, 1, 2)
BATCH, MAX_STEPS, EVAL_EVERY, TARGET = 64, 2000, 50, 0.99
GROUPS = ((6, 15), (15, 25), (25, 40))  # input length in characters, [lo, hi): notebook 10's


def data(quick: bool = False) -> tuple[list, list, list]:
    """Notebook 10's training and test inputs, and 500 validation inputs (seed 2)."""
    n_train, n_val = (2000, 50) if quick else (20000, 500)
    return (dates.generate(n_train, seed=1, n_dates=1), dates.generate(n_val, seed=2, n_dates=1),
            dates.generate(1000, seed=3, n_dates=1))


def first_step(history: dict, level: float) -> int | None:
    """The first evaluation step where validation exact match reached ``level``."""
    return next((s for s, a in zip(history["eval_step"], history["val_acc"], strict=True)
                 if a >= level), None)


def run(name: str, lr: float, seed: int, quick: bool = False) -> tuple[dict, dict]:
    """Train one model; return its row and its weights."""
    from minitx.course.date_translation import train_seq2seq
    from minitx.nn.seq2seq import translate

    torch.set_num_threads(1)
    train, val, test = data(quick)
    steps, every = (20, 10) if quick else (MAX_STEPS, EVAL_EVERY)
    torch.manual_seed(seed)  # the initial weights; train_seq2seq's seed draws the batches
    model = build_date_model(name)
    t0 = time.perf_counter()
    h = train_seq2seq(model, train, val=val, steps=steps, batch_size=BATCH, lr=lr, seed=seed,
                      eval_every=every, target_acc=TARGET)
    wall = time.perf_counter() - t0
    outputs = translate(model, [e.source for e in test])
    right = [out == e.target for (out, _), e in zip(outputs, test, strict=True)]

    def share(keep) -> float:
        picked = [r for r, e in zip(right, test, strict=True) if keep(e)]
        return round(sum(picked) / len(picked), 4)

    row = {
        "model": name, "lr": lr, "seed": seed, "steps": h["eval_step"][-1],
        "steps_to_95": first_step(h, 0.95), "steps_to_99": first_step(h, TARGET),
        "val_acc": h["val_acc"][-1], "test_acc": round(sum(right) / len(right), 4),
        "test_acc_by_length": {f"{lo}-{hi - 1}": share(lambda e, lo=lo, hi=hi:
                                                       lo <= len(e.source) < hi)
                               for lo, hi in GROUPS},
        "test_acc_by_format": {f: share(lambda e, f=f: e.formats[0] == f)
                               for f in dates.FORMATS},
        "val_curve": [[s, a] for s, a in zip(h["eval_step"], h["val_acc"], strict=True)],
        "wall_s": round(wall, 1), "parameters": sum(p.numel() for p in model.parameters()),
    }  # fmt: skip
    return row, {k: v.detach().clone() for k, v in model.state_dict().items()}


def best_lr(rows: list[dict]) -> float:
    """The rate that reached the target soonest; if none did, the best final validation."""
    def key(r: dict) -> tuple:
        return (1, -r["steps_to_99"]) if r["steps_to_99"] is not None else (0, r["val_acc"])
    return max(rows, key=key)["lr"]


def summary(rows: list[dict], name: str) -> dict:
    """Mean, worst and best over the seeds at the chosen rate, for the keys notebook 10 quotes."""
    mine = [r for r in rows if r["model"] == name and r["final"]]
    out = {"lr": mine[0]["lr"], "seeds": [r["seed"] for r in mine],
           "parameters": mine[0]["parameters"],
           "steps_to_95": [r["steps_to_95"] for r in mine],
           "steps": [r["steps"] for r in mine]}
    cells = {"all": [r["test_acc"] for r in mine]}
    cells |= {k: [r["test_acc_by_length"][k] for r in mine] for k in mine[0]["test_acc_by_length"]}
    cells |= {k: [r["test_acc_by_format"][k] for r in mine] for k in dates.FORMATS}
    out["test_acc"] = {k: {"mean": round(statistics.fmean(v), 4), "min": min(v), "max": max(v)}
                       for k, v in cells.items()}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps each (smoke run)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, one thread each")
    parser.add_argument("--record", action="store_true",
                        help=f"write {RECORD.name} and the shipped checkpoint")
    args = parser.parse_args(argv)
    if args.record and args.quick:
        raise SystemExit("--record needs the full runs: drop --quick")

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"1 thread per run, {args.jobs} at once", flush=True)
    rows, weights = [], {}
    # 1. the sweep: seed 0, every rate
    jobs = [(n, lr, 0, args.quick) for n in MODELS for lr in LRS[n]]
    runs = run_parallel(run, jobs, workers=args.jobs)
    for (n, lr, s, _), (row, w) in zip(jobs, runs, strict=True):
        rows.append(row)
        weights[n, lr, s] = w
        print(f"  sweep {n:15s} lr {lr:g}: val {row['val_acc']:.3f} at step {row['steps']},"
              f" 95% at {row['steps_to_95']}, test {row['test_acc']:.3f}", flush=True)
    best = {n: best_lr([r for r in rows if r["model"] == n]) for n in MODELS}
    # 2. seeds 1 and 2 at each model's best rate (seed 0 is the sweep's run)
    jobs = [(n, best[n], s, args.quick) for n in MODELS for s in SEEDS[1:]]
    for row, _ in run_parallel(run, jobs, workers=args.jobs):
        rows.append(row)
    for r in rows:
        r["final"] = r["lr"] == best[r["model"]]
    print(f"\n{'model':15s} {'lr':>6} {'seed':>4} {'steps':>5} {'to 95%':>6} {'test':>6} "
          f"{'by length':>20}")
    for r in rows:
        by_len = " ".join(f"{a:.3f}" for a in r["test_acc_by_length"].values())
        print(f"{r['model']:15s} {r['lr']:6g} {r['seed']:4d} {r['steps']:5d} "
              f"{r['steps_to_95']!s:>6} {r['test_acc']:6.3f} {by_len:>20}"
              f"{'' if r['final'] else '  (sweep)'}")
    summaries = {n: summary(rows, n) for n in MODELS}
    for n, s in summaries.items():
        print(f"{n}: lr {s['lr']:g}, steps to 95% {s['steps_to_95']}, test mean "
              f"{s['test_acc']['all']['mean']:.3f}")
        print("   by format:", {f: s["test_acc"][f]["mean"] for f in dates.FORMATS})
    if args.record:
        ckpt = {"format": "minitx-date-models-1", "seed": 0, "steps_max": MAX_STEPS,
                "target_val_acc": TARGET, "batch_size": BATCH,
                "models": {n: {"lr": best[n], "state_dict": weights[n, best[n], 0],
                               "test_acc": next(r["test_acc"] for r in rows if r["final"]
                                                and r["model"] == n and r["seed"] == 0)}
                           for n in MODELS},
                "summary": summaries,  # what the record says of every seed, for notebook 10
                "seed0": {r["model"]: {k: r[k] for k in ("test_acc", "test_acc_by_length",
                                                         "test_acc_by_format")}
                          for r in rows if r["final"] and r["seed"] == 0}}
        SHIPPED_DATE_MODELS.parent.mkdir(parents=True, exist_ok=True)
        torch.save(ckpt, SHIPPED_DATE_MODELS)
        sha = hashlib.sha256(SHIPPED_DATE_MODELS.read_bytes()).hexdigest()
        RECORD.write_text(json.dumps({
            "command": "python benchmarks/bench_date_models.py --jobs 2 --record",
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "torch": torch.__version__, "threads_per_run": 1,
            "recipe": {"batch_size": BATCH, "max_steps": MAX_STEPS, "eval_every": EVAL_EVERY,
                       "target_val_acc": TARGET, "val_inputs": 500, "test_inputs": 1000,
                       "lrs_swept": LRS},
            "checkpoint": {"path": str(SHIPPED_DATE_MODELS.relative_to(RECORD.parents[2])),
                           "bytes": SHIPPED_DATE_MODELS.stat().st_size, "sha256": sha},
            "summary": summaries, "rows": rows,
        }, indent=1) + "\n")
        print(f"wrote {RECORD} and {SHIPPED_DATE_MODELS} ({sha[:12]}...)")


if __name__ == "__main__":
    main()
