"""minitx.train.presets: the named recipes, and the gpu recipe run for a few steps on the CPU.

No test here copies a number from minitx/presets.py: they check what follows from the
recipes (the documentation states them, the models have the sizes their configs imply,
overrides change only what they name, training follows the schedule) and the errors.
"""

from __future__ import annotations

import copy
import math
import re

import pytest
import torch

import minitx.train.presets
from minitx.data.batches import BlockBatches
from minitx.nn.gpt import GPT
from minitx.train.presets import PRESETS, Preset, auto_preset_name, get_preset, preset_names
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import Trainer

# A phrase of the documentation -> the config fields its numbers must equal.
SIZE = r"(\d+) layers x (\d+) wide"
DOCUMENTED = {
    SIZE: ("n_layer", "n_embd"),
    r"(\d+) heads": ("n_head",),
    r"block (\d+)": ("block_size",),
    r"dropout ([\d.]+)": ("dropout",),
    r"batch (\d+)": ("batch_size",),
    r"(\d+) steps": ("max_steps",),
    r"lr ([\d.e-]+) -> ([\d.e-]+)": ("learning_rate", "min_lr"),
    r"warmup (\d+)": ("warmup_steps",),
}


def _setting(p: Preset, key: str):
    return p.model[key] if key in p.model else getattr(p.train, key)


@pytest.mark.usefixtures("machine_decides_device")
def test_names_and_auto_choice():
    assert preset_names() == list(PRESETS)
    for name in preset_names():
        assert get_preset(name).name == name
    assert auto_preset_name(cuda_available=True) == "gpu"
    assert auto_preset_name(cuda_available=False) == "cpu"
    expected = "gpu" if torch.cuda.is_available() else "cpu"
    assert get_preset("auto").name == expected


def test_unknown_preset_lists_the_known_ones():
    known = re.escape(", ".join(preset_names()))
    with pytest.raises(ValueError, match=rf"unknown preset 'laptop'.*{known}"):
        get_preset("laptop")
    with pytest.raises(TypeError):
        get_preset(3)


@pytest.mark.parametrize("name", preset_names())
def test_get_preset_returns_a_copy(name):
    before = copy.deepcopy(PRESETS[name])
    p = get_preset(name)
    p.model["n_layer"] = 99
    p.train.max_steps = 1
    assert PRESETS[name] == before


@pytest.mark.parametrize("name", preset_names())
def test_the_documentation_states_each_recipe(name):
    """Every number the description (and the module docstring's line) gives is the config's."""
    p = get_preset(name)
    doc_line = next(
        line for line in minitx.train.presets.__doc__.splitlines() if line.split()[:1] == [name]
    )
    assert re.search(SIZE, p.description), p.description  # every preset states its size
    for text in (p.description, doc_line):
        for pattern, keys in DOCUMENTED.items():
            for found in re.finditer(pattern, text):
                for key, value in zip(keys, found.groups(), strict=True):
                    assert _setting(p, key) == float(value), (name, key, text)
    assert "no biases" not in p.description or not p.model["bias"]


def test_tokens_per_step_is_batch_times_block():
    p = get_preset("cpu").with_overrides(model={"block_size": 10}, train={"batch_size": 3})
    assert p.tokens_per_step == 30


def test_the_gpu_recipe_holds_no_session_settings():
    """bf16 autocast and compile come from the runtime a session plans (on CUDA), never
    from the recipe: a checkpoint trained on a GPU resumes on a CPU as it is."""
    train = get_preset("gpu").train.to_dict()
    assert not {"device", "dtype", "compile", "threads", "progress"} & set(train)


def test_every_preset_builds_its_model():
    sizes = {}
    for name in preset_names():
        p = get_preset(name)
        m = p.model
        model = GPT(p.gpt_config(65))
        sizes[name] = model.num_parameters()
        # GPT-2 layout, tied head: per block 12 C^2 in the matrices, two LayerNorms (and
        # 11 C of biases with bias=True); embeddings; a final LayerNorm
        C, L, T, bias = m["n_embd"], m["n_layer"], m["block_size"], m["bias"]
        per_block = 12 * C * C + 2 * C + (11 * C if bias else 0)
        assert sizes[name] == 65 * C + T * C + L * per_block + (2 * C if bias else C), name
    assert sizes["tiny"] < sizes["cpu"] < sizes["gpu"]
    assert 10.6e6 < sizes["gpu"] < 10.9e6  # nanoGPT's baby GPT: 10.65M


def test_full_size_gpu_model_runs_forward_on_cpu():
    model = GPT(get_preset("gpu").gpt_config(65)).eval()
    idx, targets = torch.randint(65, (2, 1, 256))
    with torch.no_grad():
        logits, loss = model(idx, targets)
    assert logits.shape == (1, 256, 65)
    assert abs(loss.item() - math.log(65)) < 0.3  # untrained: close to uniform


def test_gpu_recipe_trains_a_few_steps_on_cpu_at_reduced_size():
    base = get_preset("gpu")
    model_changes = {"n_layer": 2, "n_embd": 48, "block_size": 32}  # 6 heads of 8
    train_changes = {"max_steps": 4, "batch_size": 4, "eval_interval": 2, "eval_steps": 1}
    p = base.with_overrides(model=model_changes, train=train_changes)
    # the rest is the gpu recipe: undoing the changes gives it back
    assert p.with_overrides(
        model={k: base.model[k] for k in model_changes},
        train={k: getattr(base.train, k) for k in train_changes},
    ) == base
    assert p.train.warmup_steps > p.train.max_steps  # the run below stays in the warmup
    torch.manual_seed(0)
    data = torch.randint(65, (5000,))
    model = GPT(p.gpt_config(65))
    trainer = Trainer(model, p.train, BlockBatches(data[:4000], data[4000:], 32, 4),
                      runtime=plan_runtime("cpu"), progress=False)
    before = [t.detach().clone() for t in model.parameters()]
    history = trainer.train()
    assert trainer.step == 4
    assert history["eval_step"] == [0, 2, 4]
    assert all(math.isfinite(v) for v in history["train_loss"] + history["val_loss"])
    # a run shorter than the warmup ends at 4 / warmup_steps of the peak learning rate
    assert history["lr"][-1] == pytest.approx(p.train.learning_rate * 4 / p.train.warmup_steps)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_preset_checks_its_model_keys():
    with pytest.raises(ValueError, match="missing"):
        Preset("x", "broken", model={"n_layer": 2})
    with pytest.raises(TypeError):
        get_preset("cpu").with_overrides(train={"lr": 1.0})


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_has_a_modern_variant(name):
    """``--arch modern``: notebook 11's block at the preset's sizes; ``gpt2`` changes nothing."""
    base = get_preset(name)
    assert base.with_arch("gpt2").gpt_config(65) == base.gpt_config(65)
    cfg = base.with_arch("modern").gpt_config(65)
    assert (cfg.norm, cfg.positions, cfg.mlp) == ("rms", "rope", "swiglu")
    assert cfg.n_kv_heads * 2 == cfg.n_head  # every preset's heads pair up
    assert (cfg.n_layer, cfg.n_embd, cfg.block_size) == (
        base.model["n_layer"], base.model["n_embd"], base.model["block_size"])
    assert base.with_arch("modern").train == base.train
    model = GPT(cfg).eval()
    assert model.pos_emb is None  # rotary positions: no table
    with torch.no_grad():
        logits, _ = model(torch.randint(65, (1, 8)))
    assert logits.shape == (1, 8, 65) and torch.isfinite(logits).all()


def test_an_unknown_arch_names_the_known_ones():
    with pytest.raises(ValueError, match=r"arch must be one of \['gpt2', 'modern'\], got 'llama'"):
        get_preset("cpu").with_arch("llama")
