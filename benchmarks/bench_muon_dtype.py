"""The ``cpu`` preset with Muon orthogonalising in bfloat16 against float32, side by side.

On a CPU without bfloat16 instructions (AVX2, no AVX-512: most laptops) a bfloat16
matrix product is 10-20x slower than a float32 one, and Muon's Newton-Schulz iteration
is made of them. ``minitx.train.muon.ortho_dtype`` times both once per process and takes
the faster; this script forces each (``MINITX_MUON_DTYPE``) and times the whole preset:
``minitx train --preset cpu --max-steps N`` in a fresh process per run, the two dtypes
alternating, three runs each, and reports the median tokens/s (the training steps' own
count, evaluation excluded) and the validation loss each reached.

    python benchmarks/bench_muon_dtype.py                  # this machine as it is
    python benchmarks/bench_muon_dtype.py --as-avx2        # as on an AVX2 laptop
    python benchmarks/bench_muon_dtype.py --as-avx2 --record

``--as-avx2`` runs the children with ``ONEDNN_MAX_CPU_ISA=AVX2`` and
``ATEN_CPU_CAPABILITY=avx2``, so a CPU with bfloat16 instructions computes as one
without them. Every record names the CPU's kind (``minitx.train.runtime.cpu_capability``).
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
from pathlib import Path

import torch

from minitx.train.runtime import cpu_capability

RECORD = Path(__file__).with_name("results") / "muon_dtype.json"
AVX2 = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
DONE = re.compile(r"done: step (\d+) \| val loss ([\d.]+) .*?\| ([\d.]+) tokens/s")


def one_run(dtype: str, steps: int, env: dict[str, str]) -> dict[str, float]:
    """Train the cpu preset for ``steps`` steps with Muon in ``dtype``; tokens/s and loss."""
    with tempfile.TemporaryDirectory(prefix="minitx-muon-dtype-") as out:
        done = subprocess.run(
            [sys.executable, "-m", "minitx.cli", "train", "--preset", "cpu", "--max-steps",
             str(steps), "--no-progress", "--no-download", "--out", out],
            env={**env, "MINITX_MUON_DTYPE": dtype}, capture_output=True, text=True,
            check=True, stdin=subprocess.DEVNULL,
        )
    found = DONE.search(done.stdout)
    if found is None:
        raise RuntimeError(f"no 'done:' line in the run's output:\n{done.stdout[-2000:]}")
    return {"val_loss": float(found[2]), "tokens_per_s": float(found[3])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--as-avx2", action="store_true", help="compute as an AVX2 CPU does")
    parser.add_argument("--record", action="store_true", help=f"write {RECORD.name}")
    args = parser.parse_args(argv)
    env = {**os.environ, **(AVX2 if args.as_avx2 else {})}
    probe = subprocess.run(
        [sys.executable, "-c", "import json; from minitx.train.runtime import cpu_capability; "
         "print(json.dumps(cpu_capability()))"], env=env, capture_output=True, text=True,
        check=True)
    capability = json.loads(probe.stdout)
    print(f"cpu: {capability} (this process: {cpu_capability()['isa']})", flush=True)
    runs: dict[str, list[dict[str, float]]] = {"bfloat16": [], "float32": []}
    for i in range(args.repeats):
        for dtype in (("bfloat16", "float32") if i % 2 == 0 else ("float32", "bfloat16")):
            runs[dtype].append(one_run(dtype, args.steps, env))
            print(f"  run {i + 1} {dtype:8s}: {runs[dtype][-1]}", flush=True)
    summary = {
        dtype: {"median_tokens_per_s": statistics.median(r["tokens_per_s"] for r in rs),
                "val_loss": [r["val_loss"] for r in rs], "runs": rs}
        for dtype, rs in runs.items()
    }
    speedup = (summary["float32"]["median_tokens_per_s"]
               / summary["bfloat16"]["median_tokens_per_s"])
    for dtype, s in summary.items():
        print(f"{dtype:8s}: median {s['median_tokens_per_s']:.0f} tokens/s, val loss "
              f"{', '.join(f'{v:.4f}' for v in s['val_loss'])}")
    print(f"float32 / bfloat16 tokens/s: {speedup:.2f}x; the default picks "
          f"{capability['muon_dtype']} here")
    if args.record:
        RECORD.write_text(json.dumps({
            "command": "python benchmarks/bench_muon_dtype.py" + " --as-avx2" * args.as_avx2
            + " --record",
            "date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "cpus": os.cpu_count(), "as_avx2": args.as_avx2, "capability": capability,
            "steps": args.steps, "dtypes": summary, "float32_over_bfloat16": speedup,
        }, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
