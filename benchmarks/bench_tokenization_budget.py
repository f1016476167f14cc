"""Notebook 12's race of characters against BPE tokens, run ten times longer.

Notebook 12 trains the same small GPT (``minitx.course.tokenization``: 2 layers x 64 wide, a
context of 64 tokens, batches of 16) on character ids for 120 steps and on its 512 BPE
tokens for the steps that match those training FLOPs (97), on seeds 0, 1 and 2, and scores
both in bits per character of the whole validation text. A race that short leaves both
models near counted bigram tables. This script runs the same tokenizers, recipe, seeds and
scoring for ten times the steps (1,200 for characters, matched as the notebook matches them:
967 for BPE) and records bits per character per run and the gap (characters minus BPE) per
seed. The notebook quotes the record (a test checks it).

    python benchmarks/bench_tokenization_budget.py            # about 75 s of compute on 2 cores
    python benchmarks/bench_tokenization_budget.py --record   # ... and write
                                                              # results/tokenization_budget.json
    python benchmarks/bench_tokenization_budget.py --quick    # a few steps each: a smoke run
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from bench_cli import parse_args, write_record

from minitx.course import tokenization as tz
from minitx.data import load_text, train_val_split
from minitx.data.bpe import ENDOFTEXT, BPETokenizer
from minitx.data.tokenizer import CharTokenizer
from minitx.train.parallel import run_parallel
from minitx.train.runtime import plan_runtime

NOTEBOOK_STEPS = 120  # the notebook's character steps
SCALE = 10
SEEDS = (0, 1, 2)  # the notebook's seeds
RECORD = Path(__file__).parent / "results" / "tokenization_budget.json"


def tokenizers_and_ids(text: str) -> tuple[dict, dict]:
    """The notebook's two tokenizers (65 characters; 255 merges of the training text and
    <|endoftext|>) and the (train, validation) ids of each."""
    train_text, val_text = train_val_split(text, 0.9)
    chars = CharTokenizer.from_text(train_text)
    big = BPETokenizer.train(train_text, 1024)  # as the notebook: 512 is a prefix of 1,024
    tok = BPETokenizer(big.merges[:255], [ENDOFTEXT])
    toks = {"characters": chars, "BPE": tok}
    ids = {k: (torch.tensor(t.encode(train_text)), torch.tensor(t.encode(val_text)))
           for k, t in toks.items()}
    return toks, ids


def summary(rows: list[dict]) -> dict:
    """Per kind: mean, min, max and spread of bits per character; the gap (characters minus
    BPE) per seed, with its min and max."""
    out: dict = {}
    for kind in tz.KINDS:
        bits = [r["bits_per_char"] for r in rows if r["kind"] == kind]
        out[kind] = {"mean": round(statistics.fmean(bits), 4), "min": min(bits),
                     "max": max(bits), "spread": round(max(bits) - min(bits), 4)}
    by = {(r["kind"], r["seed"]): r["bits_per_char"] for r in rows}
    gaps = {str(s): round(by["characters", s] - by["BPE", s], 4) for s in SEEDS}
    out["gap"] = {"per_seed": gaps, "min": min(gaps.values()), "max": max(gaps.values())}
    return out


def quote(record: dict) -> str:
    """What notebook 12 says of the record (whitespace as one space)."""
    s, steps = record["summary"], record["steps"]
    return (f"ten times the steps ({steps['characters']:,} and {steps['BPE']}, 3 seeds, "
            f"benchmarks/bench_tokenization_budget.py), the BPE model is lower on every seed, "
            f"by {s['gap']['min']:.2f} to {s['gap']['max']:.2f} bits per character")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, RECORD, argv)

    torch.set_num_threads(1)
    toks, ids = tokenizers_and_ids(load_text("tinyshakespeare"))
    recipe = tz.comparison_recipe()
    configs = {k: recipe.gpt_config(t.vocab_size) for k, t in toks.items()}
    char_steps = 12 if args.quick else SCALE * NOTEBOOK_STEPS
    steps = {"characters": char_steps,
             "BPE": tz.matched_steps(char_steps, configs["characters"], configs["BPE"])}
    runtime = plan_runtime("cpu", threads=1, compile=False)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"1 thread per run, one worker per core; steps {steps}", flush=True)
    jobs = [(toks[k], *ids[k], steps[k], seed, runtime) for seed in SEEDS for k in tz.KINDS]
    t0 = time.perf_counter()
    runs = run_parallel(tz.train_run, jobs)  # one worker per core
    print(f"{len(runs)} runs in {time.perf_counter() - t0:.0f} s\n")
    rows = [{"kind": r.kind, "seed": r.seed, "steps": r.steps,
             "bits_per_char": round(r.bits_per_char, 4), "nats": round(r.nats, 2),
             "chars": r.chars, "wall_s": round(r.seconds, 1)} for r in runs]

    print(f"{'seed':>4s} {'characters':>10s} {'BPE':>7s} {'gap':>7s}   (bits per character)")
    for seed in SEEDS:
        c, b = (next(r["bits_per_char"] for r in rows if r["kind"] == k and r["seed"] == seed)
                for k in tz.KINDS)
        print(f"{seed:4d} {c:10.4f} {b:7.4f} {c - b:+7.4f}")
    record = {
        "command": "python benchmarks/bench_tokenization_budget.py --record",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "torch": torch.__version__, "threads_per_run": 1,
        "notebook_steps": {"characters": NOTEBOOK_STEPS,
                           "BPE": tz.matched_steps(NOTEBOOK_STEPS, configs["characters"],
                                                   configs["BPE"])},
        "steps": steps, "vocab_size": {k: t.vocab_size for k, t in toks.items()},
        "rows": rows,
    }  # fmt: skip
    record["summary"] = summary(rows)
    for kind in tz.KINDS:
        s = record["summary"][kind]
        print(f"{kind:10s} mean {s['mean']:.4f}, spread {s['spread']:.4f}")
    print("\nnotebook 12:", quote(record))
    if args.record:
        write_record(record, RECORD)


if __name__ == "__main__":
    main()
