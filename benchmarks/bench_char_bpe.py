"""Characters against byte-pair tokens: the ``cpu`` preset trained on each, scored fairly.

Both runs are ``minitx train --preset cpu`` in a fresh process, the same model shape, block
(64 tokens), batch and steps, so each step costs the same FLOPs outside the embedding and
output layers (a BPE step covers about twice the text). ``--tokens bpe`` learns a
vocabulary of 512 (256 bytes + merges) from the training text. A loss per token cannot
compare them: a BPE token holds about two characters. So each checkpoint is scored on the
whole validation text (``split_loss``) in **bits per character**. Seeds 0, 1, 2, the two
kinds alternating; medians and spreads (max - min) of 3.

    python benchmarks/bench_char_bpe.py            # print the table
    python benchmarks/bench_char_bpe.py --record   # also write results/char_bpe.json

The record names the CPU's kind (``minitx.train.runtime.cpu_capability``); README and
docs/benchmarks.md quote it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from minitx.data import load_text
from minitx.data.encoded import encode_corpus, tokens_of
from minitx.train.checkpoint import load_gpt
from minitx.train.evaluate import split_loss
from minitx.train.runtime import cpu_capability

RECORD = Path(__file__).with_name("results") / "char_bpe.json"
DONE = re.compile(r"done: step (\d+) \| .*?\| (\d+) s this session")
KINDS = ("char", "bpe")


def one_run(tokens: str, seed: int, text: str, steps: int | None) -> dict[str, float]:
    """Train the cpu preset on ``tokens`` with ``seed``; its wall time and its bits per
    character over the whole validation text."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="minitx-char-bpe-") as out:
        done = subprocess.run(
            [sys.executable, "-m", "minitx.cli", "train", "--preset", "cpu", "--tokens", tokens,
             "--seed", str(seed), "--no-progress", "--no-download", "--out", out,
             *(["--max-steps", str(steps)] if steps else [])],
            capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL,
        )
        found = DONE.search(done.stdout)
        if found is None:
            raise RuntimeError(f"no 'done:' line in the run's output:\n{done.stdout[-2000:]}")
        process_s = time.perf_counter() - start  # with tokenizing (and learning BPE)
        model, tokenizer, _ = load_gpt(Path(out) / "ckpt.pt")
    corpus = encode_corpus(text, tokens_of(tokenizer), tokenizer=tokenizer)
    nats = split_loss(model, corpus.val, model.config.block_size)
    return {"seed": seed, "wall_s": float(found[2]), "process_s": process_s,
            "val_nats_per_token": nats,
            "chars_per_token": corpus.chars_per_token, "bits_per_char": corpus.bits_per_char(nats),
            "params": model.num_parameters()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, help="fewer steps than the preset's (a smoke run; "
                        "not recorded)")
    parser.add_argument("--record", action="store_true", help=f"write {RECORD.name}")
    args = parser.parse_args(argv)
    if args.record and args.steps:
        sys.exit("--record keeps only whole runs of the preset; drop --steps")
    text = load_text("tinyshakespeare", download=False)
    capability = cpu_capability()
    print(f"cpu: {capability}", flush=True)
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
    for seed in range(args.seeds):
        for tokens in (KINDS if seed % 2 == 0 else KINDS[::-1]):
            runs[tokens].append(one_run(tokens, seed, text, args.steps))
            r = runs[tokens][-1]
            print(f"  seed {seed} {tokens:4s}: {r['bits_per_char']:.4f} bits/char in "
                  f"{r['wall_s']:.0f} s", flush=True)
    summary = {}
    for tokens, rs in runs.items():
        bits, wall = [r["bits_per_char"] for r in rs], [r["wall_s"] for r in rs]
        summary[tokens] = {"median_bits_per_char": statistics.median(bits),
                           "spread_bits_per_char": max(bits) - min(bits),
                           "median_wall_s": statistics.median(wall),
                           "median_process_s": statistics.median(r["process_s"] for r in rs),
                           "chars_per_token": rs[0]["chars_per_token"],
                           "params": rs[0]["params"], "runs": rs}
        s = summary[tokens]
        print(f"{tokens:4s}: median {s['median_bits_per_char']:.4f} bits/char (spread "
              f"{s['spread_bits_per_char']:.4f}), median {s['median_wall_s']:.0f} s, "
              f"{s['chars_per_token']:.2f} characters a token, {s['params']:,} parameters")
    if args.record:
        RECORD.write_text(json.dumps({
            "command": "python benchmarks/bench_char_bpe.py --record",
            "date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "cpus": os.cpu_count(), "capability": capability, "preset": "cpu",
            "bpe_vocab": 512, "kinds": summary,
        }, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
