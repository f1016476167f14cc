"""``minitx edition``: the student or instructor edition of the notebooks, written to --out;
every bad input is one line on stderr naming what was expected."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minitx import cli

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *fragments: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("minitx") and "error" in lines[0], lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def test_the_student_edition_of_two_notebooks(tmp_path, capsys):
    code, out, err = run(["edition", "student", "--out", str(tmp_path), "--only", "04", "00"],
                         capsys)
    assert code == 0 and err == ""
    assert out.strip() == f"student edition: 2 notebooks in {tmp_path}"
    assert sorted(p.name[:2] for p in tmp_path.iterdir()) == ["00", "04"]
    cells = json.loads(next(tmp_path.glob("04_*.ipynb")).read_text(encoding="utf-8"))["cells"]
    assert any("answer = None  # your turn" in "".join(c["source"]) for c in cells)


def test_the_instructor_edition_of_every_notebook(tmp_path, capsys):
    out_dir = tmp_path / "new" / "folder"
    code, out, _ = run(["edition", "instructor", "--out", str(out_dir)], capsys)
    assert code == 0 and f"instructor edition: {len(SOURCES)} notebooks" in out
    assert sorted(p.name for p in out_dir.iterdir()) == [p.name for p in SOURCES]


@pytest.mark.parametrize("argv, fragments", [
    (["edition", "teacher", "--out", "{tmp}"], ["invalid choice: 'teacher'", "student",
                                                "instructor"]),
    (["edition", "student"], ["--out"]),
    (["edition", "student", "--out", "{tmp}", "--only", "4", "99"],
     ["notebooks must be among 00, 01", "got 4, 99"]),
    (["edition", "student", "--out", "{tmp}", "--source", "{tmp}/none"],
     ["is not a folder of notebooks"]),
    (["edition", "student", "--out", str(ROOT / "notebooks")], ["is the source folder"]),
], ids=["bad edition", "no --out", "bad --only", "missing --source", "--out is the source"])
def test_bad_input_is_one_line_naming_what_is_expected(argv, fragments, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = run(argv, capsys)
    assert code != 0 and out == ""
    one_line_error(err, *fragments)
    assert not list(tmp_path.glob("*.ipynb"))


def test_a_bad_edition_in_a_separate_process(tmp_path):
    """As a shell sees it: a bad edition name exits with status 2 and one line on stderr."""
    done = subprocess.run([sys.executable, "-c", "import sys; from minitx.cli import main; "
                           "sys.exit(main())", "edition", "both", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    one_line_error(done.stderr, "minitx edition: error", "'both'", "'student', 'instructor'")


def test_edition_has_help(capsys):
    code, out, _ = run(["edition", "--help"], capsys)
    assert code == 0 and "usage: minitx edition" in out and "--only NN" in out
