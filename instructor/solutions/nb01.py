"""The instructor's answers to notebook 01's exercises."""

from __future__ import annotations

import torch

from minitx.course.exercises.nb01 import _truncation, average_order_truth, batch_size_truth
from minitx.data.sequences import pad_batch
from minitx.data.tokenizer import CharTokenizer


def pad_and_mask(seqs, pad_id):
    """Pad ``seqs`` (lists of token ids) to the longest: ids (B, T) long and a bool mask
    (B, T), True where a real token stands and False on padding."""
    ids, lengths = pad_batch(seqs, pad_id=pad_id)
    mask = torch.arange(ids.size(1)) < lengths[:, None]  # (B, T)
    return ids, mask


SOLUTIONS = {
    "01.batch_size": batch_size_truth,
    "01.average_order": average_order_truth,
    "01.pad_and_mask": lambda: pad_and_mask,
    "01.truncation": lambda: _truncation(),
    "01.encode": lambda: CharTokenizer.from_text("hello world").encode("owl"),
}

MODEL_ANSWERS = {
    "01.bucketing": (
        "Sorted batches are no longer random samples of the data: each batch holds only short "
        "or only long speeches, and length goes with content (short exclamations, long "
        "soliloquies), so consecutive gradient steps are biased in the same direction and the "
        "model drifts towards whatever the current stretch of lengths looks like. A fixed order "
        "also makes every epoch identical. The usual fix is bucketing: group sequences of "
        "similar length into buckets, draw the batches from random buckets in a fresh random "
        "order every epoch (and shuffle inside each bucket), which keeps the padding low while "
        "the sequence of batches stays random."
    ),
}
