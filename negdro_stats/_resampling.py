"""The package's one resampling loop and its default sizes: the bootstrap of the
estimator (:mod:`negdro_stats.inference.stratified`), the identification report's
bootstrap and permutations (:mod:`negdro_stats.identification.report`) and the
sample-size planner's replicates (:mod:`negdro_stats.planning.sample_size`) all run through
:func:`replicate`; it and the robust sets' per-coefficient intervals
(:mod:`negdro_stats.inference.robust`) through :func:`map_jobs`, the one place that
chooses between forked processes, threads, one job and the tasks of a ``dask.distributed``
cluster (``n_jobs="dask"``, the default where a client is active): there each job runs
on a worker, the job's function (with the moments or blocks it refers to) sent to every
worker once, and the results come back in order, so the draws are those of a local run."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

from ._validation import check_int
from .exceptions import DataError

__all__ = ["replicate", "map_jobs", "process_jobs", "default_jobs", "check_jobs",
           "active_client", "workers", "DASK", "Jobs", "DEFAULT_N_BOOT", "DEFAULT_N_RESAMPLE",
           "MAX_REPLICATES"]

T = TypeVar("T")
Jobs = int | str          # a number of local workers, or DASK
MAX_REPLICATES = 10**6    # more is a typo: at a millisecond a refit, 17 minutes of work
DEFAULT_N_BOOT = 200      # the estimator's bootstrap: fit() runs it on first use
DEFAULT_N_RESAMPLE = 199  # diagnose(): bootstrap resamples and permutations each (with the
#                           sample, 200 values: the 5% quantile falls on an order statistic)
THREADS_MIN_WORK = 1e8    # rows x p^2 of a replicate's pass from which threads pay
MAX_CHUNK = 4             # jobs sent to a worker process at once
N_JOBS_VARIABLE = "NEGDRO_N_JOBS"   # the user's number of workers for every loop
DASK = "dask"             # n_jobs: the active dask.distributed client's workers


def active_client() -> Any:
    """The active ``dask.distributed`` client, None without one, without distributed
    installed, or inside a task on a worker (whose jobs stay where they are)."""
    try:
        from distributed import get_client, get_worker
    except ImportError:
        return None
    try:
        get_worker()
        return None                               # (within a task)
    except ValueError:
        pass
    try:
        return get_client()
    except ValueError:
        return None


def check_jobs(n_jobs: Any, owner: str) -> Jobs | None:
    """``n_jobs`` as given: None (the default), a whole number >= 1, or ``"dask"`` (the
    tasks of the active ``dask.distributed`` client)."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, str):
        if n_jobs.strip().lower() == DASK:
            return DASK
        raise ValueError(f"The 'n_jobs' parameter of {owner} must be an int in the range "
                         f"[1, inf) or 'dask'. Got {n_jobs!r} instead.")
    return check_int(n_jobs, "n_jobs", owner, min_val=1)


def can_fork() -> bool:
    """Whether worker processes can be forked here and now: on Linux (macOS's system
    libraries are not fork-safe and Windows has no fork), from a process that runs no
    other thread (a fork copies the locks other threads hold, not the threads: a
    notebook's kernel or a Dask client has them) and is neither a daemon (a Dask worker
    may not have children) nor itself a worker of a multiprocessing pool (whose
    processes would each fork as many again)."""
    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and not multiprocessing.current_process().daemon
            and multiprocessing.parent_process() is None)


def process_jobs() -> Jobs:
    """Workers for a loop of independent jobs: ``NEGDRO_N_JOBS`` where it is set (``1``
    keeps every loop in this process), else the cluster's where a ``dask.distributed``
    client is active (:data:`DASK`), else the cores where processes can be forked
    (:func:`can_fork`), else one (threads do not pay for small numpy calls, which hold
    the GIL)."""
    cores = _cores()
    if cores is not None:
        return cores
    if active_client() is not None:
        return DASK
    return (os.cpu_count() or 1) if can_fork() else 1


def _cores() -> int | None:
    """``NEGDRO_N_JOBS``, the user's cap on every loop's workers (None where unset)."""
    value = os.environ.get(N_JOBS_VARIABLE, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise DataError(f"The environment variable {N_JOBS_VARIABLE}={value!r} must be a "
                        "whole number of workers, at least 1 (1: no parallel workers).")
    return int(value)


def workers(jobs: Jobs) -> str:
    """``jobs`` in words, for a progress message."""
    return ("the Dask cluster's workers" if jobs == DASK
            else f"{jobs} worker{'s' if jobs != 1 else ''}")


def default_jobs(data) -> Jobs:
    """The resampling's workers where the user names none: :func:`process_jobs` where that
    is set, a client is active or processes can be forked (a replicate then runs wholly
    in its own process or task), else the cores where one replicate's pass over the rows
    of ``data`` (a :class:`~negdro_stats.MultiEnvData`; ``N p^2`` flops, which release
    the GIL) is at least ``THREADS_MIN_WORK``, else one. Threads pay only there: below
    it a replicate is many small numpy calls that hold the GIL (on eq. (33) with B = 40,
    two threads took 1.28-1.46x the time of one at p = 10 / 30 / 60 and 2,000 rows x 4;
    1.04x at p = 30, 20,000 x 4 and 1.00x at p = 100, 2,000 x 4 (about 1e8); 0.83x at p
    = 60, 20,000 x 4 and 0.68x at p = 200, 2,000 x 4), while two forked processes took
    0.52x of one on eq. (33), p = 10, 20,000 x 4, B = 200 (a fork and its pool cost
    about 15 ms)."""
    if _cores() is not None or can_fork() or active_client() is not None:
        return process_jobs()
    m = data.moments
    work = m.nobs * m.p**2 if data.blocks is None and data.has_rows else 0.0
    return (os.cpu_count() or 1) if np.isfinite(work) and work >= THREADS_MIN_WORK else 1


_TASK: Callable | None = None      # the forked workers' job (inherited, not pickled)


def _forked(k: int):
    return _TASK(k)


def map_jobs(run: Callable[[int], T], n: int, *, n_jobs: Jobs = 1,
             progress: Callable | None = None) -> list[T]:
    """``[run(k) for k in range(n)]``, with ``n_jobs > 1`` in that many forked processes
    where :func:`can_fork` (``run`` and what it refers to are inherited, its results
    pickled back; one job where the system refuses them), else threads; BLAS held to
    one thread per worker; a loop within a job is serial; with ``n_jobs="dask"`` as the
    active client's tasks (:func:`_on_cluster`).  ``progress`` wraps the iteration (a
    progress bar; given the results as they come, it is told ``n`` itself)."""
    if isinstance(n_jobs, str):
        return _on_cluster(run, n, progress)
    steps = range(n)
    if n_jobs > 1 and n > 1 and _TASK is None:          # (_TASK: within a job)
        with threadpool_limits(limits=1):
            if not can_fork():
                with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                    results = pool.map(run, steps)
                    return list(progress(results) if progress is not None else results)
            results = _in_processes(run, n, n_jobs, progress)
            if results is not None:
                return results
    return [run(k) for k in (progress(steps) if progress is not None else steps)]


def _in_processes(run: Callable[[int], T], n: int, n_jobs: int,
                  progress: Callable | None) -> list[T] | None:
    """:func:`map_jobs` in forked processes, in chunks of at most ``MAX_CHUNK`` jobs (an
    interrupt waits for the chunks at work only); None where the system refuses the
    processes (no shared memory for the pool's locks, a process limit)."""
    global _TASK
    _TASK = run
    try:
        try:
            pool = ProcessPoolExecutor(min(n_jobs, n),
                                       mp_context=multiprocessing.get_context("fork"))
        except OSError:
            return None
        done = False
        try:
            results = pool.map(_forked, range(n),
                               chunksize=max(1, min(MAX_CHUNK, n // (16 * n_jobs))))
            results = list(progress(results) if progress is not None else results)
            done = True
            return results
        except BrokenProcessPool as error:
            raise BrokenProcessPool(
                "A worker process died (out of memory, or killed): rerun with n_jobs=1, "
                f"or set {N_JOBS_VARIABLE}=1 to keep every loop in this process."
            ) from error
        except OSError:                              # the fork itself refused
            return None
        finally:
            pool.shutdown(wait=done, cancel_futures=not done)
    finally:
        _TASK = None


def _on_cluster(run: Callable[[int], T], n: int, progress: Callable | None) -> list[T]:
    """:func:`map_jobs` on the active ``dask.distributed`` client: ``run`` (and what it
    refers to: moments, blocks, or rows where the resampling needs them) sent to every
    worker once, one task per job, the results gathered in order."""
    client = active_client()
    if client is None:
        raise DataError("n_jobs='dask' needs an active dask.distributed client: start one "
                        "(from distributed import Client; client = Client(...)), or pass a "
                        "number of local workers.")
    [shared] = client.scatter([run], broadcast=True, hash=False)
    futures = client.map(_cluster_job, range(n), run=shared, pure=False)
    results = (future.result() for future in futures)
    try:
        return list(progress(results) if progress is not None else results)
    finally:
        client.cancel([*futures, shared])


def _cluster_job(k: int, run: Callable[[int], T]) -> T:
    """One job on a worker, BLAS held to one thread (a worker's threads are its cores)."""
    with threadpool_limits(limits=1):
        return run(k)


def replicate(one: Callable[[int, np.random.Generator], T], n: int,
              rng: np.random.Generator, *, n_jobs: Jobs = 1,
              progress: Callable | None = None) -> tuple[list[T | None], np.ndarray]:
    """The package's one resampling loop: ``one(k, child_k)`` for ``k < n``, each with its
    own generator spawned from ``rng`` (the same draws whatever ``n_jobs``), run by
    :func:`map_jobs`.  A replicate that raises a numerical error (``LinAlgError``,
    ``ValueError``, ``ArithmeticError``) fails: its result is None and its entry of the
    returned boolean mask True."""
    children = rng.spawn(n)

    def run(k: int):
        try:
            return one(k, children[k]), False
        except (np.linalg.LinAlgError, ValueError, ArithmeticError):
            return None, True

    results = map_jobs(run, n, n_jobs=n_jobs, progress=progress)
    return [r for r, _ in results], np.array([f for _, f in results], dtype=bool)
