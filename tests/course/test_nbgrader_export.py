"""The nbgrader export's pieces, without nbgrader: solution cells, and the hidden tests run
outside a kernel (the end-to-end run through nbgrader is tests/course/test_nbgrader.py)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch

from minitx.course.editions import default_source, edition_tags, stub_of
from minitx.course.exercises.grading import hidden
from minitx.course.nbgrader_export import (
    BEGIN_SOLUTION,
    END_SOLUTION,
    _spec,
    hidden_test,
    nbgrader_notebook,
    prediction_given,
    solution_source,
)
from minitx.nn import attention as attn


def _notebook(number: str) -> dict:
    path = next(default_source().glob(f"{number}_*.ipynb"))
    return json.loads(path.read_text(encoding="utf-8"))


def _released(source: str) -> str:
    """What nbgrader's ClearSolutions makes of ``source`` with an empty code stub."""
    out, inside = [], False
    for line in source.split("\n"):
        if BEGIN_SOLUTION in line:
            inside = True
            out.append("")
        elif END_SOLUTION in line:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def test_solution_cells_release_as_the_edition_stub() -> None:
    nb = _notebook("04")
    done = 0
    for cell in nb["cells"]:
        if "solution" in edition_tags(cell):
            _, stub = stub_of(cell)
            source = solution_source("".join(cell["source"]), stub)
            assert source.count(BEGIN_SOLUTION) == 1
            keep = [ln for ln in _released(source).split("\n") if ln.strip()]
            assert keep == [ln for ln in stub.split("\n") if ln.strip()]
            done += 1
    assert done == 5


def test_notebook_cells_and_prediction_points() -> None:
    nb = nbgrader_notebook(_notebook("04"), hidden("04"))
    meta = [c["metadata"].get("nbgrader") for c in nb["cells"]]
    tests = {m["grade_id"]: m["points"] for m in meta if m and m["grade"]}
    assert tests == {"nb04_shift_keys_test": 1, "nb04_repeat_word_test": 1,
                     "nb04_attention_test": 3, "nb04_shapes_test": 1, "nb04_tiny_test": 1}
    assert all(m["locked"] and not m["solution"] for m in meta if m and m["grade"])
    assert not any("reveal" in c["metadata"].get("tags", []) for c in nb["cells"])
    quiet = nbgrader_notebook(_notebook("04"), hidden("04"), prediction_points=0)
    grades = [c for c in quiet["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert len(grades) == 3


def test_exercise_without_hidden_cases_warns_and_is_not_graded() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nb = nbgrader_notebook(_notebook("04"), {})
    assert sorted(str(w.message).split(":")[0] for w in caught) == \
        ["04.attention", "04.shapes", "04.tiny"]
    ids = {c["metadata"].get("nbgrader", {}).get("grade_id") for c in nb["cells"]}
    assert "nb04_attention_test" not in ids and "nb04_shift_keys_test" in ids


@pytest.fixture(scope="module")
def attention_spec() -> str:
    return json.dumps(_spec("04.attention", "implement", hidden("04")["04.attention"]))


def _attention(Q, K, V):
    s = Q @ K.transpose(-2, -1) / Q.size(-1) ** 0.5
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    A = e / e.sum(dim=-1, keepdim=True)
    return A @ V, A


def test_hidden_test_passes_honest_answers(attention_spec: str) -> None:
    hidden_test("04.attention", _attention, attention_spec)
    as_float32 = lambda Q, K, V: tuple(t.float() for t in _attention(Q, K, V))
    hidden_test("04.attention", as_float32, attention_spec)
    as_numpy = lambda Q, K, V: tuple(t.numpy() for t in _attention(Q, K, V))
    hidden_test("04.attention", as_numpy, attention_spec)
    spec = json.dumps(_spec("01.truncation", "compute", hidden("01")["01.truncation"]))
    hidden_test("01.truncation", (np.int64(6), 2.0), spec)
    prediction_given("04.shift_keys", " B", "abcd")


class _Lying(torch.Tensor):
    def allclose(self, *args, **kwargs):
        return True

    def __eq__(self, other):
        return True

    __hash__ = torch.Tensor.__hash__


def test_hidden_test_refuses_the_routes(attention_spec: str) -> None:
    helper = attn.scaled_dot_product_attention
    routes = {
        "forbidden": [attn.scaled_dot_product_attention,
                      lambda Q, K, V: helper(Q, K, V),
                      lambda Q, K, V: tuple(t.clone() + 0 for t in helper(Q, K, V))],
        "differs": [lambda Q, K, V: tuple(torch.zeros_like(t).as_subclass(_Lying)
                                          for t in _attention(Q, K, V))],
        "expected a function": [[1.0, 2.0]],
        "not answered": [None],
    }
    for why, answers in routes.items():
        for answer in answers:
            with pytest.raises(AssertionError, match=why):
                hidden_test("04.attention", answer, attention_spec)
    spec = json.dumps(_spec("01.encode", "compute", hidden("01")["01.encode"]))
    always = type("Always", (), {"__eq__": lambda self, other: True})()
    for answer, why in ((always, "not plain data"), ("5, 7, 4", "differs")):
        with pytest.raises(AssertionError, match=why):
            hidden_test("01.encode", answer, spec)
    for answer in (None, "", "e", ["a"]):
        with pytest.raises(AssertionError, match="no prediction"):
            prediction_given("04.shift_keys", answer, "abcd")
