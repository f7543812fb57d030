"""Resampling on a Dask cluster (issue 68 item 3): the bootstrap's and diagnose()'s
replicates of a Dask-backed fit as tasks of a ``LocalCluster`` of 2 worker processes,
against the same replicates on the client (one worker), same data, same run.

    python benchmarks/bench_cluster.py [--p 40] [--n 20000] [--boot 200] [--resample 99]
        [--out benchmarks/results/cluster.json]

Design: ``simulate.random_sem(p, n_envs=5, rng=3)`` (every covariate shifted), ``n``
rows per environment, a Dask DataFrame of 8 partitions (``from_pandas``) read by
``NegDRO.from_dask`` (block moments).  Per task: wall time on the cluster
(``n_jobs="dask"``) and on the client (``n_jobs=1``), their ratio, whether the draws
are bit-identical, and how many tasks the cluster's task stream shows (one per
replicate).  The cluster's start is not timed.  Prints a table and writes JSON (with
the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _timing import write_result

from negdro_stats import NegDRO, simulate


def timed_pair(run, client) -> tuple[dict, object, object]:
    """``run(n_jobs)`` on the cluster and on the client: times, tasks, both results."""
    from distributed import get_task_stream

    with get_task_stream(client) as stream:
        start = time.perf_counter()
        on_cluster = run("dask")
        cluster_s = time.perf_counter() - start
    tasks = sum("cluster_job" in str(t["key"]) for t in stream.data)
    start = time.perf_counter()
    local = run(1)
    local_s = time.perf_counter() - start
    return dict(cluster_s=cluster_s, client_s=local_s, ratio=local_s / cluster_s,
                tasks=int(tasks)), on_cluster, local


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=40)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--resample", type=int, default=99)
    ap.add_argument("--out", default="benchmarks/results/cluster.json")
    args = ap.parse_args()
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    warnings.simplefilter("ignore")
    df = simulate.random_sem(args.p, n_envs=5, rng=3).sample(args.n, rng=4)
    rows = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        model = NegDRO.from_dask(dd.from_pandas(df, npartitions=8), "env", outcome="Y")
        res = model.fit(n_boot=0)
        rows["bootstrap"], a, b = timed_pair(
            lambda jobs: model.fit(n_boot=0).run_bootstrap(args.boot, rng=1, n_jobs=jobs),
            client)
        rows["bootstrap"]["identical"] = bool(np.array_equal(a.draws, b.draws, equal_nan=True))
        rows["diagnose"], a, b = timed_pair(
            lambda jobs: model.diagnose(n_boot=args.resample, n_perm=args.resample, rng=2,
                                        results=res, n_jobs=jobs), client)
        rows["diagnose"]["identical"] = str(a) == str(b)
    write_result(args.out, table, p=args.p, n=args.n, boot=args.boot,
                 resample=args.resample, rows=rows)


def table(result: dict) -> str:
    lines = [f"# {result['command']}  ({result['date']})", "",
             f"p = {result['p']}, {result['n']} rows x 5 environments, Dask (8 partitions), "
             "LocalCluster of 2 worker processes", "",
             "| task | replicates | cluster (s) | client, one worker (s) | client / cluster | "
             "tasks on the cluster | identical draws |", "|---|---|---|---|---|---|---|"]
    for name, row in result["rows"].items():
        reps = result["boot"] if name == "bootstrap" else 2 * result["resample"]
        lines.append(f"| {name} | {reps} | {row['cluster_s']:.1f} | {row['client_s']:.1f} | "
                     f"{row['ratio']:.2f} | {row['tasks']} | {row['identical']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
