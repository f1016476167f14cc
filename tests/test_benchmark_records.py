"""The figures quoted in README.md and benchmarks/results/gpu.md are those of the runs
recorded next to them (benchmarks/results/gpu_train.json for the GPU, gpt_step.log for the
CPU training step), not numbers typed by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture(scope="module")
def gpu_run() -> dict:
    return json.loads((RESULTS / "gpu_train.json").read_text())


def _table_row(text: str, starts_with: str) -> list[str]:
    """The cells of the one markdown table row that begins with ``starts_with``."""
    rows = [line for line in text.splitlines() if line.startswith(starts_with)]
    assert len(rows) == 1, f"expected one row starting {starts_with!r}, found {len(rows)}"
    return [cell.strip() for cell in rows[0].strip("|").split("|")]


def test_the_recorded_run_is_a_full_gpu_run_of_both_recipes(gpu_run: dict) -> None:
    assert gpu_run["device"] == "cuda" and not gpu_run["smoke"]
    assert "H100" in gpu_run["gpu"]
    minitx, reference = gpu_run["models"]["minitx"], gpu_run["models"]["reference"]
    assert (minitx["steps"], reference["steps"]) == (3000, 5001)
    assert minitx["params"] == reference["params"] == 10_745_088
    # the targets the README states: at most 1.47 within 3 minutes
    assert minitx["val_loss_whole_split"] <= 1.47 and minitx["wall_s"] <= 180


def test_readme_gpu_table_quotes_the_recorded_run(gpu_run: dict) -> None:
    readme = (ROOT / "README.md").read_text()
    for row_start, name in [("| `minitx train --preset gpu`", "minitx"),
                            ("| nanoGPT's recipe, written out", "reference")]:
        run = gpu_run["models"][name]
        _, loss, wall, tokens, memory = _table_row(readme, row_start)
        assert f"{run['val_loss_whole_split']:.4f}" in loss
        assert f"{run['wall_s']:.0f} s" in wall
        assert tokens == f"{run['train_tokens_per_s']:,.0f}"
        assert memory == f"{run['peak_mem_gib']:.2f} GiB"
    preset_row = _table_row(readme, "| `gpu` |")
    assert f"{gpu_run['models']['minitx']['val_loss_whole_split']:.4f}" in preset_row[-1]
    assert f"{gpu_run['models']['minitx']['wall_s']:.0f} s on an H100" in preset_row[-2]


def test_gpu_md_table_quotes_the_recorded_run(gpu_run: dict) -> None:
    text = (RESULTS / "gpu.md").read_text()
    minitx, reference = gpu_run["models"]["minitx"], gpu_run["models"]["reference"]
    rows = {
        "| validation loss, whole split, after training": ("val_loss_whole_split", ".4f"),
        "| the recipe's own last evaluation": ("last_eval_val", ".4f"),
        "| wall time, compilation and evaluations included": ("wall_s", ".1f"),
        "| training tokens/s": ("train_tokens_per_s", ",.0f"),
        "| peak GPU memory": ("peak_mem_gib", ".2f"),
    }
    for row_start, (key, fmt) in rows.items():
        _, ours, theirs = _table_row(text, row_start)
        assert format(minitx[key], fmt) in ours, (row_start, ours)
        assert format(reference[key], fmt) in theirs, (row_start, theirs)


def test_readme_step_speedups_quote_the_recorded_cpu_runs() -> None:
    """README's bench_gpt_step figures are the three runs in benchmarks/results/gpt_step.log."""
    log = (RESULTS / "gpt_step.log").read_text()
    speedups = re.findall(r"minitx step vs reference: x(\d\.\d\d)", log)
    bought = re.findall(r"what the shards buy: x(\d\.\d\d)", log)
    assert len(speedups) == len(bought) == 3, (speedups, bought)
    readme = " ".join((ROOT / "README.md").read_text().split())  # one line, single spaces
    assert (f"x{speedups[0]}, x{speedups[1]} and x{speedups[2]} the reference's tokens/s"
            in readme)
    assert f"the shards bought x{bought[0]}, x{bought[1]} and x{bought[2]}" in readme


def test_the_recorded_course_run_fits_the_budget() -> None:
    """benchmarks/bench_notebooks.py --record times every notebook; the course as a whole
    runs top to bottom in at most 360 s on the 2-core CPU."""
    record = json.loads((ROOT / "benchmarks" / "notebook_times.json").read_text())
    notebooks = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(record["seconds"]) == notebooks
    assert record["total"] == round(sum(record["seconds"].values()), 1)
    assert record["total"] <= 360, record
