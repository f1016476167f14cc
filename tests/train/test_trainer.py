"""minitx.train.trainer: schedule, weight-decay groups, clipping, evaluation, history, devices.

The trainer knows nothing about GPT, so most tests drive it with a bigram model defined
here; one checks the weight-decay groups of the real GPT.
"""

from __future__ import annotations

import itertools
import math
import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minitx.data.batches import BlockBatches
from minitx.train.optim import lr_at, param_groups
from minitx.train.runtime import cpu_threads, plan_runtime, select_device
from minitx.train.trainer import TrainConfig, Trainer

V = 11


class Bigram(nn.Module):
    """logits[t] = table[x[t]] + bias; learns a next-token rule exactly."""

    def __init__(self, vocab: int = V, scale: float = 1.0) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, vocab)
        self.bias = nn.Parameter(torch.zeros(vocab))
        self.scale = scale
        self.modes: list[bool] = []  # self.training at each call

    def forward(self, x, y):
        self.modes.append(self.training)
        logits = self.table(x) + self.bias  # (B, T, V)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        return logits, self.scale * loss


def cyclic_batches(block_size: int = 8, batch_size: int = 4) -> BlockBatches:
    """Token t is followed by (t + 3) % V: a rule a bigram model can learn."""
    seq = (torch.arange(2000) * 3) % V
    return BlockBatches(seq[:1800], seq[1800:], block_size, batch_size)


def config(**kw) -> TrainConfig:
    base = dict(
        max_steps=10,
        batch_size=4,
        learning_rate=0.1,
        min_lr=0.01,
        warmup_steps=2,
        eval_interval=5,
        eval_steps=2,
        log_interval=2,
    )
    return TrainConfig(**{**base, **kw})


# ---------------------------------------------------------------- learning-rate schedule
def test_lr_warmup_is_linear_and_reaches_the_peak():
    kw = dict(learning_rate=1.0, min_lr=0.1, warmup_steps=4, decay_steps=14)
    assert [lr_at(s, **kw) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert lr_at(4, **kw) == 1.0  # first decay step starts at the peak: no jump


def test_lr_cosine_midpoint_end_and_after():
    kw = dict(learning_rate=1.0, min_lr=0.1, warmup_steps=4, decay_steps=14)
    assert lr_at(9, **kw) == pytest.approx(0.55)  # halfway: (lr + min_lr) / 2
    assert lr_at(14, **kw) == 0.1
    assert lr_at(1000, **kw) == 0.1
    after_warmup = [lr_at(s, **kw) for s in range(4, 15)]
    assert all(a > b for a, b in itertools.pairwise(after_warmup))
    expected = 0.1 + 0.5 * (1 + math.cos(math.pi * 3 / 10)) * 0.9
    assert lr_at(7, **kw) == pytest.approx(expected)


def test_lr_constant_when_min_equals_max_and_no_warmup():
    cfg = config(learning_rate=1e-3, min_lr=1e-3, warmup_steps=0, max_steps=50)
    assert {cfg.lr_at(s) for s in range(60)} == {1e-3}


def test_lr_run_shorter_than_its_warmup_stays_in_warmup():
    cfg = config(max_steps=3, warmup_steps=100, learning_rate=1.0)
    assert [cfg.lr_at(s) for s in range(3)] == [0.01, 0.02, 0.03]


@pytest.mark.parametrize(
    "kw",
    [
        dict(step=-1, learning_rate=1, min_lr=0, warmup_steps=0, decay_steps=5),
        dict(step=0, learning_rate=1, min_lr=0, warmup_steps=6, decay_steps=5),
        dict(step=0, learning_rate=1, min_lr=0, warmup_steps=-1, decay_steps=5),
    ],
)
def test_lr_bad_arguments(kw):
    with pytest.raises(ValueError):
        lr_at(**kw)


@pytest.mark.parametrize(
    "kw",
    [
        dict(max_steps=0),
        dict(batch_size=-1),
        dict(learning_rate=0.0),
        dict(min_lr=1.0, learning_rate=0.1),
        dict(betas=(0.9, 1.0)),
        dict(weight_decay=-0.1),
        dict(warmup_steps=10, lr_decay_steps=5),
    ],
)
def test_config_rejects_bad_values(kw):
    with pytest.raises(ValueError):
        config(**kw)


def test_config_dict_round_trip():
    cfg = config(betas=(0.8, 0.95))
    d = cfg.to_dict()
    assert d["betas"] == [0.8, 0.95]
    assert TrainConfig.from_dict(d) == cfg
    # the session settings older checkpoints kept in the config are dropped on loading
    old = {**d, "device": "cuda", "dtype": "auto", "compile": None, "threads": 4, "progress": True}
    assert TrainConfig.from_dict(old) == cfg
    assert not {"device", "dtype", "compile", "threads", "progress"} & set(d)
    with pytest.raises(ValueError, match="unknown"):
        TrainConfig.from_dict({**d, "lr": 1.0})


# ---------------------------------------------------------------- weight decay
def test_param_groups_of_gpt_decay_matrices_only():
    from minitx.nn.gpt import GPT, GPTConfig

    model = GPT(GPTConfig(vocab_size=13, block_size=8, n_layer=2, n_head=2, n_embd=16))
    decay, no_decay = param_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"])
    assert all(p.dim() == 1 for p in no_decay["params"])
    ids = [id(p) for p in decay["params"] + no_decay["params"]]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
    # the tied embedding / output matrix is decayed, once
    assert sum(p is model.tok_emb.weight for p in decay["params"]) == 1
    n = sum(p.numel() for p in decay["params"] + no_decay["params"])
    assert n == model.num_parameters()


def test_weight_decay_is_decoupled_and_skips_vectors():
    # scale=0: every gradient is exactly zero, so Adam's update is zero and only the
    # decoupled decay moves parameters: matrices shrink by (1 - lr * wd), vectors stay.
    torch.manual_seed(0)
    model = Bigram(scale=0.0)
    with torch.no_grad():
        model.bias.fill_(1.0)
    table0 = model.table.weight.detach().clone()
    cfg = config(max_steps=1, warmup_steps=0, learning_rate=0.1, min_lr=0.1, weight_decay=0.5)
    Trainer(model, cfg, cyclic_batches()).train()
    assert torch.allclose(model.table.weight, table0 * (1 - 0.1 * 0.5), atol=1e-7)
    assert torch.equal(model.bias.detach(), torch.ones(V))


# ---------------------------------------------------------------- clipping
def test_gradients_are_clipped_before_the_update():
    torch.manual_seed(0)
    model = Bigram(scale=1000.0)  # huge gradients
    trainer = Trainer(model, config(max_steps=4, grad_clip=0.5, log_interval=1), cyclic_batches())
    norms_at_step = []

    def record(optimizer, args, kwargs):
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        norms_at_step.append(
            float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])))
        )

    trainer.optimizer.register_step_pre_hook(record)
    history = trainer.train()
    assert len(norms_at_step) == 4
    assert max(norms_at_step) <= 0.5 + 1e-4
    assert min(history["grad_norm"]) > 0.5  # the logged norm is the one before clipping


def test_no_clipping_when_grad_clip_is_zero():
    torch.manual_seed(0)
    trainer = Trainer(Bigram(scale=1000.0), config(max_steps=2, grad_clip=0.0), cyclic_batches())
    seen = []
    trainer.optimizer.register_step_pre_hook(
        lambda opt, a, k: seen.append(float(opt.param_groups[0]["params"][0].grad.norm()))
    )
    history = trainer.train()
    assert min(seen) > 1.0
    assert all(math.isnan(v) for v in history["grad_norm"])


# ---------------------------------------------------------------- evaluation and history
def test_evaluate_is_repeatable_in_eval_mode_and_leaves_training_batches_alone():
    torch.manual_seed(0)
    model = Bigram()
    trainer = Trainer(model, config(), cyclic_batches())
    state = trainer.generator.get_state()
    model.modes.clear()
    first = trainer.evaluate(("train", "val"))
    second = trainer.evaluate(("train", "val"))
    assert first == second and set(first) == {"train", "val"}
    assert model.modes and not any(model.modes)  # dropout would be off
    assert model.training  # mode restored
    assert torch.equal(trainer.generator.get_state(), state)


def test_history_records_log_and_eval_points_and_loss_falls():
    torch.manual_seed(0)
    cfg = config(max_steps=30, log_interval=4, eval_interval=10, eval_train=True)
    trainer = Trainer(Bigram(), cfg, cyclic_batches())
    h = trainer.train()
    assert h["step"] == [4, 8, 12, 16, 20, 24, 28, 30]
    assert h["eval_step"] == [0, 10, 20, 30]
    assert len(h["val_loss"]) == len(h["eval_train_loss"]) == 4
    assert h["lr"] == [cfg.lr_at(s - 1) for s in h["step"]]
    assert all(v > 0 for v in h["tokens_per_s"])
    assert h["elapsed_s"] == sorted(h["elapsed_s"])
    assert h["val_loss"][-1] < 0.5 * h["val_loss"][0]
    assert h["train_loss"][-1] < h["train_loss"][0]
    assert trainer.best_val_loss == min(h["val_loss"])
    assert trainer.last_val_loss == h["val_loss"][-1]
    assert trainer.step == 30


def test_train_loss_is_the_mean_over_the_log_window():
    torch.manual_seed(0)
    model = Bigram()
    losses = []
    original = model.forward

    def forward(x, y):
        logits, loss = original(x, y)
        if model.training:
            losses.append(loss.item())
        return logits, loss

    model.forward = forward
    one_pass = plan_runtime("cpu", shards=1)  # one forward per step: `losses` holds steps
    trainer = Trainer(model, config(max_steps=6, log_interval=3), cyclic_batches(),
                      runtime=one_pass)
    h = trainer.train()
    assert h["train_loss"] == pytest.approx([sum(losses[:3]) / 3, sum(losses[3:]) / 3], rel=1e-6)


def test_callbacks_and_events():
    calls = []
    trainer = Trainer(
        Bigram(),
        config(max_steps=4, eval_interval=2),
        cyclic_batches(),
        callbacks={"on_eval_end": [lambda t: calls.append(("eval", t.step))]},
    )
    trainer.add_callback("on_step_end", lambda t: calls.append(("step", t.step)))
    trainer.add_callback("on_train_end", lambda t: calls.append(("end", t.step)))
    trainer.train()
    assert calls == [
        ("eval", 0),
        ("step", 1),
        ("eval", 2),
        ("step", 2),
        ("step", 3),
        ("eval", 4),
        ("step", 4),
        ("end", 4),
    ]
    with pytest.raises(ValueError, match="unknown event"):
        trainer.add_callback("on_epoch_end", print)


def test_train_continues_from_where_it_stopped_and_rejects_going_back():
    trainer = Trainer(Bigram(), config(max_steps=10), cyclic_batches())
    trainer.train(max_steps=4)
    assert trainer.step == 4
    trainer.train()
    assert trainer.step == 10
    with pytest.raises(ValueError, match="already done"):
        trainer.train(max_steps=5)


def test_batch_size_mismatch_is_reported():
    trainer = Trainer(Bigram(), config(batch_size=5), cyclic_batches(batch_size=4))
    with pytest.raises(ValueError, match="batch_size is 5"):
        trainer.train()


def test_bad_arguments():
    with pytest.raises(TypeError, match="TrainConfig"):
        Trainer(Bigram(), {"max_steps": 3}, cyclic_batches())
    with pytest.raises(TypeError, match="callable"):
        Trainer(Bigram(), config(), [1, 2])


def test_bf16_autocast_runs_on_cpu():
    torch.manual_seed(0)
    trainer = Trainer(Bigram(), config(max_steps=2), cyclic_batches(),
                      runtime=plan_runtime("cpu", "bfloat16"))
    assert trainer.runtime.dtype == torch.bfloat16
    h = trainer.train()
    assert all(math.isfinite(v) for v in h["train_loss"] + h["val_loss"])
    assert trainer.model.table.weight.dtype == torch.float32  # autocast, not a cast


# ---------------------------------------------------------------- device selection
@pytest.mark.parametrize(
    ("cuda", "mps", "expected"),
    [(True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")],
)
@pytest.mark.usefixtures("machine_decides_device")
def test_auto_device_prefers_cuda_then_mps_then_cpu(cuda, mps, expected):
    assert select_device("auto", cuda_available=cuda, mps_available=mps).type == expected


def test_explicit_device_must_exist():
    assert select_device("cpu", cuda_available=False, mps_available=False).type == "cpu"
    assert select_device("cuda:1", cuda_available=True, mps_available=False).index == 1
    with pytest.raises(ValueError, match="CUDA is not available"):
        select_device("cuda", cuda_available=False, mps_available=False)
    with pytest.raises(ValueError, match="mps is not available"):
        select_device("mps", cuda_available=False, mps_available=False)


def test_minitx_device_answers_auto_and_only_auto():
    gpu_mac = {"cuda_available": True, "mps_available": True}
    assert select_device("auto", env={"MINITX_DEVICE": "cpu"}, **gpu_mac).type == "cpu"
    assert select_device("auto", env={"MINITX_DEVICE": "mps"}, **gpu_mac).type == "mps"
    assert select_device("auto", env={"MINITX_DEVICE": " auto "}, **gpu_mac).type == "cuda"
    assert select_device("auto", env={"MINITX_DEVICE": ""}, **gpu_mac).type == "cuda"
    assert select_device("auto", env={}, **gpu_mac).type == "cuda"
    # an explicit request is the caller's: the variable does not override it
    assert select_device("cuda", env={"MINITX_DEVICE": "cpu"}, **gpu_mac).type == "cuda"
    with pytest.raises(ValueError, match=r"'gpu' \(set by \$MINITX_DEVICE\)"):
        select_device("auto", env={"MINITX_DEVICE": "gpu"}, **gpu_mac)
    with pytest.raises(ValueError, match=r"'cuda' was set by \$MINITX_DEVICE but CUDA is not"):
        select_device("auto", env={"MINITX_DEVICE": "cuda"}, cuda_available=False,
                      mps_available=False)


def test_the_test_suite_runs_auto_choices_on_the_cpu():
    """The root conftest.py pins 'auto' to the CPU for every test and every nbval kernel."""
    assert os.environ["MINITX_DEVICE"] == "cpu"
    assert select_device("auto", cuda_available=True, mps_available=True).type == "cpu"
    assert plan_runtime(cuda_available=True, bf16_supported=True).device.type == "cpu"


@pytest.mark.usefixtures("machine_decides_device")
def test_runtime_plan_on_cuda_mps_and_cpu():
    gpu = plan_runtime("auto", cuda_available=True, mps_available=False, bf16_supported=True)
    assert (gpu.device.type, gpu.dtype, gpu.compile, gpu.fused_adamw, gpu.tf32) == (
        "cuda",
        torch.bfloat16,
        True,
        True,
        True,
    )
    old_gpu = plan_runtime("auto", cuda_available=True, mps_available=False, bf16_supported=False)
    assert old_gpu.dtype == torch.float32
    mac = plan_runtime("auto", cuda_available=False, mps_available=True)
    assert (mac.device.type, mac.dtype, mac.compile, mac.fused_adamw) == (
        "mps",
        torch.float32,
        False,
        False,
    )
    cpu = plan_runtime("auto", cuda_available=False, mps_available=False, cpus=7)
    assert (cpu.device.type, cpu.dtype, cpu.compile, cpu.tf32) == (
        "cpu",
        torch.float32,
        False,
        False,
    )
    no_compile = plan_runtime("auto", "float32", compile=False, cuda_available=True,
                              mps_available=False)
    assert not no_compile.compile and no_compile.dtype == torch.float32


def test_cpu_threads_use_every_core_unless_the_user_says_otherwise(monkeypatch):
    assert cpu_threads(env={}, cpus=6) == 6
    assert cpu_threads(env={"OMP_NUM_THREADS": "1"}, cpus=6) == 1
    with pytest.raises(ValueError, match="OMP_NUM_THREADS"):
        cpu_threads(env={"OMP_NUM_THREADS": "many"}, cpus=6)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert plan_runtime("cpu", cpus=3).num_threads == 3
    assert plan_runtime("cpu", threads=1, cpus=3).num_threads == 1
    with pytest.raises(ValueError, match="threads"):
        plan_runtime("cpu", threads=0)
    with pytest.raises(ValueError, match="dtype"):
        plan_runtime("cpu", "float16")
    with pytest.raises(ValueError, match="device"):
        plan_runtime("tpu")


def test_trainer_on_this_machine_without_cuda_uses_cpu_float32():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    trainer = Trainer(Bigram(), config(), cyclic_batches())
    assert trainer.runtime.dtype == torch.float32
    assert trainer.runtime.device.type in ("cpu", "mps")
    assert not trainer.runtime.compile
    assert trainer.forward_model is trainer.model


def test_a_diverging_run_stops_with_a_clear_error():
    class Exploding(Bigram):
        def forward(self, x, y):
            logits, loss = super().forward(x, y)
            return logits, loss * float("nan")

    trainer = Trainer(Exploding(), config(max_steps=6, grad_clip=0.0), cyclic_batches())
    with pytest.raises(FloatingPointError, match="training loss became nan by step 2"):
        trainer.train()


# ---------------------------------------------------------------- any task, one loop
class _Regression(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Linear(3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w(x)[:, 0]


def _regression_batch(split: str, generator: torch.Generator):
    x = torch.randn(16, 3, generator=generator)  # (B, 3)
    return x, x @ torch.tensor([1.0, -2.0, 0.5])  # y = w . x, w to be learned


def test_a_task_supplies_batches_and_a_loss_and_nothing_else():
    torch.manual_seed(0)
    model = _Regression()
    config = TrainConfig(max_steps=150, batch_size=16, learning_rate=5e-2, min_lr=5e-3,
                         warmup_steps=0, weight_decay=0.0, eval_interval=50, eval_steps=2,
                         log_interval=1)

    def mse(model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).mean()

    trainer = Trainer(model, config, _regression_batch, loss_fn=mse)
    history = trainer.train()
    assert len(history["train_loss"]) == 150  # log_interval=1: the loss of every step
    assert history["val_loss"][-1] < 1e-3 < history["val_loss"][0]
    torch.testing.assert_close(model.w.weight, torch.tensor([[1.0, -2.0, 0.5]]), atol=0.02,
                               rtol=0)


def test_a_callback_can_stop_training_early():
    torch.manual_seed(0)
    config = TrainConfig(max_steps=500, batch_size=16, learning_rate=5e-2, min_lr=5e-3,
                         warmup_steps=0, weight_decay=0.0, eval_interval=10, eval_steps=1,
                         log_interval=10)

    def stop_when_good(trainer):
        if trainer.last_val_loss < 0.05:
            trainer.stop()

    trainer = Trainer(_Regression(), config, _regression_batch,
                      loss_fn=lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
                      callbacks={"on_eval_end": [stop_when_good]})
    trainer.train()
    assert trainer.step < 500 and trainer.last_val_loss < 0.05
    assert trainer.history["eval_step"][-1] == trainer.step


def test_bad_losses_and_batches_are_named():
    config = TrainConfig(max_steps=2, batch_size=16)
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        Trainer(_Regression(), config, _regression_batch, loss_fn=3)
    trainer = Trainer(_Regression(), config, _regression_batch,
                      loss_fn=lambda m, b: m(b[0]) - b[1])
    with pytest.raises(ValueError, match=r"loss_fn must return a scalar tensor, got \(16,\)"):
        trainer.train()
    with pytest.raises(TypeError, match="get_batch must return a tensor, or a tuple"):
        Trainer(_Regression(), config, lambda split, g: "text").train()
