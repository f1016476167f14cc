"""Hidden cases of notebook 03."""

from __future__ import annotations

import torch

from . import Hidden


def _additive_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(3303)

    def case(B: int, T: int, d_s: int, d_h: int, A: int, lengths: tuple[int, ...],
             scale: float = 1.0, dtype: torch.dtype = torch.float64) -> tuple:
        def r(*shape: int) -> torch.Tensor:
            return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)

        mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
        return (r(B, d_s), r(B, T, d_h), r(A, d_s), r(A, d_h), 3 * r(A), mask)

    return [
        case(1, 1, 3, 2, 4, (1,)),  # a batch of one, a single source position
        case(2, 6, 5, 3, 7, (6, 6)),  # no padding; d_s, d_h and A all differ
        case(3, 8, 2, 4, 2, (1, 8, 5)),  # padding, one row of length 1
        case(2, 5, 4, 4, 3, (5, 2), scale=6.0),  # large scores: tanh saturates
        case(4, 7, 6, 5, 8, (7, 3, 1, 6), dtype=torch.float32),
    ]


HIDDEN = {
    "03.additive": Hidden(_additive_cases, atol=1e-5, points=3, forbid=(
        "minitx.nn.attention.AdditiveAttention.forward",
        "minitx.nn.attention.masked_softmax",
        "torch.nn.MultiheadAttention",
    )),
    "03.iso": Hidden(atol=0.0, forbid=(
        "minitx.data.dates.format_date",
        "minitx.data.dates.make_example",  # writes a source with format_date's pieces
        "minitx.data.dates._pieces",
        "minitx.nn.seq2seq.translate",  # a trained model reads the dates for the learner
        "minitx.nn.seq2seq.Seq2Seq",
    )),
}
