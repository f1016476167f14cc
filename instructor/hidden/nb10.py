"""Hidden cases of notebook 10.

10.kv_cache is a compute exercise whose answer is a function, key_vectors(steps,
source_length): it gets cases too, and the instructor's function is the truth on them.
"""

from __future__ import annotations

import torch

from . import Hidden

_DECODERS = ("minitx.nn.encoder_decoder.EncoderDecoder.decode",
             "minitx.nn.encoder_decoder.EncoderDecoder.decode_cached")


def _shift_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(1010)
    return [
        (torch.randint(0, 20, (1, 1), generator=g), 2),  # a batch of one, a single token
        (torch.randint(0, 20, (5, 3), generator=g), 0),  # bos_id 0
        (torch.randint(3, 40, (2, 13), generator=g), 39),
        (torch.randint(0, 9, (1, 30), generator=g), 1),
        (torch.randint(0, 7, (6, 2), generator=g), 4),
    ]


def _beam_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(1020)

    def case(B: int, W: int, V: int, width: int, first: bool = False, spread: float = 1.0,
             dtype: torch.dtype = torch.float64) -> tuple:
        logits = spread * torch.randn(B, W, V, generator=g, dtype=torch.float64)
        log_probs = torch.log_softmax(logits, dim=-1)
        scores = -8 * torch.rand(B, W, generator=g, dtype=torch.float64)
        if first:
            scores[:, 1:] = float("-inf")
        return log_probs.to(dtype), scores.to(dtype), width

    return [
        case(1, 1, 2, 2),  # a batch of one, one beam, two tokens
        case(2, 2, 9, 1),  # beam width 1: greedy
        case(3, 4, 5, 4, first=True),  # the first step: only beam 0 exists
        case(2, 3, 6, 6, spread=5.0),  # peaked log-probabilities
        case(1, 5, 30, 5, dtype=torch.float32),
    ]


HIDDEN = {
    "10.shift_right": Hidden(_shift_cases, atol=0.0, points=1),
    "10.beam_step": Hidden(_beam_cases, atol=1e-5, points=3, forbid=_DECODERS),
    "10.kv_cache": Hidden(
        lambda: [(1, 1), (3, 12), (7, 2), (12, 40), (100, 7), (257, 1)],
        atol=0.0, points=2,
        forbid=("minitx.nn.encoder_decoder.EncoderDecoder", *_DECODERS,
                "minitx.nn.generation.KVCache"),
    ),
}
