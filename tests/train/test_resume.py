"""Resuming: a run interrupted at step k and resumed from its checkpoint reaches exactly
the state an uninterrupted run reaches at step n."""

from __future__ import annotations

import os
import signal

import pytest
import torch

from minitx.data.batches import BlockBatches
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.checkpoint import (
    load_checkpoint,
    make_checkpoint,
    restore_trainer,
    save_checkpoint,
)
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer

TEXT = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n"
) * 10
N_STEPS, STOP_AT = 12, 5


def make_trainer(init_seed: int = 0) -> tuple[Trainer, GPTConfig, CharTokenizer]:
    tok = CharTokenizer.from_text(TEXT)
    data = torch.tensor(tok.encode(TEXT), dtype=torch.long)
    # dropout > 0: the run draws from torch's global RNG, which must be restored too
    cfg = GPTConfig(tok.vocab_size, block_size=16, n_layer=2, n_head=2, n_embd=16, dropout=0.1)
    torch.manual_seed(init_seed)
    model = GPT(cfg)
    tcfg = TrainConfig(
        max_steps=N_STEPS,
        batch_size=4,
        learning_rate=3e-3,
        min_lr=3e-4,
        warmup_steps=3,
        eval_interval=4,
        eval_steps=2,
        log_interval=3,  # STOP_AT is inside a log window: the partial window is saved too
        seed=7,
    )
    batches = BlockBatches(data[:900], data[900:], cfg.block_size, tcfg.batch_size)
    return Trainer(model, tcfg, batches, runtime=plan_runtime("cpu"), progress=False), cfg, tok


def interrupt_at(step: int):
    """An on_step_end callback that presses Ctrl-C (sends SIGINT) once ``step`` is done."""

    def callback(trainer: Trainer) -> None:
        if trainer.step == step:
            os.kill(os.getpid(), signal.SIGINT)

    return callback


@pytest.fixture(scope="module")
def uninterrupted() -> Trainer:
    trainer, _, _ = make_trainer()
    trainer.train()
    return trainer


def interrupted_then_resumed(tmp_path, reseed_before_resume: int | None = None) -> Trainer:
    trainer, cfg, tok = make_trainer()
    path = tmp_path / "ckpt.pt"
    trainer.add_callback("on_step_end", interrupt_at(STOP_AT))
    trainer.add_callback(
        "on_interrupt", lambda t: save_checkpoint(make_checkpoint(t.model, cfg, tok, t), path)
    )
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert trainer.step == STOP_AT
    # A new process would start from scratch: other initial weights, a fresh trainer.
    torch.manual_seed(12345)
    resumed, _, _ = make_trainer(init_seed=99)
    restore_trainer(resumed, load_checkpoint(path))
    assert resumed.step == STOP_AT
    if reseed_before_resume is not None:
        torch.manual_seed(reseed_before_resume)
    resumed.train()
    return resumed


def test_interrupt_stops_at_a_step_boundary_and_saves():
    trainer, _, _ = make_trainer()
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in a job started in the background
    saved_steps = []
    trainer.add_callback("on_step_end", interrupt_at(3))
    trainer.add_callback("on_interrupt", lambda t: saved_steps.append(t.step))
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert saved_steps == [3]
    assert trainer.step == 3
    assert signal.getsignal(signal.SIGINT) is before  # the handler is restored


def test_resumed_run_matches_uninterrupted_run(tmp_path, uninterrupted):
    resumed = interrupted_then_resumed(tmp_path)
    assert resumed.step == uninterrupted.step == N_STEPS
    for (name, a), b in zip(
        uninterrupted.model.named_parameters(), resumed.model.parameters(), strict=True
    ):
        assert torch.allclose(a, b, rtol=0, atol=1e-6), name
    h1, h2 = uninterrupted.history, resumed.history
    assert h1["step"] == h2["step"] and h1["eval_step"] == h2["eval_step"]
    assert h1["train_loss"] == pytest.approx(h2["train_loss"], abs=1e-5)
    assert h1["val_loss"] == pytest.approx(h2["val_loss"], abs=1e-5)
    assert uninterrupted.evaluate()["val"] == pytest.approx(resumed.evaluate()["val"], abs=1e-5)
    assert torch.equal(uninterrupted.generator.get_state(), resumed.generator.get_state())
    s1, s2 = uninterrupted.optimizer.state_dict(), resumed.optimizer.state_dict()
    for k in s1["state"]:
        assert torch.allclose(s1["state"][k]["exp_avg_sq"], s2["state"][k]["exp_avg_sq"], atol=1e-9)


def test_the_comparison_can_fail_without_the_rng_state(tmp_path, uninterrupted):
    # Control: dropout draws from torch's global RNG; disturb it after restoring and the
    # resumed run no longer matches. So the test above really checks the RNG states.
    resumed = interrupted_then_resumed(tmp_path, reseed_before_resume=2024)
    diffs = [
        (a - b).abs().max().item()
        for a, b in zip(uninterrupted.model.parameters(), resumed.model.parameters(), strict=True)
    ]
    assert max(diffs) > 1e-4


@pytest.mark.needs_shakespeare
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stop_in_minitx_train_then_resume_matches(tmp_path, monkeypatch, signum):
    """End to end through the command: Ctrl-C or SIGTERM (a closed terminal, ``timeout``, a
    JupyterHub culler) at step 3 of 8 saves step 3, ``--resume`` continues, same weights."""
    from minitx import cli

    before = signal.getsignal(signal.SIGTERM)
    common = ["train", "--preset", "tiny", "--max-steps", "8", "--no-progress"]
    assert cli.main([*common, "--out", str(tmp_path / "straight")]) == 0

    original = Trainer._train_step

    def step_then_signal(self):
        result = original(self)
        if self.step == 3:
            os.kill(os.getpid(), signum)
        return result

    monkeypatch.setattr(Trainer, "_train_step", step_then_signal)
    expected = cli.EXIT_TERMINATED if signum == signal.SIGTERM else cli.EXIT_INTERRUPTED
    assert cli.main([*common, "--out", str(tmp_path / "broken")]) == expected
    assert load_checkpoint(tmp_path / "broken" / "ckpt.pt")["trainer"]["step"] == 3
    assert signal.getsignal(signal.SIGTERM) is before  # put back after the command
    monkeypatch.setattr(Trainer, "_train_step", original)
    assert cli.main([*common, "--out", str(tmp_path / "broken"), "--resume"]) == 0

    a = load_checkpoint(tmp_path / "straight" / "ckpt.pt")
    b = load_checkpoint(tmp_path / "broken" / "ckpt.pt")
    assert a["trainer"]["step"] == b["trainer"]["step"] == 8
    for name, tensor in a["model"].items():
        assert torch.allclose(tensor, b["model"][name], rtol=0, atol=1e-6), name
    assert a["trainer"]["history"]["val_loss"] == pytest.approx(
        b["trainer"]["history"]["val_loss"], abs=1e-5
    )
