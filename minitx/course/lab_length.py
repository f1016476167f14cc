"""How long a notebook takes as a lab, exercises included: the course's planning rule.

A student reads 120 words of prose a minute and works through 12 non-empty lines of code a
minute (comments included), and spends 3 minutes on each *predict* exercise, 12 on each
*implement*, 4 on each *compute* and 8 on each *think*. Count it on the student edition, which
is what a learner opens. Every notebook of the course comes to at most :data:`LIMIT` minutes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from minitx.course.exercises import KINDS, get, names

WORDS_PER_MINUTE = 120
CODE_LINES_PER_MINUTE = 12
EXERCISE_MINUTES = {"predict": 3, "implement": 12, "compute": 4, "think": 8}
LIMIT = 90


@dataclass(frozen=True)
class LabLength:
    """A notebook's size: prose words, code lines, exercises by kind, and the minutes they
    add up to by the rule above."""

    notebook: str
    words: int
    code_lines: int
    exercises: dict[str, int]

    @property
    def minutes(self) -> float:
        return (
            self.words / WORDS_PER_MINUTE
            + self.code_lines / CODE_LINES_PER_MINUTE
            + sum(EXERCISE_MINUTES[k] * n for k, n in self.exercises.items())
        )


def lab_length(path: str | Path) -> LabLength:
    """The lab length of the notebook at ``path`` (``NN_name.ipynb``). Its exercises are the
    registered ones of notebook NN whose names its cells mention."""
    path = Path(path)
    number = path.name[:2]
    if not re.fullmatch(r"\d\d", number):
        raise ValueError(f"expected a notebook named NN_name.ipynb, got {path.name!r}")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    words = code = 0
    text = []
    for cell in cells:
        source = "".join(cell["source"])
        text.append(source)
        if cell["cell_type"] == "markdown":
            words += len(source.split())
        elif cell["cell_type"] == "code":
            code += sum(1 for line in source.splitlines() if line.strip())
    mentioned = "\n".join(text)
    exercises = dict.fromkeys(KINDS, 0)
    for name in names(number):
        if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", mentioned):
            exercises[get(name).kind] += 1
    return LabLength(number, words, code, exercises)


def table(folder: str | Path) -> str:
    """A markdown table of the lab length of every notebook in ``folder``."""
    rows = ["| notebook | words | code lines | exercises (p/i/c/t) | minutes |",
            "|---|---|---|---|---|"]
    for path in sorted(Path(folder).glob("[0-9][0-9]_*.ipynb")):
        n = lab_length(path)
        kinds = "/".join(str(n.exercises[k]) for k in KINDS)
        rows.append(f"| {path.stem} | {n.words:,} | {n.code_lines:,} | {kinds} | {n.minutes:.0f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m minitx.course.lab_length FOLDER  (e.g. a student edition)")
    print(table(sys.argv[1]))
