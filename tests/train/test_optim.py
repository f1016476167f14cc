"""minitx.train.optim: the WSD schedule, Muon for the hidden matrices plus AdamW for the rest,
and a Muon run that resumes exactly."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from minitx.data.batches import BlockBatches
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.checkpoint import (
    load_checkpoint,
    make_checkpoint,
    restore_trainer,
    save_checkpoint,
)
from minitx.train.optim import MuonWithAdamW, hidden_matrices, lr_at, make_optimizer
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer


def small_gpt(**kw) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16, **kw))


# ---------------------------------------------------------------- schedule
def test_wsd_holds_the_peak_then_decays_linearly():
    kw = dict(learning_rate=1.0, min_lr=0.0, warmup_steps=2, decay_steps=12, schedule="wsd",
              cooldown_steps=4)
    lrs = [lr_at(s, **kw) for s in range(14)]
    assert lrs[:2] == [0.5, 1.0]  # warmup
    assert lrs[2:8] == [1.0] * 6  # stable: steps 2..7
    assert lrs[8:12] == pytest.approx([1.0, 0.75, 0.5, 0.25])  # cooldown over the last 4
    assert lrs[12:] == [0.0, 0.0]
    # a cooldown longer than the run after warmup starts right after the warmup
    assert lr_at(2, **{**kw, "cooldown_steps": 100}) == 1.0
    assert lr_at(7, **{**kw, "cooldown_steps": 100}) == pytest.approx(0.5)


def test_config_schedule_and_bad_values():
    cfg = TrainConfig(max_steps=10, learning_rate=1.0, min_lr=0.0, warmup_steps=0,
                      schedule="wsd", cooldown_frac=0.5)
    assert [cfg.lr_at(s) for s in range(10)] == pytest.approx(
        [1, 1, 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2])
    with pytest.raises(ValueError, match=r"one of \('cosine', 'wsd'\), got 'step'"):
        TrainConfig(schedule="step")
    with pytest.raises(ValueError, match=r"one of \('adamw', 'muon'\), got 'sgd'"):
        TrainConfig(optimizer="sgd")
    with pytest.raises(ValueError, match=r"cooldown_frac=1\.5"):
        TrainConfig(cooldown_frac=1.5)
    with pytest.raises(ValueError, match="schedule must be one of"):
        lr_at(0, learning_rate=1.0, min_lr=0.0, warmup_steps=0, decay_steps=5, schedule="x")


# ---------------------------------------------------------------- Muon + AdamW
def test_hidden_matrices_are_the_block_linears_not_embeddings():
    model = small_gpt()
    names = {id(p): n for n, p in model.named_parameters()}
    got = sorted(names[id(p)] for p in hidden_matrices(model))
    per_block = ["attn.in_proj.weight", "attn.out_proj.weight", "ffn.fc1.weight",
                 "ffn.fc2.weight"]
    assert got == sorted(f"blocks.{i}.{n}" for i in range(2) for n in per_block)
    # untied, the head is a Linear of its own; it still stays with AdamW
    untied = small_gpt(tied_head=False)
    assert untied.lm_head.weight is not untied.tok_emb.weight
    assert len(hidden_matrices(untied)) == 8
    assert not any(p is untied.lm_head.weight for p in hidden_matrices(untied))


def test_muon_optimizer_covers_every_parameter_once():
    model = small_gpt()
    opt = make_optimizer(model, learning_rate=1e-3, weight_decay=0.1, betas=(0.9, 0.99),
                         optimizer="muon", muon_lr=0.05)
    assert isinstance(opt, MuonWithAdamW)
    muon = [p for g in opt.muon.param_groups for p in g["params"]]
    adamw = [p for g in opt.adamw.param_groups for p in g["params"]]
    assert len({id(p) for p in muon + adamw}) == len(muon + adamw)  # no parameter twice
    assert {id(p) for p in muon + adamw} == {id(p) for p in model.parameters()}
    assert all(p.dim() == 2 for p in muon)
    assert {g["peak_lr"] for g in opt.muon.param_groups} == {0.05}
    assert {g["peak_lr"] for g in opt.adamw.param_groups} == {1e-3}
    decayed = {id(p) for g in opt.adamw.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert decayed == {id(model.tok_emb.weight), id(model.pos_emb.weight)}
    with pytest.raises(ValueError, match="optimizer must be one of"):
        make_optimizer(model, learning_rate=1e-3, weight_decay=0.1, betas=(0.9, 0.99),
                       optimizer="lion")
    # nothing for Muon in a lookup table: it all trains with AdamW
    table = make_optimizer(nn.Embedding(3, 4), learning_rate=1e-3, weight_decay=0.0,
                           betas=(0.9, 0.99), optimizer="muon")
    assert isinstance(table, torch.optim.AdamW)
    assert [g["peak_lr"] for g in table.param_groups] == [1e-3, 1e-3]


def test_muon_step_is_an_orthogonalised_momentum_update():
    # One step from zero momentum: the update of a matrix is lr * scale * O, with O the
    # orthogonal polar factor of its gradient (Newton-Schulz gets singular values near 1).
    torch.manual_seed(1)
    layer = nn.Linear(8, 32, bias=False)
    grad = torch.randn(32, 8)
    before = layer.weight.detach().clone()
    layer.weight.grad = grad.clone()
    opt = make_optimizer(nn.Sequential(layer), learning_rate=1e-3, weight_decay=0.0,
                         betas=(0.9, 0.99), optimizer="muon", muon_lr=0.1)
    opt.step()
    update = (before - layer.weight.detach()) / 0.1  # (32, 8)
    singular = torch.linalg.svdvals(update)
    scale = (32 / 8) ** 0.5  # torch's Muon scales the rate by sqrt(max(1, rows / cols))
    assert singular.min() > 0.5 * scale and singular.max() < 1.3 * scale
    u, _, vh = torch.linalg.svd(grad, full_matrices=False)
    cosine = torch.nn.functional.cosine_similarity(update.flatten(), (u @ vh).flatten(), dim=0)
    assert cosine > 0.95


def test_trainer_sets_each_group_from_its_peak():
    model = small_gpt()
    data = torch.randint(0, 11, (400,))
    cfg = TrainConfig(max_steps=4, batch_size=2, learning_rate=1e-3, min_lr=0.0, warmup_steps=2,
                      optimizer="muon", muon_lr=0.02, eval_interval=4, eval_steps=1)
    trainer = Trainer(model, cfg, BlockBatches(data[:300], data[300:], 8, 2),
                      runtime=plan_runtime("cpu"), progress=False)
    trainer.train(max_steps=1)  # step 0 used factor lr_at(0) / lr = 0.5
    lrs = {g["peak_lr"]: g["lr"] for g in trainer.optimizer.param_groups}
    assert lrs == {0.02: pytest.approx(0.01), 1e-3: pytest.approx(5e-4)}


def make_muon_trainer(seed: int = 0) -> Trainer:
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16,
                          dropout=0.1, activation="relu2"))
    data = torch.randint(0, 11, (500,), generator=torch.Generator().manual_seed(1))
    cfg = TrainConfig(max_steps=10, batch_size=4, learning_rate=3e-3, min_lr=0.0,
                      warmup_steps=2, optimizer="muon", muon_lr=0.02, schedule="wsd",
                      cooldown_frac=0.5, eval_interval=5, eval_steps=2, log_interval=2)
    return Trainer(model, cfg, BlockBatches(data[:400], data[400:], 8, 4),
                   runtime=plan_runtime("cpu"), progress=False)


def test_muon_run_resumes_exactly(tmp_path):
    straight = make_muon_trainer()
    straight.train()
    first = make_muon_trainer()
    first.train(max_steps=4)
    tok = CharTokenizer.from_text("abcdefghijk")
    path = save_checkpoint(make_checkpoint(first.model, first.model.config, tok, trainer=first),
                           tmp_path / "muon.pt")
    second = make_muon_trainer(seed=99)  # other initial weights: all must come from the file
    restore_trainer(second, load_checkpoint(path))
    second.train()
    for (name, a), b in zip(straight.model.named_parameters(), second.model.parameters(),
                            strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=name)
    momentum = [s["momentum_buffer"] for s in second.optimizer.muon.state.values()]
    assert momentum and all(m.abs().sum() > 0 for m in momentum)
    with pytest.raises(ValueError, match="optimizer='adamw'"):
        second.optimizer.load_state_dict(torch.optim.AdamW(straight.model.parameters())
                                         .state_dict())
