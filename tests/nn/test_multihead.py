"""minitx.nn.attention.MultiHeadAttention against nn.MultiheadAttention, masks, edge cases."""

from __future__ import annotations

import pytest
import torch
from parity import assert_same_outputs_and_grads, matched_parameters
from torch import nn

from minitx.nn.attention import MultiHeadAttention
from minitx.nn.masks import causal_mask, combine_masks, padding_mask

TOL = {"rtol": 1e-10, "atol": 1e-12}
SHAPES = [(2, 5, 8, 2), (3, 7, 12, 3), (1, 1, 4, 4), (4, 9, 16, 1)]  # (B, T, d_model, h)


def _pair(d_model: int, h: int, seed: int, bias: bool = True):
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(d_model, h, bias=bias, batch_first=True, dtype=torch.float64)
    if bias:  # PyTorch zero-initialises biases; random ones test that they are copied
        with torch.no_grad():
            theirs.in_proj_bias.normal_()
            theirs.out_proj.bias.normal_()
    return theirs, MultiHeadAttention.from_torch(theirs)


def _lengths(B: int, T: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, T + 1, (B,), generator=g).tolist()


def _masks(kind: str, B: int, T: int, seed: int):
    """(our mask, our is_causal, torch attn_mask, torch key_padding_mask, torch is_causal)."""
    if kind == "none":
        return None, False, None, None, False
    if kind == "causal":
        return None, True, ~causal_mask(T), None, True
    if kind == "causal_explicit":
        return causal_mask(T), False, ~causal_mask(T), None, False
    pad = padding_mask(_lengths(B, T, seed), T)  # (B, 1, 1, T)
    if kind == "padding":
        return pad, False, None, ~pad[:, 0, 0, :], False
    if kind == "combined":
        ours = combine_masks(pad, causal_mask(T))
        return ours, False, ~causal_mask(T), ~pad[:, 0, 0, :], False
    if kind == "padding_and_is_causal":
        return pad, True, ~causal_mask(T), ~pad[:, 0, 0, :], False
    raise AssertionError(kind)


PARAM_NAMES = {
    "in_proj.weight": "in_proj_weight",
    "in_proj.bias": "in_proj_bias",
    "out_proj.weight": "out_proj.weight",
    "out_proj.bias": "out_proj.bias",
}
MASK_KINDS = ["none", "causal", "causal_explicit", "padding", "combined", "padding_and_is_causal"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_from_torch_matches_forward_and_gradients(shape, kind, need_weights, seed):
    B, T, d, h = shape
    theirs, ours = _pair(d, h, seed)
    x = torch.randn(B, T, d, dtype=torch.float64, requires_grad=True)
    mask, is_causal, attn_mask, kpm, t_causal = _masks(kind, B, T, seed)
    (_, w_ours), _ = assert_same_outputs_and_grads(
        lambda x: ours(x, mask=mask, need_weights=need_weights, is_causal=is_causal),
        lambda x: theirs(
            x, x, x, attn_mask=attn_mask, key_padding_mask=kpm, is_causal=t_causal,
            need_weights=need_weights, average_attn_weights=False,
        ),
        [x],
        matched_parameters(ours, theirs, PARAM_NAMES),
        **TOL,
    )
    assert need_weights or w_ours is None


@pytest.mark.parametrize("kind", ["none", "padding"])
def test_cross_attention_matches_torch(kind):
    B, T_q, T_k, d, h = 3, 4, 6, 12, 3
    theirs, ours = _pair(d, h, seed=1)
    q = torch.randn(B, T_q, d, dtype=torch.float64)
    kv = torch.randn(B, T_k, d, dtype=torch.float64)
    pad = padding_mask([6, 2, 5], T_k) if kind == "padding" else None
    kpm = None if pad is None else ~pad[:, 0, 0, :]
    y_ours, w_ours = ours(q, kv, kv, mask=pad, need_weights=True)
    y_theirs, w_theirs = theirs(q, kv, kv, key_padding_mask=kpm, average_attn_weights=False)
    torch.testing.assert_close(y_ours, y_theirs, **TOL)
    torch.testing.assert_close(w_ours, w_theirs, **TOL)
    assert w_ours.shape == (B, h, T_q, T_k)


def test_no_bias_matches_torch():
    theirs, ours = _pair(8, 2, seed=0, bias=False)
    assert ours.in_proj.bias is None and ours.out_proj.bias is None
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(ours(x)[0], theirs(x, x, x)[0], **TOL)


@pytest.mark.parametrize("kind", MASK_KINDS)
def test_need_weights_and_fast_path_agree(kind):
    B, T, d, h = 3, 6, 16, 4
    _, ours = _pair(d, h, seed=2)
    mask, is_causal, *_ = _masks(kind, B, T, seed=2)
    x = torch.randn(B, T, d, dtype=torch.float64, requires_grad=True)
    y_fast, w_none = ours(x, mask=mask, is_causal=is_causal)
    y_slow, w = ours(x, mask=mask, is_causal=is_causal, need_weights=True)
    assert w_none is None
    torch.testing.assert_close(y_fast, y_slow, **TOL)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, h, T, dtype=torch.float64), **TOL)
    (g_fast,) = torch.autograd.grad(y_fast.sum(), x)
    (g_slow,) = torch.autograd.grad(y_slow.sum(), x)
    torch.testing.assert_close(g_fast, g_slow, **TOL)


def test_causal_weights_are_lower_triangular():
    _, ours = _pair(8, 2, seed=0)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    _, w = ours(x, need_weights=True, is_causal=True)
    upper = torch.ones(5, 5, dtype=torch.bool).triu(1)
    assert torch.all(w[..., upper] == 0)
    assert torch.all(w[..., ~upper] > 0)


@pytest.mark.parametrize("need_weights", [False, True])
def test_fully_masked_rows_give_zero_weights_and_no_nan(need_weights):
    B, T, d, h = 2, 4, 8, 2
    _, ours = _pair(d, h, seed=3)
    x = torch.randn(B, T, d, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(B, 1, T, T, dtype=torch.bool)
    mask[0, :, 1, :] = False  # query 1 of sequence 0 may attend to nothing
    y, w = ours(x, mask=mask, need_weights=need_weights)
    assert not torch.isnan(y).any()
    # Nothing attended: the head outputs are 0, so the row is just the output bias.
    torch.testing.assert_close(y[0, 1], ours.out_proj.bias.detach(), **TOL)
    if need_weights:
        assert torch.all(w[0, :, 1, :] == 0)
        torch.testing.assert_close(w[0, :, 0].sum(-1), torch.ones(h, dtype=torch.float64))
    y.sum().backward()
    assert not torch.isnan(x.grad).any()
    assert all(not torch.isnan(p.grad).any() for p in ours.parameters())


@pytest.mark.parametrize("kind", ["none", "causal", "combined"])
@pytest.mark.parametrize("need_weights", [False, True])
def test_gradcheck(kind, need_weights):
    B, T, d, h = 2, 3, 4, 2
    _, ours = _pair(d, h, seed=4)
    mask, is_causal, *_ = _masks(kind, B, T, seed=4)
    x = torch.randn(B, T, d, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(B, T, d, dtype=torch.float64, requires_grad=True)

    def f(q, k):
        return ours(q, k, k, mask=mask, need_weights=need_weights, is_causal=is_causal)[0]

    def g(q):  # self-attention: the fused in_proj path
        return ours(q, mask=mask, need_weights=need_weights, is_causal=is_causal)[0]

    assert torch.autograd.gradcheck(f, (x, kv))
    assert torch.autograd.gradcheck(g, (x,))


@pytest.mark.parametrize("need_weights", [False, True])
def test_large_logits_stay_finite(need_weights):
    d, h, T = 8, 2, 6
    ours = MultiHeadAttention(d, h)
    with torch.no_grad():
        ours.in_proj.weight.copy_(torch.eye(d).repeat(3, 1) * 100.0)
    x = torch.randn(2, T, d)
    q = ours.in_proj(x)[..., :d].view(2, T, h, d // h).transpose(1, 2)
    scores = q @ q.transpose(-2, -1) / (d // h) ** 0.5
    assert scores.abs().max() > 1e4  # the regime this test is about
    y, w = ours(x, need_weights=need_weights, is_causal=True)
    assert torch.isfinite(y).all()
    if need_weights:
        assert torch.isfinite(w).all()
        torch.testing.assert_close(w.sum(-1), torch.ones(2, h, T))


def test_from_torch_rejects_other_modules():
    with pytest.raises(TypeError, match="MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(4, 4))
    with pytest.raises(ValueError, match="batch_first"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(4, 2))


def test_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match="d_model=10, n_heads=3"):
        MultiHeadAttention(10, 3)


def test_bad_mask_shape():
    ours = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"a 2-D mask is \(T_q, T_k\) = \(5, 5\), got \(3, 5\)"):
        ours(torch.randn(2, 5, 8), mask=torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="does not broadcast"):
        ours(torch.randn(2, 5, 8), mask=torch.ones(3, 1, 5, dtype=torch.bool))


def test_key_padding_mask_equals_pytorchs_with_the_convention_flipped():
    torch.manual_seed(3)
    B, T, C, nh = 3, 5, 8, 2
    ref = nn.MultiheadAttention(C, nh, batch_first=True, dtype=torch.float64)
    ours = MultiHeadAttention.from_torch(ref)
    x = torch.randn(B, T, C, dtype=torch.float64)
    real = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for kwargs, torch_kwargs in (({}, {}), ({"mask": causal}, {"attn_mask": ~causal})):
        y, w = ours(x, key_padding_mask=real, need_weights=True, **kwargs)
        y_ref, w_ref = ref(x, x, x, key_padding_mask=~real, need_weights=True,
                           average_attn_weights=False, **torch_kwargs)
        torch.testing.assert_close(y, y_ref, rtol=0, atol=1e-12)
        torch.testing.assert_close(w, w_ref, rtol=0, atol=1e-12)
        torch.testing.assert_close(ours(x, key_padding_mask=real, **kwargs)[0], y_ref,
                                   rtol=0, atol=1e-12)  # the fused path too
    assert (w[1, :, :, 3:] == 0).all() and (w[2, :, :, 1:] == 0).all()


def test_a_padding_mask_passed_as_mask_is_refused_even_when_shapes_could_match():
    attn = MultiHeadAttention(8, 2)
    x = torch.randn(4, 6, 8)  # B = 4, T = 6
    pads = torch.ones(4, 6, dtype=torch.bool)  # (B, T_k): not a (T_q, T_k) mask
    with pytest.raises(ValueError, match=r"goes in key_padding_mask"):
        attn(x, mask=pads)
    with pytest.raises(ValueError, match=r"key_padding_mask must be a bool \(B, T_k\)"):
        attn(x, key_padding_mask=pads.float())
    with pytest.raises(ValueError, match=r"key_padding_mask must be a bool \(B, T_k\)"):
        attn(x, key_padding_mask=pads[:, :5])
