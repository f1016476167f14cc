"""Hidden cases of notebook 02."""

from __future__ import annotations

import torch

from . import Hidden


def _lstm_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(2202)

    def case(B: int, C: int, H: int, dtype: torch.dtype = torch.float64, scale: float = 1.0):
        def r(*shape: int) -> torch.Tensor:
            return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)

        return (r(B, C), r(B, H), r(B, H), r(4 * H, C), r(4 * H, H), r(4 * H), r(4 * H))

    return [case(3, 5, 2), case(1, 2, 6), case(4, 3, 3, scale=4.0), case(2, 4, 5, torch.float32)]


HIDDEN = {
    "02.lstm_step": Hidden(_lstm_cases, atol=1e-5, points=2,
                           forbid=("minitx.nn.rnn.LSTMCell", "minitx.nn.rnn.LSTM")),
    "02.forget_gate": Hidden(atol=6e-4),  # 0.121 and 0.122 pass, 0.123 does not
}
