"""``minitx course DIR`` (minitx.course.handout): the student edition the package carries,
written into a new or empty folder; the packaged copy is the student edition of today's
source, byte for byte. (That the written notebooks hold no solution is checked by
tests/course/test_editions.py, whose student-edition checks run on them too.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minitx import cli
from minitx.course import handout
from minitx.course.editions import build_edition

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
REGENERATE = "regenerate it with: minitx edition student --package"


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("minitx") and "error" in lines[0], lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# ---- the packaged copy -----------------------------------------------------------------


def test_the_packaged_student_edition_is_a_fresh_build_of_the_source(tmp_path):
    """What the wheel carries is what `minitx edition student` builds from notebooks/ today:
    the same notebooks (every NN_*.ipynb, later ones included), byte for byte."""
    fresh = {p.name: p.read_bytes() for p in build_edition("student", tmp_path)}
    packaged = {f.name: f.read_bytes() for f in handout.packaged_notebooks()}
    assert sorted(packaged) == sorted(fresh) == [p.name for p in SOURCES], REGENERATE
    stale = [name for name in fresh if packaged[name] != fresh[name]]
    assert not stale, f"the packaged {stale} differ from the source's; {REGENERATE}"
    assert sorted(p.name for p in handout.PACKAGED.iterdir()) == sorted(fresh)  # nothing else


def test_package_student_edition_writes_the_source_and_drops_what_it_no_longer_has(
        tmp_path, monkeypatch):
    src, packaged = tmp_path / "src", tmp_path / "student"
    src.mkdir()
    packaged.mkdir()
    cell = {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["Hello."]}
    (src / "00_new.ipynb").write_text(json.dumps(
        {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (packaged / "00_old.ipynb").write_text("{}")  # a notebook renamed in the source
    monkeypatch.setattr(handout, "PACKAGED", packaged)
    written = handout.package_student_edition(src)
    assert written == [packaged / "00_new.ipynb"]
    assert sorted(p.name for p in packaged.iterdir()) == ["00_new.ipynb"]
    assert json.loads(written[0].read_text())["cells"] == [cell]


@pytest.mark.parametrize("argv, fragments", [
    (["edition", "instructor", "--package"], ["--package writes the student edition",
                                              "no solution"]),
    (["edition", "student", "--package", "--only", "04"], ["no --only"]),
    (["edition", "student", "--package", "--out", "{tmp}"], ["not allowed with argument"]),
], ids=["instructor", "--only", "--out too"])
def test_edition_package_refuses_anything_but_the_whole_student_edition(argv, fragments,
                                                                         tmp_path, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in handout.PACKAGED.iterdir()}
    code, out, err = run([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert code == 2 and out == ""
    one_line_error(err, *fragments)
    assert {p.name: p.stat().st_mtime_ns for p in handout.PACKAGED.iterdir()} == before
    assert not list(tmp_path.iterdir())


def test_no_packaged_notebooks_says_how_to_build_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(handout.resources, "files", lambda _: tmp_path)
    with pytest.raises(FileNotFoundError, match="minitx edition student --package"):
        handout.packaged_notebooks()
    code, out, err = run(["course", str(tmp_path / "course")], capsys)
    assert code == 1 and out == ""
    one_line_error(err, "holds no student edition")
    assert not (tmp_path / "course").exists()


# ---- minitx course DIR -----------------------------------------------------------------


def test_course_writes_every_student_notebook_into_a_new_folder(tmp_path, capsys):
    folder = tmp_path / "new" / "my-course"
    code, out, err = run(["course", str(folder)], capsys)
    assert code == 0 and err == ""
    assert out.splitlines() == [
        f"wrote the course, {len(SOURCES)} notebooks, to {folder}",
        f"open it with: jupyter lab {folder}   (start with 00_start_here.ipynb)",
    ]
    written = sorted(folder.iterdir())
    assert [p.name for p in written] == [p.name for p in SOURCES]  # the notebooks alone
    packaged = {f.name: f.read_bytes() for f in handout.packaged_notebooks()}
    assert all(p.read_bytes() == packaged[p.name] for p in written)
    cells = json.loads((folder / "04_self_attention.ipynb").read_text())["cells"]
    assert any("answer = None  # your turn" in "".join(c["source"]) for c in cells)


def test_course_goes_to_minitx_course_by_default_and_into_an_empty_folder(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["course"], capsys)
    assert code == 0 and "to minitx-course" in out
    assert len(list((tmp_path / "minitx-course").glob("*.ipynb"))) == len(SOURCES)
    (tmp_path / "empty").mkdir()
    assert run(["course", "empty"], capsys)[0] == 0
    assert len(list((tmp_path / "empty").iterdir())) == len(SOURCES)


def test_course_refuses_a_folder_that_is_not_empty_unless_forced(tmp_path, capsys):
    folder = tmp_path / "course"
    folder.mkdir()
    mine = folder / "04_self_attention.ipynb"
    mine.write_text("my work")
    (folder / "notes.txt").write_text("keep")
    code, out, err = run(["course", str(folder)], capsys)
    assert code == 2 and out == ""
    one_line_error(err, "minitx course: error:", f"{folder} is not empty", "--force")
    assert sorted(p.name for p in folder.iterdir()) == ["04_self_attention.ipynb", "notes.txt"]
    assert mine.read_text() == "my work"
    code, out, err = run(["course", str(folder), "--force"], capsys)
    assert code == 0 and err == ""
    assert mine.read_bytes() == (handout.PACKAGED / mine.name).read_bytes()
    assert (folder / "notes.txt").read_text() == "keep"
    assert len(list(folder.glob("*.ipynb"))) == len(SOURCES)


def test_course_refuses_a_file_and_an_unwritable_folder(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    code, out, err = run(["course", str(target)], capsys)
    assert code == 2 and out == ""
    one_line_error(err, "is a file, not a folder")
    if os.geteuid() == 0:  # root writes anywhere
        return
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, out, err = run(["course", str(locked / "course")], capsys)
    assert code == 1 and out == ""
    one_line_error(err, "Permission denied")


def test_course_needs_nothing_jupyter_brings(tmp_path):
    """Only the package installed (no nbformat, nbconvert or jinja2, which come with
    Jupyter): the command still writes the course."""
    script = ("import sys\n"
              "for name in ('nbformat', 'nbconvert', 'nbclient', 'jinja2'):\n"
              "    sys.modules[name] = None  # an import of it fails\n"
              "from minitx.cli import main\n"
              f"sys.exit(main(['course', {str(tmp_path / 'course')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "course").glob("*.ipynb"))) == len(SOURCES)


def test_course_has_help(capsys):
    code, out, _ = run(["course", "--help"], capsys)
    assert code == 0 and "usage: minitx course" in out and "--force" in out
    unwrapped = " ".join(re.sub(r"-\n\s*", "-", out).split())  # argparse wraps at a hyphen
    assert "(created if missing; default minitx-course)" in unwrapped
    code, out, _ = run(["--help"], capsys)
    assert code == 0 and "course" in out
