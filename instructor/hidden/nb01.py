"""Hidden cases of notebook 01."""

from __future__ import annotations

from . import Hidden


def _pad_cases() -> list[tuple]:
    return [
        ([[4, 1], [7, 7, 7, 2], [3]], 0),
        ([[9]], 5),
        ([[2, 3, 4], [5, 6, 8]], 1),  # nothing to pad
        ([[1], [2, 2, 2, 2, 2, 2], [], [3, 3]], 9),  # an empty sequence
    ]


HIDDEN = {
    "01.pad_and_mask": Hidden(_pad_cases, atol=0.0, points=2),
    "01.encode": Hidden(atol=0.0, forbid=("minitx.data.tokenizer.CharTokenizer",)),
    "01.truncation": Hidden(atol=0.0, forbid=(
        "minitx.data.sequences.padding_stats",
        "minitx.data.sequences.corpus_padding_waste",
        "minitx.data.sequences.pad_batch",
    )),
}
