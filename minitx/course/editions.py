"""Classroom editions of the course: one source, two editions, built by one command.

    minitx edition student --out DIR [--only 00 04]
    minitx edition instructor --out DIR
    minitx edition student --package      (into the package: what ``minitx course`` writes)

The source is the repository's ``notebooks/`` folder. It holds everything: each exercise's
solution, run and checked, and the explanation of each prediction's outcome. Cell tags (in
each cell's ``metadata.tags``, where Jupyter's property inspector shows them) say what the
student edition does with a cell:

``solution``
    a code cell that answers an exercise (it calls ``check("NN.name", answer)``). The
    student edition replaces its code with the stub kept in the cell's metadata,
    ``metadata["minitx"]["stub"]`` (``answer = None  # your turn: ...`` with the exercise's
    own instructions; for an implement exercise, the empty function first), and stores as
    its output exactly what :func:`minitx.course.exercises.check` prints for an unanswered
    exercise, so the student notebooks run, and compare equal, with every exercise blank.
``reveal``
    a markdown cell that explains a prediction's outcome: left out of the student edition.
``model-answer``
    a markdown cell with an open question's model answer: left out of the student edition.
``answer-output``
    a code cell whose stored output gives an answer away (the experiment run after a
    prediction): the student edition keeps its code, clears its outputs and tags it
    ``nbval-ignore-output``, so that running it is the only way to see the outcome.

Every other cell, and each notebook's metadata, is copied unchanged. No kernel runs: the
stub's output comes from the checker's own message, so a build takes a second and gives the
same files every time. The instructor edition is the source with a note cell at the top.

Each notebook's first code cell is :func:`install_cell_source`: on Colab or a fresh
JupyterHub it installs the package from :data:`PIP_SPEC`; where ``minitx`` is installed it
does nothing and prints nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EDITIONS = ("student", "instructor")
TAGS = ("solution", "reveal", "model-answer", "answer-output")
CODE_TAGS, MARKDOWN_TAGS = ("solution", "answer-output"), ("reveal", "model-answer")
COMMAND = "edition"
# Where a notebook installs the package from when it is missing (Colab, a fresh JupyterHub).
# The one place that names it: every notebook's first code cell is install_cell_source().
PIP_SPEC = "minitx @ git+https://github.com/minitx-course/minitx"
INSTALL_NOTE = (
    "On Colab or a fresh JupyterHub, the next cell installs `minitx`; elsewhere it does nothing."
)
INSTRUCTOR_NOTE = (
    "**Instructor edition.** This copy holds every exercise's solution (cells tagged "
    "`solution`), the explanation of each prediction's outcome (`reveal`) and what each "
    "experiment printed. Hand students the student edition: `minitx course DIR` writes it "
    "from the installed package, `minitx edition student --out DIR` from this checkout."
)
_CHECK = re.compile(r"""\bcheck\(\s*["'](\d\d\.\w+)["']\s*,\s*answer\s*\)""")
_NUMBER = re.compile(r"\d\d")


def install_cell_source() -> str:
    """The first code cell of every notebook: install :data:`PIP_SPEC` where ``minitx``
    cannot be imported, else do nothing (and print nothing)."""
    return (
        "import importlib.util\n"
        "\n"
        'if importlib.util.find_spec("minitx") is None:  # Colab, a fresh JupyterHub\n'
        f'    %pip install --quiet "{PIP_SPEC}"'
    )


def default_source() -> Path:
    """The repository's ``notebooks/`` folder; a ``FileNotFoundError`` that says what to do
    when the package runs outside a checkout (an installed wheel has no notebooks)."""
    folder = Path(__file__).resolve().parents[2] / "notebooks"
    if not any(folder.glob("[0-9][0-9]_*.ipynb")):
        raise FileNotFoundError(
            f"no course notebooks (NN_name.ipynb) in {folder}: the editions are built from a "
            "checkout of the repository; give the notebooks folder as source"
        )
    return folder


def notebook_paths(source: str | os.PathLike, notebooks: Sequence[str] | None = None) -> list[Path]:
    """The source notebooks ``NN_name.ipynb`` of ``source``: all of them, or those whose
    two-digit numbers are in ``notebooks`` (e.g. ``["00", "04"]``), in course order."""
    folder = Path(source)
    if not folder.is_dir():
        raise FileNotFoundError(f"source {folder} is not a folder of notebooks")
    found = {p.name[:2]: p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))}
    if not found:
        raise FileNotFoundError(f"no course notebooks (NN_name.ipynb) in {folder}")
    if notebooks is None:
        return list(found.values())
    wanted = [str(n) for n in notebooks]
    unknown = [n for n in wanted if not _NUMBER.fullmatch(n) or n not in found]
    if unknown or not wanted:
        raise ValueError(f"notebooks must be among {', '.join(found)} (two digits); "
                         f"got {', '.join(unknown) if unknown else 'none'}")
    return [found[n] for n in sorted(set(wanted))]


def _tags(cell: dict[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _lines(text: str) -> list[str]:
    """Text as nbformat stores it on disk: a list of lines, each with its newline."""
    return text.splitlines(keepends=True)


def edition_tags(cell: dict[str, Any]) -> list[str]:
    """The edition tags of ``cell`` (of :data:`TAGS`); a ``ValueError`` for a tag on the
    wrong kind of cell or two edition tags on one cell."""
    tags = [t for t in _tags(cell) if t in TAGS]
    allowed = CODE_TAGS if cell.get("cell_type") == "code" else MARKDOWN_TAGS
    wrong = [t for t in tags if t not in allowed]
    if wrong or len(tags) > 1:
        raise ValueError(f"tags {tags} on a {cell.get('cell_type')} cell: a code cell takes "
                         f"one of {CODE_TAGS}, a markdown cell one of {MARKDOWN_TAGS}")
    return tags


def stub_of(cell: dict[str, Any]) -> tuple[str, str]:
    """``(exercise name, stub source)`` of a ``solution`` cell; a ``ValueError`` when the
    stub is missing, is no stub, or checks another exercise than the solution."""
    stub = cell.get("metadata", {}).get("minitx", {}).get("stub")
    if not isinstance(stub, str):
        raise ValueError("a solution cell needs its student stub in metadata.minitx.stub")
    names, checked = _CHECK.findall(stub), _CHECK.findall(_text(cell))
    if len(names) != 1 or names != checked:
        raise ValueError(f"the solution checks {checked} and its stub {names}: expected one "
                         "check(NAME, answer) call, the same in both")
    if not re.search(r"^answer = None  # your turn", stub, re.M):
        raise ValueError(f"the stub of {names[0]} must leave 'answer = None  # your turn: ...'")
    return names[0], stub


def unanswered_output(name: str) -> list[dict[str, Any]]:
    """What running an unanswered exercise's cell prints, as a stored output: the
    checker's own reminder for exercise ``name``."""
    from minitx.course.exercises import check

    message = check(name, None, quiet=True).message
    return [{"name": "stdout", "output_type": "stream", "text": _lines(message + "\n")}]


def _student_cell(cell: dict[str, Any]) -> dict[str, Any] | None:
    """The student edition of one cell: itself, its stub, a copy without outputs, or None."""
    tags = edition_tags(cell)
    if not tags:
        return cell
    if tags[0] in MARKDOWN_TAGS:
        return None
    new = copy.deepcopy(cell)
    metadata = new["metadata"]
    metadata["tags"] = [t for t in metadata["tags"] if t not in TAGS]
    if tags[0] == "solution":
        name, stub = stub_of(cell)
        del metadata["minitx"]["stub"]
        if not metadata["minitx"]:
            del metadata["minitx"]
        new["source"], new["outputs"] = _lines(stub), unanswered_output(name)
    else:  # answer-output: the code stays, its outcome is for the student to run
        new["outputs"], new["execution_count"] = [], None
        if "nbval-ignore-output" not in metadata["tags"]:
            metadata["tags"].append("nbval-ignore-output")
    if not metadata["tags"]:
        del metadata["tags"]
    return new


def student_notebook(nb: dict[str, Any]) -> dict[str, Any]:
    """The student edition of the source notebook ``nb`` (a new dict; ``nb`` is unchanged)."""
    cells = [_student_cell(c) for c in nb["cells"]]
    return {**nb, "cells": [c for c in cells if c is not None]}


def instructor_notebook(nb: dict[str, Any]) -> dict[str, Any]:
    """The instructor edition of ``nb``: the source with :data:`INSTRUCTOR_NOTE` on top."""
    for cell in nb["cells"]:
        if "solution" in edition_tags(cell):
            stub_of(cell)  # a broken source fails here too, not only in the student build
    note = {"cell_type": "markdown", "id": "instructor-edition", "metadata": {},
            "source": _lines(INSTRUCTOR_NOTE)}
    return {**nb, "cells": [note, *nb["cells"]]}


def build_edition(
    edition: str,
    out: str | os.PathLike,
    notebooks: Sequence[str] | None = None,
    *,
    source: str | os.PathLike | None = None,
) -> list[Path]:
    """Write the ``edition`` (one of :data:`EDITIONS`) of the course's notebooks into the
    folder ``out`` (created if needed): all of them, or those whose two-digit numbers are
    in ``notebooks`` (e.g. ``["00", "04"]``). ``source`` defaults to the repository's
    ``notebooks/`` folder. Returns the paths written, in course order."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {', '.join(EDITIONS)}; got {edition!r}")
    folder = Path(source) if source is not None else default_source()
    paths = notebook_paths(folder, notebooks)
    out = Path(out)
    if out.exists() and out.resolve() == folder.resolve():
        raise ValueError(f"--out {out} is the source folder: the edition would replace it")
    make = student_notebook if edition == "student" else instructor_notebook
    built = []
    for path in paths:
        try:
            nb = make(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: {err}") from err
        built.append((out / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n"))
    out.mkdir(parents=True, exist_ok=True)
    for target, text in built:  # nothing is written unless every notebook could be built
        target.write_text(text, encoding="utf-8")
    return [target for target, _ in built]


# ---- the command -------------------------------------------------------------------------


def add_command(sub: Any) -> None:
    """Add ``edition`` to ``sub`` (what ``ArgumentParser.add_subparsers`` returns)."""
    cmd = sub.add_parser(COMMAND, help="build the student or instructor edition of the "
                         "notebooks (e.g. minitx edition student --out DIR)",
                         description="Write the course's notebooks as one edition: "
                         "'student' (exercises blank, no solution, no answer in any stored "
                         "output), 'instructor' (everything) or 'nbgrader' (an nbgrader "
                         "course folder: solution cells marked, hidden tests with points).")
    cmd.add_argument("edition", choices=(*EDITIONS, "nbgrader"),
                     help="student, instructor or nbgrader (an nbgrader course folder)")
    where = cmd.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, metavar="DIR",
                       help="folder to write the notebooks to (created if missing)")
    where.add_argument("--package", action="store_true", help="write the student edition "
                       "into the package (minitx/course/student/), what `minitx course` "
                       "writes out: run it after changing a notebook")
    cmd.add_argument("--only", nargs="+", metavar="NN",
                     help="only these notebooks, by number (e.g. --only 00 04)")
    cmd.add_argument("--source", type=Path, metavar="DIR",
                     help="the source notebooks (default: the repository's notebooks/)")


def run(args: argparse.Namespace, prog: str = "minitx") -> int:
    """Run ``minitx edition``: 0 when written; one line on stderr and 2 for bad input,
    1 when a file cannot be read or written."""
    try:
        if args.package:
            from minitx.course.handout import PACKAGED, package_student_edition

            if args.edition != "student" or args.only:
                raise ValueError("--package writes the student edition of every notebook "
                                 "(the package carries no solution): give 'student' and no "
                                 "--only")
            paths, args.out = package_student_edition(args.source), PACKAGED
        elif args.edition == "nbgrader":
            from minitx.course.nbgrader_export import export_nbgrader

            paths = export_nbgrader(args.out, args.only, source=args.source)
        else:
            paths = build_edition(args.edition, args.out, args.only, source=args.source)
    except (ValueError, OSError) as err:
        if isinstance(err, OSError) and err.strerror and err.filename:
            err = f"{err.filename}: {err.strerror}"  # not "[Errno 13] ..."
        message = " ".join(str(err).split())
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2 if isinstance(err, ValueError) else 1
    print(f"{args.edition} edition: {len(paths)} notebooks in {args.out}")
    if args.edition == "nbgrader":
        print(f"next: cd {args.out} && nbgrader generate_assignment nbNN")
    return 0


__all__ = [
    "EDITIONS",
    "PIP_SPEC",
    "TAGS",
    "add_command",
    "build_edition",
    "default_source",
    "edition_tags",
    "install_cell_source",
    "instructor_notebook",
    "notebook_paths",
    "run",
    "stub_of",
    "student_notebook",
    "unanswered_output",
]
