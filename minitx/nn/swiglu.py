"""SwiGLU: the gated feed-forward of Llama, Qwen and Mistral (Shazeer, 2020).

    SwiGLU(x) = (silu(x W1) * (x W3)) W2,     silu(z) = z * sigmoid(z)

The GPT-2 MLP has two matrices, d x 4d and 4d x d: 8 d^2 weights. SwiGLU has three
(W1 and W3 in, W2 out), so for the same parameter count its hidden width is
2/3 of 4d = 8d/3, rounded to a multiple of 8 (:func:`swiglu_hidden`).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from minitx.nn.positions import _check_positive_int

MULTIPLE_OF = 8


def swiglu_hidden(n_embd: int, multiple_of: int = MULTIPLE_OF) -> int:
    """The hidden width whose three matrices hold as many weights as the GELU MLP's two:
    8 * n_embd / 3, rounded to the nearest multiple of ``multiple_of`` (at least one).

    The rounding moves the count by at most 3 * n_embd * multiple_of / 2 weights, a
    fraction 1.5 * multiple_of / (8 * n_embd) of 8 n_embd^2: under 1% for n_embd >= 150
    with multiple_of = 8, and none when n_embd is a multiple of 3 * multiple_of (384, 768).
    """
    _check_positive_int("n_embd", n_embd)
    _check_positive_int("multiple_of", multiple_of)
    return max(multiple_of, multiple_of * round(8 * n_embd / (3 * multiple_of)))


class SwiGLU(nn.Module):
    """Gated feed-forward: w2(dropout(silu(w1(x)) * w3(x))), on each position separately.

    ``w1`` (the gate) and ``w3`` (the value) map n_embd -> hidden, ``w2`` maps back;
    ``hidden=None`` takes :func:`swiglu_hidden` (n_embd). Without bias by default, as in
    Llama. (B, T, n_embd) -> (B, T, n_embd), or any (..., n_embd).
    """

    def __init__(self, n_embd: int, hidden: int | None = None, bias: bool = False,
                 dropout: float = 0.0) -> None:
        super().__init__()
        _check_positive_int("n_embd", n_embd)
        hidden = swiglu_hidden(n_embd) if hidden is None else hidden
        _check_positive_int("hidden", hidden)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.n_embd, self.hidden = n_embd, hidden
        self.w1 = nn.Linear(n_embd, hidden, bias=bias)  # gate
        self.w3 = nn.Linear(n_embd, hidden, bias=bias)  # value
        self.w2 = nn.Linear(hidden, n_embd, bias=bias)  # back to the residual stream
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        if x.size(-1) != self.n_embd:
            raise ValueError(f"SwiGLU expects (..., n_embd={self.n_embd}), got {tuple(x.shape)}")
        # The gate silu(x W1) scales each hidden unit of x W3: a learned, smooth on/off.
        h = F.silu(self.w1(x)) * self.w3(x)  # (..., hidden)
        return self.w2(self.dropout(h))  # (..., n_embd)


__all__ = ["MULTIPLE_OF", "SwiGLU", "swiglu_hidden"]
