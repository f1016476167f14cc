"""What a teacher runs: solutions to print, a progress report over saved notebooks, and the
teacher's guide (``instructor/TEACHING.md``), built from the exercise modules and the instructor's
answer key (``instructor/solutions/nbNN.py`` in the repository, never in the package: see
:mod:`minitx.course.exercises.answers`).

    python -m minitx.course.exercises solutions 04
    python -m minitx.course.exercises progress submissions/ --csv progress.csv
    python -m minitx.course.exercises guide > instructor/TEACHING.md

The same commands are ``minitx solutions``, ``minitx progress`` and ``minitx guide``.

The progress report trusts nothing a notebook printed, nor anything the learner's code
reports: it grades implement and compute answers with the instructor's hidden cases, in a
fresh process per notebook, and computes every verdict here from plain data
(:mod:`minitx.course.exercises.grading`). A prediction is reported as answered or not.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from minitx.course.exercises import (
    KINDS,
    NOTEBOOKS,
    TeachingNotes,
    get,
    names,
    notes,
)
from minitx.course.exercises.answers import available, model_answer, solution
from minitx.course.exercises.grading import grade_notebook
from minitx.course.lab_length import LabLength, lab_length
from minitx.train.runtime import available_cpus

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMES = ROOT / "benchmarks" / "notebook_times.json"


class NothingToDo(ValueError):
    """The input holds nothing to work on (a folder without notebooks, say)."""


def run_times() -> tuple[str, dict[str, float]]:
    """The machine and the seconds per notebook recorded by
    ``python benchmarks/bench_notebooks.py --record`` (empty if never recorded)."""
    if not RUN_TIMES.exists():
        return "", {}
    record = json.loads(RUN_TIMES.read_text(encoding="utf-8"))
    return record["machine"], record["seconds"]


def solution_text(name: str) -> str:
    """The solution of exercise ``name`` as a teacher reads it: source code for a function,
    the value otherwise, the model answer for an open question. Raises
    :class:`~minitx.course.exercises.answers.SolutionsUnavailable` outside the instructor's
    checkout."""
    if get(name).kind == "think":
        return model_answer(name)
    answer = solution(name)
    if callable(answer):
        return textwrap.dedent(inspect.getsource(answer)).rstrip()
    return repr(answer)


def solutions(notebook: str) -> str:
    """Every exercise of ``notebook`` with its prompt and solution, as text."""
    if notebook not in NOTEBOOKS:
        raise ValueError(f"notebook must be one of {', '.join(NOTEBOOKS)}; got {notebook!r}")
    blocks = []
    for name in names(notebook):
        ex = get(name)
        body = textwrap.indent(solution_text(name), "    ")
        blocks.append(f"{name} ({ex.kind})\n{textwrap.fill(ex.prompt, 88)}\n\n{body}\n")
    return "\n".join(blocks)


# ---- progress: run every saved answer through its checker again -------------------------

STATUSES = ("correct", "not yet", "answered", "unanswered", "refused", "not checked")


@dataclass(frozen=True)
class Progress:
    """One exercise of one saved notebook: ``status`` is one of :data:`STATUSES`
    ("answered" is for predictions, never judged; "refused": the answer used a forbidden
    route); ``detail`` says what is wrong, why it was refused, or why it was not checked."""

    path: str
    exercise: str
    kind: str
    status: str
    detail: str = ""


def notebook_progress(path: str | Path, timeout: float = 60.0) -> list[Progress]:
    """Each checked exercise of one saved notebook, graded again in a fresh process with
    the instructor's hidden cases (each cell after the imports and definitions of the cells
    above it, for at most ``timeout`` seconds): see
    :func:`minitx.course.exercises.grading.grade_notebook`. Printed output counts for
    nothing. An exercise of the notebook that no cell checks is ``not checked``; open
    questions are not listed: no checker can read them."""
    return [Progress(str(path), g.exercise, g.kind, g.status, g.detail)
            for g in grade_notebook(path, timeout)]


def progress(paths: Iterable[str | Path], timeout: float = 60.0) -> list[Progress]:
    """:func:`notebook_progress` over notebooks and folders of notebooks (searched deeply),
    as many files at a time as there are CPU cores. Raises ``NothingToDo`` when the paths
    hold no notebook, or no notebook checks anything."""
    files: list[Path] = []
    paths = [Path(p) for p in paths]
    for p in paths:
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in f.parts)
        elif p.exists():
            files.append(p)
        else:
            raise FileNotFoundError(f"no such notebook or folder: {p}")
    where = ", ".join(map(str, paths))
    if not files:
        raise NothingToDo(f"no saved notebooks (.ipynb) in {where}")
    with ThreadPoolExecutor(max_workers=max(1, min(len(files), available_cpus()))) as pool:
        per_file = list(pool.map(lambda f: notebook_progress(f, timeout), files))
    rows = [row for file_rows in per_file for row in file_rows]
    if not rows:
        raise NothingToDo(f"no cell of the notebooks in {where} calls check(...)")
    return rows


def write_csv(rows: Sequence[Progress], out: TextIO) -> None:
    """The rows as CSV: path, exercise, kind, status, detail."""
    writer = csv.writer(out)
    writer.writerow(["path", "exercise", "kind", "status", "detail"])
    for r in rows:
        writer.writerow([r.path, r.exercise, r.kind, r.status, r.detail])


def summary(rows: Sequence[Progress]) -> str:
    """One line per notebook file: how many of its graded exercises (implement and
    compute) are correct, how many predictions are answered, and how many answers were
    refused or could not be checked."""
    per_file: dict[str, list[Progress]] = {}
    for r in rows:
        per_file.setdefault(r.path, []).append(r)
    lines = []
    for path, items in per_file.items():
        graded = [r for r in items if r.kind != "predict"]
        done = [r.exercise for r in graded if r.status == "correct"]
        line = f"{path}: {len(done)}/{len(graded)} correct"
        line += f" ({', '.join(done)})" if done else ""
        predictions = [r for r in items if r.kind == "predict"]
        if predictions:
            answered = sum(r.status == "answered" for r in predictions)
            line += f"; {answered}/{len(predictions)} predictions answered"
        for status in ("refused", "not checked"):
            count = sum(r.status == status for r in items)
            line += f"; {count} {status} (see --csv)" if count else ""
        lines.append(line)
    return "\n".join(lines)


# ---- the teacher's guide -----------------------------------------------------------------

START_HERE = TeachingNotes(
    "00",
    goals=(
        "Check that Python, PyTorch, ipywidgets and matplotlib are recent enough and work, "
        "on the device the course will use.",
        "Get the tiny Shakespeare corpus in place, verified, or know the command that does.",
        "See how the course is organised: one idea per notebook, the code in the package.",
        "See how the checked exercises work: replace None, run the cell, read Correct or a "
        "hint; never the solution.",
    ),
    misconceptions=(
        "Any copy of tiny Shakespeare will do; a file of another size or checksum is "
        "refused, so that every learner's numbers match the printed ones.",
        "The numbers match the printed ones whatever order the cells run in; the first cell "
        "seeds the generators, so they match when the notebook runs top to bottom.",
        "Widgets that render as `VBox(children=...)` mean a broken install; the front end "
        "does not show widgets (use JupyterLab or VS Code).",
    ),
    reading_minutes=10,
    assign=(),
)


def _titles() -> dict[str, str]:
    titles = {}
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        first = json.loads(nb.read_text(encoding="utf-8"))["cells"][0]
        heading = "".join(first["source"]).splitlines()[0].lstrip("# ").strip()
        titles[nb.name[:2]] = heading
    return titles



def _lab_lengths() -> dict[str, LabLength]:
    """Each notebook's lab length, counted on the student edition built from ``notebooks/``."""
    from minitx.course.editions import build_edition

    with tempfile.TemporaryDirectory() as folder:
        return {p.name[:2]: lab_length(p) for p in build_edition("student", Path(folder))}


_NO_KEY = "in the instructor's checkout only (`minitx solutions NN` there)."


def guide() -> str:
    """``instructor/TEACHING.md``: per notebook, goals, times, misconceptions, exercises by kind,
    what
    to assign, and model answers to the open questions (where the instructor's answer key
    is: else a note says where they are)."""
    titles = _titles()
    machine, seconds = run_times()
    with_answers = available()
    labs = _lab_lengths()
    out = [
        "# Teaching with minitx",
        "",
        "Generated by `python -m minitx.course.exercises guide` from the exercise modules "
        "(`minitx/course/exercises/nbNN.py`; notebook 00's entry is in "
        "`minitx/course/teacher.py`) and the model answers of the instructor's checkout "
        "(`instructor/solutions/nbNN.py`); edit those, not this file.",
        "",
        "- Solutions to the checked exercises: `minitx solutions NN` (e.g. `minitx solutions 04`).",
        "- A progress table over submitted notebooks: `minitx progress submissions/ --csv "
        "progress.csv`. It trusts nothing a notebook printed, nor anything the learner's code "
        "reports: it runs each saved check cell again (with the imports and definitions of "
        "the cells above it, in a fresh process per notebook, at most 60 s a cell), runs each "
        "implement answer on hidden cases (`instructor/hidden/nbNN.py`, never in the "
        "package) and judges it, and each compute answer, here against the answer key, from "
        "plain data. It refuses, and says why, an answer that calls the package's or "
        "PyTorch's own piece, a notebook that patches a module, an object that is not plain "
        "data, and code that looks names up at run time. That runs the learners' code: do it "
        "where that is acceptable.",
        "- Predictions are reported as *answered* or *unanswered*, never right or wrong: "
        "every notebook reveals its predictions a few cells later, so a right letter proves "
        "nothing. Grade predictions, if at all, on the reasoning a learner writes down.",
        "- Run times: each notebook run top to bottom in a fresh kernel by "
        f"`python benchmarks/bench_notebooks.py --record` on {machine or 'no machine yet'} "
        "(the machine the course's own CI runs on). Re-run it on your machines to plan a class.",
        "",
    ]
    for notebook in ("00", *NOTEBOOKS):
        info = START_HERE if notebook == "00" else notes(notebook)
        exs = [get(n) for n in names(notebook)] if notebook in NOTEBOOKS else []
        out += [f"## {titles.get(notebook, notebook)}", ""]
        run = seconds.get(notebook)
        lab = labs.get(notebook)
        times = (f"lab of about {lab.minutes:.0f} min ({lab.words:,} words, {lab.code_lines} "
                 "code lines, its exercises)") if lab else "lab length not measured"
        if run is not None:
            times += f"; running top to bottom {run:.0f} s"
        out += [f"*{times}*", ""]
        if info:
            out += ["**Learning goals**", "", *(f"- {g}" for g in info.goals)]
            out += ["", "**Misconceptions it targets**", ""]
            out += [*(f"- {m}" for m in info.misconceptions), ""]
        if not exs:
            out += ["**Exercises**: none of its own; it shows `check` on `01.encode`.", ""]
            continue
        out += ["**Exercises**", "", "| exercise | kind | assign |", "|---|---|---|"]
        assign = set(info.assign) if info else set()
        out += [f"| `{e.name}` | {e.kind} | {'yes' if e.name in assign else ''} |" for e in exs]
        out.append("")
        for e in (e for e in exs if e.kind == "think"):
            said = model_answer(e.name) if with_answers else _NO_KEY
            out += [f"**`{e.name}`.** {e.prompt}", "", f"> *Model answer.* {said}", ""]
    return "\n".join(out).rstrip() + "\n"


def counts() -> dict[str, dict[str, int]]:
    """Exercises per notebook and kind."""
    return {nb: {k: sum(get(n).kind == k for n in names(nb)) for k in KINDS} for nb in NOTEBOOKS}


# ---- the commands ------------------------------------------------------------------------

COMMANDS = {
    "solutions": "print the solutions of one notebook's exercises (e.g. minitx solutions 04)",
    "progress": "grade the answers of saved notebooks with hidden cases (--csv FILE)",
    "guide": "print the teacher's guide, instructor/TEACHING.md",
}


def add_commands(sub: Any) -> None:
    """Add the ``solutions``, ``progress`` and ``guide`` subcommands to ``sub`` (what
    ``ArgumentParser.add_subparsers`` returns); :func:`run` runs them."""
    sol = sub.add_parser("solutions", help=COMMANDS["solutions"],
                         description="Print every exercise of a notebook with its solution.")
    sol.add_argument("notebook", help=f"two digits, {NOTEBOOKS[0]} to {NOTEBOOKS[-1]}")
    prog = sub.add_parser(
        "progress", help=COMMANDS["progress"],
        description="Grade learners' saved notebooks: run every saved check cell again in a "
        "fresh process, grade implement and compute answers with the instructor's hidden "
        "cases, and list each answer as correct, not yet, refused (and why) or not checked; "
        "predictions as answered or unanswered (printed output counts for nothing). This "
        "runs the learners' code.")
    prog.add_argument("paths", nargs="+", metavar="PATH",
                      help="saved notebooks (.ipynb) or folders of them (searched deeply)")
    prog.add_argument("--csv", metavar="FILE",
                      help="also write the table to FILE ('-': only the table, to stdout)")
    prog.add_argument("--timeout", type=float, default=60.0, metavar="S",
                      help="seconds each check cell may run (default 60)")
    sub.add_parser("guide", help=COMMANDS["guide"],
                   description="Print the teacher's guide (instructor/TEACHING.md) built from the "
                   "exercise modules.")


def run(args: argparse.Namespace, prog: str = "minitx") -> int:
    """Run the teacher's command ``args.command``; errors are one line on stderr, status 2
    for bad input and 1 when the input holds nothing to do."""
    try:
        if args.command == "solutions":
            print(solutions(args.notebook.zfill(2)))
        elif args.command == "progress":
            if not args.timeout > 0:
                raise ValueError(f"--timeout must be > 0 seconds, got {args.timeout}")
            if args.csv not in (None, "-") and Path(args.csv).is_dir():
                raise ValueError(f"--csv {args.csv} is a folder; name the file to write")
            rows = progress(args.paths, args.timeout)
            if args.csv == "-":
                write_csv(rows, sys.stdout)
                return 0
            if args.csv:
                with open(args.csv, "w", newline="", encoding="utf-8") as f:
                    write_csv(rows, f)
            print(summary(rows))
        else:
            print(guide(), end="")
    except NothingToDo as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as err:
        if isinstance(err, OSError) and err.strerror and err.filename:
            err = f"{err.filename}: {err.strerror}"  # not "[Errno 13] ..."
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m minitx.course.exercises COMMAND``: the teacher's commands alone."""
    parser = argparse.ArgumentParser(prog="minitx.course.exercises",
                                     description=__doc__.split("\n")[0])
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return run(parser.parse_args(argv), parser.prog)


__all__ = [
    "COMMANDS",
    "STATUSES",
    "NothingToDo",
    "Progress",
    "add_commands",
    "counts",
    "guide",
    "main",
    "notebook_progress",
    "progress",
    "run",
    "solution_text",
    "solutions",
    "summary",
    "write_csv",
]
