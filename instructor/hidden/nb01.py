"""Hidden cases of notebook 01."""

from __future__ import annotations

from . import Hidden


def _pad_cases() -> list[tuple]:
    return [
        ([[4, 1], [7, 7, 7, 2], [3]], 0),
        ([[9]], 5),
        ([[2, 3, 4], [5, 6, 8]], 1),  # nothing to pad
        ([[1], [2, 2, 2, 2, 2, 2], [], [3, 3]], 9),  # an empty sequence
        ([[0, 5, 0], [0], [3, 0, 0, 2]], 0),  # real tokens whose id is pad_id
    ]


HIDDEN = {
    "01.pad_and_mask": Hidden(_pad_cases, atol=0.0, points=2, forbid=(
        "minitx.data.sequences.pad_batch",
        "minitx.nn.masks.padding_mask",
        "torch.nn.utils.rnn.pad_sequence",
        "torch.nested.nested_tensor",
        "torch.nested.as_nested_tensor",
        "torch.nested.to_padded_tensor",
    )),
    "01.encode": Hidden(atol=0.0, forbid=("minitx.data.tokenizer.CharTokenizer",)),
    "01.truncation": Hidden(atol=0.0, forbid=(
        "minitx.data.sequences.padding_stats",
        "minitx.data.sequences.corpus_padding_waste",
        "minitx.data.sequences.pad_batch",
    )),
}
