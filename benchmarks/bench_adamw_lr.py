"""AdamW's learning rate for notebook 08's short run, tuned, against Muon.

Notebook 08 trains a small GPT (``minitx.course.ladder.ladder_recipe()``: 2 layers x 64,
context 32, 800 steps of 16 windows, warmup-stable-decay) with Muon for the block matrices
and AdamW for the rest, then the same model on the same batches with AdamW alone, to
measure what Muon buys. That comparison is fair only with AdamW at its best rate for this
model and budget; this script finds it. Every AdamW rate of the grid and Muon (the
recipe's rates) train with three seeds; seed ``s`` draws the initial weights with
``torch.manual_seed(s)`` and the batches with the recipe's seed ``1337 + s`` (seed 0 is the
notebook's run). Scored as the notebook scores (the trainer's last evaluation, on fixed
validation batches) and on the whole validation split (``split_loss``).

    python benchmarks/bench_adamw_lr.py            # about 5 minutes on one core
    python benchmarks/bench_adamw_lr.py --record   # ... and write results/adamw_lr.json
    python benchmarks/bench_adamw_lr.py --quick    # a few steps each: a smoke run
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import statistics
from pathlib import Path

import torch
from bench_cli import parse_args

from minitx.course.ladder import ladder_recipe
from minitx.data import load_text, train_val_split
from minitx.data.batches import BlockBatches
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT
from minitx.train.evaluate import split_loss
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import Trainer

ADAMW_LRS = (2e-3, 4e-3, 5e-3, 6e-3, 8e-3, 1e-2, 1.5e-2, 2e-2, 3e-2)
SEEDS = (0, 1, 2)
RECORD = Path(__file__).parent / "results" / "adamw_lr.json"


def run(optimizer: str, lr: float | None, seed: int, train: torch.Tensor, val: torch.Tensor,
        vocab_size: int, steps: int) -> dict:
    """Train the notebook's model once; ``lr`` replaces AdamW's rate (None: the recipe's)."""
    overrides: dict = {"optimizer": optimizer}
    if lr is not None:
        overrides["learning_rate"] = lr
    recipe = ladder_recipe(steps, seed=1337 + seed).with_overrides(train=overrides)
    torch.manual_seed(seed)
    model = GPT(recipe.gpt_config(vocab_size))
    batches = BlockBatches(train, val, recipe.model["block_size"], recipe.train.batch_size)
    trainer = Trainer(model, recipe.train, batches, runtime=plan_runtime("cpu", threads=1),
                      progress=False)
    history = trainer.train()
    return {"optimizer": optimizer, "adamw_lr": recipe.train.learning_rate, "seed": seed,
            "steps": trainer.step, "last_eval": round(history["val_loss"][-1], 4),
            "val_split": round(split_loss(model, val, recipe.model["block_size"]), 4)}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, RECORD, argv)
    torch.set_num_threads(1)
    steps = 40 if args.quick else 800

    text = load_text("tinyshakespeare")
    tok = CharTokenizer.from_text(text)
    train, val = train_val_split(torch.tensor(tok.encode(text), dtype=torch.long), 0.9)
    rows = []
    for seed in SEEDS:
        rows.append(run("muon", None, seed, train, val, tok.vocab_size, steps))
        rows += [run("adamw", lr, seed, train, val, tok.vocab_size, steps) for lr in ADAMW_LRS]
        print(f"  seed {seed} done", flush=True)

    print(f"\n{'optimizer':<9} {'AdamW lr':>8} {'last eval (mean, spread)':>26} "
          f"{'whole val split (mean, spread)':>31}")
    summary = {}
    for key in [("muon", None), *(("adamw", lr) for lr in ADAMW_LRS)]:
        group = [r for r in rows if r["optimizer"] == key[0]
                 and (key[1] is None or math.isclose(r["adamw_lr"], key[1]))]
        cells = {}
        for score in ("last_eval", "val_split"):
            xs = [r[score] for r in group]
            cells[score] = (statistics.fmean(xs), max(xs) - min(xs))
        summary[key] = cells
        lr = "recipe" if key[1] is None else f"{key[1]:g}"
        print(f"{key[0]:<9} {lr:>8} {cells['last_eval'][0]:17.4f} {cells['last_eval'][1]:8.4f} "
              f"{cells['val_split'][0]:22.4f} {cells['val_split'][1]:8.4f}")
    best = min((k for k in summary if k[0] == "adamw"), key=lambda k: summary[k]["val_split"][0])
    print(f"best AdamW rate (whole validation split): {best[1]:g}")
    if args.record:
        RECORD.write_text(json.dumps({
            "command": "python benchmarks/bench_adamw_lr.py --record",
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "torch": torch.__version__, "threads": 1, "steps": steps,
            "best_adamw_lr": best[1], "rows": rows,
        }, indent=1) + "\n")
        print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
