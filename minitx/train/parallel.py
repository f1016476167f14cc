"""Independent runs side by side: one worker process per CPU core, one torch thread each.

A small model leaves a core idle between its tiny kernels, and Python's global lock lets
only one thread run Python at a time, so a second thread helps one small run little. Runs
that share nothing (the seeds and variants of an experiment) instead go to separate
processes: on two cores, 1.3 to 1.8 times as fast in notebooks 02-12. Each run seeds itself,
so its result is the one a plain loop gives, and the results come back in job order.

``run_parallel(fn, jobs)`` is that loop: ``[fn(*job) for job in jobs]``. ``fn`` and every
argument travel to the workers by pickling, so ``fn`` must be importable: a function of a
module or a script, not one defined in a notebook or inside another function. What it
returns travels back the same way (a trained model does). The workers start once, on first use
(each imports torch, a few seconds), and are reused until the session ends.
"""

from __future__ import annotations

import atexit
import functools
import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import torch

from minitx.train.runtime import available_cpus

__all__ = ["MAX_WORKERS", "run_parallel", "worker_count"]

R = TypeVar("R")
MAX_WORKERS = 8  # each worker holds its own torch: a few hundred MB
_pools: dict[int, ProcessPoolExecutor] = {}


def worker_count(n_jobs: int, workers: int | None = None, cpus: int | None = None) -> int:
    """Processes for ``n_jobs`` runs: ``workers`` if given, else one per available core
    (at most :data:`MAX_WORKERS`), never more than there are jobs; 1 means in this process."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be an int >= 1 or None, got {workers!r}")
    limit = min(available_cpus() if cpus is None else cpus, MAX_WORKERS)
    return max(1, min(n_jobs, limit if workers is None else workers))


def run_parallel(fn: Callable[..., R], jobs: Iterable[tuple[Any, ...]], *,
                 workers: int | None = None) -> list[R]:
    """``[fn(*job) for job in jobs]``, the jobs spread over worker processes
    (:func:`worker_count`); with one worker, or one job, they run here, in order."""
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {type(fn).__name__}")
    jobs = list(jobs)
    for i, job in enumerate(jobs):
        if not isinstance(job, tuple):
            raise TypeError(f"each job must be a tuple of fn's arguments, got "
                            f"{type(job).__name__} at position {i}")
    n = worker_count(len(jobs), workers)
    if n == 1:
        return [fn(*job) for job in jobs]
    _check_importable(fn)
    size = worker_count(MAX_WORKERS, workers)  # fewer jobs than workers leave some idle
    pool = _pool(size)
    futures = [pool.submit(fn, *job) for job in jobs]
    try:
        return [future.result() for future in futures]
    except BaseException as err:
        for future in futures:  # the jobs not yet started never will
            future.cancel()
        if isinstance(err, BrokenProcessPool | KeyboardInterrupt):  # a worker died, or the
            _pools.pop(size).shutdown(wait=False, cancel_futures=True)  # user interrupted
        raise


def _check_importable(fn: Callable[..., Any]) -> None:
    target = fn.func if isinstance(fn, functools.partial) else fn
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", "")
    unreachable_main = module == "__main__" and not hasattr(sys.modules["__main__"], "__file__")
    if module is None or unreachable_main or "<locals>" in qualname or "<lambda>" in qualname:
        raise TypeError(
            f"run_parallel needs a function the workers can import from a module, got "
            f"{qualname or target!r} from {module or 'nowhere'}: a function defined in a "
            "notebook, inside another function or as a lambda cannot reach them; "
            "use workers=1 to run it here"
        )


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is the caller's to handle
    torch.set_num_threads(1)


def _pool(n: int) -> ProcessPoolExecutor:
    if n not in _pools:
        _pools[n] = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_start_worker)
    return _pools[n]


@atexit.register
def _shutdown() -> None:
    for pool in _pools.values():
        pool.shutdown(cancel_futures=True)
    _pools.clear()
