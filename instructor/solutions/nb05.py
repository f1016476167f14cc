"""The instructor's answers to notebook 05's exercises, computed with the package."""

from __future__ import annotations

import torch

from minitx.nn.attention import scaled_dot_product_attention
from minitx.nn.masks import causal_mask, combine_masks, padding_mask

DT = torch.float64
FIRST_LETTERS = {
    (True, False, False): "a",  # only output 1
    (True, True, False): "b",  # outputs 1 and 2
    (True, True, True): "c",  # all three outputs
    (False, True, True): "d",  # outputs 2 and 3
}
COMBINED_LENGTHS, COMBINED_T = (4, 11), 11


def causal_zeros(n: int = 3) -> list[tuple[int, int]]:
    """The (row, column) positions, counted from 1, that a causal mask forces to zero in an
    n x n attention matrix: where the key comes after the query."""
    blocked = ~causal_mask(n)
    return sorted((i + 1, j + 1) for i, j in blocked.nonzero().tolist())


def causal_zeros_mistakes(n: int = 3) -> dict[str, list[tuple[int, int]]]:
    """The known mistakes of 05.causal_zeros: rows and columns swapped, the diagonal
    included, and the entries that stay instead of those that become zero."""
    everything = [(i, j) for i in range(1, n + 1) for j in range(1, n + 1)]
    zeros = causal_zeros(n)
    return {
        "transposed": sorted((j, i) for i, j in zeros),
        "diagonal too": sorted(zeros + [(i, i) for i in range(1, n + 1)]),
        "the allowed entries": [p for p in everything if p not in zeros],
    }


def change_first_truth() -> str:
    """Three tokens, causal self-attention with random projections: change the *first*
    token's embedding; the letter of the outputs that move."""
    g = torch.Generator().manual_seed(5)
    X = torch.randn(3, 4, generator=g, dtype=DT)
    W_Q, W_K, W_V = (torch.randn(4, 4, generator=g, dtype=DT) for _ in range(3))
    changed = X.clone()
    changed[0] = torch.randn(4, generator=g, dtype=DT)
    mask = causal_mask(3)
    before = scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V, mask)[0]
    after = scaled_dot_product_attention(changed @ W_Q, changed @ W_K, changed @ W_V, mask)[0]
    moved = ((after - before).abs().amax(-1) > 1e-9).tolist()
    return FIRST_LETTERS[tuple(moved)]


def combined(lengths: tuple[int, ...] = COMBINED_LENGTHS, T: int = COMBINED_T) -> int:
    """Allowed (query, key) pairs of the first sequence under causal + padding masks."""
    mask = combine_masks(causal_mask(T), padding_mask(list(lengths), T))  # (B, 1, T, T)
    return int(mask[0, 0].sum())


def combined_mistakes(lengths: tuple[int, ...] = COMBINED_LENGTHS,
                      T: int = COMBINED_T) -> dict[str, int]:
    """The known mistakes of 05.combined: one of the two masks alone, and the real queries
    alone (the pad queries' rows left out)."""
    n = lengths[0]
    return {
        "causal alone": int(causal_mask(T).sum()),
        "padding alone": int(padding_mask([n], T).expand(1, 1, T, T).sum()),
        "real queries only": int(combined(lengths, T) - (T - n) * n),
    }


def reference_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis that gives blocked entries (mask False) weight 0 and a
    fully blocked row all zeros, with finite gradients."""
    very_negative = torch.finfo(scores.dtype).min  # finite: a blocked row is no 0/0
    weights = torch.softmax(scores.masked_fill(~mask, very_negative), dim=-1)
    return weights * mask  # blocked entries exactly 0, blocked rows all 0


SOLUTIONS = {
    "05.causal_zeros": causal_zeros,
    "05.change_first": change_first_truth,
    "05.masked_softmax": lambda: reference_masked_softmax,
    "05.combined": combined,
}

MODEL_ANSWERS = {
    "05.spot_leak": (
        "A loss that low so fast is suspicious: good character models of Shakespeare sit far "
        "above it. Check 1: change the last input token of a window and see whether the logits "
        "of earlier positions move; with a causal mask they cannot, with a leak they do. Check "
        "2: measure the loss future-blind, feeding each prefix alone (or generate text): a "
        "leaking model's loss jumps to worse than an honest model's, and its samples are "
        "garbage. A held-out validation set does not help, because the leak is in the model, "
        "not in the data."
    ),
}
