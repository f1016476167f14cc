"""Where each token is: positional encodings, added to the token embeddings.

    sinusoidal_positions   fixed sines and cosines ("Attention Is All You Need")
    LearnedPositions       one trained vector per position (GPT)
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def _check_positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def sinusoidal_positions(
    T: int, d_model: int, *, dtype: torch.dtype = torch.float32, device=None
) -> Tensor:
    """The fixed positional encoding of "Attention Is All You Need".

        PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
        PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

    Returns a ``(T, d_model)`` tensor; row ``pos`` is added to the embedding of the
    token at position ``pos``. Even columns are sines, odd columns cosines, and each
    pair (2i, 2i+1) turns at its own frequency, from 1 down to about 1/10000.
    """
    _check_positive_int("T", T)
    _check_positive_int("d_model", d_model)
    pos = torch.arange(T, dtype=torch.float64, device=device)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # (ceil(d/2),)
    angle = pos / 10000.0 ** (two_i / d_model)  # (T, ceil(d/2))
    pe = torch.empty(T, d_model, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(dtype)


class LearnedPositions(nn.Module):
    """One trained vector per position, as in GPT: a ``(block_size, d_model)`` table.

    ``forward(T)`` returns the first ``T`` rows, shape ``(T, d_model)``, to be added to
    the token embeddings. There is no row for position ``block_size``: a model with
    learned positions cannot see further than the context it was trained on.
    """

    def __init__(self, block_size: int, d_model: int) -> None:
        super().__init__()
        _check_positive_int("block_size", block_size)
        _check_positive_int("d_model", d_model)
        self.block_size, self.d_model = block_size, d_model
        self.emb = nn.Embedding(block_size, d_model)

    @property
    def weight(self) -> Tensor:
        """The ``(block_size, d_model)`` table."""
        return self.emb.weight

    def forward(self, T: int) -> Tensor:
        if not isinstance(T, int) or isinstance(T, bool) or not 1 <= T <= self.block_size:
            raise ValueError(
                f"sequence length must be in [1, block_size={self.block_size}], got {T!r}"
            )
        # Positions 0..T-1 are the first T rows: a slice, no index tensor to build.
        return self.emb.weight[:T]  # (T, d_model)


__all__ = ["LearnedPositions", "sinusoidal_positions"]
