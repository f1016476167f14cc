"""Exercises of notebook 05 (masking): causal and padding masks, by hand.

Expected answers are computed with :mod:`minitx.masks`, :mod:`minitx.attention` and
:mod:`minitx.batches`, never typed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from minitx.attention import MultiHeadAttention, scaled_dot_product_attention
from minitx.batches import random_blocks
from minitx.exercises import close, exercise
from minitx.masks import additive_mask, causal_mask, combine_masks, padding_mask

BE_BRIEF_X = ((1.0, 1.0), (1.0, 0.0))
BE_BRIEF_W_V = ((0.0, 1.0), (1.0, 0.0))


def expected_zeros(n: int = 3) -> list[tuple[int, int]]:
    """(row, column) pairs, counted from 1, of the entries a causal mask forces to 0."""
    blocked = (~causal_mask(n)).nonzero().tolist()
    return [(i + 1, j + 1) for i, j in blocked]


def expected_mask_row(T: int = 5, position: int = 3) -> torch.Tensor:
    """Row of position ``position`` (counted from 1) of the additive causal mask of a
    T-token sequence."""
    return additive_mask(causal_mask(T))[position - 1]


def expected_be_brief(causal: bool = True) -> torch.Tensor:
    """Z of "Be Brief" (W_Q = W_K = I), with or without the causal mask."""
    X = torch.tensor(BE_BRIEF_X, dtype=torch.float64)
    V = X @ torch.tensor(BE_BRIEF_W_V, dtype=torch.float64)
    mask = causal_mask(2) if causal else None
    return scaled_dot_product_attention(X, X, V, mask)[0]


def expected_combined(lengths: tuple[int, ...] = (3, 5), T: int = 5) -> int:
    """Allowed (query, key) pairs of the first sequence under causal + padding masks."""
    mask = combine_masks(causal_mask(T), padding_mask(list(lengths), T))  # (B, 1, T, T)
    return int(mask[0, 0].sum())


def expected_convention() -> str:
    """Which of ``mask`` / ``~mask`` makes ``nn.MultiheadAttention`` agree with minitx."""
    with torch.random.fork_rng(devices=[]):  # leave the learner's random state alone
        torch.manual_seed(0)
        torch_mha = nn.MultiheadAttention(4, 1, batch_first=True, dtype=torch.float64)
        x = torch.randn(1, 3, 4, dtype=torch.float64)
        ours_mha = MultiHeadAttention.from_torch(torch_mha)  # its init draws numbers too
    mask = causal_mask(3)
    ours, _ = ours_mha(x, mask=mask)
    for name, candidate in (("mask", mask), ("~mask", ~mask)):
        theirs, _ = torch_mha(x, x, x, attn_mask=candidate, need_weights=False)
        if torch.allclose(ours, theirs, atol=1e-12):
            return name
    raise RuntimeError("neither mask nor ~mask reproduces minitx: conventions changed?")


def expected_visible_targets(T: int = 8) -> int:
    """Positions of a training window whose target sits in the window's own input."""
    data = torch.arange(100)  # all tokens distinct: finding a target means finding *it*
    x, y = random_blocks(data, T, 1, torch.Generator().manual_seed(0))
    return sum(int(y[0, t].item() in x[0].tolist()) for t in range(T))


@exercise(
    "05.zeros",
    "A causal mask is applied to the 3 x 3 attention matrix A of a 3-token sequence. Which "
    "entries of A are always 0? Give their (row, column) positions, counting from 1, as a "
    "list of pairs, e.g. [(1, 1), (3, 2)].",
)
def _zeros(answer: Any) -> str | None:
    pairs = {tuple(int(v) for v in pair) for pair in answer}
    if any(len(p) != 2 for p in pairs):
        return "give each position as a pair (row, column)"
    expected = set(expected_zeros())
    if pairs == {(i - 1, j - 1) for i, j in expected}:
        return "close: count rows and columns from 1, not from 0"
    if any(i == j for i, j in pairs):
        return "the diagonal is never blocked: a token may always look at itself"
    if pairs == {(j, i) for i, j in expected}:
        return "you have the transpose: rows are queries, columns keys; what may row 1 see?"
    if pairs != expected:
        return ("row i is query i; the causal mask blocks every key that comes after the "
                "query")
    return None


@exercise(
    "05.mask_row",
    "Give the row of position 3 (counting from 1) in the additive causal mask of a "
    "5-token sequence: the numbers added to that row of scores before the softmax, as a "
    "list (write minus infinity as float('-inf')).",
)
def _mask_row(answer: Any) -> str | None:
    got = np.asarray([float(a) for a in answer], dtype=float)
    expected = expected_mask_row().numpy()
    if got.shape != expected.shape:
        return f"the row has one entry per key: {expected.size}, got {got.size}"
    if np.all(np.isin(got, (0.0, 1.0))):
        return "that is the boolean mask; the additive mask holds 0 and -inf"
    if np.any(np.isfinite(got) & (got != 0)):
        return "every entry is either 0 (may attend) or -inf (blocked)"
    if not np.array_equal(got, expected):
        return "position 3 may attend to positions 1, 2 and 3, and to nothing after"
    return None


@exercise(
    "05.z2",
    "'Be Brief' with a causal mask: X = [[1, 1], [1, 0]], W_Q = W_K = I, W_V = [[0, 1], "
    "[1, 0]]. Z_1 = [1, 1]. Give Z_2, the output of 'Brief', to two decimals, as a list.",
)
def _z2(answer: Any) -> str | None:
    Z = expected_be_brief()
    if len(answer) != Z.size(1):
        return f"Z_2 has {Z.size(1)} entries, like a value vector; got {len(answer)}"
    if close(answer, Z[0], atol=0.011):
        return "that is Z_1; Z_2 is the row of the second token"
    if not close(answer, Z[1], atol=0.011):
        return ("the last token may see every token, so its weights are the ones it had "
                "without a mask; then Z_2 = a_21 v_1 + a_22 v_2")
    return None


@exercise(
    "05.combined",
    "A batch holds sequences of lengths 3 and 5, padded to T = 5. Combine the causal mask "
    "with the padding mask. For the first sequence, how many (query, key) pairs of its "
    "5 x 5 mask may attend?",
)
def _combined(answer: Any) -> str | None:
    if isinstance(answer, bool) or not float(answer).is_integer():
        return "answer with a whole number of pairs"
    got = int(answer)
    causal_only = int(causal_mask(5).sum())
    padding_only = int(padding_mask([3], 5).expand(1, 1, 5, 5).sum())
    if got == causal_only:
        return "that is the causal mask alone; the padding blocks some keys as well"
    if got == padding_only:
        return "that is the padding mask alone; the causal mask blocks the future as well"
    if got != expected_combined():
        return "a pair is allowed only if both masks allow it: key <= query and key < 3"
    return None


@exercise(
    "05.convention",
    "`mask` follows the minitx convention (True = may attend). Which do you pass as "
    "`attn_mask` to `nn.MultiheadAttention` to get the same attention: 'mask' or '~mask'?",
)
def _convention(answer: Any) -> str | None:
    if not isinstance(answer, str):
        return f"answer with a string, 'mask' or '~mask', got a {type(answer).__name__}"
    given = answer.replace(" ", "").strip("'\"")
    aliases = {"~mask": "~mask", "mask.logical_not()": "~mask",
               "torch.logical_not(mask)": "~mask", "~(mask)": "~mask", "mask": "mask"}
    if given not in aliases:
        return "answer with 'mask' or '~mask'"
    if aliases[given] != expected_convention():
        return "in nn.MultiheadAttention a True entry means the opposite of minitx's True"
    return None


@exercise(
    "05.leak",
    "A model without the causal mask is trained on windows of T = 8 characters (targets "
    "= inputs shifted by one). At how many of the 8 positions can it read its target "
    "somewhere in its own input?",
)
def _leak(answer: Any) -> str | None:
    if isinstance(answer, bool) or not float(answer).is_integer():
        return "answer with a whole number of positions"
    got, expected = int(answer), expected_visible_targets()
    if got == 8:
        return "look at the last position: is the token after the window in the input?"
    if got in (0, 1):
        return "the target at position t is the input at position t + 1"
    if got != expected:
        return "write out x and y for a window of 8 and compare them position by position"
    return None
