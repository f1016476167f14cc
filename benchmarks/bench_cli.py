"""The command line the benchmark scripts share: ``--quick`` for a smoke run of a few steps,
``--record`` to write the script's record (never from a smoke run), ``--jobs`` where runs can
go side by side. A script imports it as a sibling (``from bench_cli import ...``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def parse_args(doc: str, record: Path, argv: list[str] | None = None,
               jobs: bool = False) -> argparse.Namespace:
    """The script's arguments; its docstring's first line is the description."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps each (smoke run)")
    if jobs:
        parser.add_argument("--jobs", type=int, default=1, help="runs at once, one thread each")
    parser.add_argument("--record", action="store_true", help=f"write {record.name}")
    args = parser.parse_args(argv)
    if args.record and args.quick:
        raise SystemExit("--record needs the full runs: drop --quick")
    return args


def write_record(record: dict, path: Path) -> None:
    """Write ``record`` as indented JSON and say where."""
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}")
