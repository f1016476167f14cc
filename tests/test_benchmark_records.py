"""The figures quoted in docs/benchmarks.md and benchmarks/results/gpu.md are those of the
runs recorded next to them (benchmarks/results/gpu_train.json for the GPU, gpt_step.log for the
CPU training step), not numbers typed by hand."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from bench_scripts import load_bench

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"  # README links to it for the presets and measurements


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
    # the targets docs/benchmarks.md states: at most 1.47 within 3 minutes
    assert minitx["val_loss_whole_split"] <= 1.47 and minitx["wall_s"] <= 180


def test_benchmarks_doc_gpu_table_quotes_the_recorded_run(gpu_run: dict) -> None:
    doc = DOC.read_text()
    for row_start, name in [("| `minitx train --preset gpu`", "minitx"),
                            ("| nanoGPT's recipe, written out", "reference")]:
        run = gpu_run["models"][name]
        _, loss, wall, tokens, memory = _table_row(doc, row_start)
        assert f"{run['val_loss_whole_split']:.4f}" in loss
        assert f"{run['wall_s']:.0f} s" in wall
        assert tokens == f"{run['train_tokens_per_s']:,.0f}"
        assert memory == f"{run['peak_mem_gib']:.2f} GiB"
    preset_row = _table_row(doc, "| `gpu` |")
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


def test_benchmarks_doc_step_speedups_quote_the_recorded_cpu_runs() -> None:
    """docs/benchmarks.md's bench_gpt_step figures are the three runs in
    benchmarks/results/gpt_step.log."""
    log = (RESULTS / "gpt_step.log").read_text()
    speedups = re.findall(r"minitx step vs reference: x(\d\.\d\d)", log)
    bought = re.findall(r"what the shards buy: x(\d\.\d\d)", log)
    assert len(speedups) == len(bought) == 3, (speedups, bought)
    doc = " ".join(DOC.read_text().split())  # one line, single spaces
    assert (f"x{speedups[0]}, x{speedups[1]} and x{speedups[2]} the reference's tokens/s"
            in doc)
    assert f"the shards bought x{bought[0]}, x{bought[1]} and x{bought[2]}" in doc


def test_the_recorded_course_run_fits_the_budget() -> None:
    """benchmarks/bench_notebooks.py --record times every notebook; the course as a whole
    runs top to bottom in at most 360 s on the 2-core CPU."""
    record = json.loads((ROOT / "benchmarks" / "notebook_times.json").read_text())
    notebooks = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(record["seconds"]) == notebooks
    assert record["total"] == round(sum(record["seconds"].values()), 1)
    assert record["total"] <= 360, record


# ---------------------------------------------------------------- the cpu recipe on a busy CPU


@pytest.fixture(scope="module")
def cpu_recipe() -> dict:
    return json.loads((RESULTS / "cpu_recipe.json").read_text())


def cpu_recipe_row(condition: str, summary: dict, cap_s: float) -> str:
    """docs/benchmarks.md's row for one condition of benchmarks/results/cpu_recipe.json."""
    policy = summary["policy_median_train_s"]
    reference = [r for r in summary["runs"] if r["recipe"] == "reference"]
    stopped = [r for r in reference if r.get("stopped_at_cap")]
    wall = f"{summary['reference_median_wall_s']:.0f} s"
    if 2 * len(stopped) > len(reference):  # the median is a stopped run: a lower bound
        furthest = max(stopped, key=lambda r: r["last_checkpoint_iteration"] or 0)
        ref_cell = (f"at least {wall}: {len(stopped)} of {len(reference)} runs stopped at "
                    f"{cap_s:.0f} s, the furthest at iteration "
                    f"{furthest['last_checkpoint_iteration']} of 2000 "
                    f"({furthest['val_loss']:.4f} there)")
    else:
        ref_cell = f"{summary['reference_median_val_loss']:.4f} in {wall}"
        if stopped:
            ref_cell += f" ({len(stopped)} of {len(reference)} stopped at {cap_s:.0f} s)"
    return (
        f"| {condition} | {summary['cpu_median_val_loss']:.4f} in "
        f"{summary['cpu_median_wall_s']:.0f} s | {ref_cell} | "
        f"{'yes' if summary['target_met'] else 'no'} | {policy['default']:.1f} / "
        f"{policy['two shards']:.1f} / {policy['one thread']:.1f} s "
        f"(x{summary['default_vs_best_of_two']:.2f}) |"
    )


def test_the_cpu_recipe_record_is_a_full_run_and_its_summaries_follow_from_its_runs(
    cpu_recipe: dict,
) -> None:
    import statistics

    assert cpu_recipe["machine"] and cpu_recipe["torch"].startswith("2.")
    assert list(cpu_recipe["conditions"]) == ["quiet", "one core busy", "two cores busy"]
    for condition in cpu_recipe["conditions"].values():
        runs = condition["runs"]
        for recipe in ("cpu", "reference"):
            mine = [r for r in runs if r["recipe"] == recipe]
            finished = [r for r in mine if not r.get("stopped_at_cap")]
            assert len(mine) == 3
            assert condition[f"{recipe}_median_wall_s"] == pytest.approx(
                statistics.median(r["wall_s"] for r in mine), abs=0.01)
            if finished:
                assert condition[f"{recipe}_median_val_loss"] == pytest.approx(
                    statistics.median(r["val_loss"] for r in finished), abs=1e-4)
            # a run is stopped only at the cap, and counts there
            assert all(r["wall_s"] == cpu_recipe["reference_cap_s"] and recipe == "reference"
                       for r in mine if r.get("stopped_at_cap"))
        assert condition["reference_stopped_at_cap"] == sum(
            bool(r.get("stopped_at_cap")) for r in runs)
        assert [r["recipe"] for r in runs] == ["reference", "cpu", "cpu", "reference",
                                               "reference", "cpu"]  # alternated
        worst = max(r["val_loss"] for r in runs if r["recipe"] == "cpu")
        assert condition["cpu_worst_val_loss"] == worst
        assert condition["target_met"] == (
            worst <= cpu_recipe["target_loss"] == 1.70
            and condition["cpu_median_wall_s"] <= condition["reference_median_wall_s"])
        policy = condition["policy_median_train_s"]
        for name, seconds in policy.items():
            timed = [r["train_s"] for r in condition["policy_runs"] if r["policy"] == name]
            assert len(timed) == 3 and seconds == pytest.approx(statistics.median(timed), abs=0.01)
        ratio = policy["default"] / min(policy["two shards"], policy["one thread"])
        assert condition["default_vs_best_of_two"] == pytest.approx(ratio, abs=1e-3)


def test_the_cpu_preset_beats_the_laptop_recipe_and_the_policy_holds_in_every_condition(
    cpu_recipe: dict,
) -> None:
    """What docs/benchmarks.md says of the record: the target met, the policy within 10% of the
    better fixed choice, in each of the three conditions."""
    for name, condition in cpu_recipe["conditions"].items():
        assert condition["target_met"], name
        assert condition["default_vs_best_of_two"] <= 1.10, name


def test_benchmarks_doc_quotes_the_cpu_recipe_record(cpu_recipe: dict) -> None:
    doc = DOC.read_text()
    for condition, summary in cpu_recipe["conditions"].items():
        row = cpu_recipe_row(condition, summary, cpu_recipe["reference_cap_s"])
        assert row in doc.splitlines(), condition
    assert f"({cpu_recipe['machine']}, torch {cpu_recipe['torch']}, {cpu_recipe['date']})" in doc
    capability = cpu_recipe["capability"]  # the kind of CPU every row holds for
    native = "yes" if capability["bfloat16_native"] else "no"
    assert (f"{capability['isa']} kernels, bfloat16 instructions: {native}, Muon in "
            f"{capability['muon_dtype']}") in " ".join(doc.split())


# ------------------------------------------------------------ the modern block, cpu preset


def _bench_modern_arch():
    return load_bench("bench_modern_arch")


def modern_arch_sentence(record: dict, bench) -> str:
    """What docs/benchmarks.md says of benchmarks/results/modern_arch.json."""
    v = bench.verdict(record["rows"])
    gpt2, modern = v["gpt2"], v["modern"]
    return (
        f"the modern block's mean validation loss is {modern['mean_loss']:.4f} (spread "
        f"{modern['spread']:.4f}) against the GPT-2 block's {gpt2['mean_loss']:.4f} (spread "
        f"{gpt2['spread']:.4f}), in {v['slower']:.2f}x its time: "
        + ("a preset is earned" if v["modern_wins"] else "no preset is earned")
    )


def test_the_modern_arch_record_is_three_full_seeds_of_each_and_the_doc_quotes_it() -> None:
    record = json.loads((RESULTS / "modern_arch.json").read_text())
    bench = _bench_modern_arch()
    rows = record["rows"]
    assert [(r["arch"], r["seed"]) for r in rows] == [
        (arch, seed) for seed in bench.SEEDS for arch in bench.ARCHS]
    assert all(r["steps"] == 520 for r in rows)  # the cpu preset's whole length
    doc = DOC.read_text()
    assert modern_arch_sentence(record, bench) in " ".join(doc.split())
    # the doc: "every modern seed ended below every GPT-2 seed, but by less than three spreads"
    loss = {a: [r["val_loss"] for r in rows if r["arch"] == a] for a in bench.ARCHS}
    assert max(loss["modern"]) < min(loss["gpt2"]) and not bench.verdict(rows)["modern_wins"]
    assert f"({record['machine']}, torch {record['torch']}, {record['date']}" in doc
    # the rule itself: a win needs a gap beyond 3 spreads and at most 10% more time
    fake = [{"arch": a, "val_loss": loss, "wall_s": 10.0}
            for a, losses in (("gpt2", (2.0, 2.01, 2.02)), ("modern", (1.9, 1.91, 1.92)))
            for loss in losses]
    assert bench.verdict(fake)["modern_wins"]
    fake[3:] = [{**r, "val_loss": r["val_loss"] + 0.05} for r in fake[3:]]
    assert not bench.verdict(fake)["modern_wins"]


# ------------------------------------------------------------ Muon's dtype on an AVX2 CPU


def muon_dtype_row(label: str, summary: dict) -> str:
    """The row of docs/benchmarks.md's Muon table for one dtype, from the record."""
    import statistics

    loss = statistics.median(summary["val_loss"])
    return f"| {label} | {summary['median_tokens_per_s']:.0f} | {loss:.4f} |"


def test_the_muon_dtype_record_is_an_avx2_run_and_the_doc_quotes_it() -> None:
    import statistics

    record = json.loads((ROOT / "benchmarks" / "results" / "muon_dtype.json").read_text())
    capability = record["capability"]
    assert record["as_avx2"] and capability["isa"] == "AVX2"
    assert capability["bfloat16_native"] is False and capability["muon_dtype"] == "float32"
    runs = record["dtypes"]
    for summary in runs.values():
        assert len(summary["runs"]) == 3
        assert summary["median_tokens_per_s"] == statistics.median(
            r["tokens_per_s"] for r in summary["runs"])
    ratio = runs["float32"]["median_tokens_per_s"] / runs["bfloat16"]["median_tokens_per_s"]
    assert record["float32_over_bfloat16"] == pytest.approx(ratio)
    assert ratio > 2  # the reason for the change
    doc = " ".join(DOC.read_text().split())
    table = DOC.read_text().splitlines()
    assert muon_dtype_row("bfloat16 (the dtype before this change)", runs["bfloat16"]) in table
    assert muon_dtype_row("float32 (what `ortho_dtype` picks there)", runs["float32"]) in table
    assert f"Float32 trains {ratio:.1f}x as many tokens a second" in doc
    assert (f"({capability['isa']} kernels, bfloat16 instructions: no; {capability['model']}, "
            f"{record['cpus']} CPUs, torch {record['torch']}, {record['date']})") in doc


# ------------------------------------------------------------ characters against BPE tokens

CHAR_BPE_LABELS = {"char": "characters", "bpe": "BPE, 512 tokens"}


def char_bpe_row(kind: str, summary: dict) -> str:
    """The README row of one tokenizer, from benchmarks/results/char_bpe.json."""
    return (f"| {CHAR_BPE_LABELS[kind]} | {summary['chars_per_token']:.2f} | "
            f"{summary['params']:,} | {summary['median_bits_per_char']:.3f} (spread "
            f"{summary['spread_bits_per_char']:.3f}) | {summary['median_wall_s']:.0f} s |")


def test_the_char_bpe_record_follows_from_its_runs_and_readme_quotes_it() -> None:
    import statistics

    record = json.loads((RESULTS / "char_bpe.json").read_text())
    assert record["preset"] == "cpu" and record["bpe_vocab"] == 512
    readme = (ROOT / "README.md").read_text()
    for kind, summary in record["kinds"].items():
        runs = summary["runs"]
        assert [r["seed"] for r in runs] == [0, 1, 2]
        bits = [r["bits_per_char"] for r in runs]
        assert summary["median_bits_per_char"] == pytest.approx(statistics.median(bits))
        assert summary["spread_bits_per_char"] == pytest.approx(max(bits) - min(bits))
        assert summary["median_wall_s"] == pytest.approx(
            statistics.median(r["wall_s"] for r in runs))
        for r in runs:  # bits per character from nats per token and characters per token
            assert r["bits_per_char"] == pytest.approx(
                r["val_nats_per_token"] / r["chars_per_token"] / math.log(2))
        assert char_bpe_row(kind, summary) in readme.splitlines(), kind
    capability = record["capability"]
    assert f"{capability['isa']} kernels" in readme and "benchmarks/bench_char_bpe.py" in readme


# ------------------------------------------------------------ notebook 09's ladder on three seeds


def test_the_ladder_record_is_three_seeds_and_notebook_09_quotes_it() -> None:
    """benchmarks/results/ladder_seeds.json: every rung and variant on three seeds, the table
    at the sweep's best rate; notebook 09 quotes it, and what the notebook says of it holds."""

    from minitx.course.ladder import RUNGS, TABLE_LR

    bench = load_bench("bench_ladder_seeds")
    record = json.loads((RESULTS / "ladder_seeds.json").read_text())
    names = [r.name for r in RUNGS + bench.VARIANTS]
    assert [(r["rung"], r["seed"]) for r in record["rows"]] == [
        (n, s) for s in bench.SEEDS for n in names]
    assert record["steps"] == 300 and record["table_lr"] == TABLE_LR
    s = bench.summary(record)
    assert s["best table rate"] == TABLE_LR
    notebook = json.loads((ROOT / "notebooks" / "09_gpt_what_each_piece_buys.ipynb").read_text())
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in notebook["cells"]
                     if c["cell_type"] == "markdown")
    for sentence in bench.quotes(record):
        assert sentence in prose, sentence
    # what the notebook says of the record
    steps, removed = s["steps"], s["removed"]
    assert all(0 < d < 0.04 for d in s["table vs counted"])  # "within 0.04 of the counted"
    assert abs(steps["one head"]["mean"]) < 0.02  # one head no better than the table
    for n in ("one head", "+ feed-forward"):  # "the first and third change sign"
        assert steps[n]["min"] < 0 < steps[n]["max"], n
    assert all(steps[n]["min"] > 0 for n in ("multi-head", "+ residual + LayerNorm",
                                              "+ positions"))
    assert removed["feed-forward"]["min"] > removed["multi-head"]["max"]  # the recap


# ------------------------------------------------------------ the date models, notebook 10


def test_notebook_10_prints_the_date_models_record() -> None:
    """Notebook 10 prints benchmarks/results/date_models.json's summary (the shipped checkpoint
    carries it; tests/course/test_date_models.py checks that copy): every row is the record's."""
    record = json.loads((RESULTS / "date_models.json").read_text())
    cells = json.loads((ROOT / "notebooks" / "10_encoder_decoder.ipynb").read_text())["cells"]
    printed = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
                      for o in c.get("outputs", [])).splitlines()
    models = list(record["summary"].values())  # the GRU model, then the transformer
    for key in models[0]["test_acc"]:
        lines = [s for s in printed if re.match(rf"(length )?{re.escape(key)}( \(\d+\))?  ", s)]
        assert len(lines) == 1, key
        cells_ = [f"{c['mean']:.3f} ({c['min']:.3f}-{c['max']:.3f})"
                  for c in (m["test_acc"][key] for m in models)]
        assert lines[0].split()[-4:] == " ".join(cells_).split(), (key, lines[0])
    for name, s in record["summary"].items():  # and where each run stopped, of its schedule
        assert any(line.startswith(f"{name}: steps to 95% {s['steps_to_95']}, to 99% ")
                   for line in printed), name
    prose = " ".join(" ".join("".join(c["source"]) for c in cells
                              if c["cell_type"] == "markdown").split())
    assert all(m["lr"] == 1e-2 for m in models) and "$10^{-2}$ for both" in prose


# ------------------------------------------------------------ notebook 03's bottleneck, 3,000 steps


def test_notebook_03_quotes_the_date_bottleneck_record() -> None:
    """benchmarks/results/date_bottleneck.json: notebook 03's model without attention trained
    ten times its budget on three seeds; the notebook quotes it, and what it says holds."""

    bench = load_bench("bench_date_bottleneck")
    record = json.loads((RESULTS / "date_bottleneck.json").read_text())
    rows = record["rows"]
    assert [(r["model"], r["seed"]) for r in rows] == bench.RUNS
    assert all(r["steps"] == 3000 == 10 * record["recipe"]["notebook_steps"] for r in rows)
    assert record["summary"] == bench.summary(rows)
    cells = json.loads((ROOT / "notebooks" / "03_bahdanau_attention.ipynb").read_text())["cells"]
    prose = " ".join(" ".join("".join(c["source"]) for c in cells
                              if c["cell_type"] == "markdown").split())
    s, att = record["summary"]["without attention"], record["summary"]["with attention"]
    assert bench.quote(record) in prose
    assert f"with attention (seed 0), {att['one_date']:.2f} and {att['two_dates']:.2f}" in prose
    rng = {k: f"{s[k]['min']:.2f}-{s[k]['max']:.2f}" for k in ("one_date", "two_dates")}
    assert (f"one date right in {rng['one_date']} of the inputs but two dates in only "
            f"{rng['two_dates']} (attention {att['two_dates']:.2f}): consistent with a "
            "bottleneck") in prose  # the recap
    # what the notebook says of the record: where the loss ends, about half of the pairs lost
    ends = [r["loss_curve"][-1][1] for r in rows if r["model"] == "without attention"]
    assert f"training loss {min(ends):.2f}-{max(ends):.2f};" in prose
    assert s["one_date"]["min"] > 0.95
    assert 0.35 < s["two_dates"]["min"] <= s["two_dates"]["max"] < 0.65


# ------------------------------------------------------------ notebook 12's race, ten times longer


def test_notebook_12_quotes_the_tokenization_budget_record() -> None:
    """benchmarks/results/tokenization_budget.json: notebook 12's characters-against-BPE race at
    ten times its steps, three seeds; the notebook quotes it, and what it says of it holds."""

    bench = load_bench("bench_tokenization_budget")
    record = json.loads((RESULTS / "tokenization_budget.json").read_text())
    rows = record["rows"]
    assert [(r["kind"], r["seed"]) for r in rows] == [
        (k, s) for s in bench.SEEDS for k in ("characters", "BPE")]
    assert record["notebook_steps"] == {"characters": 120, "BPE": 97}
    assert record["steps"] == {"characters": 1200, "BPE": 967}  # matched FLOPs, as the notebook
    assert all(r["steps"] == record["steps"][r["kind"]] for r in rows)
    for r in rows:  # bits per character from the summed nats and the characters scored
        assert r["bits_per_char"] == pytest.approx(r["nats"] / r["chars"] / math.log(2), abs=1e-3)
    assert record["summary"] == bench.summary(rows)
    assert "bench_tokenization_budget.py --record" in record["command"] and record["machine"]
    cells = json.loads((ROOT / "notebooks" / "12_tokenization.ipynb").read_text())["cells"]
    prose = " ".join(" ".join("".join(c["source"]) for c in cells
                              if c["cell_type"] == "markdown").split())
    assert bench.quote(record) in prose
    gap = record["summary"]["gap"]
    rng = f"{gap['min']:.2f} to {gap['max']:.2f} bits per character"
    assert prose.count(rng) == 2  # the discussion and the recap
    # what the notebook says of it: BPE still lower on every seed, by about a third of 0.4
    assert all(g > 0 for g in gap["per_seed"].values()) and gap["min"] > 0
    assert 0.08 < gap["min"] <= gap["max"] < 0.2
    assert record["summary"]["BPE"]["max"] < record["summary"]["characters"]["min"]
