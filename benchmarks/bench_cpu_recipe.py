"""The ``cpu`` preset against nanoGPT's laptop recipe, on a quiet and on a busy machine.

A student's laptop always runs something else (a browser, the Jupyter server), and a
classroom JupyterHub shares its cores. So both recipes are timed in three conditions,
which this script makes itself by starting busy-loop processes
(``python -c "while True: pass"``) and stopping them afterwards:

    quiet            nothing else running
    one core busy    one busy loop
    two cores busy   two busy loops (as on a shared JupyterHub)

In each condition the two recipes run alternately, three times each, every run in a
fresh process, and the wall time of that whole process is taken (start-up, data loading
and the recipe's own periodic evaluations included, for both):

    reference  nanoGPT's laptop recipe (its README's "I only have a MacBook" command:
               4 layers x 128, 4 heads, block 64, batch 12, no dropout, 2000 iterations of
               AdamW at lr 1e-3 -> 1e-4 on a cosine, evaluation of 20 batches every 250),
               run by the REFERENCE ``train.py`` loop in ``bench_gpu_train.run_reference``
               on the model of ``nanogpt_reference.py``, with torch's default threads
    cpu        ``minitx train --preset cpu --no-progress``: the command a learner types,
               with the thread policy it chooses by itself (``minitx.train.cpu_policy``)

After each run, untimed, the final weights are scored on the whole validation split
(``minitx.train.evaluate.split_loss``). Then, in the same condition, the thread policy
is checked: 120 training steps of the cpu preset in a fresh process with the default
policy (row shards timed against one thread in a trial at the start and another at step
108, ``minitx.train.cpu_policy``), with two row shards on every step and with one thread,
alternately, three times each, timing the training steps only.

    python benchmarks/bench_cpu_recipe.py              # about 40 minutes on 2 cores
    python benchmarks/bench_cpu_recipe.py --record     # ... and write results/cpu_recipe.json
    python benchmarks/bench_cpu_recipe.py --record --resume   # only the conditions it lacks
    python benchmarks/bench_cpu_recipe.py --quick      # a smoke run: a few steps, once each
    python benchmarks/bench_cpu_recipe.py --as-avx2 --record   # as on an AVX2 laptop

The record names the CPU's kind (``minitx.train.runtime.cpu_capability``: the kernels'
ISA, whether it has bfloat16 instructions, the dtype Muon orthogonalises in), since the
preset's speed depends on it. ``--as-avx2`` runs every child with
``ONEDNN_MAX_CPU_ISA=AVX2`` and ``ATEN_CPU_CAPABILITY=avx2``: a CPU with bfloat16
instructions then computes as one without them (most laptops).

A reference run still going after ``REFERENCE_CAP_S`` is stopped; its record says so,
counts it at the cap (so a median over it is a lower bound) and scores the last
checkpoint train.py saved before the stop, at the iteration it gives.

Run it on a machine where nothing else of yours runs: the quiet condition is only quiet
if the machine is. Each run's record keeps the load that other processes put on the
machine just before it started (``others_busy_cores_before``), so a disturbed run shows.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORD = Path(__file__).with_name("results") / "cpu_recipe.json"
CONDITIONS = {"quiet": 0, "one core busy": 1, "two cores busy": 2}
# how the policy check plans each run: the default, and the two choices it times
POLICIES = {"default": {}, "two shards": {"threads": 2, "shards": 2},
            "one thread": {"threads": 1}}
TARGET_LOSS = 1.70
POLICY_STEPS = 120
# A reference run still going after this long is stopped and recorded as such: on the
# course's machine one busy core made it several times slower (over 12 minutes a run), and
# its wall time then only needs a lower bound above the cpu preset's.
REFERENCE_CAP_S = 150.0


# ------------------------------------------------------------------------- the children


def child_reference(workdir: Path, quick: bool) -> None:
    """Train nanoGPT's laptop recipe with the REFERENCE loop; weights to workdir."""
    import torch
    from bench_gpu_train import RefTrainConfig, Setup, run_reference
    from nanogpt_reference import RefConfig

    from minitx.cli import CORPUS, TRAIN_FRACTION
    from minitx.data import load_text, train_val_split
    from minitx.data.tokenizer import CharTokenizer

    text = load_text(CORPUS, download=False)
    tokenizer = CharTokenizer.from_text(text)
    train, val = train_val_split(torch.tensor(tokenizer.encode(text)), TRAIN_FRACTION)
    setup = Setup(train_data=train, val_data=val, tokenizer=tokenizer,
                  device=torch.device("cpu"), smoke=False, max_steps=None, minitx_train={},
                  skip_steps=0, workdir=workdir)
    mcfg = RefConfig(block_size=64, vocab_size=tokenizer.vocab_size, n_layer=4, n_head=4,
                     n_embd=128, dropout=0.0, bias=False)
    steps = 20 if quick else 2000
    tcfg = RefTrainConfig(batch_size=12, max_iters=steps, lr_decay_iters=steps,
                          eval_iters=20, eval_interval=10 if quick else 250, log_interval=1,
                          dtype="float32", compile=False)
    run_reference(setup, mcfg, tcfg, score=False)


def child_policy(steps: int, policy: str) -> None:
    """Time ``steps`` training steps of the cpu preset planned as ``policy`` says."""
    import torch

    from minitx.cli import CORPUS, TRAIN_FRACTION
    from minitx.data import load_text, train_val_split
    from minitx.data.batches import BlockBatches
    from minitx.data.tokenizer import CharTokenizer
    from minitx.nn.gpt import GPT
    from minitx.train.presets import get_preset
    from minitx.train.runtime import describe, plan_runtime
    from minitx.train.trainer import Trainer

    preset = get_preset("cpu").with_overrides(
        train={"max_steps": steps, "eval_interval": 10 * steps, "eval_steps": 1})
    text = load_text(CORPUS, download=False)
    tok = CharTokenizer.from_text(text)
    train, val = train_val_split(torch.tensor(tok.encode(text)), TRAIN_FRACTION)
    runtime = plan_runtime("cpu", **POLICIES[policy])
    torch.manual_seed(0)
    trainer = Trainer(GPT(preset.gpt_config(tok.vocab_size)), preset.train,
                      BlockBatches(train, val, 64, preset.train.batch_size),
                      runtime=runtime, progress=False)
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    trial = trainer.shard_trial
    print(json.dumps({"train_s": wall, "plan": describe(runtime, trainer.shards),
                      **({"trials": trial.summary()} if trial else {})}))


# ------------------------------------------------------------------------- the parent


@contextlib.contextmanager
def busy_loops(n: int) -> Iterator[None]:
    """``n`` processes that each keep a core busy, for the duration."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(2.0 if n else 0.0)  # let the scheduler settle them on cores
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of this process's cores since boot, from /proc/stat."""
    cpus = os.sched_getaffinity(0)
    busy = total = 0
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq ...
            busy += sum(values) - values[3] - values[4]
            total += sum(values)
    return busy, total


def others_load(interval: float = 0.5) -> float | None:
    """Cores' worth of CPU that other processes use over ``interval`` s (None: unreadable)."""
    try:
        busy0, total0 = cpu_seconds()
    except (OSError, AttributeError):
        return None
    own0 = time.process_time()
    time.sleep(interval)
    busy1, total1 = cpu_seconds()
    own = (time.process_time() - own0) * os.sysconf("SC_CLK_TCK")
    share = (busy1 - busy0 - own) / max(total1 - total0, 1)
    return max(0.0, share * len(os.sched_getaffinity(0)))


def wait_for_quiet(limit_s: float = 900.0) -> None:
    """Wait until other processes use under a quarter of a core (at most ``limit_s``)."""
    t0 = time.perf_counter()
    while (load := others_load()) is not None and load > 0.25:
        if time.perf_counter() - t0 > limit_s:
            print(f"   the machine stayed busy ({load:.2f} cores); measuring anyway", flush=True)
            return
        time.sleep(10)


def timed(cmd: list[str], env: dict[str, str], cap_s: float | None = None
          ) -> tuple[float, str | None]:
    """Wall time and stdout of ``cmd``; (cap_s, None) when it was stopped at ``cap_s``."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=cap_s)
    except subprocess.TimeoutExpired:
        return cap_s, None
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, done.stdout


def whole_val_loss(recipe: str, workdir: Path) -> tuple[float, int | None]:
    """The final weights' loss over the whole validation split, in windows of 64, and for
    a reference run stopped at the cap, the iteration of its last checkpoint (the loss is
    then that checkpoint's)."""
    import torch
    from nanogpt_reference import RefConfig, RefGPT

    from minitx.cli import CORPUS, TRAIN_FRACTION
    from minitx.data import load_text, train_val_split
    from minitx.data.tokenizer import CharTokenizer
    from minitx.train.checkpoint import load_gpt
    from minitx.train.evaluate import split_loss

    text = load_text(CORPUS, download=False)
    tok = CharTokenizer.from_text(text)
    _, val = train_val_split(torch.tensor(tok.encode(text)), TRAIN_FRACTION)
    iteration = None
    if recipe == "cpu":
        model = load_gpt(workdir / "ckpt.pt")[0]
    else:
        model = RefGPT(RefConfig(block_size=64, vocab_size=tok.vocab_size, n_layer=4,
                                 n_head=4, n_embd=128, dropout=0.0, bias=False))
        final = workdir / "reference" / "final.pt"
        if final.exists():
            model.load_state_dict(torch.load(final))
        else:  # stopped at the cap: train.py's last checkpoint (saved when val improved)
            ckpt = torch.load(workdir / "reference" / "ckpt.pt")
            model.load_state_dict(ckpt["model"])
            iteration = ckpt["iter_num"]
    return split_loss(model, val, block_size=64), iteration


def run_recipe(recipe: str, quick: bool, env: dict[str, str]) -> dict[str, Any]:
    load = others_load()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if recipe == "cpu":
            cmd = [sys.executable, "-m", "minitx.cli", "train", "--preset", "cpu", "--out",
                   str(work), "--no-progress", "--no-download"]
            cmd += ["--max-steps", "20"] if quick else []
        else:
            cmd = [sys.executable, __file__, "--child", "reference", "--workdir", str(work)]
            cmd += ["--quick"] if quick else []
        wall, out = timed(cmd, env, None if recipe == "cpu" else REFERENCE_CAP_S)
        stopped = out is None
        plan = next((ln for ln in (out or "").splitlines() if ln.startswith("device ")), "")
        has_weights = not stopped or (work / "reference" / "ckpt.pt").exists()
        loss, iteration = whole_val_loss(recipe, work) if has_weights else (None, None)
    row = {"recipe": recipe, "wall_s": round(wall, 1),
           "val_loss": None if loss is None else round(loss, 4),
           "others_busy_cores_before": None if load is None else round(load, 2)}
    if stopped:
        row.update(stopped_at_cap=True, last_checkpoint_iteration=iteration)
    if plan:
        row["plan"] = plan.split(" | ")[0]
    return row


def run_policy(policy: str, steps: int, env: dict[str, str]) -> dict[str, Any]:
    load = others_load()
    _, out = timed([sys.executable, __file__, "--child", "policy", "--policy", policy,
                    "--steps", str(steps)], env)
    result = json.loads(out.strip().splitlines()[-1])
    return {"policy": policy, "train_s": round(result["train_s"], 2), "plan": result["plan"],
            **({"trials": result["trials"]} if "trials" in result else {}),
            "others_busy_cores_before": None if load is None else round(load, 2)}


def summarise(condition: str, runs: list[dict], policy_runs: list[dict]) -> dict[str, Any]:
    def median(rows: list[dict], key: str) -> float:
        return round(statistics.median(r[key] for r in rows), 4 if key == "val_loss" else 2)

    ref = [r for r in runs if r["recipe"] == "reference"]
    cpu = [r for r in runs if r["recipe"] == "cpu"]
    finished = [r for r in ref if not r.get("stopped_at_cap")]
    policies = {p: median([r for r in policy_runs if r["policy"] == p], "train_s")
                for p in POLICIES}
    best = min(policies["two shards"], policies["one thread"])
    summary = {
        # a stopped run counts at the cap: then the median is a lower bound
        "reference_median_wall_s": median(ref, "wall_s"),
        "reference_stopped_at_cap": len(ref) - len(finished),
        "reference_median_val_loss": median(finished, "val_loss") if finished else None,
        "cpu_median_wall_s": median(cpu, "wall_s"),
        "cpu_median_val_loss": median(cpu, "val_loss"),
        "cpu_worst_val_loss": max(r["val_loss"] for r in cpu),
        "policy_median_train_s": policies,
        "default_vs_best_of_two": round(policies["default"] / best, 3),
    }
    summary["target_met"] = (summary["cpu_worst_val_loss"] <= TARGET_LOSS
                             and summary["cpu_median_wall_s"] <= summary["reference_median_wall_s"])
    summary["policy_within_10_percent"] = summary["default_vs_best_of_two"] <= 1.10
    ref_loss = summary["reference_median_val_loss"]
    print(f"== {condition}: cpu preset {summary['cpu_median_wall_s']:.0f} s, val "
          f"{summary['cpu_median_val_loss']:.4f} (worst {summary['cpu_worst_val_loss']:.4f}) | "
          f"reference {summary['reference_median_wall_s']:.0f} s "
          f"({summary['reference_stopped_at_cap']} of {len(ref)} stopped at the cap), val "
          f"{'-' if ref_loss is None else f'{ref_loss:.4f}'} | target "
          f"{'met' if summary['target_met'] else 'NOT met'}")
    print(f"   {POLICY_STEPS}-step policy check: "
          + ", ".join(f"{p} {s:.1f} s" for p, s in policies.items())
          + f" | default / best of the two: {summary['default_vs_best_of_two']:.2f}", flush=True)
    return summary


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{platform.machine()}, {os.cpu_count()} CPUs{', ' + model if model else ''}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: a few steps, once")
    parser.add_argument("--record", action="store_true",
                        help=f"write {RECORD.name} after each condition")
    parser.add_argument("--resume", action="store_true",
                        help=f"keep the conditions {RECORD.name} already holds; run the rest")
    parser.add_argument("--conditions", nargs="+", choices=list(CONDITIONS),
                        default=list(CONDITIONS), metavar="CONDITION")
    parser.add_argument("--as-avx2", action="store_true",
                        help="run the children as on an AVX2 CPU without bfloat16")
    parser.add_argument("--child", choices=["reference", "policy"], help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=POLICY_STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--policy", choices=list(POLICIES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "reference":
        return child_reference(args.workdir, args.quick)
    if args.child == "policy":
        return child_policy(args.steps, args.policy)
    if args.record and args.quick:
        raise SystemExit("--record keeps full runs only: drop --quick")

    import torch

    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["MINITX_DEVICE"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)])
    if args.as_avx2:
        env |= {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
    probe = subprocess.run(
        [sys.executable, "-c", "import json; from minitx.train.runtime import cpu_capability; "
         "print(json.dumps(cpu_capability()))"], env=env, capture_output=True, text=True,
        check=True)
    reps = 1 if args.quick else 3
    steps = 6 if args.quick else POLICY_STEPS
    record = {
        "command": "python benchmarks/bench_cpu_recipe.py" + " --as-avx2" * args.as_avx2
        + " --record",
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "capability": json.loads(probe.stdout),
        "torch": torch.__version__,
        "target_loss": TARGET_LOSS,
        "policy_steps": POLICY_STEPS,
        "reference_cap_s": REFERENCE_CAP_S,
        "conditions": {},
    }
    if args.resume:
        record = json.loads(RECORD.read_text())
        if record["machine"] != machine():
            raise SystemExit(f"{RECORD} was measured on {record['machine']}, not here")
    todo = [c for c in args.conditions if c not in record["conditions"]]
    print(f"machine: {machine()} | torch {torch.__version__} | {reps} runs of each recipe "
          f"per condition | to run: {', '.join(todo) or 'nothing'}", flush=True)
    for condition in todo:
        runs, policy_runs = [], []
        wait_for_quiet()
        with busy_loops(CONDITIONS[condition]):
            for rep in range(reps):  # alternate, so a change of load hits both recipes
                for recipe in (("reference", "cpu") if rep % 2 == 0 else ("cpu", "reference")):
                    runs.append(run_recipe(recipe, args.quick, env))
                    print(f"   {condition} | {recipe}: {runs[-1]}", flush=True)
            order = list(POLICIES)
            for rep in range(reps):
                for policy in order[rep:] + order[:rep]:
                    policy_runs.append(run_policy(policy, steps, env))
                    print(f"   {condition} | {policy}: {policy_runs[-1]}", flush=True)
        record["conditions"][condition] = {
            "busy_loops": CONDITIONS[condition], "runs": runs, "policy_runs": policy_runs,
            **summarise(condition, runs, policy_runs)}
        if args.record:  # after each condition, so a long session keeps what it measured
            record["conditions"] = {c: record["conditions"][c] for c in CONDITIONS
                                    if c in record["conditions"]}
            RECORD.write_text(json.dumps(record, indent=1) + "\n")
            print(f"wrote {RECORD}", flush=True)


if __name__ == "__main__":
    main()
