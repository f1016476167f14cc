"""run_parallel: the results of a plain loop, in order, from worker processes."""

import functools
import math
import os
from concurrent.futures.process import BrokenProcessPool

import pytest

from minitx.course.recall_experiment import recall_runs
from minitx.train.parallel import MAX_WORKERS, run_parallel, worker_count


def test_worker_count_one_per_core_never_more_than_jobs():
    assert worker_count(18, cpus=2) == 2
    assert worker_count(1, cpus=2) == 1
    assert worker_count(0, cpus=2) == 1
    assert worker_count(100, cpus=64) == MAX_WORKERS
    assert worker_count(18, workers=3, cpus=2) == 3  # asked for: taken as given
    assert worker_count(2, workers=3, cpus=2) == 2


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_worker_count_refuses_bad_counts(workers):
    with pytest.raises(ValueError, match="workers must be an int >= 1 or None"):
        worker_count(4, workers)


def test_results_in_job_order_from_two_workers():
    jobs = [(n,) for n in (7, 3, 12, 1, 5)]
    assert run_parallel(math.factorial, jobs, workers=2) == [math.factorial(n) for n, in jobs]


def test_seeded_training_in_workers_equals_the_loop():
    # each seed alone in this process, then the seeds side by side in two workers
    short = functools.partial(recall_runs, steps=5, n_eval=50)
    jobs = [("rnn", 8, 2, [s]) for s in (0, 1, 2)]
    here = [short(*job) for job in jobs]
    assert run_parallel(short, jobs, workers=2) == here
    assert len({v[0] for v, _ in here}) > 1  # the seeds do differ


def test_one_worker_runs_here_even_a_local_function():
    def square(x):
        return x * x

    assert run_parallel(square, [(2,), (3,)], workers=1) == [4, 9]


def test_a_function_workers_cannot_import_is_refused():
    def square(x):
        return x * x

    with pytest.raises(TypeError, match="cannot reach them; use workers=1"):
        run_parallel(square, [(2,), (3,)], workers=2)
    with pytest.raises(TypeError, match="cannot reach them"):
        run_parallel(lambda x: x, [(2,), (3,)], workers=2)
    with pytest.raises(TypeError, match="cannot reach them"):
        run_parallel(functools.partial(square), [(2,), (3,)], workers=2)


def test_jobs_must_be_tuples_and_fn_callable():
    with pytest.raises(TypeError, match="each job must be a tuple of fn's arguments, got int"):
        run_parallel(math.factorial, [3, 4])
    with pytest.raises(TypeError, match="fn must be a function, got int"):
        run_parallel(3, [(1,)])


def test_an_error_in_a_worker_reaches_the_caller():
    with pytest.raises(ValueError, match="factorial"):
        run_parallel(math.factorial, [(3,), (-1,)], workers=2)


def test_a_dead_worker_is_reported_and_the_next_call_starts_afresh():
    with pytest.raises(BrokenProcessPool):
        run_parallel(os._exit, [(3,), (3,)], workers=2)  # the worker process dies
    assert run_parallel(math.factorial, [(4,), (5,)], workers=2) == [24, 120]
