"""Exercise cases of notebook 09: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import math

import numpy as np
import torch

from exercise_cases import Case, solution, wrong, wrong_answers
from minitx.course.exercises import answers
from minitx.course.exercises.seal import canonical, seal
from minitx.nn import generation
from minitx.nn.generation import filter_logits, top_p_filter

# ---- 09.top_p: learner functions, right and wrong --------------------------------------


def top_p_by_loop(logits, p):
    """Right, written without the package's approach: one row at a time, token by token."""
    out = logits.clone()
    rows = out.reshape(-1, out.size(-1))
    for row in rows:
        probs = torch.softmax(row, dim=-1).tolist()
        order = sorted(range(len(probs)), key=lambda i: -probs[i])
        total, kept = 0.0, set()
        for i in order:
            if total >= p:
                break
            kept.add(i)
            total += probs[i]
        for i in range(len(probs)):
            if i not in kept:
                row[i] = float("-inf")
    return out


def top_p_keep_mask(logits, p):
    """Right: the same rule with a boolean mask built on the sorted probabilities."""
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    keep_sorted = torch.cumsum(probs, dim=-1) - probs < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return torch.where(keep, logits, torch.full_like(logits, float("-inf")))


def top_p_numpy(logits, p):
    """Right, in NumPy: a stable sort of the negated probabilities, row by row."""
    x = logits.numpy()
    flat = x.reshape(-1, x.shape[-1])
    out = flat.copy()
    for row, logit_row in zip(out, flat, strict=True):
        probs = np.exp(logit_row - logit_row.max())
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        before = np.cumsum(probs[order]) - probs[order]
        row[order[before >= p]] = -np.inf
    return torch.from_numpy(out.reshape(x.shape))


def top_p_float32(logits, p):
    """Right, with the probabilities worked out in float32 (the kept logits untouched)."""
    probs = torch.softmax(logits.float(), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    drop_sorted = sorted_probs.cumsum(dim=-1) - sorted_probs >= p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, -math.inf)


@wrong("09.top_p", "one too few")
def drops_the_crossing_token(logits, p):
    """Keeps only the tokens whose running sum stays within p: one too few."""
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    drop_sorted = torch.cumsum(probs, dim=-1) > p
    drop_sorted[..., 0] = False
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


@wrong("09.top_p", "vocabulary's order")
def stays_sorted(logits, p):
    """Forgets to put the tokens back in vocabulary order."""
    sorted_logits, _ = logits.sort(dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    drop = torch.cumsum(probs, dim=-1) - probs >= p
    return sorted_logits.masked_fill(drop, float("-inf"))


@wrong("09.top_p", "less likely than one you drop")
def sorts_the_batch_axis(logits, p):
    """Sorts along dim 0 (right only for a single row of logits)."""
    probs, order = torch.softmax(logits, dim=0).sort(dim=0, descending=True)
    drop_sorted = torch.cumsum(probs, dim=0) - probs >= p
    return logits.masked_fill(drop_sorted.scatter(0, order, drop_sorted), float("-inf"))


@wrong("09.top_p", "less likely than one you drop")
def sums_logits(logits, p):
    """Adds up sorted logits instead of probabilities."""
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    drop_sorted = torch.cumsum(sorted_logits, dim=-1) - sorted_logits >= p
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


@wrong("09.top_p", "every logit is still finite")
def fills_with_zero(logits, p):
    """Dropped tokens get a logit of 0, which still has probability."""
    kept = torch.isfinite(top_p_keep_mask(logits, p))
    return torch.where(kept, logits, torch.zeros_like(logits))


@wrong("09.top_p", "every logit is still finite")
def returns_probabilities(logits, p):
    """Returns renormalised probabilities instead of logits."""
    kept = torch.isfinite(top_p_keep_mask(logits, p))
    probs = torch.softmax(logits, dim=-1) * kept
    return probs / probs.sum(-1, keepdim=True)


@wrong("09.top_p", "unchanged")
def rescales_the_kept(logits, p):
    """Renormalises the kept logits (log-probabilities over the nucleus)."""
    return torch.log_softmax(top_p_keep_mask(logits, p), dim=-1)


@wrong("09.top_p", "in place")
def in_place(logits, p):
    kept = torch.isfinite(top_p_keep_mask(logits, p))
    return logits.masked_fill_(~kept, float("-inf"))


@wrong("09.top_p", "same shape as the input")
def kept_values_only(logits, p):
    out = top_p_keep_mask(logits, p)
    return out[torch.isfinite(out)]


@wrong("09.top_p", "ZeroDivisionError")
def raises(logits, p):
    return 1 / 0


# ---- cheats: the package's own pieces, however reached; each must be refused ----------


def top_p_one_line(logits, p):
    return top_p_filter(logits, p)


def top_p_two_lines(logits, p):
    out = top_p_filter(logits, p)
    return out


def top_p_plus_zero(logits, p):
    return top_p_filter(logits, p) + 0


def top_p_clone(logits, p):
    return top_p_filter(logits.clone(), float(p)).clone()


def top_p_double(logits, p):
    return top_p_filter(logits.double(), p).double()


def top_p_by_filter_logits(logits, p):
    return filter_logits(logits, top_p=p)


def top_p_by_getattr(logits, p):
    module = importlib.import_module("minitx.nn." + "generation")
    return getattr(module, "top_p" + "_filter")(logits, p) * 1


def top_p_by_attribute(logits, p):
    kept = generation.top_p_filter(logits, p)
    return torch.where(torch.isfinite(kept), logits, kept)


CHEATS = {
    "09.top_p": (top_p_filter, top_p_one_line, top_p_two_lines, top_p_plus_zero, top_p_clone,
                 top_p_double, top_p_by_filter_logits, top_p_by_getattr, top_p_by_attribute,
                 lambda logits, p: (*tuple([top_p_filter(logits, p)]),)[-1]),
}


CASES: dict[str, Case] = {
    "09.top_p": Case(
        right=(top_p_by_loop, top_p_keep_mask, top_p_numpy, top_p_float32),
        wrong=wrong_answers("09.top_p", (0.8, "a function")),
    ),
    # (2 ln 6, 0, 0) / 2 = (ln 6, 0, 0): 6 / (6 + 1 + 1) = 0.75; at temperature 1,
    # 36 / 38 = 0.947; multiplied by 2, 6^4 / (6^4 + 2) = 0.998; leaving out the zeros' exp(0) = 1
    # terms, 6 / 6 = 1
    "09.temperature": Case(
        right=(0.75, 0.7501, 6 / 8, np.float32(0.75), np.float64(0.7499), torch.tensor(0.75),
               torch.tensor(0.75, dtype=torch.float32), [0.75], np.array([0.75])),
        wrong=(
            (0.947, "temperature 1"),
            (0.998, "multiplied"),
            (0.6, "divide every logit"),
            (1.0, "exp(0) = 1"),
            (0.99, "less likely, not more"),
            ("0.75", "answer with numbers"),
            ((0.75, 0.25), "give one number"),
        ),
    ),
    # capitals: 'A' and 'a' are different ids, and runs of capitals in the corpus are the
    # speaker names (followed by ':' and a newline): above ln 65. Lower case changes only the
    # first letters of lines and names: worse, but still better than the bigram table.
    "09.capitals": Case(
        right=(
            {"upper": "d", "lower": "b"},
            {"upper": "(D)", "lower": "b)"},
            {"upper": "worse than guessing uniformly", "lower": "'b'"},
        ),
        wrong=(
            ({"upper": "a", "lower": "b"}, "upper:"),
            ({"upper": "c", "lower": "b"}, "upper:"),
            ({"upper": "d", "lower": "a"}, "lower:"),
            ({"upper": "a", "lower": "a"}, "upper:"),
            ({"upper": "d"}, "keys 'upper' and 'lower'"),
            ("d", "keys 'upper' and 'lower'"),
            ({"upper": "e", "lower": "b"}, "upper: answer with one letter"),
            ({"upper": "d", "lower": 4}, "lower: answer with one letter"),
        ),
    ),
}


def temperature_by_hand():
    """The instructor's answer, and the seals the checker keeps, against 6 / (6 + 1 + 1)."""
    from minitx.course.exercises import nb09

    assert solution("09.temperature") == 6 / (6 + 1 + 1)
    assert seal("09.temperature", canonical(0.75, 3)) == nb09._TEMPERATURE
    mistakes = answers.key("09").temperature_mistakes()
    assert mistakes == {"temperature 1": round(36 / 38, 3),
                        "multiplied": round(6**4 / (6**4 + 2), 3), "exp(0)": 1.0}
    assert set(nb09._TEMPERATURE_MISTAKES) == {
        seal("09.temperature", canonical(v, 3)) for v in mistakes.values()}


def top_p_cases_by_hand():
    """The instructor's solution and the package agree with the loop on every case the checker uses,
    and on a case worked out by hand: logits log(0.5, 0.3, 0.15, 0.05), p = 0.79 keeps the
    first two (0.5 + 0.3 passes 0.79) and p = 0.81 the first three."""
    from minitx.course.exercises import nb09

    logits = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64).log()
    for p, kept in ((0.79, [True, True, False, False]), (0.81, [True, True, True, False])):
        for fn in (solution("09.top_p"), generation.top_p_filter, top_p_by_loop):
            assert torch.isfinite(fn(logits, p)).tolist() == kept, (fn, p)
    for logits, p in nb09._top_p_cases():
        assert torch.equal(solution("09.top_p")(logits, p), top_p_by_loop(logits, p))
        assert torch.equal(generation.top_p_filter(logits, p), top_p_by_loop(logits, p))


def capitals_by_an_independent_measurement():
    """Score the three texts on 100 consecutive 64-character windows of each (not the
    checker's random windows) with a plain cross-entropy, and the letters must agree."""
    import torch.nn.functional as F

    from minitx.course.exercises import nb09
    from minitx.data import load_text, shipped_model_path
    from minitx.train import checkpoint as ck

    with torch.random.fork_rng(devices=[]):
        gpt, tok, _ = ck.load_gpt(shipped_model_path("large"), "cpu")
    text = load_text("tinyshakespeare")
    n = int(0.9 * len(text))
    train, val = text[:n], text[n:]
    V = 65
    ids = torch.tensor(tok.encode(train))
    counts = torch.ones(V, V, dtype=torch.float64)
    counts.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64),
                      accumulate=True)  # fmt: skip
    v = torch.tensor(tok.encode(val))
    bigram = -(counts / counts.sum(1, keepdim=True)).log()[v[:-1], v[1:]].mean().item()

    def loss(t):
        x = torch.tensor(tok.encode(t[: 100 * 64 + 1]))
        inp, tgt = x[:-1].view(100, 64), x[1:].view(100, 64)
        with torch.no_grad():
            logits, _ = gpt(inp)
        return F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1)).item()

    written, upper, lower = loss(val), loss(val.upper()), loss(val.lower())
    key = answers.key("09")
    truth = solution("09.capitals")
    assert abs(bigram - key.case_losses()["bigram"]) < 1e-6
    assert upper > math.log(V) and truth["upper"] == "d"
    assert written + 0.1 < lower < bigram and truth["lower"] == "b"
    assert seal("09.capitals", canonical({"upper": "d", "lower": "b"})) == nb09._CAPITALS


VALUE_CHECKS = [
    temperature_by_hand,
    top_p_cases_by_hand,
    capitals_by_an_independent_measurement,
]
