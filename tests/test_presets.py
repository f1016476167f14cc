"""minitx.presets: the named recipes, and the gpu recipe run for a few steps on the CPU."""

from __future__ import annotations

import math

import pytest
import torch

from minitx.batches import BlockBatches
from minitx.gpt import GPT
from minitx.presets import PRESETS, Preset, auto_preset_name, get_preset, preset_names
from minitx.trainer import Trainer


def test_names_and_auto_choice():
    assert preset_names() == ["tiny", "cpu", "gpu"]
    assert auto_preset_name(cuda_available=True) == "gpu"
    assert auto_preset_name(cuda_available=False) == "cpu"
    expected = "gpu" if torch.cuda.is_available() else "cpu"
    assert get_preset("auto").name == expected


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown preset 'laptop'.*tiny, cpu, gpu"):
        get_preset("laptop")
    with pytest.raises(TypeError):
        get_preset(3)


def test_get_preset_returns_a_copy():
    p = get_preset("cpu")
    p.model["n_layer"] = 99
    p.train.max_steps = 1
    assert PRESETS["cpu"].model["n_layer"] == 4
    assert PRESETS["cpu"].train.max_steps == 2000


def test_gpu_preset_is_the_baby_gpt():
    p = get_preset("gpu")
    assert p.model == {
        "block_size": 256,
        "n_layer": 6,
        "n_head": 6,
        "n_embd": 384,
        "dropout": 0.2,
        "bias": False,
    }
    t = p.train
    assert (t.learning_rate, t.batch_size, t.max_steps) == (1e-3, 64, 5000)
    assert t.device == "auto" and t.dtype == "auto" and t.compile is None  # bf16 + compile on CUDA
    assert p.tokens_per_step == 64 * 256


def test_every_preset_builds_its_model():
    sizes = {}
    for name in preset_names():
        model = GPT(get_preset(name).gpt_config(65))
        sizes[name] = model.num_parameters()
    assert sizes["tiny"] < sizes["cpu"] < sizes["gpu"]
    # GPT-2 layout, tied head: 12 L C^2 in the blocks plus embeddings and norms
    assert 10.6e6 < sizes["gpu"] < 10.9e6


def test_full_size_gpu_model_runs_forward_on_cpu():
    model = GPT(get_preset("gpu").gpt_config(65)).eval()
    idx, targets = torch.randint(65, (2, 1, 256))
    with torch.no_grad():
        logits, loss = model(idx, targets)
    assert logits.shape == (1, 256, 65)
    assert abs(loss.item() - math.log(65)) < 0.3  # untrained: close to uniform


def test_gpu_recipe_trains_a_few_steps_on_cpu_at_reduced_size():
    p = get_preset("gpu").with_overrides(
        model={"n_layer": 2, "n_embd": 48, "block_size": 32},  # 6 heads of 8
        train={"max_steps": 4, "batch_size": 4, "eval_interval": 2, "eval_steps": 1},
    )
    assert p.model["dropout"] == 0.2 and p.model["n_head"] == 6  # the rest is the gpu recipe
    assert p.train.learning_rate == 1e-3 and p.train.warmup_steps == 100
    torch.manual_seed(0)
    data = torch.randint(65, (5000,))
    model = GPT(p.gpt_config(65))
    cfg = p.train
    cfg.progress, cfg.device = False, "cpu"
    trainer = Trainer(model, cfg, BlockBatches(data[:4000], data[4000:], 32, 4))
    before = [t.detach().clone() for t in model.parameters()]
    history = trainer.train()
    assert trainer.step == 4
    assert history["eval_step"] == [0, 2, 4]
    assert all(math.isfinite(v) for v in history["train_loss"] + history["val_loss"])
    # a run shorter than the 100-step warmup stays in the warmup
    assert history["lr"][-1] == pytest.approx(1e-3 * 4 / 100)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_preset_checks_its_model_keys():
    with pytest.raises(ValueError, match="missing"):
        Preset("x", "broken", model={"n_layer": 2})
    with pytest.raises(TypeError):
        get_preset("cpu").with_overrides(train={"lr": 1.0})
