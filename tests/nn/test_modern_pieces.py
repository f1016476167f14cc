"""The modern block: RMSNorm, grouped-query attention, RoPE, SwiGLU, and the GPT's switches.

Each piece is checked against PyTorch or against its equation; the GPT with each switch
trains, and its KV-cache decoding gives the tokens of the uncached path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from parity import assert_same_outputs_and_grads, matched_parameters
from torch import nn

from minitx.data.tokenizer import CharTokenizer
from minitx.nn import (
    GPT,
    GPTConfig,
    GroupedQueryAttention,
    MultiHeadAttention,
    RMSNorm,
    SwiGLU,
    apply_rope,
    grouped_query_attention,
    scaled_dot_product_attention,
)
from minitx.nn.gpt import kv_cache_numel
from minitx.nn.grouped_attention import repeat_kv
from minitx.nn.rmsnorm import default_eps
from minitx.nn.rope import rope_angles
from minitx.nn.swiglu import swiglu_hidden
from minitx.nn.transformer import FeedForward, LayerNorm
from minitx.train.checkpoint import load_gpt, make_checkpoint, save_checkpoint

F64 = torch.float64
TOL64 = {"rtol": 1e-10, "atol": 1e-12}
TOL32 = {"rtol": 1e-5, "atol": 1e-6}
V = 17
SWITCHES = {
    "rms": {"norm": "rms"},
    "rope": {"positions": "rope"},
    "nopos": {"positions": "none"},
    "swiglu": {"mlp": "swiglu"},
    "gqa": {"n_kv_heads": 2},
    "mqa": {"n_kv_heads": 1},
    "all": {"norm": "rms", "positions": "rope", "mlp": "swiglu", "n_kv_heads": 2},
}


def _gpt(seed: int = 0, **switches) -> GPT:
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=V, block_size=8, n_layer=2, n_head=4, n_embd=16, **switches)
    return GPT(cfg).eval()


def _randn(*shape: int, seed: int = 0, dtype: torch.dtype = F64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ----------------------------------------------------------------------------- RMSNorm


@pytest.mark.parametrize("dtype,tol", [(F64, TOL64), (torch.float32, TOL32)], ids=["f64", "f32"])
@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("fused", [False, True])
def test_rmsnorm_equals_torch(dtype, tol, eps, affine, fused):
    theirs = nn.RMSNorm(12, eps=eps, elementwise_affine=affine).to(dtype)
    if affine:
        with torch.no_grad():
            theirs.weight.copy_(_randn(12, seed=1, dtype=dtype))
    ours = RMSNorm.from_torch(theirs, fused=fused)
    assert ours.eps == eps and (ours.weight is not None) == affine
    x = _randn(3, 5, 12, dtype=dtype).requires_grad_()
    pairs = matched_parameters(ours, theirs, {"weight": "weight"} if affine else {})
    assert_same_outputs_and_grads(ours, theirs, [x], pairs, **tol)


def test_rmsnorm_follows_its_equation():
    norm = RMSNorm(6, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(_randn(6, seed=2, dtype=torch.float32))
    x = _randn(4, 6, dtype=torch.float32)
    for row in range(4):
        rms = (x[row].pow(2).sum() / 6 + 1e-5).sqrt()
        torch.testing.assert_close(norm(x)[row], x[row] / rms * norm.weight, **TOL32)
    assert not torch.allclose(norm(x), LayerNorm(6, bias=False)(x) * norm.weight)  # no centring


@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_rmsnorm_eps_none_is_the_machine_epsilon_where_it_matters(dtype):
    """Inputs so small that mean(x^2) is of the order of eps: eps decides the output."""
    x = _randn(2, 8, dtype=dtype) * default_eps(dtype) ** 0.5
    theirs = nn.RMSNorm(8).to(dtype)
    torch.testing.assert_close(RMSNorm(8)(x), theirs(x), rtol=1e-6, atol=0)
    plain = x / x.pow(2).mean(-1, keepdim=True).sqrt()  # what eps = 0 would give
    assert (RMSNorm(8)(x) - plain).abs().max() > 0.1


def test_rmsnorm_default_eps_follows_the_computation_type():
    assert default_eps(F64) == torch.finfo(F64).eps
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        assert default_eps(dtype) == torch.finfo(torch.float32).eps


def test_rmsnorm_bfloat16_is_computed_in_float32_like_torch():
    theirs = nn.RMSNorm(16).to(torch.bfloat16)
    x = _randn(3, 16, dtype=torch.float32).to(torch.bfloat16)
    out = RMSNorm.from_torch(theirs)(x)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, theirs(x), rtol=1e-2, atol=1e-2)


def test_rmsnorm_bad_input():
    with pytest.raises(TypeError, match=r"nn\.RMSNorm"):
        RMSNorm.from_torch(nn.LayerNorm(4))
    with pytest.raises(ValueError, match="one dimension"):
        RMSNorm.from_torch(nn.RMSNorm([2, 3]))
    with pytest.raises(ValueError, match=r"dim=4"):
        RMSNorm(4)(torch.randn(2, 5))
    with pytest.raises(ValueError, match="eps"):
        RMSNorm(4, eps=0.0)


# ----------------------------------------------------------------------------- GQA


@pytest.mark.parametrize("n_head,n_kv", [(4, 1), (4, 2), (6, 3), (4, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_gqa_equals_torch_enable_gqa(n_head, n_kv, causal):
    T_k = 5 if causal else 7  # non-causal: keys may outnumber queries
    q = _randn(2, n_head, 5, 8, seed=1).requires_grad_()
    k = _randn(2, n_kv, T_k, 8, seed=2).requires_grad_()
    v = _randn(2, n_kv, T_k, 8, seed=3).requires_grad_()
    assert_same_outputs_and_grads(
        lambda q, k, v: grouped_query_attention(q, k, v, causal=causal),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                       enable_gqa=True),
        [q, k, v], **TOL64,
    )


def test_gqa_is_multi_head_attention_on_repeated_keys_and_values():
    q, k, v = _randn(2, 6, 5, 4, seed=1), _randn(2, 2, 5, 4, seed=2), _randn(2, 2, 5, 4, seed=3)
    expected, _ = scaled_dot_product_attention(q, repeat_kv(k, 6), repeat_kv(v, 6))
    torch.testing.assert_close(grouped_query_attention(q, k, v), expected, **TOL64)
    # query heads 0-2 share key head 0, heads 3-5 key head 1
    repeated = repeat_kv(k, 6)
    assert torch.equal(repeated[:, 2], k[:, 0]) and torch.equal(repeated[:, 3], k[:, 1])


def test_gqa_with_as_many_groups_as_heads_is_the_packages_multi_head_attention():
    q, k, v = _randn(2, 4, 6, 8, seed=1), _randn(2, 4, 6, 8, seed=2), _randn(2, 4, 6, 8, seed=3)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(grouped_query_attention(q, k, v, causal=True), expected, **TOL64)
    # and the layer: GroupedQueryAttention(n_kv = n_head) is MultiHeadAttention, same weights
    mha = MultiHeadAttention(16, 4).double().eval()
    gqa = GroupedQueryAttention(16, 4, n_kv_heads=4).double().eval()
    gqa.load_state_dict(mha.state_dict())
    x = _randn(3, 6, 16)
    for kwargs in ({}, {"is_causal": True}, {"is_causal": True, "need_weights": True}):
        ours, theirs = gqa(x, **kwargs), mha(x, **kwargs)
        torch.testing.assert_close(ours[0], theirs[0], **TOL64)
        if kwargs.get("need_weights"):
            torch.testing.assert_close(ours[1], theirs[1], **TOL64)


@pytest.mark.parametrize("rope", [False, True])
def test_gqa_layer_explicit_path_equals_the_fused_one(rope):
    attn = GroupedQueryAttention(24, 6, n_kv_heads=2, rope=rope).double().eval()
    x = _randn(2, 7, 24)
    fused, none = attn(x, is_causal=True)
    explicit, weights = attn(x, is_causal=True, need_weights=True)
    assert none is None and weights.shape == (2, 6, 7, 7)
    torch.testing.assert_close(fused, explicit, **TOL64)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6, 7, dtype=F64), **TOL64)
    assert torch.all(weights.triu(1) == 0)  # causal
    pad = torch.tensor([True] * 5 + [False] * 2)[None, None, None, :]  # (1, 1, 1, T)
    torch.testing.assert_close(attn(x, mask=pad, is_causal=True)[0],
                               attn(x, mask=pad, is_causal=True, need_weights=True)[0], **TOL64)


@pytest.mark.parametrize("rope", [False, True])
def test_gqa_layer_cache_in_pieces_equals_the_causal_forward(rope):
    attn = GroupedQueryAttention(24, 6, n_kv_heads=2, rope=rope).double().eval()
    x = _randn(2, 9, 24)
    full, _ = attn(x, is_causal=True)
    past, outs = None, []
    for a, b in [(0, 3), (3, 4), (4, 6), (6, 7), (7, 9)]:
        out, past = attn.forward_cached(x[:, a:b], past)
        assert past[0].shape == past[1].shape == (2, 2, b, 4)  # (B, n_kv, P + T, hs)
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=1), full, **TOL64)


def test_gqa_bad_input():
    q, k = torch.randn(1, 4, 3, 8), torch.randn(1, 3, 3, 8)
    with pytest.raises(ValueError, match=r"n_head=4 .* n_kv_head=3"):
        grouped_query_attention(q, k, k)
    with pytest.raises(ValueError, match=r"\(B, n_head, T, hs\)"):
        grouped_query_attention(q[0], k, k)
    with pytest.raises(ValueError, match="share"):
        grouped_query_attention(q, torch.randn(1, 2, 3, 6), torch.randn(1, 2, 3, 6))
    with pytest.raises(ValueError, match="n_heads % n_kv_heads"):
        GroupedQueryAttention(16, 4, n_kv_heads=3)
    with pytest.raises(ValueError, match="even head size"):
        GroupedQueryAttention(12, 4, rope=True)
    attn = GroupedQueryAttention(16, 4, n_kv_heads=2)
    with pytest.raises(ValueError, match=r"\(B, heads, P, head size\) = \(1, 2, 2, 4\)"):
        attn.forward_cached(torch.randn(1, 1, 16), (torch.randn(1, 4, 2, 4),) * 2)


# ----------------------------------------------------------------------------- RoPE


@pytest.mark.parametrize("offset", [0, 5])
def test_rope_is_each_pair_times_e_to_the_i_m_theta(offset):
    B, nh, T, hs = 2, 3, 6, 8
    x = _randn(B, nh, T, hs)
    pairs = torch.view_as_complex(x.reshape(B, nh, T, hs // 2, 2))  # x[2i] + j x[2i+1]
    m = torch.arange(offset, offset + T, dtype=F64)[:, None]  # (T, 1)
    theta = 10000.0 ** (-torch.arange(0, hs, 2, dtype=F64) / hs)  # (hs/2,)
    turn = torch.polar(torch.ones(T, hs // 2, dtype=F64), m * theta)  # e^{j m theta}
    expected = torch.view_as_real(pairs * turn).reshape(B, nh, T, hs)
    torch.testing.assert_close(apply_rope(x, offset=offset), expected, **TOL64)
    torch.testing.assert_close(rope_angles(T, hs, offset=offset), m * theta, **TOL64)


def test_rope_scores_depend_only_on_the_offset_between_positions():
    q, k = _randn(1, 1, 1, 16, seed=1), _randn(1, 1, 1, 16, seed=2)

    def score(m: int, n: int) -> float:
        return (apply_rope(q, offset=m) * apply_rope(k, offset=n)).sum().item()

    for m, n in [(3, 1), (1, 3), (7, 7), (10, 2)]:
        for shift in (1, 5, 100):
            assert score(m + shift, n + shift) == pytest.approx(score(m, n), rel=1e-9, abs=1e-12)
    assert abs(score(3, 1) - score(5, 1)) > 1e-3  # ...and it does depend on that offset


def test_rope_keeps_lengths_position_zero_and_cache_offsets():
    x = _randn(2, 2, 9, 8)
    out = apply_rope(x)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), **TOL64)  # rotations
    assert torch.equal(out[:, :, 0], x[:, :, 0])  # angle 0 at position 0
    # the tokens 4.. of a sequence, rotated with offset=4, are those of the whole one
    torch.testing.assert_close(apply_rope(x[:, :, 4:], offset=4), out[:, :, 4:], **TOL64)
    assert apply_rope(x.float()).dtype == torch.float32
    half = apply_rope(x.bfloat16())  # turned in float32, returned in bfloat16
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.double(), out, rtol=2e-2, atol=2e-2)


def test_rope_bad_input():
    with pytest.raises(ValueError, match="hs must be even, got 7"):
        apply_rope(torch.randn(1, 2, 3, 7))
    with pytest.raises(ValueError, match="offset"):
        apply_rope(torch.randn(1, 2, 3, 8), offset=-1)
    with pytest.raises(ValueError, match="floating-point"):
        apply_rope(torch.ones(1, 2, 3, 8, dtype=torch.long))


# ----------------------------------------------------------------------------- SwiGLU


@pytest.mark.parametrize("bias", [False, True])
def test_swiglu_is_its_equation_with_copied_weights(bias):
    W1, W3 = nn.Linear(12, 32, bias=bias).double(), nn.Linear(12, 32, bias=bias).double()
    W2 = nn.Linear(32, 12, bias=bias).double()
    ours = SwiGLU(12, hidden=32, bias=bias).double()
    with torch.no_grad():
        for mine, theirs in ((ours.w1, W1), (ours.w2, W2), (ours.w3, W3)):
            mine.load_state_dict(theirs.state_dict())
    x = _randn(3, 5, 12).requires_grad_()
    pairs = [(p, q) for mine, theirs in ((ours.w1, W1), (ours.w2, W2), (ours.w3, W3))
             for p, q in zip(mine.parameters(), theirs.parameters(), strict=True)]
    assert_same_outputs_and_grads(ours, lambda x: W2(F.silu(W1(x)) * W3(x)), [x], pairs,
                                  **TOL64)

    def linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:  # x W^T (+ b), by hand
        return x @ layer.weight.T + (0.0 if layer.bias is None else layer.bias)

    x = _randn(4, 12)
    gate = linear(W1, x)
    by_hand = linear(W2, gate * gate.sigmoid() * linear(W3, x))  # silu(z) = z sigmoid(z)
    torch.testing.assert_close(ours(x), by_hand, **TOL64)


@pytest.mark.parametrize("n_embd", [128, 256, 384, 768])
def test_swiglu_has_the_gelu_mlps_parameter_count(n_embd):
    swiglu, mlp = SwiGLU(n_embd), FeedForward(n_embd, 4 * n_embd, bias=False)
    n_swiglu = sum(p.numel() for p in swiglu.parameters())
    n_mlp = sum(p.numel() for p in mlp.parameters())
    assert abs(n_swiglu - n_mlp) / n_mlp < 0.01
    assert swiglu.hidden == swiglu_hidden(n_embd) and swiglu.hidden % 8 == 0
    nearest = min(range(8, 8 * n_embd, 8), key=lambda h: abs(3 * h - 8 * n_embd))
    assert swiglu.hidden == nearest  # the closest a multiple of 8 can get


def test_swiglu_bad_input():
    with pytest.raises(ValueError, match="n_embd=8"):
        SwiGLU(8)(torch.randn(2, 6))
    with pytest.raises(ValueError, match="hidden"):
        SwiGLU(8, hidden=0)


# ----------------------------------------------------------------------------- the GPT


@pytest.mark.parametrize("name", SWITCHES)
def test_gpt_switches_build_the_modern_pieces(name):
    switches = SWITCHES[name]
    model = _gpt(**switches)
    block = model.blocks[0]
    rms = switches.get("norm") == "rms"
    for norm in (block.norm1, block.norm2, model.ln_f):
        assert isinstance(norm, RMSNorm if rms else LayerNorm)
    assert (model.pos_emb is None) == (switches.get("positions") in ("rope", "none"))
    assert isinstance(block.ffn, SwiGLU if switches.get("mlp") == "swiglu" else FeedForward)
    n_kv = switches.get("n_kv_heads", 4)
    rope = switches.get("positions") == "rope"
    if n_kv != 4 or rope:
        assert isinstance(block.attn, GroupedQueryAttention) and block.attn.rope == rope
        assert block.attn.in_proj.out_features == 16 + 2 * n_kv * 4
    else:
        assert isinstance(block.attn, MultiHeadAttention)
    idx = torch.randint(0, V, (3, 8))
    logits, loss = model(idx, idx)
    assert logits.shape == (3, 8, V) and torch.isfinite(loss)


@pytest.mark.parametrize("name", SWITCHES)
def test_gpt_with_each_switch_learns_a_batch(name):
    model = _gpt(**SWITCHES[name]).train()
    g = torch.Generator().manual_seed(1)
    idx, targets = (torch.randint(0, V, (4, 8), generator=g) for _ in range(2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(20):
        _, loss = model(idx, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses


@pytest.mark.parametrize("name", ["rope", "gqa", "nopos", "all"])
def test_cached_generation_equals_uncached(name):
    model = _gpt(**SWITCHES[name])
    prompt = torch.randint(0, V, (2, 3), generator=torch.Generator().manual_seed(3))
    # 12 new tokens: the window of 8 fills, then slides (the cache is rebuilt)
    cached = model.generate(prompt, 12, greedy=True)
    assert torch.equal(cached, model.generate(prompt, 12, greedy=True, use_cache=False))
    sampled = [model.generate(prompt, 12, generator=torch.Generator().manual_seed(4),
                              use_cache=c) for c in (True, False)]
    assert torch.equal(*sampled)
    beams = [model.beam_search(prompt, 6, beam_width=3, use_cache=c) for c in (True, False)]
    assert torch.equal(*beams)


@pytest.mark.parametrize("name", ["rope", "gqa", "mqa", "all"])
def test_cached_forward_in_pieces_equals_the_full_forward(name):
    model = _gpt(**SWITCHES[name])
    idx = torch.randint(0, V, (2, 8))
    full, _ = model(idx)
    cache, pieces = None, []
    for a, b in [(0, 4), (4, 5), (5, 6), (6, 8)]:  # a prompt, two single steps, two at once
        logits, cache = model.forward_cached(idx[:, a:b], cache)
        pieces.append(logits)
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_the_kv_cache_keeps_only_the_key_value_heads(n_kv):
    model = _gpt(n_kv_heads=n_kv, positions="rope")
    _, cache = model.forward_cached(torch.randint(0, V, (3, 6)))
    for layer in cache.layers:
        assert [t.shape for t in layer] == [(3, n_kv, 6, 4)] * 2  # (B, n_kv, T, hs)
    assert cache.numel() == kv_cache_numel(model.config, 6, batch=3)
    full_heads = kv_cache_numel(_gpt().config, 6, batch=3)
    assert cache.numel() * (4 // n_kv) == full_heads  # n_head / n_kv times smaller


def test_default_config_is_the_gpt2_block_with_its_names():
    """Old checkpoints load: the defaults build exactly the parameters of before."""
    names = set(_gpt().state_dict())
    assert "pos_emb.emb.weight" in names and "blocks.0.attn.in_proj.weight" in names
    assert "blocks.0.ffn.fc1.weight" in names and "ln_f.bias" in names
    cfg = _gpt().config
    assert (cfg.norm, cfg.positions, cfg.mlp, cfg.n_kv_heads) == ("layer", "learned", "gelu", None)


@pytest.mark.parametrize("field,value,choices", [
    ("norm", "batch", r"\['layer', 'rms'\]"),
    ("positions", "alibi", r"\['learned', 'rope', 'none'\]"),
    ("mlp", "geglu", r"\['gelu', 'swiglu'\]"),
])
def test_gpt_config_unknown_names_list_the_choices(field, value, choices):
    with pytest.raises(ValueError, match=rf"{field} must be one of {choices}, got '{value}'"):
        GPTConfig(vocab_size=V, block_size=8, n_layer=1, n_head=4, n_embd=16, **{field: value})


@pytest.mark.parametrize("extra,message", [
    ({"n_kv_heads": 3}, "n_kv_heads must be None or an int >= 1 that divides n_head=4, got 3"),
    ({"n_kv_heads": 0}, "got 0"),
    ({"n_kv_heads": True}, "got True"),
    ({"positions": "rope", "n_embd": 12}, "even head size, got n_embd / n_head = 3"),
    ({"mlp": "swiglu", "activation": "relu"}, "applies to mlp='gelu' only"),
])
def test_gpt_config_bad_switches(extra, message):
    cfg = {"vocab_size": V, "block_size": 8, "n_layer": 1, "n_head": 4, "n_embd": 16, **extra}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GPTConfig(**cfg)


def test_checkpoint_round_trips_the_switches_and_old_configs_load(tmp_path):
    tok = CharTokenizer.from_text("abcdefghijklmnopq")
    model = _gpt(**SWITCHES["all"])
    path = save_checkpoint(make_checkpoint(model, model.config, tok), tmp_path / "m.pt")
    loaded, _, ckpt = load_gpt(path)
    assert loaded.config == model.config and ckpt["model_config"]["n_kv_heads"] == 2
    idx = torch.randint(0, V, (2, 8))
    assert torch.equal(loaded(idx)[0], model(idx)[0])
    # a checkpoint written before the switches existed has none of their keys
    old = _gpt()
    ckpt = make_checkpoint(old, old.config, tok)
    for key in ("norm", "positions", "mlp", "n_kv_heads"):
        del ckpt["model_config"][key]
    loaded, _, _ = load_gpt(ckpt)
    assert loaded.config == old.config
    assert torch.equal(loaded(idx)[0], old(idx)[0])
