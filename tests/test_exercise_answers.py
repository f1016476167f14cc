"""Every exercise of notebooks 01-08, driven by one table (``TABLE``).

For each exercise the table gives the answers that must pass, the wrong answers (each with
the hint text it must get, where one is named), the strings no hint may contain, and the
answers the checker cannot read. Every case is checked the same way:

* a right answer passes, and the learner reads exactly "[name] Correct!";
* a wrong or unreadable answer fails with a printed "[name] Not yet: <hint>", the hint is
  more than a few words, contains the named text, and reveals neither a right answer nor
  any of the exercise's ``never`` strings (unless the named hint text itself contains it:
  "answer with 'mask' or '~mask'" must name both);
* checking any answer leaves the learner's global torch RNG where it was.

The expected values are worked out by hand, independently of the package the checkers use.
What does not fit a table (the checkers' own expected values) follows the table. The
verdict asserts come from exercise_asserts, which notebook 09's file shares.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, nb03, prompt
from minitx.exercises import nb08 as E
from minitx.exercises.nb06 import _planted_weights, expected_prev_head
from minitx.exercises.nb07 import (
    expected_block_params,
    expected_initial_loss,
    expected_memory_bytes,
    expected_pe,
    expected_window,
)
from minitx.transformer import TransformerBlock

UNREADABLE = "could not read your answer"


@dataclass(frozen=True)
class Exercise:
    """One exercise's cases: ``wrong`` holds (answer, hint text or None) pairs."""

    right: tuple[Any, ...]
    wrong: tuple[tuple[Any, str | None], ...]
    never: tuple[str, ...] = ()
    unreadable: tuple[Any, ...] = ()


# ---- learner functions for the code-writing exercises (06, 08) -----------------------------


def negate(mask):
    return ~mask


def logical_not(mask):
    return mask.logical_not()


def to_float_mask(mask):
    return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))


def unchanged(mask):
    return mask


def as_float(mask):
    return mask.float()


def negate_transposed(mask):
    return ~mask.T


def negate_first_two_rows(mask):
    return ~mask[:2]


def divide_by_zero(*args):
    return 1 / 0


def find_prev_head(weights):
    _, H, T, _ = weights.shape
    t = torch.arange(1, T)
    score = weights[:, :, t, t - 1].mean(-1)  # (L, H)
    i = int(score.argmax())
    return i // H, i % H


def sharpest_head(weights):
    H = weights.size(1)
    i = int(weights.max(-1).values.mean(-1).argmax())
    return i // H, i % H


def first_head(weights):
    return 0, 0


def a_single_int(weights):
    return 3


def longest_match(sample, corpus):
    best = 0
    for i in range(len(sample)):
        for j in range(i + best + 1, len(sample) + 1):
            if sample[i:j] not in corpus:
                break
            best = j - i
    return best


def prefix_only(sample, corpus):
    n = 0
    while n < len(sample) and sample[: n + 1] in corpus:
        n += 1
    return n


def a_float(sample, corpus):
    return 1.0


def by_formula(V, T, L, C):
    """GPT parameters with bias=False and a tied head: embeddings, blocks, final norm."""
    return V * C + T * C + L * (4 * C * C + 8 * C * C + 2 * C) + C


# ---- the table ---------------------------------------------------------------------------

INF = float("-inf")
RIGHT_ISO = ["2005-04-03", "1951-11-30", "2049-02-01", "1987-07-14"]
RIGHT_SHAPES = {
    "X": (4, 6), "W_Q": (6, 3), "W_K": (6, 3), "W_V": (6, 3), "Q": (4, 3), "K": (4, 3),
    "V": (4, 3), "S": (4, 4), "A": (4, 4), "Z": (4, 3),
}  # fmt: skip
GPT_PARAMS = by_formula(65, 64, 4, 128)
BLOCK_NO_NORMS = 4 * 48 * 48 + 4 * 48 + 2 * 48 * 192 + 192 + 48

TABLE: dict[str, Exercise] = {
    # ---- 01
    "01.padding_waste": Exercise(
        right=(12 / 28,),  # 4 x 7 slots, 3 + 7 + 5 + 1 = 16 real
        wrong=((12, "count"), (16 / 28, None), (0.5, None), (3.0, None)),
        unreadable=(True,),
    ),
    "01.truncation": Exercise(
        right=((6, 2),),  # kept 3,5,5,1 of 4 x 5 slots; 7 loses 2
        wrong=(((2, 6), "wrong order"), ((4, 2), None), ((6, 3), None)),
    ),
    "01.bag_of_words": Exercise(
        right=(("the dog bites the man", "the man bites the dog"),),
        wrong=(
            (("dog bites man", "dog bites man"), "same sequence"),
            (("dog bites man", "dogs bite man"), None),
        ),
    ),
    "01.window": Exercise(
        right=(19,),  # 'cat' at 1, 'woke' at 20 (the commas count)
        wrong=((18, None), (5, None), (23, None)),
        unreadable=("19",),
    ),
    "01.encode": Exercise(
        right=([5, 7, 4],),  # ' dehlorw': o=5, w=7, l=4
        wrong=(([6, 8, 5], None), ([7, 5, 4], None), ([5, 7], None)),
    ),
    "01.embedding": Exercise(
        right=([[5, 6], [1, 2], [5, 6]],),
        wrong=(
            ([[1, 2], [3, 4], [5, 6]], "that is W itself"),
            ([[5, 6], [1, 2]], None),
            ([[6, 5], [2, 1], [6, 5]], None),
        ),
        unreadable=("rows",),
    ),
    # ---- 02
    "02.rnn_step": Exercise(
        # W_xh x = [0.5, 0.5], W_hh h_0 = [0.5, -0.25], + b -> [1.0, 0.35]
        right=([math.tanh(1.0), math.tanh(0.35)],),
        wrong=(([1.0, 0.35], "tanh"), ([0.5, 0.5], None), ([0.76, -0.34], None)),
    ),
    "02.lstm_params": Exercise(
        right=(4 * (20 * 10 + 20 * 20 + 20 + 20),),
        wrong=((640, "four gate"), (2400, "bias"), (1920, None), (2520, None)),
    ),
    "02.vanish_steps": Exercise(
        right=(18,),  # 0.45^17 = 1.3e-6, 0.45^18 = 5.9e-7
        wrong=((17, "off by one"), (19, None), (10, None)),
    ),
    "02.forget_gate": Exercise(
        right=(0.9**20,),
        wrong=((0.9 * 20, "multiplies"), (1 - 0.1 * 20, None), (0.5, None)),
    ),
    "02.gru_shapes": Exercise(
        right=(((3, 11, 7), (1, 3, 7)),),
        wrong=(
            (((3, 7), (1, 3, 7)), None),
            (((3, 11, 7), (3, 7)), None),
            (((11, 3, 7), (1, 3, 7)), None),
        ),
    ),
    # ---- 03
    "03.iso": Exercise(
        right=(RIGHT_ISO, tuple(f" {s} " for s in RIGHT_ISO)),
        wrong=(
            ("2005-04-03", "list of 4 strings"),
            (RIGHT_ISO[:2], "give 4 dates"),
            (["2005-03-04", *RIGHT_ISO[1:]], "#0: month and day are swapped"),
            ([RIGHT_ISO[0], "2051-11-30", *RIGHT_ISO[2:]], "#1: check the century rule"),
            ([*RIGHT_ISO[:2], "2049-2-1", RIGHT_ISO[3]], "#2: ISO is yyyy-mm-dd"),
            ([*RIGHT_ISO[:3], "1987-07-15"], "#3 is not right yet"),
            (["2005-03-04", "2051-11-30", "x", "y"], None),
        ),
        never=tuple(RIGHT_ISO),
    ),
    "03.additive": Exercise(
        right=([0.20, 0.36, 0.44], (0.2045, 0.3576, 0.4379)),
        wrong=(
            ([0.42, 0.16, 0.42], "dot-product weights"), ([0.3, 0.3, 0.3], "add up to 1"),
            ([0.5, 0.5], "give 3 weights"), ([0.33, 0.33, 0.34], "tanh of each entry"),
        ),
        never=("0.20", "0.36", "0.44"),
    ),
    "03.context": Exercise(
        right=([0.64, 0.80],),
        wrong=(([0.5, 0.5], "weighted sum"), ([0.64], "2")),
        unreadable=([None, "x"],),
    ),
    "03.dot": Exercise(
        right=([0.42, 0.16, 0.42],),
        wrong=(([0.20, 0.36, 0.44], "additive weights"), ([0.33, 0.33, 0.34], "s . h_j")),
    ),
    "03.memory": Exercise(
        right=({"without": 64, "with": 2560},),
        wrong=(
            ([64, 2560], "dict"),
            ({"without": 40, "with": 2560}, "one vector of hidden_size"),
            ({"without": 64, "with": 64}, "one state of hidden_size numbers per"),
            ({"without": 1, "with": 1}, None),
        ),
        never=("64", "2560"),
    ),
    # ---- 04
    "04.shapes": Exercise(
        right=(RIGHT_SHAPES, {k: list(v) for k, v in RIGHT_SHAPES.items()}),
        wrong=(
            ([(4, 6)], "dict"),
            ({"X": (4, 6)}, "missing: W_Q"),
            ({**RIGHT_SHAPES, "S": (4, 3), "W_V": (3, 6)}, "check W_V, S"),
        ),
    ),
    "04.softmax": Exercise(
        right=([0.09, 0.24, 0.67], (0.0900, 0.2447, 0.6652)),
        wrong=(
            ([0.33, 0.33, 0.34], "exp(s)"),
            ([0.1, 0.2, 0.3], "add up to 1"),
            ([0.09, 0.91], "give 3 weights"),
            ("0.09", "give 3 weights"),
        ),
        never=("0.09", "0.67", "0.24"),
    ),
    "04.dominant": Exercise(
        right=("plea", " Plea "),
        wrong=(("not", "largest weight"), ("court", "one of not, guilty, plea"), (2, "string")),
    ),
    "04.z1": Exercise(
        right=([0.76, 0.91],),
        wrong=(([0.67, 0.91], "a_1 * v_not"), ([0.76], "2"), ([0.0, 0.0], None)),
        never=("0.76", "0.91"),
        unreadable=([None, "x"],),
    ),
    "04.tiny": Exercise(
        right=([0.80, 0.20],),
        wrong=(([0.88, 0.12], "sqrt(d_k)"), ([0.5, 0.5], "softmax over the two")),
    ),
    # ---- 05
    "05.zeros": Exercise(
        right=([(1, 2), (1, 3), (2, 3)], [[2, 3], [1, 3], [1, 2]]),  # any order, lists as pairs
        wrong=(
            ([(0, 1), (0, 2), (1, 2)], "count rows and columns from 1"),
            ([(1, 1), (1, 2), (1, 3), (2, 3)], "diagonal is never blocked"),
            ([(2, 1), (3, 1), (3, 2)], "transpose"),
            ([(1, 2)], "blocks every key that comes after"),
            ([(1, 2, 3)], "pair"),
        ),
        never=("(1, 3)", "(2, 3)"),
        unreadable=(3,),
    ),
    "05.mask_row": Exercise(
        right=(
            [0, 0, 0, INF, INF],
            torch.tensor([0.0, 0.0, 0.0, INF, INF]),
            ["0", "0", "0", "-inf", "-inf"],
        ),
        wrong=(
            ([1, 1, 1, 0, 0], "boolean mask"),
            ([0, 0, 0, -1e9, -1e9], "either 0"),
            ([0, 0, INF, INF, INF], "positions 1, 2 and 3"),
            ([0, 0, 0, INF], "5"),
        ),
        unreadable=(["x"],),
    ),
    "05.z2": Exercise(
        right=([0.5, 1.0], (0.50, 1.00)),
        wrong=(
            ([1.0, 1.0], "that is Z_1"),
            ([0.67, 1.0], "without a mask"),
            ([0.5], "2 entries"),
            ([0.0, 0.0], None),
        ),
        never=("0.5",),
    ),
    "05.combined": Exercise(
        right=(12, 12.0),
        wrong=((15, "causal mask alone"), (15.5, "whole number"), (9, "both masks allow it")),
        never=("12",),
        unreadable=("many",),
    ),
    "05.convention": Exercise(
        right=("~mask", " mask.logical_not() "),
        wrong=(
            ("mask", "opposite"),
            ("not sure", "'mask' or '~mask'"),
            (True, "a string, 'mask' or '~mask'"),
        ),
        never=("~mask",),
    ),
    "05.leak": Exercise(
        right=(7,),
        wrong=(
            (8, "last position"),
            (1, "t + 1"),
            (4, "position by position"),
            (True, "whole number"),
        ),
        never=("7",),
    ),
    # ---- 06
    "06.params": Exercise(
        right=(4 * 64 * 64 + 4 * 64,),
        wrong=(
            (4 * 64 * 64, "biases"),
            (8 * (4 * 64 * 64 + 4 * 64), "full-size"),
            (1234, "number of heads should not matter"),
            ("16640", "int"),
        ),
    ),
    "06.head_shape": Exercise(
        right=((2, 6, 5, 8), [2, 6, 5, 8]),
        wrong=(
            ((2, 5, 6, 8), "wrong order"),
            ((2, 6, 5, 48), "d_model / n_heads"),
            ((2, 6, 5), "4 dimensions"),
            ("2, 6, 5, 8", "tuple of ints"),
        ),
    ),
    "06.cross": Exercise(
        right=({"out": (2, 3, 16), "weights": (2, 4, 3, 7)},),
        wrong=(
            ({"out": (2, 7, 16), "weights": (2, 4, 3, 7)}, "one output per query"),
            ({"out": (2, 3, 16), "weights": (2, 4, 7, 3)}, "one row per query"),
            ([(2, 3, 16)], "dict"),
        ),
    ),
    "06.torch_mask": Exercise(
        right=(negate, logical_not, to_float_mask),
        wrong=(
            (unchanged, "unchanged"),
            (as_float, "same keys"),
            (negate_transposed, "same keys"),
            (divide_by_zero, "ZeroDivisionError"),
            (negate_first_two_rows, "same shape"),
            ("~mask", "function"),
        ),
    ),
    "06.prev_head": Exercise(
        right=(find_prev_head,),
        wrong=((sharpest_head, "first token"), (first_head, "average"), (a_single_int, "pair")),
    ),
    # ---- 07
    "07.pe_value": Exercise(
        right=(math.cos(0.5), 0.878, torch.tensor(0.8776)),
        wrong=(
            (math.sin(0.5), "odd columns hold cosines"),
            (math.cos(50 / 10000 ** (3 / 4)), "column // 2"),
            (math.cos(math.radians(0.5)), "radians"),
            (0.1, "find i for column 3"),
            ("cos(0.5)", "number"),
            (True, "number"),
        ),
    ),
    "07.block_params": Exercise(
        right=(12 * 48 * 48 + 13 * 48,),
        wrong=(
            (4 * 48 * 48 + 2 * 48 * 192, "bias"),
            (BLOCK_NO_NORMS, "left out the two"),
            (BLOCK_NO_NORMS + 96, "each of the two"),
            (4 * (4 * 48 * 48 + 4 * 48) + 2 * 48 * 192 + 192 + 48 + 4 * 48, "number of heads"),
            (12345, "two LayerNorms"),
            (28272.0, "int"),
            (1, None),
        ),
    ),
    "07.initial_loss": Exercise(
        right=(math.log(50257), 10.82),
        wrong=(
            (math.log2(50257), "natural logarithm"),
            (math.log10(50257), "natural logarithm"),
            (1 / 50257, "-log"),
            (4.17, "same probability"),
        ),
    ),
    "07.attn_memory": Exercise(
        right=(8 * 6 * 256 * 256 * 4,),
        wrong=(
            (8 * 6 * 256 * 256, "4 bytes"),
            (8 * 6 * 256 * 4, "T x T"),
            (6 * 256 * 256 * 4, "every sequence"),
            (8 * 6 * 256 * 256 * 8, "not 8"),
            (1, "entries"),
            ("12582912", "int"),
        ),
    ),
    "07.window": Exercise(
        right=(list(range(4, 12)), range(4, 12), [11, 10, 9, 8, 7, 6, 5, 4]),
        wrong=(
            (list(range(12)), "at most block_size"),
            (list(range(8)), "most recent"),
            ([10, 11], "exactly block_size"),
            (list(range(3, 11)), "idx[:, -block_size:]"),
            ("4..11", "list"),
            (["a"], "int positions"),
        ),
    ),
    # ---- 08
    "08.params": Exercise(
        right=(GPT_PARAMS,),
        wrong=(
            (GPT_PARAMS + 65 * 128, "count it once"),
            (GPT_PARAMS - 64 * 128, "position embedding"),
            (123, "too few"),
            ("804096", "answer with an int"),
            (1, None),
        ),
    ),
    "08.top_p": Exercise(
        right=({0, 1, 2}, [2, 1, 0]),
        wrong=(({0, 1}, "crosses the line"), ({0, 1, 2, 3}, "too many"), (3, "set of ints")),
    ),
    "08.temperature": Exercise(
        right=(0.982,),
        wrong=((0.881, "temperature 1"), (0.6, "more likely, not less")),
    ),
    "08.context": Exercise(
        right=(list(range(4, 12)), range(4, 12)),
        wrong=((list(range(12)), "last block_size"), (list(range(8)), "which end"), ([1], None)),
    ),
    "08.longest_match": Exercise(
        right=(longest_match,),
        wrong=(
            (prefix_only, "start anywhere"),
            (divide_by_zero, "ZeroDivisionError"),
            (a_float, "return an int"),
            (5, "a function"),
        ),
    ),
}

NOTEBOOKS = sorted({name.split(".")[0] for name in TABLE})


def _id(answer: Any) -> str:
    text = getattr(answer, "__name__", None) if callable(answer) else None
    return text or repr(answer)[:40]


RIGHT_CASES = [
    pytest.param(name, answer, id=f"{name}={_id(answer)}")
    for name, ex in TABLE.items()
    for answer in ex.right
]
WRONG_CASES = [
    pytest.param(name, answer, hint, id=f"{name}={_id(answer)}")
    for name, ex in TABLE.items()
    for answer, hint in (*ex.wrong, *((a, UNREADABLE) for a in ex.unreadable))
]


# ---- the table-driven checks -------------------------------------------------------------


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_exercise_of_the_notebook_is_in_the_table(notebook):
    registered = [n for n in names() if n.split(".")[0] == notebook]
    assert registered == sorted(n for n in TABLE if n.split(".")[0] == notebook)
    assert 3 <= len(registered) <= 6
    for name in registered:
        assert len(prompt(name)) > 20


@pytest.mark.parametrize(("name", "answer"), RIGHT_CASES)
def test_right_answer_passes(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(("name", "answer", "hint"), WRONG_CASES)
def test_wrong_answer_gets_a_hint_that_does_not_reveal_the_solution(name, answer, hint, capsys):
    said = assert_hint(name, answer, capsys, hint)
    assert len(said) > 10
    for secret in (*TABLE[name].never, *map(str, TABLE[name].right)):
        assert (hint is not None and secret in hint) or secret not in said, (secret, said)


@pytest.mark.parametrize("name", list(TABLE))
def test_checking_leaves_the_global_rng_alone(name, capsys):
    ex = TABLE[name]
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    assert not check(name, None).ok
    assert "not answered yet" in capsys.readouterr().out
    for answer in (*ex.right, *(a for a, _ in ex.wrong), *ex.unreadable):
        check(name, answer, quiet=True)
    assert torch.equal(torch.rand(3), expected)  # checking does not move the learner's RNG


# ---- the checkers' expected values, against independent computations ---------------------


def test_nb03_expected_values_are_what_the_prompts_describe():
    sources = ["3/4/05", "nov 30 51", "01.02.2049", "tuesday the 14th of july 1987"]
    assert nb03.iso_sources() == sources
    assert [datetime.date.fromisoformat(s) for s in nb03.expected_iso()] == [
        d for d, _ in nb03.ISO_CASES
    ]
    # by hand: scores v . tanh(s + h_j) with s = [1, 0]
    scores = torch.tensor([2 * 0 + torch.tanh(torch.tensor(2.0)), 2 * torch.tanh(torch.tensor(1.0)),
                           torch.tanh(torch.tensor(2.0)) + torch.tanh(torch.tensor(1.0))],
                          dtype=torch.float64)  # fmt: skip
    weights, context = nb03.expected_additive()
    torch.testing.assert_close(weights, torch.softmax(scores, 0))
    torch.testing.assert_close(context, weights @ torch.tensor(nb03.H, dtype=torch.float64))
    torch.testing.assert_close(
        nb03.expected_dot(), torch.softmax(torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64), 0)
    )
    assert nb03.expected_memory() == {"without": 64, "with": 40 * 64}


def test_nb03_expected_values_leave_the_random_state_alone():
    torch.manual_seed(123)
    a = torch.rand(3)
    torch.manual_seed(123)
    nb03.expected_memory()
    nb03.expected_additive()
    assert torch.equal(torch.rand(3), a)


def test_nb06_planted_weights_are_attention_and_found_by_the_package():
    w = _planted_weights(3, 4, 16, (0, 3), seed=1)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 16))
    assert expected_prev_head(w) == (0, 3)
    assert sharpest_head(w) == (1, 0)  # the sink is sharper: a naive answer fails


def test_nb07_expected_values_agree_with_independent_computations():
    assert expected_pe(50, 3, 4) == pytest.approx(math.cos(50 / 10000 ** (2 / 4)), abs=1e-12)
    assert expected_pe(3, 0, 8) == pytest.approx(math.sin(3), abs=1e-12)
    assert expected_block_params(48, 4, 192) == 12 * 48**2 + 13 * 48
    real = TransformerBlock(16, 2, 40)
    assert expected_block_params(16, 2, 40) == sum(p.numel() for p in real.parameters())
    assert expected_initial_loss(65) == pytest.approx(math.log(65), abs=1e-12)
    assert expected_memory_bytes(2, 3, 5) == 2 * 3 * 5 * 5 * 4
    assert expected_window(8, 12, 11) == list(range(4, 12))
    assert expected_window(4, 6, 11) == [2, 3, 4, 5]
    assert expected_window(8, 5, 11) == [0, 1, 2, 3, 4]  # a short prompt is seen whole


def test_nb08_expected_values_agree_with_independent_reasoning():
    c = E.PARAMS_CONFIG
    assert E.expected_params() == by_formula(c["vocab_size"], c["block_size"], c["n_layer"],
                                             c["n_embd"])
    p = torch.softmax(torch.tensor(E.TOP_P_LOGITS), -1)
    cum_before = torch.cumsum(p, 0) - p  # logits are sorted already
    assert E.expected_top_p() == set((cum_before < E.TOP_P).nonzero().flatten().tolist())
    assert E.expected_temperature() == pytest.approx(
        torch.softmax(torch.tensor(E.TEMPERATURE_LOGITS) / E.TEMPERATURE, -1)[0].item(),
        abs=1e-6)
    n, T = E.CONTEXT["prompt_length"], E.CONTEXT["block_size"]
    assert E.expected_context() == list(range(n - T, n))
