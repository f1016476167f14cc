"""Nothing lost when a command is stopped: the real ``minitx`` entry point in a subprocess,
stopped by a signal the way a terminal, ``timeout`` or a JupyterHub culler stops it.

- SIGTERM during ``minitx train`` saves at the end of the current step, says how to resume
  and exits 143; ``--resume`` continues from there.
- ``minitx sample`` prints each token as it comes; Ctrl-C keeps what was printed, adds a
  short note and exits 130.
"""

from __future__ import annotations

import os
import signal
import string
import subprocess
import sys
from pathlib import Path

import pytest

from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.checkpoint import is_resumable, load_checkpoint, make_checkpoint, save_checkpoint

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def minitx_command() -> list[str]:
    """The console script next to this Python (the virtualenv's), else ``python -m``."""
    script = Path(sys.executable).with_name("minitx")
    return [str(script)] if script.exists() else [sys.executable, "-m", "minitx.cli"]


def _default_sigint() -> None:
    # A job started in the background inherits SIGINT ignored; a terminal's Ctrl-C is
    # what this test imitates, so the child starts with the default (Python's own handler).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("MINITX_DEBUG", None)
    return subprocess.Popen([*minitx_command(), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                            preexec_fn=_default_sigint)


def read_until(proc: subprocess.Popen, marker: bytes, limit: int = 1 << 20) -> bytes:
    """Read the child's stdout byte by byte until ``marker`` appears (or it ends)."""
    seen = b""
    while marker not in seen and len(seen) < limit:
        byte = proc.stdout.read(1)
        if not byte:
            break
        seen += byte
    return seen


@pytest.mark.needs_shakespeare
def test_sigterm_during_training_saves_and_resume_continues(tmp_path):
    run_dir = tmp_path / "run"
    base = ["train", "--preset", "tiny", "--out", str(run_dir), "--no-progress"]
    proc = start([*base, "--max-steps", "100000"])
    try:
        seen = read_until(proc, b"step    25 |")  # an evaluation inside the loop: past step 0
        assert b"step    25 |" in seen, seen.decode()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    err = err.decode()
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert f"minitx train --preset tiny --out {run_dir} --resume" in err
    ckpt = load_checkpoint(run_dir / "ckpt.pt")
    step = ckpt["trainer"]["step"]
    assert is_resumable(ckpt) and step >= 25
    assert f"terminated at step {step}; checkpoint saved" in err

    resumed = subprocess.run([*minitx_command(), *base, "--resume", "--max-steps",
                              str(step + 3)], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming at step {step}; training to step {step + 3}" in resumed.stdout
    assert load_checkpoint(run_dir / "ckpt.pt")["trainer"]["step"] == step + 3


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> Path:
    tok = CharTokenizer.from_text(string.ascii_letters + " .,;:!?'-\n")
    cfg = GPTConfig(tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_embd=16)
    path = tmp_path_factory.mktemp("signals") / "tiny.pt"
    return save_checkpoint(make_checkpoint(GPT(cfg), cfg, tok), path)


def test_sample_streams_and_ctrl_c_keeps_the_text(tiny_checkpoint):
    """A billion tokens would take hours: the first ones show at once, and Ctrl-C keeps
    them, says so in one line and exits 130."""
    proc = start(["sample", "--checkpoint", str(tiny_checkpoint), "--prompt", "To be",
                  "--num-tokens", "1000000000"])
    try:
        first = b""
        while len(first) < len("To be") + 200:  # streamed: well before the end
            byte = proc.stdout.read(1)
            assert byte, proc.stderr.read().decode()
            first += byte
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    err = err.decode()
    assert proc.returncode == 130, err
    text = (first + rest).decode()
    assert text.startswith("To be") and text.endswith("\n") and len(text) > 200
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    generated = len(text) - len("To be") - 1
    assert f"interrupted after {generated:,} of 1,000,000,000 tokens" in lines[0]
