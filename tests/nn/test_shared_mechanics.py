"""Each mechanic written once: heads split and merged by one pair of functions, one KV cache
type and one sampler for every model, and decoding that gives the tokens it always gave."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from minitx.course.ladder import RUNGS, LadderModel
from minitx.data import IGNORE_INDEX, dates
from minitx.nn import generation
from minitx.nn.attention import MultiHeadAttention, merge_heads, split_heads
from minitx.nn.encoder_decoder import DateTransformer, EncoderDecoder
from minitx.nn.generation import KVCache
from minitx.nn.gpt import GPT, GPTConfig

V, BLOCK = 13, 8


def _gpt(seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=V, block_size=BLOCK, n_layer=2, n_head=2, n_embd=16)
    return GPT(cfg).eval()


def _idx(B: int, T: int, seed: int = 0, vocab: int = V) -> torch.Tensor:
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


def _gen(seed: int = 1) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- heads


def test_split_heads_gives_each_head_its_slice_of_features():
    x = torch.randn(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)  # (B, nh, T, hs)
    for h in range(3):
        assert torch.equal(heads[:, h], x[..., 4 * h : 4 * (h + 1)])
    assert torch.equal(merge_heads(heads), x)  # the inverse
    assert merge_heads(torch.randn(2, 3, 5, 4)).shape == (2, 5, 12)


def test_merge_heads_of_a_transposed_tensor():
    y = torch.randn(2, 5, 3, 4).transpose(1, 2)  # (B, nh, T, hs), not contiguous
    merged = merge_heads(y)
    assert merged.shape == (2, 5, 12)
    assert torch.equal(merged.view(2, 5, 3, 4), y.transpose(1, 2))


@pytest.mark.parametrize("bias", [True, False])
def test_project_is_one_third_of_in_proj_split_into_heads(bias):
    torch.manual_seed(0)
    attn = MultiHeadAttention(12, 3, bias=bias).double()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    q, k, v = attn.in_proj(x).split(12, dim=-1)
    for part, want in zip("qkv", (q, k, v), strict=True):
        torch.testing.assert_close(attn.project(x, part), split_heads(want, 3))
    with pytest.raises(ValueError, match="part must be 'q', 'k' or 'v', got 'kv'"):
        attn.project(x, "kv")


def test_cross_attention_projects_each_sequence_once():
    torch.manual_seed(0)
    attn = MultiHeadAttention(8, 2).double().eval()
    query = torch.randn(2, 3, 8, dtype=torch.float64)
    memory = torch.randn(2, 6, 8, dtype=torch.float64)
    out, w = attn(query, memory, memory, need_weights=True)
    q, k, v = attn.project(query, "q"), attn.project(memory, "k"), attn.project(memory, "v")
    weights = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)  # d_head = 4
    torch.testing.assert_close(w, weights)
    torch.testing.assert_close(out, attn.out_proj(merge_heads(weights @ v)))


# ----------------------------------------------------------------------------- one KV cache


def test_gpt_and_the_encoder_decoder_share_the_cache_type():
    from minitx.nn import gpt

    assert gpt.KVCache is KVCache  # the old import path still works
    _, gpt_cache = _gpt().forward_cached(_idx(3, 4))
    assert isinstance(gpt_cache, KVCache) and len(gpt_cache.layers[0]) == 2
    torch.manual_seed(0)
    model = EncoderDecoder(16, 4, 1, 2, 32).eval()
    memory, tgt = torch.randn(3, 6, 16), torch.randn(3, 2, 16)
    with torch.no_grad():
        _, cache, _ = model.decode_cached(tgt, memory, None, None)
    assert isinstance(cache, KVCache) and len(cache.layers) == 2
    k_self, v_self, k_mem, v_mem = cache[0]  # what notebook 10 unpacks
    assert k_self.shape == v_self.shape == (3, 4, 2, 4)
    assert k_mem.shape == v_mem.shape == (3, 4, 6, 4)
    assert cache.length == 2 and cache.batch_size == 3
    assert cache.numel() == 2 * 2 * 3 * (2 + 6) * 16  # layers x (k, v) x B x (T + S) x C
    rows = torch.tensor([2, 0, 0, 1])
    moved = cache.reorder(rows)
    assert moved.batch_size == 4
    for layer, new in zip(cache.layers, moved.layers, strict=True):
        assert len(new) == 4
        assert all(torch.equal(n, t[rows]) for t, n in zip(layer, new, strict=True))


def test_kv_cache_needs_layers():
    with pytest.raises(ValueError, match="non-empty list"):
        KVCache([])
    with pytest.raises(ValueError, match="non-empty list"):
        KVCache(())


# ----------------------------------------------------------------------------- one sampler


def test_generate_loop_crops_samples_and_stops():
    table = torch.randn(5, 5)
    seen: list[int] = []

    def next_logits(context):
        seen.append(context.size(1))
        return table[context[:, -1]]  # (B, V): a bigram model

    idx = torch.tensor([[0], [3]])
    out = generation.generate(next_logits, idx, 6, block_size=3, greedy=True)
    assert out.shape == (2, 7) and seen == [1, 2, 3, 3, 3, 3]
    for t in range(1, 7):
        assert torch.equal(out[:, t], table[out[:, t - 1]].argmax(-1))
    # stop_id: stop once every row has written it
    eos = int(table[0].argmax())
    stopped = generation.generate(next_logits, torch.tensor([[0]]), 6, greedy=True, stop_id=eos)
    assert stopped.tolist() == [[0, eos]]
    assert torch.equal(generation.generate(next_logits, idx, 0), idx)
    with pytest.raises(ValueError, match="max_new_tokens must be an int >= 0, got -1"):
        generation.generate(next_logits, idx, -1)


def test_generate_loop_draws_as_sample_next_does():
    table = torch.randn(7, 7)
    idx = torch.tensor([[1], [4]])
    out = generation.generate(lambda c: table[c[:, -1]], idx, 10, top_k=3, temperature=0.7,
                              generator=_gen(3))  # fmt: skip
    g, expected = _gen(3), idx
    for _ in range(10):
        nxt = generation.sample_next(table[expected[:, -1]], 0.7, 3, None, generator=g)
        expected = torch.cat([expected, nxt], dim=1)
    assert torch.equal(out, expected)


SETTINGS = [{"greedy": True}, {"temperature": 0.8, "top_k": 5}, {"top_p": 0.9}, {}]


@pytest.mark.parametrize("settings", SETTINGS, ids=str)
@pytest.mark.parametrize("use_cache", [True, False])
def test_gpt_generate_gives_the_tokens_of_the_plain_loop(settings, use_cache):
    """The loop GPT.generate used to run itself: crop, logits, sample_next, append."""
    model = _gpt(2)
    idx = _idx(2, 3, seed=5)
    got = model.generate(idx, 2 * BLOCK, generator=_gen(), use_cache=use_cache, **settings)
    g, expected = _gen(), idx
    with torch.no_grad():
        for _ in range(2 * BLOCK):
            logits = model.next_token_logits(expected)  # (B, V), last block_size tokens
            nxt = generation.sample_next(logits, generator=g, **settings)
            expected = torch.cat([expected, nxt], dim=1)
    assert torch.equal(got, expected)


def test_ladder_generate_gives_the_tokens_of_its_old_loop():
    torch.manual_seed(0)
    model = LadderModel(RUNGS[-1], 11, 8, n_embd=16)
    idx = torch.tensor([[0, 3], [5, 1]])
    out = model.generate(idx, 20, torch.Generator().manual_seed(4))
    assert out.shape == (2, 22) and model.training  # mode restored
    g, expected = torch.Generator().manual_seed(4), idx
    model.eval()
    with torch.no_grad():
        for _ in range(20):  # the loop LadderModel.generate ran before it used generation
            probs = model(expected[:, -8:])[0][:, -1].softmax(dim=-1)
            expected = torch.cat([expected, torch.multinomial(probs, 1, generator=g)], dim=1)
    assert torch.equal(out, expected)


# ----------------------------------------------------------------------------- date model


def _date_model(seed: int = 0) -> DateTransformer:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return DateTransformer(d_model=32, d_ff=64).double().eval()


def _teacher_forced_logits(model, src, lengths, ids):
    """Next-token logits (N, V) after ids (N, 1 + t), from forward alone; ended outputs
    may only write padding, at no cost."""
    logits = model(src, lengths, ids)[0][:, -1]
    ended = (ids == model.eos_id).any(dim=1)
    logits = logits.masked_fill(ended[:, None], float("-inf"))
    pad = torch.arange(logits.size(-1)) == model.pad_id
    return logits.masked_fill(ended[:, None] & pad, 0.0)


@pytest.mark.parametrize("use_cache", [True, False])
def test_date_greedy_decode_gives_the_tokens_of_a_teacher_forced_loop(use_cache):
    model = _date_model(1)
    b = dates.make_batch(dates.generate(12, seed=3, n_dates=(1, 2)))
    ids, align = model.greedy_decode(b.src, b.src_lengths, 20, use_cache=use_cache)
    seq = torch.full((12, 1), model.bos_id)
    with torch.no_grad():
        for _ in range(20):
            y = _teacher_forced_logits(model, b.src, b.src_lengths, seq).argmax(-1)
            seq = torch.cat([seq, y[:, None]], dim=1)
            if (seq == model.eos_id).any(dim=1).all():
                break
    assert torch.equal(ids, seq[:, 1:])
    assert align.shape == (*ids.shape, b.src.size(1))


def test_date_beam_search_gives_the_beams_of_a_teacher_forced_search():
    model = _date_model(2)
    b = dates.make_batch(dates.generate(6, seed=4, n_dates=1))
    seqs, scores = model.beam_search(b.src, b.src_lengths, 14, beam_width=3)
    W = 3
    src, lengths = b.src.repeat_interleave(W, 0), b.src_lengths.repeat_interleave(W, 0)
    with torch.no_grad():
        want, want_scores = generation.beam_search(
            lambda ids: _teacher_forced_logits(model, src, lengths, ids),
            torch.full((6, 1), model.bos_id), 14, W,
        )  # fmt: skip
    assert torch.equal(seqs, want[:, 1:])
    torch.testing.assert_close(scores, want_scores)


def test_date_decoding_runs_in_eval_mode_and_restores_the_mode():
    model = DateTransformer(d_model=16, d_ff=32, n_heads=2, dropout=0.5)
    b = dates.make_batch(dates.generate(4, seed=0))
    ids, _ = model.greedy_decode(b.src, b.src_lengths, 10)
    assert model.training
    assert torch.equal(ids, model.greedy_decode(b.src, b.src_lengths, 10, use_cache=False)[0])
    beams, _ = model.beam_search(b.src, b.src_lengths, 10, beam_width=1)
    assert torch.equal(beams[:, : ids.size(1)], ids) and model.training


def test_date_loss_reads_ignore_index_as_padding():
    model = _date_model(3)
    b = dates.make_batch(dates.generate(8, seed=5, n_dates=(1, 2)))
    tgt_out = b.tgt_out.masked_fill(b.tgt_out == 0, IGNORE_INDEX)
    assert (tgt_out == IGNORE_INDEX).any()
    logits, _ = model(b.src, b.src_lengths, b.tgt_in)
    expected = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=-100)
    torch.testing.assert_close(model.loss(b.src, b.src_lengths, tgt_out), expected)
    batch = dataclasses.replace(b, tgt_out=tgt_out)
    assert model.sequence_log_prob(batch.src, batch.src_lengths, batch.tgt_out).isfinite().all()
