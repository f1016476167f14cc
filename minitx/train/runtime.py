"""Where and how torch runs: the device, the CPU threads, autocast and TF32, in one place.

``select_device`` picks CUDA, then Apple's mps, then the CPU, unless ``$MINITX_DEVICE``
names one. ``plan_runtime`` turns a request (device, dtype, compile, threads) into a
:class:`Runtime` without changing anything; ``activated(runtime)`` switches it on for a
``with`` block and puts every global setting back afterwards, and ``threads(n)`` does the
same for the thread count alone. Nothing in the package changes torch's global state outside
such a block, except ``minitx.course.notebook.setup_notebook``, whose job is to set up a notebook's
session. :class:`DeferredInterrupt` and :class:`TerminateAsInterrupt` turn Ctrl-C and SIGTERM
into a stop at the end of a training step; ``check_run_folder`` checks where a run will write
before it starts, ``describe`` says in one line where it computes, and ``cpu_capability``
what kind of CPU a benchmark ran on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from minitx.train import cpu_policy

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class Runtime:
    """How work will run: the device, the autocast dtype (float32 = none), whether to
    ``torch.compile`` and use fused AdamW, TF32 matmuls, the CPU thread count, and into
    how many row shards training splits a batch (one core each, see ``minitx.train.shards``)."""

    device: torch.device
    dtype: torch.dtype
    compile: bool
    fused_adamw: bool
    tf32: bool
    num_threads: int
    shards: int = 1
    timed_shards: bool = False  # time shards against one thread (minitx.train.cpu_policy)


def cpu_capability() -> dict[str, str | bool]:
    """The CPU's kind, as a benchmark record names it: ``isa`` (the kernels torch picked:
    "AVX512", "AVX2", "DEFAULT"...), ``bfloat16_native`` (the CPU has bfloat16 instructions:
    AVX512_BF16 or AMX; None where /proc/cpuinfo is not there), the ``muon_dtype`` Muon
    orthogonalises in here (:func:`minitx.train.muon.ortho_dtype`), and ``model``."""
    from minitx.train.muon import ortho_dtype

    flags, model = None, ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "flags" and flags is None:
                flags = set(value.split())
            elif key.strip() == "model name" and not model:
                model = value.strip()
    native = None if flags is None else bool(flags & {"avx512_bf16", "amx_bf16"})
    if native and os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() in ("AVX2", "AVX", "SSE41"):
        native = False  # oneDNN was told not to use them
    return {"isa": torch.backends.cpu.get_cpu_capability(), "bfloat16_native": native,
            "muon_dtype": str(ortho_dtype("cpu")).removeprefix("torch."), "model": model}


def available_cpus() -> int:
    """Number of CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def cpu_threads(env: dict[str, str] | None = None, cpus: int | None = None) -> int:
    """Threads for CPU work: ``$OMP_NUM_THREADS`` when set (the user asked), else every
    available core. Training with more than one splits each batch into row shards and
    times them against one thread (``minitx.train.cpu_policy``)."""
    env = os.environ if env is None else env
    value = env.get("OMP_NUM_THREADS", "").strip()
    if not value:
        return available_cpus() if cpus is None else cpus
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise ValueError(f"OMP_NUM_THREADS must be a positive int, got {value!r}")


DEVICE_ENV = "MINITX_DEVICE"


def select_device(
    requested: str = "auto",
    *,
    cuda_available: bool | None = None,
    mps_available: bool | None = None,
    env: dict[str, str] | None = None,
) -> torch.device:
    """'auto' -> ``$MINITX_DEVICE`` when set, else CUDA if available, else mps if
    available, else CPU.

    ``MINITX_DEVICE=cpu`` keeps every 'auto' choice on the CPU on a machine with a GPU; the
    test suite sets it, since the notebooks' stored outputs are a CPU run. An explicit
    request for an absent backend is a ValueError. The availability flags and ``env``
    default to asking torch and ``os.environ``; tests pass them to exercise the logic on
    any machine.
    """
    env = os.environ if env is None else env
    source = "requested"
    override = env.get(DEVICE_ENV, "").strip()
    if requested == "auto" and override not in ("", "auto"):
        requested, source = override, f"set by ${DEVICE_ENV}"
    if cuda_available is None:
        cuda_available = torch.cuda.is_available()
    if mps_available is None:
        mps = getattr(torch.backends, "mps", None)
        mps_available = bool(mps is not None and mps.is_available())
    if requested == "auto":
        if cuda_available:
            return torch.device("cuda")
        return torch.device("mps" if mps_available else "cpu")
    if not isinstance(requested, str) or not (
        requested in ("cpu", "mps") or requested.split(":")[0] == "cuda"
    ):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda[:N]' or 'mps', got "
                         f"{requested!r}" + ("" if source == "requested" else f" ({source})"))
    device = torch.device(requested)
    if device.type == "cuda" and not cuda_available:
        raise ValueError(f"device {requested!r} was {source} but CUDA is not available")
    if device.type == "mps" and not mps_available:
        raise ValueError(f"device {requested!r} was {source} but Apple mps is not available")
    return device


def plan_runtime(
    device: str = "auto",
    dtype: str = "auto",
    compile: bool | None = None,
    threads: int | None = None,
    *,
    cuda_available: bool | None = None,
    mps_available: bool | None = None,
    bf16_supported: bool | None = None,
    cpus: int | None = None,
    shards: int | None = None,
) -> Runtime:
    """Decide device, autocast dtype, compile, fused AdamW, TF32, threads and shards.

    CUDA: bf16 autocast (if the GPU supports it), fused AdamW, TF32, compile.
    mps: float32, no compile. CPU: float32, no compile, ``threads`` or every available
    core (``$OMP_NUM_THREADS`` when set, see ``cpu_threads``), and a training batch split
    into as many row shards as threads, each shard on its own core, timed against one
    thread now and then (``timed_shards``, see ``minitx.train.cpu_policy``). ``dtype``,
    ``compile`` and ``shards`` (1: never split; N: always N) override the choice. A pure
    function of its inputs: nothing changes until :func:`activated`.
    """
    chosen = select_device(device, cuda_available=cuda_available, mps_available=mps_available)
    is_cuda = chosen.type == "cuda"
    if dtype == "auto":
        if bf16_supported is None:
            bf16_supported = is_cuda and torch.cuda.is_bf16_supported()
        autocast_dtype = torch.bfloat16 if is_cuda and bf16_supported else torch.float32
    elif dtype in DTYPES:
        autocast_dtype = DTYPES[dtype]
    else:
        raise ValueError(f"dtype must be 'auto' or one of {sorted(DTYPES)}, got {dtype!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise ValueError(f"threads must be None or an int >= 1, got {threads!r}")
    if shards is not None and (isinstance(shards, bool) or not isinstance(shards, int)
                               or shards < 1):
        raise ValueError(f"shards must be None or an int >= 1, got {shards!r}")
    num_threads = threads or cpu_threads(cpus=cpus)
    on_cpu = chosen.type == "cpu"
    timed = shards is None and on_cpu and num_threads > 1 and cpu_policy.TIME_SHARDS
    if shards is None:
        shards = num_threads if on_cpu else 1
    elif shards > 1 and not on_cpu:
        raise ValueError(f"shards={shards} splits batches over CPU cores, but the device is "
                         f"{chosen.type}")
    return Runtime(
        device=chosen,
        dtype=autocast_dtype,
        compile=is_cuda if compile is None else bool(compile),
        fused_adamw=chosen.type in ("cuda", "cpu"),  # torch has fused AdamW kernels for both
        tf32=is_cuda,
        num_threads=num_threads,
        shards=shards,
        timed_shards=timed,
    )


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """Let torch use ``n`` CPU threads for the duration; the previous number comes back."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"threads must be an int >= 1, got {n!r}")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def activated(runtime: Runtime) -> Iterator[None]:
    """Switch on what ``runtime`` asks for (TF32 on CUDA, the thread count on the CPU) for
    the duration of the block; the previous settings come back afterwards."""
    tf32_before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    n = runtime.num_threads if runtime.device.type == "cpu" else torch.get_num_threads()
    try:
        if runtime.tf32:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        with threads(n):
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32_before


def autocast(runtime: Runtime) -> contextlib.AbstractContextManager:
    """``torch.autocast`` for a reduced-precision runtime, else a no-op context."""
    if runtime.dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=runtime.device.type, dtype=runtime.dtype)


class DeferredInterrupt:
    """Turn the first SIGINT into a flag checked between steps, so a checkpoint is consistent.

    A second Ctrl-C raises at once. Signal handlers can only be set from the main
    thread; elsewhere the plain ``KeyboardInterrupt`` path of the loop is used. A SIGTERM
    that :class:`TerminateAsInterrupt` passes on is handled the same way. ``quiet``: say
    nothing on stderr when the first one comes (the caller says what it does).
    """

    def __init__(self, quiet: bool = False) -> None:
        self.requested = False
        self.quiet = quiet
        self._previous = None
        self._installed = False

    def _handler(self, signum: int, frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        if self.quiet:
            return
        if signum == signal.SIGTERM:
            text = "\nterminated (SIGTERM): stopping after this step to save a checkpoint"
        else:
            text = "\ninterrupt: stopping after this step (Ctrl-C again to abort at once)"
        print(text, file=sys.stderr, flush=True)

    def __enter__(self) -> DeferredInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False


class TerminateAsInterrupt:
    """Treat SIGTERM (a closed terminal, ``timeout``, a JupyterHub culler) like Ctrl-C for
    the duration of a ``with`` block: each SIGTERM goes to whatever handles SIGINT at that
    moment, so inside :class:`DeferredInterrupt` a run stops at the end of its step and
    saves, elsewhere ``KeyboardInterrupt`` is raised. ``received`` tells the caller that
    the stop came from SIGTERM (by convention its exit status is then 128 + 15 = 143).
    Outside the main thread it does nothing.
    """

    def __init__(self) -> None:
        self.received = False
        self._previous = None
        self._installed = False

    def _handler(self, signum: int, frame: object) -> None:
        self.received = True
        on_interrupt = signal.getsignal(signal.SIGINT)
        if not callable(on_interrupt):  # SIG_IGN or SIG_DFL: nobody would save
            raise KeyboardInterrupt
        on_interrupt(signum, frame)

    def __enter__(self) -> TerminateAsInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handler)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)
            self._installed = False


def check_run_folder(
    out: str | os.PathLike,
    *,
    resume: bool,
    export: str | os.PathLike | None = None,
    max_steps: int | None = None,
) -> Path:
    """The checkpoint path of a run saved in folder ``out`` (``out/ckpt.pt``), checked before
    any work starts, so that a mistake fails at once and nothing is overwritten: ``out``
    must not be a file; ``resume`` needs the checkpoint, a new run must not find one;
    ``export`` (the stripped copy written at the end) must be a new file; ``max_steps``,
    when given, >= 1. A ``ValueError`` says what is wrong, in words for ``minitx train``.
    """
    out = Path(out)
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"--max-steps must be >= 1, got {max_steps}")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; --out names the folder the run is saved in")
    path = out / "ckpt.pt"
    if resume and not path.exists():
        raise ValueError(f"nothing to resume: no checkpoint at {path}")
    if not resume and path.exists():
        raise ValueError(f"{path} exists; add --resume to continue that run, or choose "
                         "another --out")
    if export is not None and (Path(export).exists() or Path(export).resolve() == path.resolve()):
        raise ValueError(f"--export {export} exists (or is the run's checkpoint); choose "
                         "another path: the export replaces no file")
    return path


def describe(runtime: Runtime, shards: int = 1) -> str:
    """One line on where a run computes: "cpu (float32, 2 threads)", "cuda (bfloat16,
    compiled)"; ``shards`` > 1 adds how each batch is split (see ``minitx.train.shards``)."""
    parts = [str(runtime.dtype).replace("torch.", "")]
    if runtime.device.type == "cpu":
        parts.append(f"{runtime.num_threads} thread{'s' if runtime.num_threads != 1 else ''}")
    if shards > 1:
        parts.append(f"each batch in {shards} row shards"
                     + (" or on one thread, whichever timed trials find faster"
                        if runtime.timed_shards else ""))
    if runtime.compile:
        parts.append("compiled")
    return f"{runtime.device} ({', '.join(parts)})"


__all__ = [
    "DeferredInterrupt",
    "Runtime",
    "TerminateAsInterrupt",
    "activated",
    "autocast",
    "available_cpus",
    "check_run_folder",
    "cpu_capability",
    "cpu_threads",
    "describe",
    "plan_runtime",
    "select_device",
    "threads",
]
