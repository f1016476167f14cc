"""minitx.train.runtime: one place that picks the device and changes torch's global settings,
and every change it makes is undone when its block ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import torch

from minitx.nn.modes import model_device
from minitx.train.runtime import (
    DeferredInterrupt,
    TerminateAsInterrupt,
    activated,
    autocast,
    check_run_folder,
    describe,
    plan_runtime,
    select_device,
    threads,
)


def test_threads_restores_the_thread_count_even_after_an_error():
    before = torch.get_num_threads()
    with threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be an int >= 1"):
            threads(bad).__enter__()


def test_activated_sets_threads_and_tf32_only_inside_the_block():
    before = (torch.get_num_threads(), torch.backends.cuda.matmul.allow_tf32,
              torch.backends.cudnn.allow_tf32)
    cuda_like = plan_runtime("cuda", cuda_available=True, mps_available=False,
                             bf16_supported=True, threads=1)
    assert cuda_like.tf32
    with activated(cuda_like):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    cpu = plan_runtime("cpu", threads=1)
    with pytest.raises(KeyError), activated(cpu):
        assert torch.get_num_threads() == 1
        raise KeyError("a failure inside the block")
    after = (torch.get_num_threads(), torch.backends.cuda.matmul.allow_tf32,
             torch.backends.cudnn.allow_tf32)
    assert after == before


def test_plan_runtime_rejects_what_it_cannot_run():
    with pytest.raises(ValueError, match="dtype must be 'auto' or one of"):
        plan_runtime("cpu", dtype="float16")
    with pytest.raises(ValueError, match="threads must be None or an int >= 1"):
        plan_runtime("cpu", threads=0)
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'cuda\\[:N\\]' or 'mps'"):
        select_device("tpu")
    assert plan_runtime("cpu", dtype="bfloat16").dtype == torch.bfloat16


def test_autocast_is_a_no_op_in_float32():
    x = torch.ones(2, 2)
    with autocast(plan_runtime("cpu", threads=1)):
        assert (x @ x).dtype == torch.float32
    with autocast(plan_runtime("cpu", dtype="bfloat16", threads=1)):
        assert (x @ x).dtype == torch.bfloat16


# ---------------------------------------------------------------- headless machines
HEADLESS_MODULES = ("minitx.cli", "minitx.train.trainer", "minitx.course.analysis",
                    "minitx.train.checkpoint",
                    "minitx.train.presets", "minitx.data.corpus", "minitx.nn.gpt")


def test_training_and_scoring_need_no_notebook_packages():
    """A GPU server often has torch and numpy but no Jupyter: ``minitx train`` and the
    scoring functions must import there (the widgets live in their own modules)."""
    blocked = ("ipywidgets", "IPython", "matplotlib")
    code = (f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"
            + "".join(f"import {m}\n" for m in HEADLESS_MODULES))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_model_device_is_where_the_parameters_are():
    assert model_device(torch.nn.Linear(2, 2)) == torch.device("cpu")
    assert model_device(torch.nn.Identity()) == torch.device("cpu")  # no parameters
    with torch.device("meta"):
        assert model_device(torch.nn.Linear(2, 2)) == torch.device("meta")


# ---------------------------------------------------------------- signals and run folders
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_is_a_deferred_interrupt_inside_the_training_loop(capsys):
    """Inside DeferredInterrupt (the Trainer's loop), SIGTERM sets the flag that stops the
    run after its step, as Ctrl-C does; both handlers come back afterwards."""
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with TerminateAsInterrupt() as term, DeferredInterrupt() as interrupt:
        os.kill(os.getpid(), signal.SIGTERM)
        assert interrupt.requested and term.received
        with pytest.raises(KeyboardInterrupt):  # a second one aborts at once
            os.kill(os.getpid(), signal.SIGTERM)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    assert "terminated (SIGTERM): stopping after this step" in capsys.readouterr().err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_outside_the_loop_is_a_keyboard_interrupt():
    with TerminateAsInterrupt() as term, pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
    assert term.received
    with TerminateAsInterrupt() as term:
        pass
    assert not term.received


def test_a_quiet_deferred_interrupt_says_nothing(capsys):
    with DeferredInterrupt(quiet=True) as interrupt:
        os.kill(os.getpid(), signal.SIGINT)
    assert interrupt.requested and capsys.readouterr().err == ""


def test_describe_says_where_a_run_computes():
    cpu = plan_runtime("cpu", threads=2)
    assert describe(cpu) == "cpu (float32, 2 threads)"
    assert describe(cpu, shards=2) == "cpu (float32, 2 threads, each batch in 2 row shards)"
    cuda = plan_runtime("cuda", cuda_available=True, mps_available=False, bf16_supported=True)
    assert describe(cuda) == "cuda (bfloat16, compiled)"


def test_check_run_folder_fails_before_any_work(tmp_path):
    run = tmp_path / "run"
    assert check_run_folder(run, resume=False) == run / "ckpt.pt"
    (tmp_path / "file").write_text("x")
    for kwargs, message in (
        ({"out": tmp_path / "file", "resume": False}, "is a file"),
        ({"out": run, "resume": True}, "nothing to resume"),
        ({"out": run, "resume": False, "max_steps": 0}, "--max-steps must be >= 1"),
        ({"out": run, "resume": False, "export": tmp_path / "file"}, "replaces no file"),
        ({"out": run, "resume": False, "export": run / "ckpt.pt"}, "run's checkpoint"),
    ):
        with pytest.raises(ValueError, match=message):
            check_run_folder(**kwargs)
    run.mkdir()
    (run / "ckpt.pt").write_bytes(b"x")
    with pytest.raises(ValueError, match="add --resume"):
        check_run_folder(run, resume=False)
    assert check_run_folder(run, resume=True) == run / "ckpt.pt"
