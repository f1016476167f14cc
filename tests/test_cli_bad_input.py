"""The installed ``minitx`` command on bad input: for every input in the suite below, a
non-zero exit status, one line on stderr that says ``error:``, and never a traceback.

Each case runs the real entry point in a subprocess (what a user types in a terminal);
they run a few at a time, once for the module, and each test reads its own result.
"""

from __future__ import annotations

import os
import string
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.checkpoint import export_checkpoint, make_checkpoint, save_checkpoint


def minitx_command() -> list[str]:
    """The console script next to this Python (the virtualenv's), else ``python -m``."""
    script = Path(sys.executable).with_name("minitx")
    return [str(script)] if script.exists() else [sys.executable, "-m", "minitx.cli"]


def run_minitx(args: list[str], env: dict[str, str] | None = None,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    environ.pop("MINITX_DEBUG", None)
    return subprocess.run([*minitx_command(), *args], capture_output=True, text=True,
                          env=environ, cwd=cwd, timeout=300, stdin=subprocess.DEVNULL)


# name: (arguments, with {tmp} for the case's folder; expected status)
CASES = {
    "unknown command": (["fly"], 2),
    "unknown preset": (["train", "--preset", "huge", "--out", "{tmp}/run"], 2),
    "negative steps": (["train", "--preset", "tiny", "--max-steps", "-5"], 2),
    "steps not a number": (["train", "--preset", "tiny", "--max-steps", "many"], 2),
    "out is a file": (["train", "--preset", "tiny", "--out", "{tmp}/file.txt"], 2),
    "resume without a run": (["train", "--preset", "tiny", "--out", "{tmp}", "--resume"], 2),
    "resume a corrupt run": (["train", "--preset", "tiny", "--out", "{tmp}/corrupt-run",
                              "--resume"], 1),
    "resume an exported run": (["train", "--preset", "tiny", "--out", "{tmp}/exported-run",
                                "--resume"], 2),
    "resume where ckpt.pt is a folder": (["train", "--preset", "tiny", "--out",
                                          "{tmp}/folder-run", "--resume"], 1),
    "no corpus, no download": (["train", "--preset", "tiny", "--out", "{tmp}/run",
                                "--no-download"], 1),
    "export over an existing file": (["train", "--preset", "tiny", "--out", "{tmp}/run",
                                      "--export", "{tmp}/file.txt"], 2),
    "missing checkpoint": (["sample", "--checkpoint", "{tmp}/none.pt", "--prompt", "a"], 1),
    "checkpoint is a folder": (["sample", "--checkpoint", "{tmp}", "--prompt", "a"], 1),
    "checkpoint is text": (["sample", "--checkpoint", "{tmp}/file.txt", "--prompt", "a"], 1),
    "checkpoint is empty": (["sample", "--checkpoint", "{tmp}/empty.pt", "--prompt", "a"], 1),
    "checkpoint is truncated": (["sample", "--checkpoint", "{tmp}/cut.pt", "--prompt", "a"], 1),
    "negative token count": (["sample", "--checkpoint", "{tmp}/good.pt", "--prompt", "a",
                              "--num-tokens", "-1"], 2),
    "empty prompt": (["sample", "--checkpoint", "{tmp}/good.pt", "--prompt", ""], 2),
    "unknown characters": (["sample", "--checkpoint", "{tmp}/good.pt", "--prompt", "{{}}"], 2),
    "temperature nan": (["sample", "--checkpoint", "{tmp}/good.pt", "--prompt", "a",
                         "--temperature", "nan"], 2),
    "export a missing file": (["export", "--checkpoint", "{tmp}/none.pt", "--out",
                               "{tmp}/new.pt"], 1),
    "export in place": (["export", "--checkpoint", "{tmp}/good.pt", "--out", "{tmp}/good.pt",
                         "--force"], 2),
    "export over a file": (["export", "--checkpoint", "{tmp}/good.pt", "--out",
                            "{tmp}/file.txt"], 2),
    "export into a folder": (["export", "--checkpoint", "{tmp}/good.pt", "--out", "{tmp}",
                              "--force"], 1),
    "export where nothing can be written": (["export", "--checkpoint", "{tmp}/good.pt",
                                             "--out", "/proc/minitx/x.pt"], 1),
    "export dtype": (["export", "--checkpoint", "{tmp}/good.pt", "--out", "{tmp}/new.pt",
                      "--dtype", "int8"], 2),
    "progress of an empty folder": (["progress", "{tmp}/empty-folder"], 1),
    "progress of a missing folder": (["progress", "{tmp}/none"], 2),
    "progress of a non-notebook": (["progress", "{tmp}/essay.ipynb"], 2),
    "progress --csv into a folder": (["progress", "{tmp}/essay.ipynb", "--csv", "{tmp}"], 2),
    "progress negative timeout": (["progress", "{tmp}/essay.ipynb", "--timeout", "-1"], 2),
    "solutions of no notebook": (["solutions", "42"], 2),
    "solutions without a notebook": (["solutions"], 2),
}


def _prepare(tmp: Path) -> None:
    """The files the cases name: a good checkpoint, broken ones, runs that cannot resume."""
    tok = CharTokenizer.from_text(string.ascii_letters + " .,;:!?'-\n")
    cfg = GPTConfig(tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_embd=16)
    good = save_checkpoint(make_checkpoint(GPT(cfg), cfg, tok, preset="tiny"), tmp / "good.pt")
    (tmp / "file.txt").write_text("First Citizen:\nBefore we proceed\n")
    (tmp / "empty.pt").write_bytes(b"")
    (tmp / "cut.pt").write_bytes(good.read_bytes()[:1500])
    (tmp / "essay.ipynb").write_text("my essay")
    (tmp / "empty-folder").mkdir()
    (tmp / "corrupt-run").mkdir()
    (tmp / "corrupt-run" / "ckpt.pt").write_bytes(b"PK\x03\x04 broken")
    export_checkpoint(good, tmp / "exported-run" / "ckpt.pt")
    (tmp / "folder-run" / "ckpt.pt").mkdir(parents=True)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    tmp = tmp_path_factory.mktemp("bad-input")
    _prepare(tmp)
    env = {"MINITX_DATA": str(tmp / "no-corpus-here")}

    def one(args: list[str]) -> subprocess.CompletedProcess:
        return run_minitx([a.format(tmp=tmp) for a in args], env=env, cwd=tmp)

    with ThreadPoolExecutor(max_workers=4) as pool:
        done = pool.map(one, [args for args, _ in CASES.values()])
        return dict(zip(CASES, done, strict=True))


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_never_a_traceback(case, results):
    proc, status = results[case], CASES[case][1]
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("minitx") and "error: " in lines[0], lines[0]
    assert proc.returncode == status, (proc.returncode, lines[0])
    assert "Errno" not in lines[0], lines[0]  # said in words, not as the OS's error number
