"""The instructor's answers to notebook 07's exercises, computed with the package."""

from __future__ import annotations

import torch
from torch import Tensor

from minitx.nn.masks import sliding_window_mask
from minitx.nn.transformer import TransformerBlock

WINDOW_LETTERS = {3: "a", 6: "b", 11: "c"}  # the choices: position 3, 6, 11


def window_reach(T: int = 12, window: int = 4, n_blocks: int = 2) -> int:
    """The last output position of ``n_blocks`` stacked sliding-window blocks that moves when
    token 0 changes, found by changing it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        blocks = [TransformerBlock(16, 2, 32).double().eval() for _ in range(n_blocks)]
        x = torch.randn(1, T, 16, dtype=torch.float64)
        nudged = x.clone()
        nudged[0, 0] += torch.randn(16, dtype=torch.float64)
    mask = sliding_window_mask(T, window)

    def run(h: Tensor) -> Tensor:
        for block in blocks:
            out = block(h, mask=mask)
            h = out[0] if isinstance(out, tuple) else out
        return h

    with torch.no_grad():
        moved = (run(nudged) - run(x)).abs().amax(-1)[0] > 1e-12  # (T,)
    return int(moved.nonzero().max())


def window_truth() -> str:
    return WINDOW_LETTERS[window_reach(12, 4, 2)]


def block_params(d_model: int = 48, n_heads: int = 4, d_ff: int = 160) -> int:
    """Parameters of a ``TransformerBlock`` with biases, counted on the meta device."""
    with torch.device("meta"):
        block = TransformerBlock(d_model, n_heads, d_ff)
    return sum(p.numel() for p in block.parameters())


def block_params_mistakes(d: int = 48, n_heads: int = 4, f: int = 160) -> dict[str, int]:
    """The known mistakes of 07.block_params, by what they leave out."""
    attn, ffn = 4 * d * d + 4 * d, 2 * d * f + f + d
    return {
        "no biases": 4 * d * d + 2 * d * f,
        "no LayerNorms": attn + ffn,
        "LayerNorms half": attn + ffn + 2 * d,
        "per-head matrices": n_heads * attn + ffn + 4 * d,
        "the d_ff = 4 d formula": 12 * d * d + 13 * d,
    }


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
    "07.block_params": block_params,
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
