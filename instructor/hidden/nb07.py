"""Hidden cases of notebook 07."""

from __future__ import annotations

from . import Hidden

HIDDEN = {
    "07.sinusoidal": Hidden(lambda: [(5, 4), (1, 2), (9, 6), (16, 32)], atol=1e-5, points=2,
                            forbid=("minitx.nn.positions.sinusoidal_positions",
                                    "minitx.nn.transformer.sinusoidal_positions",
                                    "minitx.nn.encoder_decoder.DateTransformer",
                                    "minitx.nn.rope.rope_angles", "minitx.nn.rope.apply_rope")),
    # Counting a built block's parameters is not counting them by hand.
    "07.block_params": Hidden(atol=0.0, forbid=(
        "minitx.nn.transformer.TransformerBlock", "minitx.nn.transformer.DecoderBlock",
        "torch.nn.TransformerEncoderLayer", "torch.nn.TransformerDecoderLayer",
        # nor is adding up the parameters of built parts
        "minitx.nn.attention.MultiHeadAttention", "minitx.nn.transformer.FeedForward",
        "torch.nn.MultiheadAttention", "torch.nn.LayerNorm", "torch.nn.Linear")),
}
