"""Tests for minitx.nn.attention: scaled dot-product, additive and dot-product attention.

Everything is compared in float64 against an independent formula and against PyTorch's
own ``F.scaled_dot_product_attention`` (same boolean convention: True = may attend).
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from parity import assert_same_outputs_and_grads

from minitx.nn.attention import (
    AdditiveAttention,
    DotProductAttention,
    masked_softmax,
    scaled_dot_product_attention,
)
from minitx.nn.masks import causal_mask, combine_masks, padding_mask

DT = torch.float64


def reference_attention(q, k, v, mask=None, scale=None, temperature=1.0):
    """Attention from its definition, written independently of the package:
    exp / sum over the allowed keys, with einsum for the products."""
    d_k = q.size(-1)
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    s = torch.einsum("...id,...jd->...ij", q, k) * scale / temperature
    s = s - s.amax(dim=-1, keepdim=True)
    e = torch.exp(s)
    if mask is not None:
        e = e * mask.to(e.dtype)
    w = e / e.sum(dim=-1, keepdim=True)
    return torch.einsum("...ij,...jd->...id", w, v), w


def qkv(B=2, h=3, T_q=5, T_k=5, d_k=4, d_v=6, requires_grad=False):
    q = torch.randn(B, h, T_q, d_k, dtype=DT, requires_grad=requires_grad)
    k = torch.randn(B, h, T_k, d_k, dtype=DT, requires_grad=requires_grad)
    v = torch.randn(B, h, T_k, d_v, dtype=DT, requires_grad=requires_grad)
    return q, k, v


def entropy(w: torch.Tensor) -> torch.Tensor:
    return -(w * w.clamp_min(1e-300).log()).sum(-1)


# ---------------------------------------------------------------- correctness


def test_matches_independent_formula_no_mask():
    q, k, v = qkv(T_q=4, T_k=7)
    out, w = scaled_dot_product_attention(q, k, v)
    ref_out, ref_w = reference_attention(q, k, v)
    assert out.shape == (2, 3, 4, 6) and w.shape == (2, 3, 4, 7)
    torch.testing.assert_close(w, ref_w, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)


def test_scale_and_temperature_match_formula():
    q, k, v = qkv()
    out, w = scaled_dot_product_attention(q, k, v, scale=0.3, temperature=1.7)
    ref_out, ref_w = reference_attention(q, k, v, scale=0.3, temperature=1.7)
    torch.testing.assert_close(w, ref_w, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["none", "causal", "padding", "padding+causal", "random"])
def test_matches_torch_sdpa(kind):
    B, h, T, d = 3, 2, 6, 8
    q, k, v = qkv(B, h, T, T, d, d)
    mask = {
        "none": None,
        "causal": causal_mask(T),
        "padding": padding_mask([6, 4, 1], T),
        "padding+causal": combine_masks(padding_mask([6, 4, 2], T), causal_mask(T)),
        "random": torch.rand(B, h, T, T) > 0.4,
    }[kind]
    if kind == "random":
        mask[..., 0] = True  # every row keeps a key: the reference softmax gives NaN otherwise
    out, w = scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    _, ref_w = reference_attention(q, k, v, mask)
    torch.testing.assert_close(w, ref_w, rtol=1e-12, atol=1e-12)


def test_causal_matches_torch_is_causal():
    q, k, v = qkv(T_q=7, T_k=7)
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(7))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)


def test_cross_attention_shapes_match_torch():
    q, k, v = qkv(T_q=3, T_k=9, d_k=4, d_v=5)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 3, 5) and w.shape == (2, 3, 3, 9)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("masked", [False, True])
def test_gradients_match_torch(masked):
    T = 5
    mask = combine_masks(padding_mask([5, 3], T), causal_mask(T)) if masked else None
    assert_same_outputs_and_grads(
        lambda q, k, v: scaled_dot_product_attention(q, k, v, mask)[0],
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        qkv(2, 2, T, T, 4, 3, requires_grad=True),
        rtol=1e-10,
        atol=1e-12,
    )


@pytest.mark.parametrize("masked", [False, True])
def test_gradcheck(masked):
    q, k, v = qkv(1, 2, 3, 4, 2, 3, requires_grad=True)
    mask = torch.tensor([[True, True, False, False], [True, False, True, True],
                         [False, False, False, False]]) if masked else None

    def fn(q, k, v):
        out, w = scaled_dot_product_attention(q, k, v, mask, temperature=0.8)
        return out, w

    assert torch.autograd.gradcheck(fn, (q, k, v))
    assert torch.autograd.gradgradcheck(fn, (q, k, v))


def test_masked_softmax_matches_softmax_without_mask_and_with_all_true():
    s = torch.randn(3, 4, 5, dtype=DT)
    torch.testing.assert_close(masked_softmax(s), torch.softmax(s, -1))
    all_true = torch.ones(5, dtype=torch.bool)
    torch.testing.assert_close(masked_softmax(s, all_true), torch.softmax(s, -1))


def test_masked_softmax_other_dim():
    s = torch.randn(4, 6, dtype=DT)
    w = masked_softmax(s, dim=0)
    torch.testing.assert_close(w.sum(0), torch.ones(6, dtype=DT))
    torch.testing.assert_close(w, torch.softmax(s, 0))


# ---------------------------------------------------------------- properties


def test_rows_sum_to_one_where_anything_is_allowed():
    q, k, v = qkv(3, 2, 6, 6, 4, 4)
    mask = combine_masks(padding_mask([6, 2, 0], 6), causal_mask(6))  # (3, 1, 6, 6)
    _, w = scaled_dot_product_attention(q, k, v, mask)
    sums = w.sum(-1)
    allowed = mask.expand(3, 2, 6, 6).any(-1)
    torch.testing.assert_close(sums[allowed], torch.ones_like(sums[allowed]))
    assert (sums[~allowed] == 0).all() and (~allowed).any()
    assert (w >= 0).all()
    assert (w[~mask.expand_as(w)] == 0).all()


def test_causal_future_does_not_change_the_past():
    T, t = 8, 4
    x = torch.randn(2, T, 6, dtype=DT)
    W_q, W_k, W_v = (torch.randn(6, 6, dtype=DT) for _ in range(3))

    def attend(x):
        return scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v, causal_mask(T))[0]

    y = attend(x)
    x2 = x.clone()
    x2[:, t + 1:] = torch.randn(2, T - t - 1, 6, dtype=DT) * 10
    y2 = attend(x2)
    torch.testing.assert_close(y2[:, : t + 1], y[:, : t + 1], rtol=0, atol=1e-12)
    assert not torch.allclose(y2[:, t + 1:], y[:, t + 1:])  # the future did change


def test_permutation_equivariance_without_positions():
    n, d = 6, 5
    x = torch.randn(n, d, dtype=DT)
    W_q, W_k, W_v = (torch.randn(d, d, dtype=DT) for _ in range(3))

    def attend(x):
        return scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v)[0]

    perm = torch.randperm(n)
    assert not torch.equal(perm, torch.arange(n))
    torch.testing.assert_close(attend(x[perm]), attend(x)[perm], rtol=1e-12, atol=1e-12)


def test_fully_masked_rows_give_zeros_and_no_nan_forward_and_backward():
    q, k, v = qkv(1, 1, 3, 4, 2, 2, requires_grad=True)
    mask = torch.tensor([[True, False, True, False], [False] * 4, [True] * 4])
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert (w[..., 1, :] == 0).all() and (out[..., 1, :] == 0).all()
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[..., 1, :] == 0).all()  # a query that attends to nothing gets no gradient


def test_fully_masked_everything_gives_zeros_and_zero_gradient():
    s = torch.randn(2, 3, dtype=DT, requires_grad=True)
    w = masked_softmax(s, torch.zeros(2, 3, dtype=torch.bool))
    assert (w == 0).all()
    w.sum().backward()
    assert (s.grad == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_large_logits_stay_finite(dtype):
    q = torch.tensor([[1e4, -1e4], [1e4, 1e4]], dtype=dtype, requires_grad=True)
    k = torch.tensor([[1e4, 0.0], [0.0, 2e4], [-1e4, 3e4]], dtype=dtype, requires_grad=True)
    v = torch.randn(3, 2, dtype=dtype)
    out, w = scaled_dot_product_attention(q, k, v, torch.tensor([True, True, False]))
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, dtype=dtype))
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(k.grad).all()
    # the logits are ~1e8, so the softmax is one-hot on the largest allowed score
    torch.testing.assert_close(w, torch.tensor([[1.0, 0, 0], [0, 1.0, 0]], dtype=dtype))


def test_temperature_sharpens_and_flattens():
    q, k, v = qkv(1, 1, 4, 6, 8, 3)
    ents = [entropy(scaled_dot_product_attention(q, k, v, temperature=t)[1])
            for t in (0.25, 0.5, 1.0, 2.0, 4.0)]
    for colder, warmer in itertools.pairwise(ents):
        assert (colder < warmer).all()
    _, very_cold = scaled_dot_product_attention(q, k, v, temperature=1e-4)
    _, very_hot = scaled_dot_product_attention(q, k, v, temperature=1e6)
    scores = q @ k.transpose(-2, -1)
    torch.testing.assert_close(very_cold, F.one_hot(scores.argmax(-1), 6).to(DT))
    torch.testing.assert_close(very_hot, torch.full_like(very_hot, 1 / 6), rtol=0, atol=1e-5)


def test_temperature_equals_rescaling():
    q, k, v = qkv()
    a = scaled_dot_product_attention(q, k, v, temperature=2.0)[0]
    b = scaled_dot_product_attention(q, k, v, scale=0.5 / math.sqrt(4))[0]
    torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_dropout_zero_is_deterministic_and_dropout_changes_weights():
    q, k, v = qkv()
    a = scaled_dot_product_attention(q, k, v, dropout_p=0.0)[1]
    b = scaled_dot_product_attention(q, k, v, dropout_p=0.0)[1]
    assert torch.equal(a, b)
    c = scaled_dot_product_attention(q, k, v, dropout_p=0.5)[1]
    assert (c == 0).any() and not torch.allclose(a, c)
    kept = c != 0
    torch.testing.assert_close(c[kept], a[kept] * 2.0)  # inverted dropout rescales by 1/(1-p)


# ---------------------------------------------------------------- additive / dot-product


def reference_additive(att: AdditiveAttention, query, keys, values, mask=None):
    """Bahdanau's score written with loops, one (i, j) pair at a time."""
    B, T_q, _ = query.shape
    T_k = keys.size(1)
    Wq, Wk, v = att.W_q.weight, att.W_k.weight, att.v.weight[0]
    scores = torch.empty(B, T_q, T_k, dtype=query.dtype)
    for b in range(B):
        for i in range(T_q):
            for j in range(T_k):
                scores[b, i, j] = v @ torch.tanh(Wq @ query[b, i] + Wk @ keys[b, j])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, -1)
    return w @ values, w


@pytest.fixture
def additive():
    return AdditiveAttention(query_size=3, key_size=4, hidden_size=5).to(DT)


def test_additive_matches_loops(additive):
    query, keys, values = (torch.randn(2, 3, 3, dtype=DT), torch.randn(2, 6, 4, dtype=DT),
                           torch.randn(2, 6, 2, dtype=DT))
    mask = padding_mask([6, 4], 6)[:, 0]  # (B, 1, T_k)
    ctx, w = additive(query, keys, values, mask)
    ref_ctx, ref_w = reference_additive(additive, query, keys, values, mask)
    torch.testing.assert_close(w, ref_w, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ctx, ref_ctx, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_weights_sum_to_one_and_masked_positions_get_zero(kind, additive):
    att = additive if kind == "additive" else DotProductAttention(4)
    d_q = 3 if kind == "additive" else 4
    query, keys = torch.randn(3, d_q, dtype=DT), torch.randn(3, 5, 4, dtype=DT)
    lengths = torch.tensor([5, 3, 1])
    mask = torch.arange(5)[None, :] < lengths[:, None]  # (B, T_k)
    ctx, w = att(query, keys, mask=mask)
    assert ctx.shape == (3, 4) and w.shape == (3, 5)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, dtype=DT))
    assert (w[~mask] == 0).all() and (w[mask] > 0).all()
    # values default to keys
    torch.testing.assert_close(ctx, (w[:, :, None] * keys).sum(1))


@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_2d_and_3d_query_agree(kind, additive):
    att = additive if kind == "additive" else DotProductAttention(4, scaled=False)
    d_q = 3 if kind == "additive" else 4
    query = torch.randn(2, d_q, dtype=DT)
    keys, values = torch.randn(2, 5, 4, dtype=DT), torch.randn(2, 5, 7, dtype=DT)
    mask = torch.tensor([[True, True, False, True, True], [True, False, False, False, False]])
    ctx2, w2 = att(query, keys, values, mask)
    ctx3, w3 = att(query[:, None, :], keys, values, mask)
    assert ctx2.shape == (2, 7) and w2.shape == (2, 5)
    assert ctx3.shape == (2, 1, 7) and w3.shape == (2, 1, 5)
    torch.testing.assert_close(ctx3[:, 0], ctx2, rtol=0, atol=0)
    torch.testing.assert_close(w3[:, 0], w2, rtol=0, atol=0)


def test_additive_hand_computed():
    # 1-unit everything: score_j = v * tanh(w_q * q + w_k * k_j) = tanh(q + k_j).
    att = AdditiveAttention(1, 1, 1).to(DT)
    with torch.no_grad():
        att.W_q.weight.fill_(1.0)
        att.W_k.weight.fill_(1.0)
        att.v.weight.fill_(1.0)
    query = torch.tensor([[0.0]], dtype=DT)
    keys = torch.tensor([[[0.0], [1.0]]], dtype=DT)
    values = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=DT)
    ctx, w = att(query, keys, values)
    e = math.exp(math.tanh(1.0))  # scores are tanh(0) = 0 and tanh(1) = 0.7616
    expected = torch.tensor([[1 / (1 + e), e / (1 + e)]], dtype=DT)  # [0.3183, 0.6817]
    torch.testing.assert_close(w, expected)
    torch.testing.assert_close(ctx, expected)  # values are the identity
    assert round(w[0, 0].item(), 4) == 0.3183


def test_dot_product_hand_computed():
    # COURSE.md 04, example 4: q = [1, 1], k1 = [1, 0], k2 = [0, 2].
    query = torch.tensor([[1.0, 1.0]], dtype=DT)
    keys = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], dtype=DT)
    _, w = DotProductAttention(2)(query, keys)
    torch.testing.assert_close(w, torch.tensor([[0.330, 0.670]], dtype=DT), rtol=0, atol=5e-4)
    _, w_unscaled = DotProductAttention(2, scaled=False)(query, keys)
    e = math.e  # softmax([1, 2]) = [1, e] / (1 + e)
    torch.testing.assert_close(w_unscaled, torch.tensor([[1 / (1 + e), e / (1 + e)]], dtype=DT))


def test_dot_product_equals_sdpa():
    query, keys, values = (torch.randn(2, 3, 4, dtype=DT), torch.randn(2, 5, 4, dtype=DT),
                           torch.randn(2, 5, 6, dtype=DT))
    mask = torch.rand(2, 3, 5) > 0.3
    mask[..., 0] = True
    ctx, w = DotProductAttention(4)(query, keys, values, mask)
    ref_ctx, ref_w = scaled_dot_product_attention(query, keys, values, mask)
    torch.testing.assert_close(ctx, ref_ctx, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(w, ref_w, rtol=1e-12, atol=1e-12)
    ctx1, _ = DotProductAttention(4, scaled=False)(query, keys, values, mask)
    torch.testing.assert_close(ctx1, scaled_dot_product_attention(
        query, keys, values, mask, scale=1.0)[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ctx, F.scaled_dot_product_attention(
        query, keys, values, attn_mask=mask), rtol=1e-12, atol=1e-12)


def test_additive_gradcheck(additive):
    query = torch.randn(2, 3, dtype=DT, requires_grad=True)
    keys = torch.randn(2, 4, 4, dtype=DT, requires_grad=True)
    mask = torch.tensor([[True, True, True, False], [False, False, False, False]])
    assert torch.autograd.gradcheck(lambda q, k: additive(q, k, mask=mask), (query, keys))
    ctx, w = additive(query, keys, mask=mask)
    assert (w[1] == 0).all() and (ctx[1] == 0).all()  # nothing to attend to: zeros, no NaN


# ---------------------------------------------------------------- bad inputs


def test_bad_feature_sizes():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 3), torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match="feature sizes differ"):
        scaled_dot_product_attention(q, k, v)


def test_bad_key_value_lengths():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 6, 4)
    with pytest.raises(ValueError, match="same length T_k"):
        scaled_dot_product_attention(q, k, v)


def test_bad_mask_not_boolean():
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match="boolean"):
        scaled_dot_product_attention(q, q, q, torch.ones(3, 3))


def test_bad_mask_not_a_tensor():
    q = torch.randn(2, 3, 4)
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        scaled_dot_product_attention(q, q, q, [[True] * 3] * 3)


def test_bad_mask_does_not_broadcast():
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"does not broadcast .* \(2, 3, 3\)"):
        scaled_dot_product_attention(q, q, q, causal_mask(4))


@pytest.mark.parametrize("t", [0.0, -1.0, float("nan")])
def test_bad_temperature(t):
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        scaled_dot_product_attention(q, q, q, temperature=t)


@pytest.mark.parametrize("p", [-0.1, 1.0])
def test_bad_dropout(p):
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="dropout_p"):
        scaled_dot_product_attention(q, q, q, dropout_p=p)


def test_bad_dims():
    with pytest.raises(ValueError, match="at least 2 dims"):
        scaled_dot_product_attention(torch.randn(4), torch.randn(3, 4), torch.randn(3, 4))


def test_bad_batch_dims():
    q, k = torch.randn(2, 3, 4), torch.randn(3, 5, 4)
    with pytest.raises(ValueError, match="batch dimensions"):
        scaled_dot_product_attention(q, k, k)


def test_additive_bad_inputs(additive):
    keys = torch.randn(2, 5, 4, dtype=DT)
    with pytest.raises(ValueError, match="query features 3"):
        additive(torch.randn(2, 4, dtype=DT), keys)
    with pytest.raises(ValueError, match=r"expected query \(B, d_q\)"):
        additive(torch.randn(2, 1, 1, 3, dtype=DT), keys)
    with pytest.raises(ValueError, match="batch and length must agree"):
        additive(torch.randn(3, 3, dtype=DT), keys)
    with pytest.raises(ValueError, match="boolean"):
        additive(torch.randn(2, 3, dtype=DT), keys, mask=torch.ones(2, 5))
    with pytest.raises(ValueError, match="does not broadcast"):
        additive(torch.randn(2, 3, dtype=DT), keys, mask=torch.ones(2, 4, dtype=torch.bool))


def test_dot_product_bad_sizes():
    with pytest.raises(ValueError, match="query features 4 and key features 4"):
        DotProductAttention(4)(torch.randn(2, 3), torch.randn(2, 5, 4))
