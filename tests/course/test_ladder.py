"""minitx.course.ladder: each rung is the model its name says; the Trainer trains them all."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import torch

from minitx.course.ladder import (
    RUNGS,
    TABLE_LR,
    LadderModel,
    Rung,
    counted_bigram,
    ladder_recipe,
    train_rung,
)
from minitx.data.batches import BlockBatches
from minitx.train.presets import get_preset
from minitx.train.trainer import TrainConfig, Trainer

V, T = 11, 8


def model_of(name: str, **kw) -> LadderModel:
    torch.manual_seed(0)
    (rung,) = [r for r in RUNGS if r.name == name]
    return LadderModel(rung, V, T, n_embd=16, **kw).eval()


def test_the_rungs_add_one_piece_each():
    names = [r.name for r in RUNGS]
    assert names[0] == "bigram" and len(names) == len(set(names)) == 6
    pieces = [(r.n_head > 0, r.n_head > 1, r.feed_forward, r.residual_norm, r.positions)
              for r in RUNGS]
    assert pieces[0] == (False,) * 5 and pieces[-1] == (True,) * 5
    for before, after in itertools.pairwise(pieces):
        assert sum(after) - sum(before) == 1 and all(a >= b for a, b in zip(after, before,
                                                                              strict=True))


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_every_rung_maps_ids_to_logits_and_a_loss(rung):
    model = LadderModel(rung, V, T, n_embd=16)
    idx = torch.randint(0, V, (3, T))
    logits, loss = model(idx, idx)
    assert logits.shape == (3, T, V) and loss.ndim == 0 and torch.isfinite(loss)
    assert model(idx)[1] is None


def test_bigram_reads_only_the_current_token():
    model = model_of("bigram")
    a, b = torch.tensor([[1, 2, 3, 4]]), torch.tensor([[7, 9, 0, 4]])
    torch.testing.assert_close(model(a)[0][0, -1], model(b)[0][0, -1])


def test_without_positions_the_past_is_a_bag_with_positions_it_is_a_sequence():
    """One layer of causal attention without position embeddings sees the previous tokens
    as a set: permuting them leaves the last prediction unchanged. Positions break that
    symmetry. (With two layers the earlier positions' outputs depend on their own
    prefixes, so the causal mask itself leaks some order.)"""
    x = torch.tensor([[1, 2, 3, 4, 5, 6]])
    shuffled = torch.tensor([[4, 2, 5, 1, 3, 6]])  # the same five tokens before the last
    blind = model_of("+ residual + LayerNorm", n_layer=1)
    torch.testing.assert_close(blind(x)[0][0, -1], blind(shuffled)[0][0, -1])
    seeing = model_of("+ positions", n_layer=1)
    assert not torch.allclose(seeing(x)[0][0, -1], seeing(shuffled)[0][0, -1])
    # ...and causality: no rung looks at a later token.
    for rung in RUNGS:
        model = LadderModel(rung, V, T, n_embd=16).eval()
        changed = torch.cat([x[:, :3], torch.tensor([[0, 0, 0]])], dim=1)
        torch.testing.assert_close(model(x)[0][0, :3], model(changed)[0][0, :3])


def test_the_trainer_trains_a_rung_and_it_samples():
    torch.manual_seed(0)
    data = torch.arange(400) % V  # a cycle: easy to learn
    batches = BlockBatches(data[:300], data[300:], T, 8)
    model = LadderModel(RUNGS[-1], V, T, n_embd=16)
    config = TrainConfig(max_steps=60, batch_size=8, learning_rate=1e-2, min_lr=1e-3,
                         warmup_steps=5, eval_interval=60, eval_steps=2, log_interval=10)
    trainer = Trainer(model, config, batches)
    trainer.train()
    assert trainer.history["val_loss"][-1] < 0.5 * trainer.history["val_loss"][0]
    out = model.generate(torch.tensor([[0]]), 5, torch.Generator().manual_seed(0))
    assert out.shape == (1, 6) and model.training


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="rung must be a Rung"):
        LadderModel("bigram", V, T)
    with pytest.raises(ValueError, match="not divisible by n_head=4"):
        LadderModel(Rung("x", n_head=4), V, T, n_embd=10)
    with pytest.raises(ValueError, match="longer than block_size=8"):
        model_of("bigram")(torch.zeros(1, 9, dtype=torch.long))


def test_ladder_recipe_is_the_cpu_preset_at_a_small_size():
    recipe, cpu = ladder_recipe(), get_preset("cpu")
    assert recipe.model == {**cpu.model, "n_layer": 2, "n_embd": 64, "block_size": 32}
    changed = {"max_steps": 800, "batch_size": 16, "warmup_steps": 20, "eval_interval": 100,
               "eval_steps": 10, "log_interval": 10}
    assert recipe.train == replace(cpu.train, **changed)  # optimisers and schedule: cpu's


def test_every_rung_learns_with_the_ladder_recipe():
    """The recipe must suit every rung, the bigram table (AdamW alone, at ``TABLE_LR``)
    included: a rung that barely moves from chance would make the ladder's comparison
    meaningless. Every rung gets a short slice of the recipe."""
    text = "to be, or not to be: that is the question. " * 60
    data = torch.tensor([ord(c) - 32 for c in text])  # ids below 96
    recipe = ladder_recipe()
    batches = BlockBatches(data[:2200], data[2200:], recipe.model["block_size"], 16)
    short = replace(recipe.train, max_steps=120, warmup_steps=10, eval_interval=120)
    for rung in RUNGS:
        torch.manual_seed(0)
        model = LadderModel(rung, 96, recipe.model["block_size"], n_embd=64, n_layer=2)
        config = short if rung.n_head else replace(short, learning_rate=TABLE_LR)
        trainer = Trainer(model, config, batches, progress=False)
        trainer.train()
        start, end = trainer.history["val_loss"][0], trainer.history["val_loss"][-1]
        assert end < 0.5 * start, (rung.name, start, end)


def test_ladder_recipe_takes_a_length_a_seed_and_a_rate():
    short = ladder_recipe(max_steps=300, seed=5)
    assert short.train == replace(ladder_recipe().train, max_steps=300, seed=5)
    assert ladder_recipe(learning_rate=0.3).train == replace(ladder_recipe().train,
                                                             learning_rate=0.3)
    assert ladder_recipe(seed=None).train.seed == get_preset("cpu").train.seed


def test_counted_bigram_is_the_cross_entropy_of_add_one_counts():
    """Its loss on a text is the mean of -log P(b | a) from add-one counts, computed here by
    a loop; a random table does worse."""
    ids = torch.tensor([0, 1, 2, 1, 0, 1, 2, 2, 1, 0, 0, 1])
    model = counted_bigram(ids, 3, 11)
    counts = [[1.0] * 3 for _ in range(3)]
    for a, b in zip(ids[:-1].tolist(), ids[1:].tolist(), strict=True):
        counts[a][b] += 1
    want = sum(-torch.tensor(counts[a][b] / sum(counts[a])).log() for a, b in
               zip(ids[:-1].tolist(), ids[1:].tolist(), strict=True)) / (len(ids) - 1)  # fmt: skip
    _, loss = model(ids[None, :-1], ids[None, 1:])
    torch.testing.assert_close(loss, want.float())
    torch.manual_seed(0)
    other = LadderModel(RUNGS[0], 3, 11)
    assert other(ids[None, :-1], ids[None, 1:])[1] > loss


def test_train_rung_trains_with_the_recipe_and_its_seed():
    """The same seed gives the same run; another seed other batches and weights; the
    trainer's batches score another model on the same validation windows."""
    data = torch.tensor([ord(c) - 32 for c in "to be, or not to be: that is the question. " * 40])
    train, val = data[:1400], data[1400:]
    runs = [train_rung(RUNGS[0], train, val, 96, max_steps=30, seed=s) for s in (None, None, 3)]
    assert runs[0].last_val_loss == runs[1].last_val_loss != runs[2].last_val_loss
    assert runs[0].history["eval_step"][-1] == 30
    assert runs[0].config == ladder_recipe(max_steps=30, learning_rate=TABLE_LR).train
    slow = train_rung(RUNGS[0], train, val, 96, max_steps=30, table_lr=6e-3)
    assert slow.config == ladder_recipe(max_steps=30).train  # the recipe's own rate
    head = train_rung(RUNGS[1], train, val, 96, max_steps=2)
    assert head.config == ladder_recipe(max_steps=2).train  # attention rungs: the recipe's
    counted = Trainer(counted_bigram(train, 96, 32), runs[0].config, runs[0].get_batch,
                      runtime=runs[0].runtime, progress=False)
    assert counted.evaluate()["val"] < slow.last_val_loss  # same windows, another model
    assert runs[0].last_val_loss < slow.last_val_loss  # TABLE_LR learns faster
    with pytest.raises(TypeError, match="rung must be a Rung"):
        train_rung("bigram", train, val, 96)
