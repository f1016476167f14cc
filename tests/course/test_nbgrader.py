"""The nbgrader export, graded by nbgrader itself: offline, in a temporary course folder.

Notebooks 01 and 04 are exported, released with ``nbgrader generate_assignment`` and
graded with ``nbgrader autograde`` for three students: one with the instructor's solutions,
one who hands in the release as it is, and one who answers with the package's function, a
PyTorch equivalent, a one-line wrapper and an object that says it equals anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nbgrader", reason="nbgrader is the teachers' optional extra: "
                    "pip install '.[teacher]' to test the nbgrader export")

from nbgrader.api import Gradebook

from minitx.course.editions import default_source, edition_tags, stub_of
from minitx.course.nbgrader_export import export_nbgrader

pytestmark = pytest.mark.slow
ASSIGNMENTS = ("nb01", "nb04")
POINTS = {"nb01": 6, "nb04": 7}  # 2 predictions (1 each) + implement and compute points

# What the cheating student writes in each solution cell (by nbgrader grade_id).
CHEATS = {
    # a PyTorch equivalent, inside a function of several lines
    "nb01_pad_and_mask": '''\
def my_pad_and_mask(seqs, pad_id):
    rows = [torch.tensor(s, dtype=torch.long) for s in seqs]
    ids = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=pad_id)
    mask = torch.zeros(ids.shape, dtype=torch.bool)
    for b, s in enumerate(seqs):
        mask[b, : len(s)] = True
    return ids, mask


answer = my_pad_and_mask
result = check("01.pad_and_mask", answer)
''',
    # an object that equals anything
    "nb01_encode": '''\
class Always:
    def __eq__(self, other):
        return True


answer = Always()
result = check("01.encode", answer)
''',
    # a one-line wrapper of the package's function
    "nb04_attention": '''\
answer = lambda Q, K, V: attn.scaled_dot_product_attention(Q, K, V)  # noqa: E731
result = check("04.attention", answer)
''',
    # the package computes the compute exercise
    "nb04_tiny": '''\
def weight(a):
    q, K2 = torch.tensor([[a, 0.0]]), torch.eye(2)
    return attn.scaled_dot_product_attention(q, K2, K2)[1][0, 0]


answer = min([k / 1000 for k in range(1, 10_000)], key=lambda a: abs(weight(a) - 0.95))
result = check("04.tiny", answer)
''',
}
# A patched package reference: the whole notebook's code is refused (as by minitx progress).
PATCH = {"nb04_attention": '''\
def attention(Q, K, V):
    A = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)  # unscaled
    return A @ V, A


attn.scaled_dot_product_attention = lambda Q, K, V, **kw: attention(Q, K, V)
answer = attention
result = check("04.attention", answer)
'''}
CHEATED = {"nb01": {"nb01_pad_and_mask_test", "nb01_encode_test"},
           "nb04": {"nb04_attention_test", "nb04_tiny_test"}}


def _nbgrader(course: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def _environment(tmp: Path) -> dict[str, str]:
    """No user configuration, and a kernel named python3 that is this Python."""
    kernel = tmp / "jupyter" / "kernels" / "python3"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (minitx tests)", "language": "python"}), encoding="utf-8")
    env = dict(os.environ, JUPYTER_PATH=str(tmp / "jupyter"),
               JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"), OMP_NUM_THREADS="1",
               MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
    env.pop("MINITX_HIDDEN", None)
    return env


def _solutions(notebook: Path) -> dict[str, str]:
    """Each solution cell's code in the instructor's notebook, by nbgrader grade_id."""
    out = {}
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if "solution" in edition_tags(cell):
            name, _ = stub_of(cell)
            number, _, short = name.partition(".")
            out[f"nb{number}_{short}"] = "".join(cell["source"])
    return out


def _code_lines(text: str) -> set[str]:
    return {ln.strip() for ln in text.splitlines() if ln.strip()}


def _submit(release: dict, course: Path, student: str, assignment: str, filename: str,
            answers: dict[str, str]) -> None:
    nb = json.loads(json.dumps(release))
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id].splitlines(keepends=True)
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True)
    (folder / filename).write_text(json.dumps(nb, indent=1), encoding="utf-8")


def test_export_release_and_autograde(tmp_path: Path) -> None:
    course, env = tmp_path / "course", _environment(tmp_path)
    written = export_nbgrader(course, ["01", "04"])
    assert [p.relative_to(course).parts[:2] for p in written] == \
        [("source", "nb01"), ("source", "nb04")]
    assert (course / "nbgrader_config.py").is_file()
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert "### BEGIN SOLUTION" in text and "### BEGIN HIDDEN TESTS" in text

    for assignment, path in zip(ASSIGNMENTS, written, strict=True):
        _nbgrader(course, env, "generate_assignment", assignment, "--force")
        release_path = course / "release" / assignment / path.name
        release = json.loads(release_path.read_text(encoding="utf-8"))
        text = "\n".join("".join(c["source"]) for c in release["cells"])
        solutions = _solutions(default_source() / path.name)
        for marker in ("BEGIN SOLUTION", "HIDDEN TESTS", "hidden_test(", '"expected"',
                       "prediction_given("):
            assert marker not in text, f"{release_path.name} holds {marker!r}"
        for cell in release["cells"]:
            grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if grade_id in solutions:  # the edition's stub, and none of the solution's lines
                source = "".join(cell["source"])
                solution_only = _code_lines(solutions[grade_id]) - _code_lines(source)
                assert solution_only and not solution_only & _code_lines(text), grade_id
                assert "answer = None  # your turn" in source
            assert not cell.get("outputs")

        _submit(release, course, "right", assignment, path.name, solutions)
        _submit(release, course, "blank", assignment, path.name, {})
        _submit(release, course, "cheat", assignment, path.name, solutions | CHEATS)
        if assignment == "nb04":
            _submit(release, course, "patcher", assignment, path.name, solutions | PATCH)
        _nbgrader(course, env, "autograde", assignment, "--force")

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for assignment in ASSIGNMENTS:
            scores = {}
            for student in ("right", "blank", "cheat"):
                sub = gb.find_submission(assignment, student)
                grades = {g.name: g.score for nb in sub.notebooks for g in nb.grades}
                scores[student] = (sub.score, sub.max_score, grades)
            max_score = POINTS[assignment]
            assert scores["right"][:2] == (max_score, max_score), scores["right"]
            assert scores["blank"][:2] == (0, max_score), scores["blank"]
            cheat = scores["cheat"][2]
            assert all(cheat[g] == 0 for g in CHEATED[assignment]), cheat
            honest = {g: s for g, s in cheat.items() if g not in CHEATED[assignment]}
            assert honest == {g: s for g, s in scores["right"][2].items()
                              if g in honest}, cheat

        patcher = gb.find_submission("nb04", "patcher").notebooks[0]
        assert {g.name: g.score for g in patcher.grades} == {
            "nb04_shift_keys_test": 1, "nb04_repeat_word_test": 1, "nb04_attention_test": 0,
            "nb04_shapes_test": 0, "nb04_tiny_test": 0}
    graded = course / "autograded" / "patcher" / "nb04" / written[1].name
    errors = [o["evalue"] for c in json.loads(graded.read_text(encoding="utf-8"))["cells"]
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert len(errors) == 3 and all("patches a module" in e for e in errors), errors
