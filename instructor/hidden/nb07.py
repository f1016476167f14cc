"""Hidden cases of notebook 07."""

from __future__ import annotations

from . import Hidden

HIDDEN = {
    "07.sinusoidal": Hidden(lambda: [(5, 4), (1, 2), (9, 6), (16, 32)], atol=1e-5, points=2),
    # Counting a built block's parameters is not counting them by hand.
    "07.block_params": Hidden(atol=0.0, forbid=(
        "minitx.nn.transformer.TransformerBlock", "minitx.nn.transformer.DecoderBlock",
        "torch.nn.TransformerEncoderLayer", "torch.nn.TransformerDecoderLayer")),
}
