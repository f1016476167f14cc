"""The helpers of notebook 11's experiment (minitx.course.modern_block): one switch per
variant, the same batches for every variant of a seed, the spread table's verdicts, the
per-position losses, a longer context for RoPE and not for a learned table, and the KV
cache's bytes per token."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from bench_scripts import load_bench

from minitx.course import modern_block as mb
from minitx.nn.gpt import GPT, kv_cache_numel
from minitx.train.runtime import plan_runtime

V = 11


def _data(n: int = 4000, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(seed))


def test_each_variant_changes_one_switch_of_the_baseline():
    base = mb.variant_config(mb.BASELINE, V)
    assert (base.n_layer, base.n_embd, base.n_head, base.block_size) == (2, 64, 4, 64)
    for name, switches in mb.VARIANTS.items():
        config = mb.variant_config(name, V)
        changed = {k for k in vars(base) if getattr(config, k) != getattr(base, k)}
        assert changed == set(switches), name
    assert mb.variant_config("RoPE", V, block_size=128).block_size == 128
    with pytest.raises(KeyError, match="unknown variant"):
        mb.variant_config("ALiBi", V)


def test_the_recipe_is_the_cpu_preset_cut_down():
    recipe = mb.modern_recipe(30, seed=2)
    assert recipe.train.max_steps == 30 and recipe.train.seed == 2
    assert recipe.train.batch_size == 16 and recipe.train.eval_interval == 15
    assert mb.modern_recipe(1).train.eval_interval == 1
    with pytest.raises(ValueError, match="max_steps"):
        mb.modern_recipe(0)


@pytest.mark.slow
def test_train_variant_is_reproducible_and_scored_on_the_same_windows():
    train, val = _data(), _data(2000, seed=1)
    runtime = plan_runtime("cpu", threads=1, compile=False)
    a = mb.train_variant("RMSNorm", 0, train, val, V, runtime, max_steps=3)
    b = mb.train_variant("RMSNorm", 0, train, val, V, runtime, max_steps=3)
    assert a.val_loss == b.val_loss and a.tokens_per_s > 0 and math.isfinite(a.val_loss)
    assert a.val_loss == mb.final_loss(a.model, val)
    assert a.parameters == a.model.num_parameters() and not a.model.training


def _run(name: str, seed: int, loss: float) -> mb.Run:
    return mb.Run(name, seed, None, loss, 100, 1000.0 + seed)


def test_spread_table_and_verdicts():
    runs = [_run(mb.BASELINE, s, 2.00 + 0.01 * s) for s in range(3)]
    runs += [_run("RoPE", s, 1.80 + 0.01 * s) for s in range(3)]  # far better
    runs += [_run("SwiGLU", s, 2.02 + 0.01 * s) for s in range(3)]  # within 3 x spread
    runs += [_run("RMSNorm", s, 2.30 + 0.01 * s) for s in range(3)]  # far worse
    table = mb.spread_table(runs)
    assert table["RoPE"]["gap"] == pytest.approx(-0.20)
    assert table[mb.BASELINE]["spread"] == pytest.approx(0.02)
    assert table["RoPE"]["noise"] == pytest.approx(0.06)
    assert table["RoPE"]["tokens_per_s"] == pytest.approx(1001.0)
    assert mb.verdict(table["RoPE"]) == "better"
    assert mb.verdict(table["SwiGLU"]) == "no difference measured"
    assert mb.verdict(table["RMSNorm"]) == "worse"
    with pytest.raises(ValueError, match="baseline"):
        mb.spread_table([_run("RoPE", 0, 1.0)])


def test_position_losses_are_causal_and_a_longer_context_needs_no_table():
    torch.manual_seed(0)
    rope = GPT(mb.variant_config("RoPE", V, block_size=16)).eval()
    data = _data()
    longer = mb.with_context(rope, 32)
    at32 = mb.position_losses(longer, data, 32, n_windows=70)
    assert at32.shape == (32,)
    # the first 16 positions of a 32-window see what a 16-window sees
    g = torch.Generator().manual_seed(0)
    starts = torch.randint(0, data.numel() - 33, (70,), generator=g)
    x = torch.stack([data[s : s + 16] for s in starts.tolist()])
    y = torch.stack([data[s + 1 : s + 17] for s in starts.tolist()])
    with torch.no_grad():
        logits, _ = rope(x)
    first = torch.nn.functional.cross_entropy(logits.transpose(1, 2), y, reduction="none")
    torch.testing.assert_close(at32[:16], first.mean(0), rtol=1e-5, atol=1e-5)
    # first=16: the model reads only the first 16 characters of the same 32-windows
    head = mb.position_losses(rope, data, 32, n_windows=70, first=16)
    torch.testing.assert_close(head, first.mean(0), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="first"):
        mb.position_losses(rope, data, 32, first=33)
    learned = GPT(mb.variant_config(mb.BASELINE, V, block_size=16))
    with pytest.raises(RuntimeError, match="size mismatch"):
        mb.with_context(learned, 32)


def test_bytes_per_token_is_the_cache_per_position():
    for name in (mb.BASELINE, "GQA (2 KV heads)"):
        config = mb.variant_config(name, V)
        assert mb.bytes_per_token(config) * 10 == 4 * kv_cache_numel(config, 10)
    assert mb.bytes_per_token(mb.variant_config(mb.BASELINE, V)) == 2 * 2 * 4 * 16 * 4


def test_excerpt_and_rounded():
    def f(x):
        """Doc."""
        if x < 0:
            raise ValueError
        y = x + 1
        return y * 2

    assert mb.excerpt(f, "y = x", "return y") == "y = x + 1\nreturn y * 2"
    with pytest.raises(ValueError, match="no lines"):
        mb.excerpt(f, "nothing", "return")
    assert mb.rounded(-0.001) == "0.00" and mb.rounded(2.345, 1) == "2.3"


def test_the_notebook_quotes_the_600_step_record():
    """The longer race is benchmarks/results/modern_swaps.json: every variant, the notebook's
    seeds, 600 steps each. The notebook quotes its means and verdicts; RoPE is lower and
    SwiGLU higher on every seed, and no swap clears three seed spreads (the recap)."""
    root = Path(__file__).resolve().parents[2]
    bench = load_bench("bench_modern_swaps")
    rows = json.loads(bench.RECORD.read_text())["rows"]
    assert [(r["variant"], r["seed"]) for r in rows] == [
        (name, seed) for seed in bench.SEEDS for name in mb.VARIANTS]
    assert all(r["steps"] == bench.STEPS == 600 for r in rows)
    nb = json.loads((root / "notebooks" / "11_modern_block.ipynb").read_text())
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in nb["cells"]
                     if c["cell_type"] == "markdown")
    assert bench.quote(rows) in prose
    table = bench.summary(rows)
    assert f"falls to {table[mb.BASELINE]['mean']:.2f} at 600 steps" in prose
    loss = {(r["variant"], r["seed"]): r["val_loss"] for r in rows}
    assert all(loss["RoPE", s] < loss[mb.BASELINE, s] for s in bench.SEEDS)
    assert all(loss["SwiGLU", s] > loss[mb.BASELINE, s] for s in bench.SEEDS)  # "higher"
    assert all(row["verdict"] in ("(baseline)", "no difference measured")
               for row in table.values())
