"""The two-relation toy task (previous token + matching delimiter) and its attention-only model."""

from __future__ import annotations

import copy
import dataclasses
import itertools

import pytest
import torch

from minitx.course.relations import (
    RelationNet,
    ablate_heads,
    head_contributions,
    relation_accuracy,
    relation_scores,
    train_from_seed,
    train_relations,
)
from minitx.data import IGNORE_INDEX
from minitx.data.relations import (
    BOS,
    LETTERS,
    PAIRS,
    RelationBatch,
    RelationTask,
    relation_loss,
)
from minitx.train.parallel import run_parallel
from minitx.train.trainer import TrainConfig, Trainer

TASK = RelationTask()
EXAMPLE = "^ab(c[d]e)fg<a>b"  # 16 tokens: ( 3 <-> ) 9, [ 5 <-> ] 7, < 12 <-> > 14


def test_vocabulary_round_trip():
    assert TASK.itos[0] == BOS
    assert TASK.vocab_size == 1 + 8 + 2 * len(PAIRS)
    assert len(set(TASK.itos)) == TASK.vocab_size
    ids = TASK.encode(EXAMPLE)
    assert ids.shape == (16,) and ids.dtype == torch.long
    assert TASK.decode(ids) == EXAMPLE
    assert TASK.encode("^ a b").tolist() == TASK.encode("^ab").tolist()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unknown tokens"):
        TASK.encode("^az")
    with pytest.raises(TypeError, match="str"):
        TASK.encode(3)
    with pytest.raises(ValueError, match="max_pairs"):
        RelationTask(max_pairs=5)
    with pytest.raises(ValueError, match="seq_len"):
        RelationTask(seq_len=6, max_pairs=3)
    with pytest.raises(TypeError, match="seq_len"):
        RelationTask(seq_len=16.0)
    with pytest.raises(ValueError, match="positive"):
        TASK.sample(0)
    with pytest.raises(ValueError, match="long tensor"):
        TASK.targets(torch.zeros(2, 16))


def test_targets_of_a_hand_written_sequence():
    x = TASK.encode(EXAMPLE)[None]
    prev, partner = TASK.targets(x)
    assert prev[0, 0] == IGNORE_INDEX and prev[0, 1:].tolist() == x[0, :-1].tolist()
    expected = [IGNORE_INDEX] * 16
    for a, b in ((3, 9), (5, 7), (12, 14)):
        expected[a], expected[b] = b, a
    assert partner[0].tolist() == expected


@pytest.mark.parametrize("text", ["^a(b]cdefghabcde", "^a(bcdefghabcdea", "^a)bcdefghabcdea",
                                  "^a([b)]defghabcd"])
def test_unbalanced_sequences_are_refused(text):
    with pytest.raises(ValueError, match=r"partner|never closed"):
        TASK.targets(TASK.encode(text)[None])


def test_sample_is_deterministic_and_matches_the_parser():
    a, b, c = TASK.sample(2000, seed=7), TASK.sample(2000, seed=7), TASK.sample(2000, seed=8)
    assert isinstance(a, RelationBatch)
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a.x, c.x)
    assert a.x.shape == a.prev.shape == a.partner.shape == (2000, 16)
    assert (a.x[:, 0] == TASK.stoi[BOS]).all()
    assert (a.x[:, 1:] != TASK.stoi[BOS]).all()
    # The vectorised generator agrees with the stack-based parser everywhere.
    prev, partner = TASK.targets(a.x)
    assert torch.equal(prev, a.prev) and torch.equal(partner, a.partner)


def test_sample_covers_the_structures():
    batch = TASK.sample(3000, seed=1)
    stoi = TASK.stoi
    openers = torch.tensor([stoi[p[0]] for p in PAIRS])
    is_open = torch.isin(batch.x, openers)
    n_pairs = is_open.sum(dim=1)
    assert set(n_pairs.tolist()) == {1, 2, 3}
    for k in (1, 2, 3):  # k uniform: about a third each
        assert abs((n_pairs == k).float().mean().item() - 1 / 3) < 0.05
    # At most one pair of each kind, so the partner is the other delimiter of its kind.
    for p in PAIRS:
        assert ((batch.x == stoi[p[0]]).sum(1) <= 1).all()
    # Partner of partner is self; the partner lies right of an opener, left of a closer.
    b, t = (batch.partner != IGNORE_INDEX).nonzero(as_tuple=True)
    s = batch.partner[b, t]
    assert torch.equal(batch.partner[b, s], t)
    assert ((s > t) == is_open[b, t]).all()
    # Both nestings of two pairs occur: ( [ ] ) and ( ) [ ].
    openers_str = "".join(p[0] for p in PAIRS)
    delims = ["".join(c for c in TASK.decode(r) if c not in LETTERS + BOS)
              for r in batch.x[n_pairs == 2]]
    assert all(len(d) == 4 and d[0] in openers_str for d in delims)
    assert any(d[1] in openers_str for d in delims)  # nested
    assert any(d[1] not in openers_str for d in delims)  # side by side


def test_batches_stream_is_deterministic():
    s1, s2 = TASK.batches(8, seed=3), TASK.batches(8, seed=3)
    for _ in range(3):
        u, v = next(s1), next(s2)
        assert torch.equal(u.x, v.x)
    assert not torch.equal(next(TASK.batches(8, seed=3)).x, next(TASK.batches(8, seed=4)).x)


def test_model_shapes_and_weights():
    model = RelationNet.for_task(TASK, d_model=16, n_heads=4, n_layers=3)
    batch = TASK.sample(5, seed=0)
    out = model(batch.x, need_weights=True)
    assert out.prev_logits.shape == (5, 16, TASK.vocab_size)
    assert out.partner_logits.shape == (5, 16, 16)
    assert out.weights.shape == (3, 5, 4, 16, 16)  # (L, B, H, T, T), as GPT's
    assert torch.allclose(out.weights.sum(-1), torch.ones(3, 5, 4, 16), atol=1e-6)
    assert (out.weights >= 0).all()
    assert model(batch.x).weights is None
    maps = model.attention_maps(batch.x[0])
    assert maps.shape == (3, 4, 16, 16)
    assert torch.allclose(maps, out.weights[:, 0], atol=1e-6)
    assert model.attention_maps(batch.x).shape == (3, 5, 4, 16, 16)
    loss = relation_loss(out, batch)
    assert loss.dim() == 0 and torch.isfinite(loss)
    with pytest.raises(ValueError, match="length 16"):
        model(batch.x[:, :10])
    with pytest.raises(ValueError, match="long tensor"):
        model(batch.x.float())


ADAM = TrainConfig(max_steps=100, batch_size=64, learning_rate=1e-2, min_lr=1e-2,
                   warmup_steps=0, weight_decay=0.0, betas=(0.9, 0.999), grad_clip=0.0,
                   eval_interval=100, eval_steps=1, log_interval=1,
                   seed=0)  # plain Adam at a constant rate


def test_the_trainer_reaches_high_accuracy_quickly():
    torch.manual_seed(0)
    model = RelationNet.for_task(TASK)  # 2 layers x 2 heads, as in notebook 06
    losses = Trainer(model, ADAM, TASK.get_batch, loss_fn=TASK.loss).train()["train_loss"]
    assert len(losses) == 100 and losses[-1] < 0.2 * losses[0]
    acc = relation_accuracy(model, TASK.sample(500, seed=99))
    assert acc["previous"] > 0.95 and acc["partner"] > 0.95, acc


def test_the_trainer_is_plain_adam_on_the_task_stream():
    """With no decay, no warmup and no clipping, the Trainer takes exactly the steps of a
    hand-written Adam loop over ``task.batches``: the task supplies data and a loss only."""
    torch.manual_seed(1)
    ours = RelationNet.for_task(TASK, d_model=16, n_layers=1)
    reference = copy.deepcopy(ours)
    config = dataclasses.replace(ADAM, max_steps=5, seed=2)
    history = Trainer(ours, config, TASK.get_batch, loss_fn=TASK.loss).train()
    opt = torch.optim.Adam(reference.parameters(), lr=1e-2, fused=True)  # the CPU runtime's kernel
    losses = []
    for batch in itertools.islice(TASK.batches(64, seed=2), 5):
        loss = relation_loss(reference(batch.x), batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert history["train_loss"] == pytest.approx(losses, rel=1e-6)
    for a, b in zip(ours.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_train_relations_is_notebook_06s_recipe():
    """The same initialisation and seed give the same model as a Trainer run with the recipe
    written out; a frozen parameter stays as it was; bad input is refused."""
    torch.manual_seed(4)
    ours = RelationNet.for_task(TASK, d_model=16, n_layers=1)
    reference = copy.deepcopy(ours)
    losses = train_relations(ours, TASK, seed=3, steps=5)
    config = dataclasses.replace(ADAM, max_steps=5, eval_interval=5, seed=3)
    history = Trainer(reference, config, TASK.get_batch, loss_fn=TASK.loss).train()
    assert len(losses) == 5 and losses == pytest.approx(history["train_loss"], rel=1e-6)
    for a, b in zip(ours.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    frozen = RelationNet.for_task(TASK, d_model=16, n_layers=1)
    frozen.pos_emb.weight.requires_grad_(False)
    before = frozen.pos_emb.weight.clone()
    train_relations(frozen, TASK, seed=0, steps=2)
    assert torch.equal(frozen.pos_emb.weight, before)
    with pytest.raises(TypeError, match="RelationNet"):
        train_relations(torch.nn.Linear(2, 2), TASK)
    with pytest.raises(ValueError, match="steps"):
        train_relations(ours, TASK, steps=0)
    with pytest.raises(ValueError, match="seed"):
        train_relations(ours, TASK, seed=-1)


def test_train_from_seed_is_a_seeded_model_trained_by_the_recipe():
    """The same model as building it after torch.manual_seed and train_relations, here and
    in two worker processes."""
    torch.manual_seed(7)
    by_hand = RelationNet.for_task(TASK, n_layers=1, n_heads=1)
    losses = train_relations(by_hand, TASK, seed=7, steps=4)
    model, curve = train_from_seed(TASK, 7, 1, 1, 4)
    assert curve == losses and model.n_layers == 1 and model.n_heads == 1
    for a, b in zip(model.parameters(), by_hand.parameters(), strict=True):
        assert torch.equal(a, b)
    jobs = [(TASK, seed, 1, 1, 4) for seed in (7, 8)]
    (far, far_curve), _ = run_parallel(train_from_seed, jobs, workers=2)
    assert far_curve == losses
    assert all(torch.equal(a, b) for a, b in zip(far.parameters(), by_hand.parameters(),
                                                 strict=True))


def test_relation_scores_of_known_weights():
    batch = TASK.sample(4, seed=5)
    B, T = batch.x.shape
    on_prev = torch.zeros(B, T, T)
    on_prev[:, 0, 0] = 1.0
    on_prev[:, torch.arange(1, T), torch.arange(T - 1)] = 1.0
    on_partner = torch.full((B, T, T), 1.0 / T)
    b, t = (batch.partner != IGNORE_INDEX).nonzero(as_tuple=True)
    on_partner[b, t] = 0.0
    on_partner[b, t, batch.partner[b, t]] = 1.0
    weights = torch.stack([on_prev, on_partner], dim=1)[None]  # (L=1, B, 2, T, T)
    scores = relation_scores(weights, batch)
    assert scores.previous.shape == scores.partner.shape == (1, 2)
    assert scores.previous[0, 0] == 1.0 and scores.partner[0, 1] == 1.0
    assert scores.partner[0, 0] < 0.2 and scores.previous[0, 1] < 0.2
    with pytest.raises(ValueError, match="weights"):
        relation_scores(weights[0], batch)


def test_ablation_keeps_weights_and_removes_the_head():
    torch.manual_seed(0)
    model = RelationNet.for_task(TASK, d_model=16, n_heads=2, n_layers=2)
    x = TASK.sample(6, seed=0).x
    before = model.attention_maps(x)
    ablated = ablate_heads(model, [(1, 0)])
    assert torch.equal(ablated.attention_maps(x), before)  # same weights everywhere...
    cols = slice(0, model.layers[1].d_head)
    assert (ablated.layers[1].out_proj.weight[:, cols] == 0).all()
    assert not (model.layers[1].out_proj.weight[:, cols] == 0).all()  # original untouched
    assert not torch.allclose(ablated(x).prev_logits, model(x).prev_logits)  # ...other output
    # Ablating a layer-0 head changes what layer 1 sees, so layer 1's weights move.
    early = ablate_heads(model, [(0, 1)]).attention_maps(x)
    assert torch.equal(early[0], before[0]) and not torch.equal(early[1], before[1])
    with pytest.raises(ValueError, match="no head"):
        ablate_heads(model, [(2, 0)])


def test_head_contributions_add_up_to_the_model():
    torch.manual_seed(0)
    model = RelationNet.for_task(TASK, d_model=16, n_heads=4, n_layers=2).double()
    x = TASK.sample(3, seed=0).x
    model.train()
    contrib = head_contributions(model, x)
    assert contrib.shape == (3, 2, 4, 16, 16)
    assert model.training and not contrib.requires_grad  # eval inside, mode restored
    model.eval()
    h = model.tok_emb(x) + model.pos_emb(torch.arange(16))
    for layer, attn in enumerate(model.layers):
        a, _ = attn(h)
        assert torch.allclose(contrib[:, layer].sum(1) + attn.out_proj.bias, a, atol=1e-12)
        h = h + a
    assert torch.allclose(model.prev_head(h), model(x).prev_logits, atol=1e-12)
    # A head switched off contributes nothing.
    off = head_contributions(ablate_heads(model, [(1, 2)]), x)
    assert (off[:, 1, 2] == 0).all() and torch.allclose(off[:, 0], contrib[:, 0])
