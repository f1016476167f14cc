"""Tests for minitx.nn.masks (boolean masks, True = may attend)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitx.nn.attention import masked_softmax
from minitx.nn.masks import (
    MASK_KINDS,
    additive_mask,
    causal_mask,
    check_mask,
    combine_masks,
    mask_of_kind,
    padding_mask,
    sliding_window_mask,
)

# ---------------------------------------------------------------- causal_mask


def test_causal_mask_values():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    expected = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]).bool()
    assert torch.equal(m, expected)


def test_causal_mask_is_j_le_i():
    T = 7
    m = causal_mask(T)
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    assert torch.equal(m, j <= i)
    assert causal_mask(1).tolist() == [[True]]


def test_causal_mask_device():
    assert causal_mask(3, device="cpu").device.type == "cpu"


@pytest.mark.parametrize("T", [0, -2, 2.5, True, "4"])
def test_causal_mask_bad_T(T):
    with pytest.raises(ValueError, match="T >= 1"):
        causal_mask(T)


# ---------------------------------------------------------------- padding_mask


def test_padding_mask_values_and_shape():
    m = padding_mask([3, 1, 0], 4)
    assert m.shape == (3, 1, 1, 4) and m.dtype == torch.bool
    assert m[:, 0, 0].tolist() == [
        [True, True, True, False],
        [True, False, False, False],
        [False, False, False, False],
    ]


def test_padding_mask_accepts_tensor_and_numpy():
    a = padding_mask(torch.tensor([2, 4]), 4)
    b = padding_mask(np.array([2, 4]), 4)
    assert torch.equal(a, b) and a[:, 0, 0].sum(-1).tolist() == [2, 4]


def test_padding_mask_broadcasts_to_scores():
    B, h, T = 2, 3, 5
    m = padding_mask([5, 2], T)
    check_mask(m, (B, h, T, T))
    full = m.expand(B, h, T, T)
    assert full[1, 2, 4].tolist() == [True, True, False, False, False]  # every query row


@pytest.mark.parametrize("lengths", [[5, 6], [-1, 2]])
def test_padding_mask_lengths_out_of_range(lengths):
    with pytest.raises(ValueError, match=r"lengths in \[0, 5\]"):
        padding_mask(lengths, 5)


@pytest.mark.parametrize("lengths", [[[1, 2]], [1.5, 2.0], [True, False]])
def test_padding_mask_bad_lengths(lengths):
    with pytest.raises(ValueError, match="1-D sequence of integer lengths"):
        padding_mask(lengths, 5)


@pytest.mark.parametrize("T", [0, -1, 2.0, True])
def test_padding_mask_bad_T(T):
    with pytest.raises(ValueError, match="T >= 1"):
        padding_mask([1], T)


# ---------------------------------------------------------------- combine_masks


def test_combine_masks_is_logical_and_with_broadcasting():
    T = 4
    m = combine_masks(padding_mask([4, 2], T), causal_mask(T))
    assert m.shape == (2, 1, T, T)
    assert torch.equal(m[0, 0], causal_mask(T))
    assert m[1, 0].tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, False, False],
        [True, True, False, False],
    ]


def test_combine_masks_skips_none():
    c = causal_mask(3)
    assert combine_masks(None, c, None) is c
    assert combine_masks() is None and combine_masks(None) is None


def test_combine_masks_rejects_float():
    with pytest.raises(ValueError, match="boolean"):
        combine_masks(causal_mask(3), torch.ones(3, 3))


# ---------------------------------------------------------------- check_mask


def test_check_mask_accepts_broadcastable():
    check_mask(torch.ones(1, 1, 4, dtype=torch.bool), (2, 3, 5, 4))
    check_mask(causal_mask(4), (2, 3, 4, 4))
    check_mask(torch.ones(2, 3, dtype=torch.bool))  # no shape: dtype only


def test_check_mask_not_a_tensor():
    with pytest.raises(TypeError, match=r"torch\.Tensor of dtype bool, got list"):
        check_mask([[True]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.uint8])
def test_check_mask_not_boolean(dtype):
    with pytest.raises(ValueError, match=f"must be boolean.*{dtype}"):
        check_mask(torch.ones(3, 3, dtype=dtype), (3, 3))


@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 4, 4)])
def test_check_mask_does_not_broadcast(shape):
    # (3, 4) does not fit (1, 4, 4); (2, 1, 4, 4) would grow the scores' shape.
    with pytest.raises(ValueError, match=r"does not broadcast .* shape \(1, 4, 4\)"):
        check_mask(torch.ones(shape, dtype=torch.bool), (1, 4, 4))


# ---------------------------------------------------------------- additive_mask


def test_additive_mask_values():
    a = additive_mask(causal_mask(4))
    assert a.dtype == torch.float32 and a.shape == (4, 4)
    inf = float("-inf")
    assert a[2].tolist() == [0.0, 0.0, 0.0, inf]  # position 3 may not see position 4
    assert torch.equal(torch.isinf(a), ~causal_mask(4))
    assert (a[causal_mask(4)] == 0).all()
    assert additive_mask(causal_mask(2), dtype=torch.float64).dtype == torch.float64


def test_additive_mask_gives_same_softmax_as_masked_softmax():
    s = torch.randn(2, 1, 5, 5, dtype=torch.float64)
    m = combine_masks(padding_mask([5, 3], 5), causal_mask(5))
    via_add = torch.softmax(s + additive_mask(m, torch.float64), -1)
    torch.testing.assert_close(masked_softmax(s, m), via_add, rtol=1e-12, atol=1e-12)


def test_additive_mask_fully_masked_row_gives_nan_in_plain_softmax():
    # Why the package uses masked_softmax: softmax over a row of -inf is NaN.
    m = padding_mask([0], 3)[0, 0]  # (1, 3), nothing allowed
    s = torch.zeros(1, 3)
    assert torch.isnan(torch.softmax(s + additive_mask(m), -1)).all()
    assert (masked_softmax(s, m) == 0).all()


def test_additive_mask_rejects_float():
    with pytest.raises(ValueError, match="boolean"):
        additive_mask(torch.zeros(2, 2))


@pytest.mark.parametrize("mask_type", MASK_KINDS)
def test_mask_of_kind(mask_type):
    mask = mask_of_kind(mask_type, 5, n_real=3)
    causal = causal_mask(5)
    pad = padding_mask([3], 5)[0, 0].expand(5, 5)
    expected = {"none": None, "causal": causal, "padding": pad, "causal+padding": causal & pad}
    if expected[mask_type] is None:
        assert mask is None
    else:
        assert torch.equal(mask, expected[mask_type])
    with pytest.raises(ValueError, match="mask kind must be one of"):
        mask_of_kind("diagonal", 3)


# ---------------------------------------------------------------- sliding_window_mask


@pytest.mark.parametrize(("T", "window"), [(1, 1), (6, 1), (6, 3), (8, 4), (5, 5), (4, 9)])
def test_sliding_window_mask_keeps_the_last_window_positions(T, window):
    m = sliding_window_mask(T, window)
    assert m.dtype == torch.bool and m.shape == (T, T)
    for i in range(T):
        allowed = [j for j in range(T) if m[i, j]]
        assert allowed == list(range(max(0, i - window + 1), i + 1))


def test_sliding_window_mask_is_causal_when_the_window_covers_the_sequence():
    assert torch.equal(sliding_window_mask(7, 7), causal_mask(7))
    assert torch.equal(sliding_window_mask(7, 100), causal_mask(7))
    assert torch.equal(sliding_window_mask(7, 1), torch.eye(7, dtype=torch.bool))


def test_sliding_window_mask_counts_and_attention():
    T, w = 64, 16
    m = sliding_window_mask(T, w)
    assert int(m.sum()) == T * w - w * (w - 1) // 2
    scores = torch.randn(2, T, T)
    weights = masked_softmax(scores, m)
    assert (weights[:, ~m] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, T))


@pytest.mark.parametrize("window", [0, -2, 2.0, True, None])
def test_sliding_window_mask_rejects_a_bad_window(window):
    with pytest.raises(ValueError, match="window >= 1"):
        sliding_window_mask(4, window)


def test_sliding_window_mask_rejects_a_bad_length():
    with pytest.raises(ValueError, match="sequence length T >= 1"):
        sliding_window_mask(0, 2)

