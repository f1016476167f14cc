"""The instructor's answers to notebook 09's exercises."""

from __future__ import annotations

import math
from functools import cache

import torch
from torch import Tensor

from minitx.course.exercises.nb09 import TEMPERATURE, TEMPERATURE_LOGITS
from minitx.nn import generation
from minitx.train.evaluate import estimate_loss


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Keep the most likely tokens until their probabilities reach p; -inf for the rest."""
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # mass of the tokens more likely than this one
    drop_sorted = before >= p  # p is reached without this token
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def temperature() -> float:
    """Probability of token 0 for ``TEMPERATURE_LOGITS`` at ``TEMPERATURE`` (3 decimals)."""
    logits = torch.tensor(TEMPERATURE_LOGITS, dtype=torch.float64)
    logits = generation.apply_temperature(logits, TEMPERATURE)
    return round(float(torch.softmax(logits, -1)[0]), 3)


def temperature_mistakes() -> dict[str, float]:
    """The known wrong answers of 09.temperature, each with the key of its hint: the
    probability at temperature 1, with the logits multiplied by T, and with the tokens whose
    logit is 0 left out of the softmax."""
    logits = torch.tensor(TEMPERATURE_LOGITS, dtype=torch.float64)
    return {
        "temperature 1": round(float(torch.softmax(logits, -1)[0]), 3),
        "multiplied": round(float(torch.softmax(logits * TEMPERATURE, -1)[0]), 3),
        "exp(0)": round(float(torch.softmax(logits[:1] / TEMPERATURE, -1)[0]), 3),
    }


@cache
def case_losses() -> dict[str, float]:
    """Validation loss of the shipped model on the validation text as written, in capitals
    and in lower case (the windows of notebook 09's measurement: 4 batches of 32, seed 0),
    and the counted bigram model's loss (from the training text, add-one) on the text as
    written."""
    from minitx.data import load_text, shipped_model_path, train_val_split
    from minitx.train import checkpoint as ck

    with torch.random.fork_rng(devices=[]):
        gpt, tok, _ = ck.load_gpt(shipped_model_path("large"), "cpu")
    text = load_text("tinyshakespeare")
    train_text, val_text = train_val_split(text, 0.9)
    block = gpt.config.block_size
    losses = {}
    for name, t in (("as written", val_text), ("upper", val_text.upper()),
                    ("lower", val_text.lower())):  # fmt: skip
        ids = torch.tensor(tok.encode(t), dtype=torch.long)
        losses[name] = estimate_loss(gpt, ids, block, batch_size=32, n_batches=4, seed=0)
    train_ids = torch.tensor(tok.encode(train_text), dtype=torch.long)
    val_ids = torch.tensor(tok.encode(val_text), dtype=torch.long)
    V = tok.vocab_size
    counts = torch.bincount(train_ids[:-1] * V + train_ids[1:], minlength=V * V)
    counts = counts.view(V, V).double() + 1
    logp = (counts / counts.sum(1, keepdim=True)).log()
    losses["bigram"] = float(-logp[val_ids[:-1], val_ids[1:]].mean())
    losses["uniform"] = math.log(V)
    return losses


def case_letter(loss: float, losses: dict[str, float]) -> str:
    """'a' within 0.1 of the loss on the text as written, 'b' worse but below the bigram
    model's, 'c' between the bigram model's and uniform guessing (ln V), 'd' above ln V."""
    if abs(loss - losses["as written"]) <= 0.1:
        return "a"
    if loss < losses["bigram"]:
        return "b"
    return "c" if loss < losses["uniform"] else "d"


def case_truth() -> dict[str, str]:
    """The letters of the two texts, measured on the shipped model."""
    losses = case_losses()
    return {k: case_letter(losses[k], losses) for k in ("upper", "lower")}


SOLUTIONS = {
    "09.top_p": lambda: top_p_filter,
    "09.temperature": temperature,
    "09.capitals": case_truth,
}

MODEL_ANSWERS = {
    "09.harms": (
        "Counting who appears and in which roles in the training text and in the samples shows "
        "whether the model reproduces (or amplifies) the corpus's skews, and comparing its "
        "confidence on real and invented entities shows that fluency and confidence are no sign "
        "of truth: the model has no notion of whether a person or a fact exists. Neither "
        "measurement finds harms that counts of words do not see: stereotypes carried by context "
        "(which jobs, adjectives or crimes go with which group), toxic or private text it can "
        "reproduce when prompted (that needs targeted searches of samples against the corpus, "
        "as in section 5, and red-teaming), or how people act on its answers. 'It reflects the "
        "data' describes the mechanism, it does not excuse the result: whoever chooses the "
        "corpus, the filtering and where the model is used is responsible for what it says, and "
        "a skew that was a fact about plays four centuries old becomes a choice when it is "
        "served to users today."
    ),
}
