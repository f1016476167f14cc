"""minitx.nn.transformer: positions, LayerNorm, feed-forward and blocks against PyTorch."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from parity import assert_same_outputs_and_grads, matched_parameters
from torch import nn

from minitx.nn.masks import causal_mask, combine_masks, padding_mask
from minitx.nn.transformer import (
    DecoderBlock,
    FeedForward,
    LayerNorm,
    LearnedPositions,
    TransformerBlock,
    sinusoidal_positions,
)

TOL = {"rtol": 1e-10, "atol": 1e-12}
F64 = torch.float64


def _randomise(module: nn.Module, seed: int) -> None:
    """Random values everywhere (PyTorch starts norms at 1/0 and attention biases at 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.5)


# ----------------------------------------------------------------------------- positions


def test_sinusoidal_positions_follow_the_formula():
    T, d = 7, 6
    pe = sinusoidal_positions(T, d, dtype=F64)
    assert pe.shape == (T, d) and pe.dtype == F64
    for pos in range(T):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-14)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-14)


def test_sinusoidal_positions_first_row_and_odd_width():
    pe = sinusoidal_positions(4, 5)
    assert pe.shape == (4, 5) and pe.dtype == torch.float32
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0]))
    assert pe[3, 4].item() == pytest.approx(math.sin(3 / 10000 ** (4 / 5)), abs=1e-7)
    assert pe.abs().max() <= 1.0


@pytest.mark.parametrize("args", [(0, 4), (4, 0), (2.5, 4), (True, 4)])
def test_sinusoidal_positions_bad_sizes(args):
    with pytest.raises(ValueError, match="int >= 1"):
        sinusoidal_positions(*args)


def test_learned_positions():
    pos = LearnedPositions(8, 4)
    assert torch.equal(pos(5), pos.weight[:5])
    assert pos(8).shape == (8, 4)
    pos(3).sum().backward()
    assert torch.equal(pos.weight.grad[:3], torch.ones(3, 4))
    assert torch.equal(pos.weight.grad[3:], torch.zeros(5, 4))
    with pytest.raises(ValueError, match=r"block_size=8\], got 9"):
        pos(9)


# ----------------------------------------------------------------------------- LayerNorm


@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 16), (4, 1, 2, 7), (1, 1)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layernorm_matches_torch(shape, bias, fused, seed):
    torch.manual_seed(seed)
    theirs = nn.LayerNorm(shape[-1], eps=1e-5, bias=bias, dtype=F64)
    _randomise(theirs, seed)
    ours = LayerNorm.from_torch(theirs, fused=fused)
    assert ours.fused is fused and (ours.bias is None) == (not bias)
    x = (torch.randn(shape, dtype=F64) * 3 + 2).requires_grad_()
    names = {"weight": "weight", "bias": "bias"} if bias else {"weight": "weight"}
    assert_same_outputs_and_grads(ours, theirs, [x], matched_parameters(ours, theirs, names), **TOL)


def test_layernorm_output_has_zero_mean_unit_variance():
    x = torch.randn(4, 32, dtype=F64) * 5 - 3
    y = LayerNorm(32).double()(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4, dtype=F64), atol=1e-12, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(4, dtype=F64), atol=1e-5,
                               rtol=0)


def test_layernorm_eps_is_copied():
    theirs = nn.LayerNorm(6, eps=1e-3, dtype=F64)
    ours = LayerNorm.from_torch(theirs)
    assert ours.eps == 1e-3
    x = torch.randn(3, 6, dtype=F64) * 1e-2  # small variance: eps matters
    torch.testing.assert_close(ours(x), theirs(x), **TOL)


def test_layernorm_fused_and_explicit_agree_in_float32():
    ln = LayerNorm(64)
    _randomise(ln, 0)
    x = torch.randn(8, 16, 64)
    ln.fused = True
    y_fused = ln(x)
    ln.fused = False
    torch.testing.assert_close(ln(x), y_fused, rtol=1e-5, atol=1e-5)


def test_layernorm_errors():
    with pytest.raises(TypeError, match=r"nn\.LayerNorm, got Linear"):
        LayerNorm.from_torch(nn.Linear(3, 3))
    with pytest.raises(ValueError, match="normalized_shape=\\(2, 3\\)"):
        LayerNorm.from_torch(nn.LayerNorm([2, 3]))
    with pytest.raises(ValueError, match="elementwise_affine=False"):
        LayerNorm.from_torch(nn.LayerNorm(3, elementwise_affine=False))
    with pytest.raises(ValueError, match=r"d_model=4\), got \(2, 5\)"):
        LayerNorm(4)(torch.randn(2, 5))
    with pytest.raises(ValueError, match="eps must be > 0"):
        LayerNorm(4, eps=0.0)


# ----------------------------------------------------------------------------- feed-forward


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feedforward_is_linear_activation_linear(activation):
    ffn = FeedForward(6, 24, activation=activation).double()
    x = torch.randn(2, 3, 6, dtype=F64)
    act = F.relu if activation == "relu" else F.gelu
    expected = ffn.fc2.weight @ act(ffn.fc1.weight @ x[..., None] + ffn.fc1.bias[:, None])
    torch.testing.assert_close(ffn(x), expected[..., 0] + ffn.fc2.bias, **TOL)
    # Position-wise: each position is transformed on its own.
    torch.testing.assert_close(ffn(x)[:, 1], ffn(x[:, 1:2])[:, 0], **TOL)


def test_feedforward_errors():
    with pytest.raises(ValueError, match=r"\['gelu', 'relu', 'relu2'\], got 'tanh'"):
        FeedForward(4, 8, activation="tanh")
    with pytest.raises(ValueError, match="dropout must be in"):
        FeedForward(4, 8, dropout=1.0)


# ----------------------------------------------------------------------------- encoder block

BLOCK_NAMES = {
    "attn.in_proj.weight": "self_attn.in_proj_weight",
    "attn.in_proj.bias": "self_attn.in_proj_bias",
    "attn.out_proj.weight": "self_attn.out_proj.weight",
    "attn.out_proj.bias": "self_attn.out_proj.bias",
    "ffn.fc1.weight": "linear1.weight",
    "ffn.fc1.bias": "linear1.bias",
    "ffn.fc2.weight": "linear2.weight",
    "ffn.fc2.bias": "linear2.bias",
    "norm1.weight": "norm1.weight",
    "norm1.bias": "norm1.bias",
    "norm2.weight": "norm2.weight",
    "norm2.bias": "norm2.bias",
}


def _encoder_pair(d, h, d_ff, activation, norm_first, seed, causal=False, dropout=0.0):
    torch.manual_seed(seed)
    theirs = nn.TransformerEncoderLayer(
        d, h, d_ff, dropout=dropout, activation=activation, batch_first=True,
        norm_first=norm_first, dtype=F64,
    )
    _randomise(theirs, seed)
    return theirs, TransformerBlock.from_torch(theirs, causal=causal)


def _block_masks(kind: str, B: int, T: int, seed: int):
    """(our mask, our causal flag, torch src_mask, torch key padding mask, torch is_causal)."""
    g = torch.Generator().manual_seed(seed)
    pad = padding_mask(torch.randint(1, T + 1, (B,), generator=g).tolist(), T)
    causal_blocked = ~causal_mask(T)  # PyTorch: True = blocked
    return {
        "none": (None, False, None, None, False),
        "causal": (None, True, causal_blocked, None, True),
        "causal_as_mask": (causal_mask(T), False, causal_blocked, None, False),
        "padding": (pad, False, None, ~pad[:, 0, 0, :], False),
        "padding_and_causal": (pad, True, causal_blocked, ~pad[:, 0, 0, :], False),
        "combined_mask": (combine_masks(pad, causal_mask(T)), False, causal_blocked,
                          ~pad[:, 0, 0, :], False),
    }[kind]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize(
    "kind", ["none", "causal", "causal_as_mask", "padding", "padding_and_causal", "combined_mask"]
)
@pytest.mark.parametrize("shape", [(2, 5, 8, 2, 16), (3, 7, 12, 3, 20), (1, 1, 4, 1, 4)])
@pytest.mark.parametrize("seed", [0, 1])
def test_block_matches_torch_encoder_layer(norm_first, activation, kind, shape, seed):
    B, T, d, h, d_ff = shape
    mask, causal, src_mask, kpm, is_causal = _block_masks(kind, B, T, seed)
    theirs, ours = _encoder_pair(d, h, d_ff, activation, norm_first, seed, causal=causal)
    assert ours.norm_first is norm_first and ours.ffn.activation == activation
    assert_same_outputs_and_grads(
        lambda x: ours(x, mask=mask)[0],
        lambda x: theirs(x, src_mask=src_mask, src_key_padding_mask=kpm, is_causal=is_causal),
        [torch.randn(B, T, d, dtype=F64, requires_grad=True)],
        matched_parameters(ours, theirs, BLOCK_NAMES),
        **TOL,
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_block_matches_torch_in_eval_mode_with_dropout(norm_first):
    theirs, ours = _encoder_pair(8, 2, 16, "gelu", norm_first, seed=0, dropout=0.3)
    assert ours.dropout1.p == ours.ffn.dropout.p == ours.attn.dropout == 0.3
    theirs.eval()
    ours.eval()
    x = torch.randn(2, 5, 8, dtype=F64)
    with torch.no_grad():  # also lets PyTorch take its own fused inference path
        torch.testing.assert_close(ours(x)[0], theirs(x), **TOL)


def test_block_dropout_is_active_in_training():
    block = TransformerBlock(8, 2, 16, dropout=0.5).double()
    x = torch.randn(2, 5, 8, dtype=F64)
    assert not torch.equal(block(x)[0], block(x)[0])
    block.eval()
    assert torch.equal(block(x)[0], block(x)[0])


@pytest.mark.parametrize("norm_first", [False, True])
def test_block_attention_weights(norm_first):
    theirs, ours = _encoder_pair(8, 2, 16, "relu", norm_first, seed=1, causal=True)
    x = torch.randn(3, 6, 8, dtype=F64)
    y, w = ours(x, need_weights=True)
    y_fused, none = ours(x)
    assert none is None
    torch.testing.assert_close(y, y_fused, **TOL)
    assert w.shape == (3, 2, 6, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 2, 6, dtype=F64), **TOL)
    assert torch.all(w.triu(1) == 0)
    attn_in = theirs.norm1(x) if norm_first else x
    _, w_theirs = theirs.self_attn(attn_in, attn_in, attn_in, attn_mask=~causal_mask(6),
                                   average_attn_weights=False)
    torch.testing.assert_close(w, w_theirs, **TOL)


def test_pre_ln_and_post_ln_differ():
    """The norm placement matters: same weights, different functions."""
    post, _ = _encoder_pair(8, 2, 16, "gelu", False, seed=0)
    pre = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True,
                                     activation="gelu", dtype=F64)
    pre.load_state_dict(post.state_dict())
    x = torch.randn(2, 4, 8, dtype=F64)
    ours_post, ours_pre = TransformerBlock.from_torch(post), TransformerBlock.from_torch(pre)
    y_post, y_pre = ours_post(x)[0], ours_pre(x)[0]
    assert not torch.allclose(y_post, y_pre)
    # Post-LN output is normalised per position; pre-LN output is not.
    torch.testing.assert_close(
        ((y_post - ours_post.norm2.bias) / ours_post.norm2.weight).mean(-1),
        torch.zeros(2, 4, dtype=F64), atol=1e-10, rtol=0,
    )


def test_block_without_bias_matches_torch():
    theirs = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, bias=False,
                                        dtype=F64)
    _randomise(theirs, 0)
    ours = TransformerBlock.from_torch(theirs)
    x = torch.randn(2, 4, 8, dtype=F64)
    torch.testing.assert_close(ours(x)[0], theirs(x), **TOL)
    assert all(not n.endswith("bias") for n, _ in ours.named_parameters())


def test_block_from_torch_errors():
    with pytest.raises(TypeError, match="TransformerEncoderLayer, got TransformerDecoderLayer"):
        TransformerBlock.from_torch(nn.TransformerDecoderLayer(8, 2, batch_first=True))
    with pytest.raises(ValueError, match="batch_first=True"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(8, 2))
    with pytest.raises(ValueError, match="relu or \\(exact\\) gelu"):
        TransformerBlock.from_torch(
            nn.TransformerEncoderLayer(8, 2, activation=torch.tanh, batch_first=True)
        )
    with pytest.raises(ValueError, match="relu or \\(exact\\) gelu"):
        TransformerBlock.from_torch(
            nn.TransformerEncoderLayer(8, 2, activation=nn.GELU("tanh"), batch_first=True)
        )


def test_block_errors():
    with pytest.raises(ValueError, match="d_model=10, n_heads=3"):
        TransformerBlock(10, 3, 16)
    with pytest.raises(ValueError, match=r"\(B, T, d_model=8\), got \(2, 8\)"):
        TransformerBlock(8, 2, 16)(torch.randn(2, 8))
    with pytest.raises(ValueError, match=r"d_model=8\), got \(2, 3, 6\)"):
        TransformerBlock(8, 2, 16)(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="dropout must be in"):
        TransformerBlock(8, 2, 16, dropout=-0.1)


# ----------------------------------------------------------------------------- decoder block

DECODER_NAMES = {
    **{k.replace("attn.", "self_attn."): v for k, v in BLOCK_NAMES.items() if "attn" in k},
    **{k.replace("attn.", "cross_attn."): v.replace("self_attn.", "multihead_attn.")
       for k, v in BLOCK_NAMES.items() if "attn" in k},
    **{k: v for k, v in BLOCK_NAMES.items() if "attn" not in k},
    "norm3.weight": "norm3.weight",
    "norm3.bias": "norm3.bias",
}


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masks", ["causal", "causal+padding"])
@pytest.mark.parametrize("shape", [(2, 5, 6, 8, 2, 16), (3, 4, 9, 12, 3, 24)])
@pytest.mark.parametrize("seed", [0, 1])
def test_decoder_block_matches_torch(norm_first, activation, masks, shape, seed):
    B, T, S, d, h, d_ff = shape
    torch.manual_seed(seed)
    theirs = nn.TransformerDecoderLayer(
        d, h, d_ff, dropout=0.0, activation=activation, batch_first=True,
        norm_first=norm_first, dtype=F64,
    )
    _randomise(theirs, seed)
    ours = DecoderBlock.from_torch(theirs)
    x = torch.randn(B, T, d, dtype=F64, requires_grad=True)
    memory = torch.randn(B, S, d, dtype=F64, requires_grad=True)
    tgt_pad = mem_pad = None
    if masks == "causal+padding":
        g = torch.Generator().manual_seed(seed)
        tgt_pad = padding_mask(torch.randint(1, T + 1, (B,), generator=g).tolist(), T)
        mem_pad = padding_mask(torch.randint(1, S + 1, (B,), generator=g).tolist(), S)
    assert_same_outputs_and_grads(
        lambda x, memory: ours(x, memory, mask=tgt_pad, memory_mask=mem_pad)[0],
        lambda x, memory: theirs(
            x, memory, tgt_mask=~causal_mask(T), tgt_is_causal=True,
            tgt_key_padding_mask=None if tgt_pad is None else ~tgt_pad[:, 0, 0, :],
            memory_key_padding_mask=None if mem_pad is None else ~mem_pad[:, 0, 0, :],
        ),
        [x, memory],
        matched_parameters(ours, theirs, DECODER_NAMES),
        **TOL,
    )


def test_decoder_block_weights_and_causality():
    block = DecoderBlock(8, 2, 16).double()
    x = torch.randn(2, 5, 8, dtype=F64)
    memory = torch.randn(2, 7, 8, dtype=F64)
    y, (w_self, w_cross) = block(x, memory, need_weights=True)
    y_fused, none = block(x, memory)
    assert none is None
    torch.testing.assert_close(y, y_fused, **TOL)
    assert w_self.shape == (2, 2, 5, 5) and w_cross.shape == (2, 2, 5, 7)
    assert torch.all(w_self.triu(1) == 0)
    assert torch.all(w_cross > 0)  # cross-attention sees the whole source
    # Changing a later target token leaves earlier outputs as they were.
    x2 = x.clone()
    x2[:, 3:] = torch.randn(2, 2, 8, dtype=F64)
    y2, _ = block(x2, memory)
    torch.testing.assert_close(y2[:, :3], y[:, :3], **TOL)
    assert not torch.allclose(y2[:, 3:], y[:, 3:])


def test_decoder_block_errors():
    with pytest.raises(TypeError, match="TransformerDecoderLayer, got TransformerEncoderLayer"):
        DecoderBlock.from_torch(nn.TransformerEncoderLayer(8, 2, batch_first=True))
    with pytest.raises(ValueError, match="batch_first=True"):
        DecoderBlock.from_torch(nn.TransformerDecoderLayer(8, 2))
    with pytest.raises(ValueError, match=r"memory must be \(B, T, d_model=8\), got \(2, 8\)"):
        DecoderBlock(8, 2, 16)(torch.randn(2, 3, 8), torch.randn(2, 8))
