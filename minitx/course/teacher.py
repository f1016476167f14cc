"""What a teacher runs: solutions to print, a progress report over saved notebooks, and the
teacher's guide (``TEACHING.md``), built from the exercise modules.

    python -m minitx.course.exercises solutions 04
    python -m minitx.course.exercises progress submissions/ --csv progress.csv
    python -m minitx.course.exercises guide > TEACHING.md

The same commands are ``minitx solutions``, ``minitx progress`` and ``minitx guide``.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import re
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from minitx.course.exercises import KINDS, NOTEBOOKS, get, names, notes

RUN_TIMES = Path(__file__).resolve().parents[2] / "benchmarks" / "notebook_times.json"


def run_times() -> tuple[str, dict[str, float]]:
    """The machine and the seconds per notebook recorded by
    ``python benchmarks/bench_notebooks.py --record`` (empty if never recorded)."""
    if not RUN_TIMES.exists():
        return "", {}
    record = json.loads(RUN_TIMES.read_text(encoding="utf-8"))
    return record["machine"], record["seconds"]


def solution_text(name: str) -> str:
    """The solution of exercise ``name`` as a teacher reads it: source code for a function,
    the value otherwise, the model answer for an open question."""
    ex = get(name)
    if ex.kind == "think":
        return ex.model_answer or ""
    if ex.solution is None:
        raise ValueError(f"exercise {name!r} has no solution registered")
    answer = ex.solution()
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


# ---- progress: read saved notebooks, run nothing ---------------------------------------

STATUSES = ("correct", "not yet", "unanswered", "not run")
_CHECK_CALL = re.compile(r"""check\(\s*["'](\d\d\.\w+)["']""")


@dataclass(frozen=True)
class Progress:
    """One exercise of one saved notebook: ``status`` is one of :data:`STATUSES`."""

    path: str
    exercise: str
    kind: str
    status: str


def _status(name: str, outputs: list[dict]) -> str:
    text = "".join(
        "".join(o["text"]) if "text" in o else "".join(o.get("data", {}).get("text/plain", ""))
        for o in outputs
    )
    if f"[{name}] Correct!" in text:
        return "correct"
    if f"[{name}] Not yet:" in text:
        return "not yet"
    if f"[{name}] not answered yet" in text:
        return "unanswered"
    return "not run"


def notebook_progress(path: str | Path) -> list[Progress]:
    """The checked exercises of one saved notebook and what its stored outputs say of each.

    An exercise whose check cell has no output (not run since the last edit, or cleared)
    is ``not run``. Open questions are not listed: no checker can read them.
    """
    path = Path(path)
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: expected a saved Jupyter notebook (.ipynb): {err}") from err
    rows = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", ""))
        for name in _CHECK_CALL.findall(source):
            kind = get(name).kind if name in names() else "unknown"
            rows.append(Progress(str(path), name, kind, _status(name, cell.get("outputs", []))))
    return rows


def progress(paths: Iterable[str | Path]) -> list[Progress]:
    """:func:`notebook_progress` over notebooks and folders of notebooks (searched deeply)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in f.parts)
        elif p.exists():
            files.append(p)
        else:
            raise FileNotFoundError(f"no such notebook or folder: {p}")
    return [row for f in files for row in notebook_progress(f)]


def write_csv(rows: Sequence[Progress], out) -> None:
    """The rows as CSV: path, exercise, kind, status."""
    writer = csv.writer(out)
    writer.writerow(["path", "exercise", "kind", "status"])
    for r in rows:
        writer.writerow([r.path, r.exercise, r.kind, r.status])


def summary(rows: Sequence[Progress]) -> str:
    """One line per notebook file: how many of its checked exercises are correct."""
    per_file: dict[str, list[Progress]] = {}
    for r in rows:
        per_file.setdefault(r.path, []).append(r)
    lines = []
    for path, items in per_file.items():
        done = [r.exercise for r in items if r.status == "correct"]
        which = f" ({', '.join(done)})" if done else ""
        lines.append(f"{path}: {len(done)}/{len(items)} correct{which}")
    return "\n".join(lines)


# ---- the teacher's guide -----------------------------------------------------------------


def _titles() -> dict[str, str]:
    root = Path(__file__).resolve().parents[2] / "notebooks"
    titles = {}
    for nb in sorted(root.glob("[0-9][0-9]_*.ipynb")):
        first = json.loads(nb.read_text(encoding="utf-8"))["cells"][0]
        heading = "".join(first["source"]).splitlines()[0].lstrip("# ").strip()
        titles[nb.name[:2]] = heading
    return titles


def guide() -> str:
    """``TEACHING.md``: per notebook, goals, times, misconceptions, exercises by kind, what
    to assign, and model answers to the open questions."""
    titles = _titles()
    machine, seconds = run_times()
    out = [
        "# Teaching with minitx",
        "",
        "Generated by `python -m minitx.course.exercises guide` from the exercise modules "
        "(`minitx/exercises/nbNN.py`); edit those, not this file.",
        "",
        "- Solutions to the checked exercises: `minitx solutions NN` (e.g. `minitx solutions 04`).",
        "- A progress table over submitted notebooks, read without running them: "
        "`minitx progress submissions/ --csv progress.csv`.",
        "- Run times: each notebook run top to bottom in a fresh kernel by "
        f"`python benchmarks/bench_notebooks.py --record` on {machine or 'no machine yet'} "
        "(the machine the course's own CI runs on). Re-run it on your machines to plan a class.",
        "",
    ]
    for notebook in NOTEBOOKS:
        info = notes(notebook)
        exs = [get(n) for n in names(notebook)]
        out.append(f"## {titles.get(notebook, notebook)}")
        out.append("")
        run = seconds.get(notebook)
        times = f"reading about {info.reading_minutes} min" if info else "reading time not given"
        if run is not None:
            times += f"; running top to bottom {run:.0f} s"
        out += [f"*{times}*", ""]
        if info:
            out += ["**Learning goals**", "", *(f"- {g}" for g in info.goals), ""]
            out += ["**Misconceptions it targets**", ""]
            out += [*(f"- {m}" for m in info.misconceptions), ""]
        out += ["**Exercises**", "", "| exercise | kind | assign |", "|---|---|---|"]
        assign = set(info.assign) if info else set()
        out += [f"| `{e.name}` | {e.kind} | {'yes' if e.name in assign else ''} |" for e in exs]
        out.append("")
        for e in (e for e in exs if e.kind == "think"):
            out += [f"**`{e.name}`.** {e.prompt}", "", f"> *Model answer.* {e.model_answer}", ""]
    return "\n".join(out).rstrip() + "\n"


def counts() -> dict[str, dict[str, int]]:
    """Exercises per notebook and kind."""
    return {nb: {k: sum(get(n).kind == k for n in names(nb)) for k in KINDS} for nb in NOTEBOOKS}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="minitx.course.exercises", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sol = sub.add_parser("solutions", help="print the solutions of one notebook's exercises")
    sol.add_argument("notebook", help="two digits, e.g. 04")
    prog = sub.add_parser("progress", help="which exercises saved notebooks answer correctly")
    prog.add_argument("paths", nargs="+", help="notebooks or folders of notebooks")
    prog.add_argument("--csv", help="write the table to this file ('-' for standard output)")
    sub.add_parser("guide", help="print TEACHING.md")
    args = parser.parse_args(argv)
    try:
        if args.command == "solutions":
            print(solutions(args.notebook.zfill(2)))
        elif args.command == "progress":
            rows = progress(args.paths)
            if args.csv == "-":
                write_csv(rows, sys.stdout)
            else:
                if args.csv:
                    with open(args.csv, "w", newline="", encoding="utf-8") as f:
                        write_csv(rows, f)
                print(summary(rows))
        else:
            print(guide(), end="")
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


__all__ = [
    "Progress",
    "counts",
    "guide",
    "main",
    "notebook_progress",
    "progress",
    "solution_text",
    "solutions",
    "summary",
    "write_csv",
]
