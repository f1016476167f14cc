"""KV cache: cached generation gives the same tokens (and logits) as the full forward."""

from __future__ import annotations

import pytest
import torch

from minitx.data import shipped_model_path
from minitx.nn import generation
from minitx.nn.attention import MultiHeadAttention
from minitx.nn.generation import KVCache
from minitx.nn.gpt import GPT, GPTConfig, kv_cache_numel
from minitx.nn.transformer import TransformerBlock

V = 17
BLOCK = 8
CKPT = shipped_model_path("small")
LOGIT_TOL = {"rtol": 1e-5, "atol": 1e-5}


def _model(seed: int = 0, **overrides) -> GPT:
    torch.manual_seed(seed)
    cfg = {"vocab_size": V, "block_size": BLOCK, "n_layer": 2, "n_head": 2, "n_embd": 16}
    cfg.update(overrides)
    return GPT(GPTConfig(**cfg)).eval()


def _idx(B: int, T: int, seed: int = 0, vocab: int = V) -> torch.Tensor:
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


def _gen(seed: int = 1) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def shipped():
    if not CKPT.exists():
        pytest.skip(f"{CKPT} is not there")
    from minitx.train.checkpoint import load_gpt

    model, tokenizer, _ = load_gpt(CKPT)
    return model, tokenizer


def _pieces(T: int) -> list[tuple[int, int]]:
    """Split 0..T into chunks of 3, 1, 2, 1, 1, ...: prefill, single steps, a multi-token step."""
    bounds, start, sizes = [], 0, [3, 1, 2]
    while start < T:
        size = sizes[len(bounds)] if len(bounds) < len(sizes) else 1
        bounds.append((start, min(start + size, T)))
        start += size
    return bounds


# ----------------------------------------------------------------------------- attention


def test_attention_prefill_is_exactly_the_causal_forward():
    torch.manual_seed(0)
    attn = MultiHeadAttention(16, 4).eval()
    x = torch.randn(3, 7, 16)
    out, (k, v) = attn.forward_cached(x)
    assert torch.equal(out, attn(x, is_causal=True)[0])
    assert k.shape == v.shape == (3, 4, 7, 4)  # (B, h, T, d_head)


@pytest.mark.parametrize("bias", [True, False])
def test_attention_in_pieces_equals_the_causal_forward(bias):
    torch.manual_seed(0)
    attn = MultiHeadAttention(12, 3, bias=bias).double().eval()
    x = torch.randn(2, 9, 12, dtype=torch.float64)
    full, _ = attn(x, is_causal=True)
    past, outs = None, []
    for a, b in _pieces(9):
        out, past = attn.forward_cached(x[:, a:b], past)
        assert past[0].shape == (2, 3, b, 4)
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=1), full, rtol=1e-12, atol=1e-12)
    # the cached keys/values are those of the whole sequence
    _, (k, v) = attn.forward_cached(x)
    torch.testing.assert_close(past[0], k, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(past[1], v, rtol=1e-12, atol=1e-12)


def test_attention_bad_past():
    attn = MultiHeadAttention(8, 2)
    x = torch.randn(2, 1, 8)
    with pytest.raises(ValueError, match=r"past must be a \(k, v\) pair of tensors, got Tensor"):
        attn.forward_cached(x, torch.zeros(2, 2, 3, 4))
    shapes = r"\(B, heads, P, head size\) = \(2, 2, 3, 4\), got k \(2, 2, 3, 5\)"
    with pytest.raises(ValueError, match=shapes):
        attn.forward_cached(x, (torch.zeros(2, 2, 3, 5), torch.zeros(2, 2, 3, 5)))
    with pytest.raises(ValueError, match=r"got k \(1, 2, 3, 4\)"):
        attn.forward_cached(x, (torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4)))
    with pytest.raises(ValueError, match=r"and v \(2, 2, 2, 4\)"):
        attn.forward_cached(x, (torch.zeros(2, 2, 3, 4), torch.zeros(2, 2, 2, 4)))
    with pytest.raises(ValueError, match=r"dtype and device of x \(torch.float32"):
        past = (torch.zeros(2, 2, 3, 4, dtype=torch.float64),) * 2
        attn.forward_cached(x, past)
    with pytest.raises(ValueError, match=r"x must be \(B, T, d_model=8\), got \(2, 8\)"):
        attn.forward_cached(torch.randn(2, 8))


# ----------------------------------------------------------------------------- block


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_in_pieces_equals_forward(norm_first):
    torch.manual_seed(0)
    block = TransformerBlock(16, 2, 32, norm_first=norm_first, causal=True).double().eval()
    x = torch.randn(2, 8, 16, dtype=torch.float64)
    full, _ = block(x)
    past, outs = None, []
    for a, b in _pieces(8):
        out, past = block.forward_cached(x[:, a:b], past)
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=1), full, rtol=1e-12, atol=1e-12)
    assert past[0].shape == past[1].shape == (2, 2, 8, 8)


def test_block_cache_needs_a_causal_block():
    block = TransformerBlock(8, 2, 16, causal=False)
    with pytest.raises(ValueError, match="needs a causal block"):
        block.forward_cached(torch.randn(1, 3, 8))


# ----------------------------------------------------------------------------- GPT.forward_cached


def test_gpt_prefill_is_exactly_the_forward():
    model = _model()
    idx = _idx(3, 6)
    logits, cache = model.forward_cached(idx)
    assert torch.equal(logits, model(idx)[0])
    assert cache.length == 6 and cache.batch_size == 3


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_gpt_in_pieces_equals_forward(dtype):
    model = _model().to(dtype)
    idx = _idx(2, BLOCK)
    full, _ = model(idx)
    cache, outs = None, []
    with torch.no_grad():
        for a, b in _pieces(BLOCK):
            logits, cache = model.forward_cached(idx[:, a:b], cache)
            outs.append(logits)
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == torch.float64 else LOGIT_TOL
    torch.testing.assert_close(torch.cat(outs, dim=1), full, **tol)


@pytest.mark.parametrize(("B", "T"), [(1, 1), (2, 5), (3, BLOCK)])
def test_cache_shapes_and_memory(B, T):
    model = _model(n_layer=3, n_head=4, n_embd=32)
    with torch.no_grad():
        _, cache = model.forward_cached(_idx(B, T))
    assert isinstance(cache, KVCache) and len(cache.layers) == 3
    for k, v in cache.layers:
        assert k.shape == v.shape == (B, 4, T, 8)  # (B, nh, T, hs)
    expected = 2 * 3 * T * 32 * B  # 2 x n_layer x T x C per sequence
    assert kv_cache_numel(model.config, T, batch=B) == expected
    assert cache.numel() == expected == sum(k.numel() + v.numel() for k, v in cache.layers)
    assert cache.nbytes() == 4 * expected  # float32
    assert kv_cache_numel(model.config, T) * B == expected


def test_kv_cache_numel_bad_input():
    cfg = _model().config
    assert kv_cache_numel(cfg, 0) == 0
    with pytest.raises(ValueError, match=r"T must be an int in \[0, block_size=8\], got 9"):
        kv_cache_numel(cfg, 9)
    with pytest.raises(ValueError, match=r"T must be an int .* got 2.0"):
        kv_cache_numel(cfg, 2.0)
    with pytest.raises(ValueError, match="batch must be an int >= 1, got 0"):
        kv_cache_numel(cfg, 2, batch=0)
    with pytest.raises(TypeError, match="expected a GPTConfig, got dict"):
        kv_cache_numel({"n_layer": 2}, 2)


def test_cache_reorder_follows_rows():
    model = _model()
    with torch.no_grad():
        _, cache = model.forward_cached(_idx(3, 4))
    rows = torch.tensor([2, 2, 0])
    moved = cache.reorder(rows)
    for (k, v), (k2, v2) in zip(cache.layers, moved.layers, strict=True):
        assert torch.equal(k2, k[rows]) and torch.equal(v2, v[rows])


def test_forward_cached_bad_input():
    model = _model()
    with torch.no_grad():
        _, cache = model.forward_cached(_idx(2, 6))
        with pytest.raises(ValueError, match="6 cached \\+ 3 new positions exceed block_size=8"):
            model.forward_cached(_idx(2, 3), cache)
        with pytest.raises(ValueError, match="expected 2 layers x B=1"):
            model.forward_cached(_idx(1, 1), cache)
        with pytest.raises(TypeError, match="cache must be a KVCache or None, got list"):
            model.forward_cached(_idx(2, 1), cache.layers)
        with pytest.raises(ValueError, match="outside"):
            model.forward_cached(torch.full((2, 1), V), cache)
        with pytest.raises(ValueError, match="needs a causal model"):
            _model(causal=False).forward_cached(_idx(1, 2))
    with pytest.raises(ValueError, match="non-empty list"):
        KVCache([])


# ----------------------------------------------------------------------------- generate

SETTINGS = [
    {"greedy": True},
    {"temperature": 1.0},
    {"temperature": 0.7, "top_k": 5},
    {"top_p": 0.8},
    {"temperature": 1.3, "top_k": 9, "top_p": 0.9},
]


@pytest.mark.parametrize("T0", [1, 3, BLOCK, 13])  # shorter than, equal to, longer than block
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(map(str, s.items())))
def test_generate_same_tokens_with_and_without_cache(T0, settings):
    model = _model()
    idx = _idx(3, T0)
    n = 2 * BLOCK + 3  # well past the window: rebuilds
    cached = model.generate(idx, n, generator=_gen(), use_cache=True, **settings)
    full = model.generate(idx, n, generator=_gen(), use_cache=False, **settings)
    assert cached.shape == (3, T0 + n)
    assert torch.equal(cached, full)
    assert torch.equal(model.generate(idx, n, generator=_gen(), **settings), cached)  # default


def _record_sample_logits(monkeypatch) -> list[torch.Tensor]:
    seen: list[torch.Tensor] = []
    real = generation.sample_next

    def spy(logits, *args, **kwargs):
        seen.append(logits.clone())
        return real(logits, *args, **kwargs)

    monkeypatch.setattr(generation, "sample_next", spy)
    return seen


@pytest.mark.parametrize("T0", [2, 11])
def test_generate_logits_match_at_every_step(monkeypatch, T0):
    model = _model(seed=3)
    seen = _record_sample_logits(monkeypatch)
    idx = _idx(2, T0, seed=4)
    a = model.generate(idx, 20, top_p=0.95, generator=_gen(5), use_cache=True)
    cached, seen[:] = list(seen), []
    b = model.generate(idx, 20, top_p=0.95, generator=_gen(5), use_cache=False)
    assert torch.equal(a, b) and len(cached) == len(seen) == 20
    for step, (c, f) in enumerate(zip(cached, seen, strict=True)):
        torch.testing.assert_close(c, f, **LOGIT_TOL, msg=lambda m, s=step: f"step {s}: {m}")


def test_cache_runs_one_position_per_step_until_the_window_is_full(monkeypatch):
    """Prefill over the prompt, then 1 token per step; once full, a rebuild per step."""
    model = _model()
    sizes: list[int] = []
    real = GPT._forward_cached

    def spy(self, idx, cache):
        sizes.append(idx.size(1))
        return real(self, idx, cache)

    monkeypatch.setattr(GPT, "_forward_cached", spy)
    model.generate(_idx(1, 3), 10, greedy=True)
    # steps see contexts of 3, 4, ..., 8 tokens (5 cached steps), then the window slides
    assert sizes == [3, 1, 1, 1, 1, 1, BLOCK, BLOCK, BLOCK, BLOCK]
    sizes.clear()
    model.generate(_idx(1, 3), 10, greedy=True, use_cache=False)
    assert sizes == []


def test_generate_cache_with_dropout_restores_training_mode():
    model = _model(dropout=0.3)
    model.train()
    idx = _idx(2, 3)
    a = model.generate(idx, 12, greedy=True)
    assert model.training  # the previous mode comes back
    assert torch.equal(a, model.generate(idx, 12, greedy=True))  # dropout is off inside
    assert torch.equal(a, model.generate(idx, 12, greedy=True, use_cache=False))


def test_non_causal_model_is_never_cached():
    model = _model(causal=False)
    idx = _idx(2, 3)
    a = model.generate(idx, 10, generator=_gen(), use_cache=True)
    assert torch.equal(a, model.generate(idx, 10, generator=_gen(), use_cache=False))


def test_zero_new_tokens():
    idx = _idx(2, 3)
    assert torch.equal(_model().generate(idx, 0, use_cache=True), idx)


@pytest.mark.parametrize("bad", ["yes", 1, None, 0.0])
def test_use_cache_must_be_a_bool(bad):
    model = _model()
    msg = rf"use_cache must be a bool \(True or False\), got {bad!r} \({type(bad).__name__}\)"
    with pytest.raises(TypeError, match=msg):
        model.generate(_idx(1, 2), 3, use_cache=bad)
    with pytest.raises(TypeError, match=msg):
        model.beam_search(_idx(1, 2), 3, use_cache=bad)


# ----------------------------------------------------------------------------- beam search


@pytest.mark.parametrize("T0", [1, 5, 12])
@pytest.mark.parametrize("width", [1, 3, V + 2])
def test_beam_search_same_with_and_without_cache(T0, width):
    model = _model(seed=2)
    idx = _idx(2, T0, seed=1)
    n = BLOCK + 5
    cached = model.beam_search(idx, n, beam_width=width, use_cache=True)
    full = model.beam_search(idx, n, beam_width=width, use_cache=False)
    assert cached.shape == (2, T0 + n)
    assert torch.equal(cached, full)


def test_beam_search_logits_match_at_every_step(monkeypatch):
    model = _model(seed=5)
    seen: list[torch.Tensor] = []
    real = generation.beam_search

    def spy(next_logits, *args, **kwargs):
        def recorded(context):
            logits = next_logits(context)
            seen.append(logits.clone())
            return logits

        return real(recorded, *args, **kwargs)

    monkeypatch.setattr(generation, "beam_search", spy)
    idx = _idx(2, 4, seed=6)
    a = model.beam_search(idx, 12, beam_width=4, use_cache=True)
    cached, seen[:] = list(seen), []
    b = model.beam_search(idx, 12, beam_width=4, use_cache=False)
    assert torch.equal(a, b) and len(cached) == len(seen) == 12
    for c, f in zip(cached, seen, strict=True):
        torch.testing.assert_close(c, f, **LOGIT_TOL)


def test_sampling_beam_search_calls_reorder_with_the_parent_rows():
    calls: list[torch.Tensor] = []
    logits = torch.randn(4)

    def next_logits(context):
        return logits.expand(context.size(0), 4)

    seqs, _ = generation.beam_search(next_logits, _idx(2, 3, vocab=4), 3, 2, reorder=calls.append)
    assert len(calls) == 3 and all(r.shape == (4,) and r.dtype == torch.long for r in calls)
    assert seqs.shape == (2, 6)


# ----------------------------------------------------------------------------- shipped model


@pytest.mark.parametrize(
    "settings", [{"greedy": True}, {"temperature": 0.8, "top_k": 20}, {"top_p": 0.9}]
)
def test_shipped_model_same_text_and_logits(shipped, monkeypatch, settings):
    model, tok = shipped
    block = model.config.block_size
    seen = _record_sample_logits(monkeypatch)
    idx = torch.tensor([tok.encode("ROMEO:"), tok.encode("JULIET")])  # (2, 6)
    n = block + 30  # past the window
    a = model.generate(idx, n, generator=_gen(0), use_cache=True, **settings)
    cached, seen[:] = list(seen), []
    b = model.generate(idx, n, generator=_gen(0), use_cache=False, **settings)
    assert torch.equal(a, b), (tok.decode(a[0]), tok.decode(b[0]))
    for c, f in zip(cached, seen, strict=True):
        torch.testing.assert_close(c, f, **LOGIT_TOL)


def test_shipped_model_long_prompt_and_beam_search(shipped):
    model, tok = shipped
    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak."
    idx = torch.tensor([tok.encode(text)])
    assert idx.size(1) > model.config.block_size
    a = model.generate(idx, 20, temperature=0.9, generator=_gen(2), use_cache=True)
    assert torch.equal(
        a, model.generate(idx, 20, temperature=0.9, generator=_gen(2), use_cache=False)
    )
    short = torch.tensor([tok.encode("KING:")])
    n = model.config.block_size
    cached = model.beam_search(short, n, beam_width=3, use_cache=True)
    assert torch.equal(cached, model.beam_search(short, n, beam_width=3, use_cache=False))


def test_shipped_model_cache_memory(shipped):
    model, _ = shipped
    cfg = model.config
    with torch.no_grad():
        _, cache = model.forward_cached(torch.zeros(1, cfg.block_size, dtype=torch.long))
    assert cache.numel() == kv_cache_numel(cfg, cfg.block_size)
    assert cache.numel() == 2 * cfg.n_layer * cfg.block_size * cfg.n_embd
    assert cache.nbytes() == 4 * cache.numel()
