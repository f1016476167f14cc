"""The course a learner starts from: the student edition the package carries, written into a
folder by one command.

    minitx course [DIR] [--force]       (DIR defaults to ./minitx-course)

The package holds the student edition of every notebook as package data, in
``minitx/course/student/``: exercises blank, no solution, no explanation of a prediction's
outcome, no model answer (what ``minitx edition student`` builds from the instructor's
source). ``minitx course`` copies those notebooks into DIR, with nothing but the package
installed: on a fresh machine, on Colab, on a JupyterHub. The notebooks read nothing from
their own folder (the corpus goes to ``minitx.data.data_dir()``, the trained models are
package data, notebook 08 saves its checkpoints in a temporary folder), so DIR holds the
notebooks alone. A folder that is not empty is refused unless ``--force`` is given; then
only the course's notebooks in it are replaced.

The packaged copy is generated in a checkout, from ``notebooks/``, by
``minitx edition student --package`` (:func:`package_student_edition`), after the stored
outputs are regenerated; ``tests/course/test_handout.py`` checks that it equals a fresh build,
byte for byte, so it cannot go stale unnoticed.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

COMMAND = "course"
DEFAULT_DIR = "minitx-course"
# Where the packaged student edition lives in a checkout (and in an installed package).
PACKAGED = Path(__file__).resolve().parent / "student"
_PATTERN = "[0-9][0-9]_*.ipynb"


def _is_course_notebook(name: str) -> bool:
    return len(name) > 3 and name[:2].isdigit() and name[2] == "_" and name.endswith(".ipynb")


def packaged_notebooks() -> list[Traversable]:
    """The student notebooks the package carries (``NN_name.ipynb``), in course order; a
    ``FileNotFoundError`` that says how to build them when there are none."""
    folder = resources.files("minitx.course").joinpath("student")
    found = sorted((f for f in folder.iterdir() if _is_course_notebook(f.name)),
                   key=lambda f: f.name) if folder.is_dir() else []
    if not found:
        raise FileNotFoundError(
            "this installation of minitx holds no student edition (minitx/course/student/ "
            "has no notebooks); in a checkout, build it with: minitx edition student --package"
        )
    return found


def write_course(out: str | os.PathLike = DEFAULT_DIR, *, force: bool = False) -> list[Path]:
    """Write the packaged student edition into the folder ``out`` (created if needed) and
    return the notebooks' paths, in course order.

    ``out`` must be new or empty: a ``ValueError`` otherwise, unless ``force``, which
    replaces the course's notebooks there and leaves every other file as it is. Nothing is
    written unless every notebook could be read."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file, not a folder: give a folder for the course")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(
            f"{out} is not empty: the course is written into a new or empty folder. Give "
            f"another folder, or add --force to replace the course's notebooks in {out} "
            "(what you wrote in them is lost; other files stay)"
        )
    notebooks = [(f.name, f.read_bytes()) for f in packaged_notebooks()]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in notebooks:
        (out / name).write_bytes(data)
        written.append(out / name)
    return written


def package_student_edition(source: str | os.PathLike | None = None) -> list[Path]:
    """Build the student edition of every notebook of ``source`` (default: the checkout's
    ``notebooks/``) into :data:`PACKAGED`, where :func:`write_course` copies it from, and
    remove any packaged notebook the source no longer has. Returns the paths written."""
    from minitx.course.editions import build_edition

    written = build_edition("student", PACKAGED, source=source)
    names = {p.name for p in written}
    for stale in PACKAGED.glob(_PATTERN):
        if stale.name not in names:
            stale.unlink()
    return written


# ---- the command -------------------------------------------------------------------------


def add_command(sub: Any) -> None:
    """Add ``course`` to ``sub`` (what ``ArgumentParser.add_subparsers`` returns)."""
    cmd = sub.add_parser(COMMAND, help="write the course's notebooks into a folder, to open "
                         "with Jupyter (e.g. minitx course my-course)",
                         description="Write the course's notebooks, the student edition "
                         "(exercises blank, no solution), into a new or empty folder. "
                         "Then open them: jupyter lab DIR.")
    cmd.add_argument("dir", nargs="?", type=Path, default=Path(DEFAULT_DIR), metavar="DIR",
                     help=f"the folder to write them to (created if missing; default "
                     f"{DEFAULT_DIR})")
    cmd.add_argument("--force", action="store_true", help="write into a folder that is not "
                     "empty, replacing the course's notebooks there")


def run(args: argparse.Namespace, prog: str = "minitx") -> int:
    """Run ``minitx course``: 0 when written; one line on stderr and 2 for a folder that
    cannot take the course, 1 when a file cannot be read or written."""
    try:
        paths = write_course(args.dir, force=args.force)
    except (ValueError, OSError) as err:
        if isinstance(err, OSError) and err.strerror and err.filename:
            err = f"{err.filename}: {err.strerror}"  # not "[Errno 13] ..."
        message = " ".join(str(err).split())
        print(f"{prog} {COMMAND}: error: {message}", file=sys.stderr)
        return 2 if isinstance(err, ValueError) else 1
    print(f"wrote the course, {len(paths)} notebooks, to {args.dir}\n"
          f"open it with: jupyter lab {args.dir}   (start with {paths[0].name})")
    return 0


__all__ = [
    "DEFAULT_DIR",
    "add_command",
    "package_student_edition",
    "packaged_notebooks",
    "run",
    "write_course",
]
