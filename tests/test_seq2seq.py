"""The encoder-decoder: shapes, masks, attention weights, decoding and a short training run."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from minitx.attention import AdditiveAttention, DotProductAttention
from minitx.seq2seq import Seq2Seq, accuracy, train_seq2seq, translate
from minitx.tasks import dates as D


def _model(attention="additive", **kw) -> Seq2Seq:
    torch.manual_seed(0)
    return Seq2Seq(
        len(D.SOURCE_VOCAB), len(D.TARGET_VOCAB), emb_size=8, hidden_size=16,
        attention=attention, bos_id=D.BOS_ID, **kw,
    )  # fmt: skip


@pytest.fixture
def batch() -> D.DateBatch:
    exs = D.generate(6, seed=0, filler=(0, 5))
    b = D.make_batch(exs)
    assert len(set(b.src_lengths.tolist())) > 1  # the fixture really has padding
    return b


@pytest.mark.parametrize("kind", [None, "additive", "dot"])
def test_forward_shapes(batch, kind):
    model = _model(kind)
    B, T_in = batch.src.shape
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    assert logits.shape == (B, D.TARGET_LENGTH, len(D.TARGET_VOCAB))
    if kind is None:
        assert weights is None
    else:
        assert weights.shape == (B, D.TARGET_LENGTH, T_in)
    ids, w = model.greedy_decode(batch.src, batch.src_lengths, max_len=7)
    assert ids.shape == (B, 7) and ids.dtype == torch.long
    assert (w is None) if kind is None else w.shape == (B, 7, T_in)


def test_attention_module_types():
    assert _model(None).attention is None
    assert isinstance(_model("additive").attention, AdditiveAttention)
    assert isinstance(_model("dot").attention, DotProductAttention)
    assert _model("additive", attn_size=5).attention.v.in_features == 5


@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_weights_sum_to_one_on_real_positions_and_zero_on_padding(batch, kind):
    model = _model(kind)
    _, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    _, greedy_w = model.greedy_decode(batch.src, batch.src_lengths, max_len=D.TARGET_LENGTH)
    T_in = batch.src.size(1)
    real = torch.arange(T_in)[None, :] < batch.src_lengths[:, None]  # (B, T_in)
    for w in (weights, greedy_w):
        assert (w >= 0).all()
        sums = (w * real[:, None, :]).sum(-1)
        torch.testing.assert_close(sums, torch.ones_like(sums))
        assert (w.masked_select(~real[:, None, :].expand_as(w)) == 0).all()


def test_encoder_states_ignore_padding(batch):
    """Right padding must not change the states at real positions or the last state."""
    model = _model("additive")
    states, last, mask = model.encode(batch.src, batch.src_lengths)
    for b in range(batch.src.size(0)):
        n = int(batch.src_lengths[b])
        alone, alone_last, alone_mask = model.encode(batch.src[b : b + 1, :n], batch.src_lengths[b : b + 1])
        torch.testing.assert_close(states[b, :n], alone[0])
        torch.testing.assert_close(last[b], alone_last[0])
        assert mask[b].sum() == n and alone_mask.all()


@pytest.mark.parametrize("kind", [None, "additive"])
def test_outputs_do_not_depend_on_padding(batch, kind):
    model = _model(kind)
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    extra = torch.cat([batch.src, torch.zeros(batch.src.size(0), 4, dtype=torch.long)], dim=1)
    logits2, weights2 = model(extra, batch.src_lengths, batch.tgt_in)
    torch.testing.assert_close(logits, logits2)
    if kind is not None:
        torch.testing.assert_close(weights, weights2[..., : batch.src.size(1)])
        assert (weights2[..., batch.src.size(1) :] == 0).all()


def test_weights_match_attention_module(batch):
    """The model's weights are exactly AdditiveAttention's on the decoder state and encoder states."""
    model = _model("additive")
    states, s0, mask = model.encode(batch.src, batch.src_lengths)
    _, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    _, expected = model.attention(s0, states, mask=mask)
    torch.testing.assert_close(weights[:, 0], expected)


def test_greedy_equals_teacher_forcing_on_its_own_output(batch):
    model = _model("additive")
    ids, w = model.greedy_decode(batch.src, batch.src_lengths, max_len=D.TARGET_LENGTH)
    bos = torch.full((ids.size(0), 1), D.BOS_ID)
    logits, w_tf = model(batch.src, batch.src_lengths, torch.cat([bos, ids[:, :-1]], 1))
    assert torch.equal(logits.argmax(-1), ids)
    torch.testing.assert_close(w_tf, w)


def test_gradients_flow_through_attention(batch):
    model = _model("additive")
    logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
    F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten()).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_translate_returns_alignment_per_example():
    model = _model("additive")
    sources = ["3/3/98", "tue 3 march 1998 see you then"]
    out = translate(model, sources)
    assert len(out) == 2
    for (text, w), src in zip(out, sources, strict=True):
        assert isinstance(text, str) and len(text) <= D.TARGET_LENGTH
        assert w.shape == (D.TARGET_LENGTH, len(src))
        torch.testing.assert_close(w.sum(-1), torch.ones(D.TARGET_LENGTH))
    assert translate(_model(None), sources)[0][1] is None


def test_bad_inputs(batch):
    with pytest.raises(ValueError, match="attention must be one of"):
        _model("multiplicative")
    with pytest.raises(ValueError, match="hidden_size"):
        Seq2Seq(10, 10, hidden_size=0)
    model = _model("additive")
    with pytest.raises(ValueError, match="int64 ids"):
        model.encode(batch.src.float(), batch.src_lengths)
    with pytest.raises(ValueError, match="src_lengths must have shape"):
        model.encode(batch.src, batch.src_lengths[:2])
    with pytest.raises(ValueError, match="src_lengths must lie"):
        model.encode(batch.src, torch.zeros_like(batch.src_lengths))
    with pytest.raises(ValueError, match="src_lengths must lie"):
        model.encode(batch.src, batch.src_lengths + 100)
    with pytest.raises(ValueError, match="tgt_in must be"):
        model(batch.src, batch.src_lengths, batch.tgt_in[:2])
    with pytest.raises(ValueError, match="max_len"):
        model.greedy_decode(batch.src, batch.src_lengths, max_len=0)
    with pytest.raises(TypeError, match="list of strings"):
        translate(model, "3/3/98")
    with pytest.raises(ValueError, match="steps"):
        train_seq2seq(model, D.generate(4), steps=0)
    with pytest.raises(ValueError, match="at least one"):
        accuracy(model, [])


def test_training_learns_the_task():
    """A short run on one format: loss falls and most dates come out exactly right."""
    train = D.generate(2000, seed=1, formats=["dd.mm.yyyy"])
    val = D.generate(200, seed=2, formats=["dd.mm.yyyy"])
    model = _model("additive")
    before = accuracy(model, val)
    hist = train_seq2seq(model, train, steps=150, batch_size=32, lr=1e-2, val=val, eval_every=50)
    assert hist["step"] == [50, 100, 150]
    assert len(hist["loss"]) == len(hist["val_acc"]) == len(hist["seconds"]) == 3
    assert hist["loss"][-1] < 0.5 * hist["loss"][0]
    assert before < 0.05
    assert hist["val_acc"][-1] > 0.8
    assert not model.training
