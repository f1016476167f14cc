"""The instructor's answers to notebook 07's exercises."""

from __future__ import annotations

import torch
from torch import Tensor

from minitx.course.exercises.nb07 import expected_block_params, expected_initial_loss, window_truth


def sinusoidal(T: int, d: int) -> Tensor:
    """The (T, d) table: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same)."""
    pos = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # (d/2,)
    angle = pos / 10000 ** (two_i / d)  # (T, d/2)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


SOLUTIONS = {
    "07.sinusoidal": lambda: sinusoidal,
    # The outcome of notebook 07's training run, asserted there: about 21% without
    # positions, 100% with them.
    "07.no_positions": lambda: "c",
    "07.window_reach": window_truth,
    "07.block_params": expected_block_params,
    "07.initial_loss": lambda: round(expected_initial_loss(), 2),
}

MODEL_ANSWERS = {
    "07.long_context": (
        "The reach is an upper bound: a far token's information must be copied hop by hop, one "
        "window per layer, through positions that also carry their own content, so it arrives "
        "diluted and only if every layer chose to pass it on; with a window, a token L(w - 1) + 1 "
        "positions back has no path at all. Other approaches: a few global tokens that every "
        "position may attend to (a summary that costs n times the number of global tokens, but "
        "squeezes the document into a few vectors); retrieval, which finds the relevant passages "
        "and puts them in the window (only as good as the search, and misses what was not "
        "retrieved); recurrence or a memory carried from chunk to chunk (cheap, but a fixed-size "
        "state is a bottleneck again, as for the RNN); or linear-attention approximations, which "
        "are cheaper but score tokens less sharply than softmax."
    ),
}
