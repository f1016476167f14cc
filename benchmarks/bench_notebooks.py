"""Time each notebook run top to bottom in a fresh kernel, as a learner runs it.

    python benchmarks/bench_notebooks.py            # print the table
    python benchmarks/bench_notebooks.py --record   # also write benchmarks/notebook_times.json
    python benchmarks/bench_notebooks.py --record 08   # re-time one notebook, keep the others

The recorded times are what the teacher's guide (instructor/TEACHING.md, ``minitx guide``)
quotes, with the machine they were measured on and its kind
(``minitx.train.runtime.cpu_capability``: run it as on an AVX2 laptop with
``ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2`` set). Nothing is written into the
notebooks.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from minitx.train.runtime import cpu_capability

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "benchmarks" / "notebook_times.json"
BUDGET_S = 360  # the whole course, top to bottom, on the 2-core CPU


def run_seconds(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true", help=f"write {RECORD.name}")
    parser.add_argument("notebooks", nargs="*", help="two-digit numbers (default: all)")
    args = parser.parse_args()
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.notebooks:
        paths = [p for p in paths if p.name[:2] in args.notebooks]
    machine = f"{platform.machine()}, {os.cpu_count()} CPU cores, no GPU used"
    print(f"{'notebook':<32} {'seconds':>8}   ({machine})")
    times = {}
    for path in paths:
        times[path.name[:2]] = round(run_seconds(path), 1)
        print(f"{path.name:<32} {times[path.name[:2]]:>8.1f}", flush=True)
    if args.record:
        if args.notebooks and RECORD.exists():  # re-timed a few: keep the others' times
            times = {**json.loads(RECORD.read_text())["seconds"], **times}
        times = dict(sorted(times.items()))
        record = {"machine": machine, "capability": cpu_capability(), "seconds": times,
                  "total": round(sum(times.values()), 1)}
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"recorded in {RECORD.relative_to(ROOT)}")
    print(f"{'total':<32} {sum(times.values()):>8.1f}   (a course run: at most {BUDGET_S} s)")


if __name__ == "__main__":
    main()
