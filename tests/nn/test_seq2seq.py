"""The encoder-decoder: shapes, masks, attention weights, decoding and a short training run."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.nn.functional as F

from minitx.course.date_translation import DateTask, train_seq2seq
from minitx.data import dates as D
from minitx.data.tokenizer import IGNORE_INDEX
from minitx.nn.attention import AdditiveAttention, DotProductAttention
from minitx.nn.seq2seq import Seq2Seq, exact_match, translate


@pytest.fixture(autouse=True)
def one_thread():
    """These matrices are tiny: one thread is faster, and a busy machine cannot stall it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _model(attention="additive", **kw) -> Seq2Seq:
    torch.manual_seed(0)
    return Seq2Seq.for_dates(attention=attention, **{"emb_size": 8, "hidden_size": 16, **kw})


@pytest.fixture(params=[True, False], ids=["bidirectional", "forward"])
def bidirectional(request) -> bool:
    return request.param


@pytest.fixture
def batch() -> D.DateBatch:
    exs = D.generate(6, seed=0, n_dates=(1, 2), filler=(0, 5))
    b = D.make_batch(exs)
    assert len(set(b.src_lengths.tolist())) > 1  # the fixture really has padding
    return b


@pytest.mark.parametrize("kind", [None, "additive", "dot"])
def test_forward_shapes(batch, kind, bidirectional):
    model = _model(kind, bidirectional=bidirectional)
    B, T_in = batch.src.shape
    T_out = batch.tgt_in.size(1)
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    assert logits.shape == (B, T_out, len(D.TARGET_VOCAB))
    if kind is None:
        assert weights is None
    else:
        assert weights.shape == (B, T_out, T_in)
    states, last, mask = model.encode(batch.src, batch.src_lengths)
    assert states.shape == (B, T_in, 16) and last.shape == (B, 16) and mask.shape == (B, T_in)
    ids, w = model.greedy_decode(batch.src, batch.src_lengths, max_len=7)
    assert ids.shape == (B, 7) and ids.dtype == torch.long  # untrained: no early stop
    assert (w is None) if kind is None else w.shape == (B, 7, T_in)


def test_attention_module_types():
    assert _model(None).attention is None
    assert isinstance(_model("additive").attention, AdditiveAttention)
    assert isinstance(_model("dot").attention, DotProductAttention)
    assert _model("additive", attn_size=5).attention.v.in_features == 5
    assert _model("additive").attention.v.in_features == 8  # default H / 2
    assert _model(None, bidirectional=True).encoder.hidden_size == 8
    assert _model(None, bidirectional=False).encoder.hidden_size == 16


@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_weights_sum_to_one_on_real_positions_and_zero_on_padding(batch, kind, bidirectional):
    model = _model(kind, bidirectional=bidirectional)
    _, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    _, greedy_w = model.greedy_decode(batch.src, batch.src_lengths, max_len=12)
    T_in = batch.src.size(1)
    real = torch.arange(T_in)[None, :] < batch.src_lengths[:, None]  # (B, T_in)
    for w in (weights, greedy_w):
        assert (w >= 0).all()
        sums = (w * real[:, None, :]).sum(-1)
        torch.testing.assert_close(sums, torch.ones_like(sums))
        assert (w.masked_select(~real[:, None, :].expand_as(w)) == 0).all()


def test_encoder_states_ignore_padding(batch, bidirectional):
    """Right padding must not change the states at real positions or the last state."""
    model = _model("additive", bidirectional=bidirectional)
    states, last, mask = model.encode(batch.src, batch.src_lengths)
    for b in range(batch.src.size(0)):
        n = int(batch.src_lengths[b])
        one = slice(b, b + 1)
        alone, alone_last, alone_mask = model.encode(batch.src[one, :n], batch.src_lengths[one])
        torch.testing.assert_close(states[b, :n], alone[0])
        torch.testing.assert_close(last[b], alone_last[0])
        assert mask[b].sum() == n and alone_mask.all()
        if bidirectional:
            assert (states[b, n:] == 0).all()  # packed: nothing computed on padding


def test_bidirectional_encoder_is_two_gru_runs():
    """States = [forward GRU over x ; backward GRU over reversed x, reversed back];
    the summary = [last forward state ; last backward state]."""
    model = _model(None, bidirectional=True)
    src, lengths = D.SOURCE_VOCAB.encode_batch(["tue 3 march 1998"])
    states, last, _ = model.encode(src, lengths)
    enc = model.encoder
    fwd, bwd = torch.nn.GRU(8, 8, batch_first=True), torch.nn.GRU(8, 8, batch_first=True)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(fwd, f"{name}_l0").copy_(getattr(enc, f"{name}_l0"))
            getattr(bwd, f"{name}_l0").copy_(getattr(enc, f"{name}_l0_reverse"))
    x = model.src_emb(src)
    y_f, _ = fwd(x)
    y_b, _ = bwd(x.flip(1))
    torch.testing.assert_close(states, torch.cat([y_f, y_b.flip(1)], dim=-1))
    torch.testing.assert_close(last, torch.cat([y_f[:, -1], y_b[:, -1]], dim=-1))


@pytest.mark.parametrize("kind", [None, "additive"])
def test_outputs_do_not_depend_on_padding(batch, kind, bidirectional):
    model = _model(kind, bidirectional=bidirectional)
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    extra = torch.cat([batch.src, torch.zeros(batch.src.size(0), 4, dtype=torch.long)], dim=1)
    logits2, weights2 = model(extra, batch.src_lengths, batch.tgt_in)
    torch.testing.assert_close(logits, logits2)
    if kind is not None:
        torch.testing.assert_close(weights, weights2[..., : batch.src.size(1)])
        assert (weights2[..., batch.src.size(1) :] == 0).all()


def test_weights_match_attention_module(batch):
    """The model's weights are AdditiveAttention's on the decoder state and encoder states."""
    model = _model("additive")
    states, s0, mask = model.encode(batch.src, batch.src_lengths)
    _, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    _, expected = model.attention(s0, states, mask=mask)
    torch.testing.assert_close(weights[:, 0], expected)


def test_greedy_equals_teacher_forcing_on_its_own_output(batch):
    model = _model("additive")
    ids, w = model.greedy_decode(batch.src, batch.src_lengths, max_len=12)
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


def test_date_task_loss_leaves_out_the_padded_targets(batch):
    """tgt_out is padded with IGNORE_INDEX: the loss averages over the real positions only."""
    model = _model("additive")
    with torch.no_grad():
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T_out, V)
        real = batch.tgt_out != IGNORE_INDEX  # (B, T_out)
        assert not real.all()  # targets of unequal lengths: some padding
        expected = F.cross_entropy(logits[real], batch.tgt_out[real])
        torch.testing.assert_close(DateTask.loss(model, batch), expected)


def test_translate_returns_alignment_per_example():
    model = _model("additive")
    sources = ["3/3/98", "tue 3 march 1998 see you then"]
    out = translate(model, sources, max_len=12)
    assert len(out) == 2
    for (text, w), src in zip(out, sources, strict=True):
        assert isinstance(text, str) and len(text) <= 12
        assert D.EOS_ID not in D.TARGET_VOCAB.encode(text)
        assert w.shape == (len(text), len(src))
        torch.testing.assert_close(w.sum(-1), torch.ones(len(text)))
    assert translate(_model(None), sources)[0][1] is None


def test_greedy_decoding_stops_at_the_end_symbol():
    """A decoder whose output layer always prefers </s> stops after one step, and
    translate returns empty outputs with (0, T_in) alignments."""
    model = _model("additive")
    with torch.no_grad():
        model.out.weight.zero_()
        model.out.bias.zero_()
        model.out.bias[D.EOS_ID] = 10.0
    src, lengths = D.SOURCE_VOCAB.encode_batch(["3/3/98", "1 may 2001"])
    ids, w = model.greedy_decode(src, lengths, max_len=20)
    assert ids.tolist() == [[D.EOS_ID], [D.EOS_ID]] and w.shape == (2, 1, src.size(1))
    (text, w0), _ = translate(model, ["3/3/98", "1 may 2001"])
    assert text == "" and w0.shape == (0, 6)


def test_bad_inputs(batch):
    with pytest.raises(ValueError, match="attention must be one of"):
        _model("multiplicative")
    with pytest.raises(ValueError, match="hidden_size"):
        Seq2Seq(10, 10, hidden_size=0)
    with pytest.raises(ValueError, match="even hidden_size"):
        Seq2Seq(10, 10, hidden_size=15, bidirectional=True)
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
        train_seq2seq(model, D.generate(4), val=D.generate(2), steps=0)
    with pytest.raises(ValueError, match="at least one"):
        exact_match(model, [])
    with pytest.raises(ValueError, match="held-out"):
        train_seq2seq(model, D.generate(4), val=[], steps=1, batch_size=2, target_acc=0.9)
    with pytest.raises(ValueError, match="schedule_steps"):
        train_seq2seq(model, D.generate(4), val=D.generate(2), steps=5, batch_size=2,
                      schedule_steps=3)
    with pytest.raises(ValueError, match="batch_size"):
        train_seq2seq(model, D.generate(4), val=D.generate(2), steps=1, batch_size=5)


def test_training_learns_the_task():
    """A short run on one format: loss falls and most dates come out exactly right."""
    train = D.generate(2000, seed=1, formats=["dd.mm.yyyy"])
    val = D.generate(200, seed=2, formats=["dd.mm.yyyy"])
    model = _model("additive", hidden_size=32)
    before = exact_match(model, val)
    hist = train_seq2seq(model, train, steps=150, batch_size=32, val=val, eval_every=50)
    assert hist["step"] == [50, 100, 150] and hist["eval_step"] == [0, 50, 100, 150]
    assert len(hist["train_loss"]) == len(hist["elapsed_s"]) == 3
    assert len(hist["val_acc"]) == len(hist["val_loss"]) == 4
    assert hist["val_acc"][0] == before
    assert hist["train_loss"][-1] < 0.2 * hist["train_loss"][0]
    assert before < 0.05
    assert hist["val_acc"][-1] > 0.8
    assert not model.training


def test_training_stops_at_target_accuracy():
    train = D.generate(2000, seed=1, formats=["dd.mm.yyyy"])
    val = D.generate(100, seed=2, formats=["dd.mm.yyyy"])
    model = _model("additive", hidden_size=32)
    hist = train_seq2seq(model, train, steps=300, batch_size=32, val=val, eval_every=25,
                         target_acc=0.5)  # fmt: skip
    assert hist["eval_step"][-1] < 300
    assert hist["val_acc"][-1] >= 0.5 > max(hist["val_acc"][:-1], default=0.0)


def test_same_seed_same_training():
    train = D.generate(500, seed=1, n_dates=(1, 2))
    runs = []
    for _ in range(2):
        model = _model("additive")
        hist = train_seq2seq(model, train, val=train[:20], steps=6, batch_size=8, eval_every=3)
        runs.append(hist["train_loss"])
    assert runs[0] == runs[1]


def test_log_every_and_kept_weights_change_nothing_in_the_run():
    """The loss logged more often than the evaluations, weights kept after step 3: the run
    ends with the same weights as a plain one, and the kept weights are those of a run
    stopped at step 3 of the same schedule."""
    train, val = D.generate(200, seed=1, n_dates=(1, 2)), D.generate(10, seed=2)
    runs = {}
    for name, kw in {"plain": {"eval_every": 2},
                     "logged": {"eval_every": 6, "log_every": 2, "keep_weights_at": [3]},
                     "stopped": {"eval_every": 3, "steps": 3, "schedule_steps": 6}}.items():
        model = _model(None)
        runs[name] = model, train_seq2seq(model, train, val=val, **{"steps": 6, "batch_size": 8,
                                                                    **kw})
    (plain, p_hist), (logged, l_hist), (stopped, _) = runs.values()
    assert l_hist["step"] == p_hist["step"] == [2, 4, 6] and l_hist["eval_step"] == [0, 6]
    assert l_hist["train_loss"] == p_hist["train_loss"]
    torch.testing.assert_close(logged.state_dict(), plain.state_dict(), rtol=0, atol=0)
    assert list(l_hist["weights"]) == [3] and p_hist["weights"] == {}
    torch.testing.assert_close(l_hist["weights"][3], stopped.state_dict(), rtol=0, atol=0)
    with pytest.raises(ValueError, match="log_every"):
        train_seq2seq(_model(None), train, val=val, steps=2, batch_size=8, log_every=0)
    with pytest.raises(ValueError, match="keep_weights_at"):
        train_seq2seq(_model(None), train, val=val, steps=2, batch_size=8, keep_weights_at=[3])


def test_runs_in_two_threads_match_runs_one_after_the_other():
    """Notebook 03 builds its models one by one (the global seed sets their weights), then
    trains them two at a time, one per thread: each run draws its batches from its own
    generator, so the numbers are those of the runs made one after the other."""
    train, val = D.generate(200, seed=1, n_dates=(1, 2)), D.generate(10, seed=2)

    def build(seed):
        torch.manual_seed(seed)
        return Seq2Seq.for_dates(attention="additive", emb_size=8, hidden_size=16)

    def run(seed_model):
        seed, model = seed_model
        hist = train_seq2seq(model, train, val=val, steps=4, batch_size=8, seed=seed,
                             eval_every=2)
        return hist["train_loss"], model.state_dict()

    one_by_one = [run((seed, build(seed))) for seed in (0, 1, 2)]
    models = [(seed, build(seed)) for seed in (0, 1, 2)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        threaded = list(pool.map(run, models))
    for (loss_a, weights_a), (loss_b, weights_b) in zip(one_by_one, threaded, strict=True):
        assert loss_a == loss_b
        torch.testing.assert_close(weights_a, weights_b, rtol=0, atol=0)


def test_schedule_steps_sets_the_cosine_length():
    """steps=4 of a 12-step schedule uses the rates of steps 1-4 of a 12-step cosine, the
    same as torch's CosineAnnealingLR gives."""
    model = _model(None)
    hist = train_seq2seq(model, D.generate(50), val=D.generate(5), steps=4, batch_size=4, lr=0.1,
                         schedule_steps=12, min_lr_fraction=0.0, eval_every=1)  # fmt: skip
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 12, eta_min=0.0)
    expected = []
    for _ in range(4):
        expected.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert [math.isclose(a, b, rel_tol=1e-9) for a, b in zip(hist["lr"], expected, strict=True)] \
        == [True] * 4


def test_date_task_batches_group_similar_lengths():
    exs = D.generate(400, seed=0, n_dates=(1, 2), filler=(0, 3))
    task, whole = DateTask(exs, batch_size=16), DateTask(exs, batch_size=16, window=None)
    gen = torch.Generator().manual_seed(3)
    spreads, mixed = [], []
    for _ in range(20):
        b = task.get_batch("train", gen)
        n_out = (b.tgt_out != IGNORE_INDEX).sum(1)
        assert b.src.size(1) == int(b.src_lengths.max())  # trimmed to the longest
        assert b.tgt_out.size(1) == int(n_out.max())
        assert (b.tgt_out[torch.arange(16), n_out - 1] == D.EOS_ID).all()
        spreads.append(int(b.src_lengths.max() - b.src_lengths.min()))
        b = whole.get_batch("train", gen)
        mixed.append(int(b.src_lengths.max() - b.src_lengths.min()))
    assert sum(spreads) < 0.5 * sum(mixed)  # similar lengths travel together
    again = task.get_batch("train", torch.Generator().manual_seed(3))
    first = task.get_batch("train", torch.Generator().manual_seed(3))
    assert torch.equal(again.src, first.src)
    with pytest.raises(ValueError, match="window"):
        DateTask(exs, window=0)
    with pytest.raises(ValueError, match="no 'val' examples"):
        task.get_batch("val", gen)
