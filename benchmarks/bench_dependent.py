"""Rows that are not independent (issue 66): the default fit against
``fit(cov_type="HAC")`` on AR(1) rows.

Usage:  python benchmarks/bench_dependent.py [--designs 5] [--rhos 0.5 0.8]
        [--ns 2000 20000] [--out benchmarks/results/dependent.json]

Designs: ``simulate.random_sem(8, n_envs=4, confounding=True, rng=k)`` for k < ``--designs``
(every covariate shifted, hidden confounding; none tuned on), rows drawn with
``LinearSEM.sample(n, serial=rho)`` (every standardised component AR(1) in row order
within each environment: the population moments of the i.i.d. design), and the same
designs with independent rows (rho = 0).  Per design, rho and n: the verdict and
``||b - beta*||`` of the default fit and of the HAC fit, the error of OLS on the true
parents (the oracle, same rows), and the seconds of each fit (one job).  Prints a table
(share of verdicts "rejected", median errors, median cost ratio HAC / default) and
writes JSON with the date and command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

os.environ.setdefault("NEGDRO_N_JOBS", "1")

import numpy as np  # noqa: E402
from _timing import write_result  # noqa: E402

from negdro_stats import NegDRO, simulate  # noqa: E402


def one(design: int, rho: float, n: int) -> dict:
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=design)
    df = sem.sample(n, rng=100 + design, serial=rho)
    row = dict(design=design, rho=rho, n=n)
    X, y = df[list(sem.names[1:])].to_numpy(), df["Y"].to_numpy()
    parents = np.flatnonzero(sem.beta_star)
    oracle = np.zeros(sem.p)
    oracle[parents] = np.linalg.lstsq(X[:, parents], y, rcond=None)[0]
    row["oracle_error"] = float(np.linalg.norm(oracle - sem.beta_star))
    for cov_type in ("nonrobust", "HAC"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0, cov_type=cov_type)
            row[f"{cov_type}_seconds"] = time.perf_counter() - t
        row[f"{cov_type}_verdict"] = res.verdict
        row[f"{cov_type}_error"] = float(np.linalg.norm(res.params.to_numpy() - sem.beta_star))
    return row


def table(result: dict) -> str:
    rows = result["rows"]
    lines = [f"{'rho':>4} {'n':>6} {'fits':>4}  {'rejected default':>16} {'HAC':>5}  "
             f"{'median error default':>20} {'HAC':>6} {'oracle':>7}  {'HAC/default s':>13}"]
    for rho in sorted({r["rho"] for r in rows}):
        for n in sorted({r["n"] for r in rows}):
            g = [r for r in rows if r["rho"] == rho and r["n"] == n]
            if not g:
                continue
            lines.append(
                f"{rho:>4} {n:>6} {len(g):>4}  "
                f"{sum(r['nonrobust_verdict'] == 'rejected' for r in g) / len(g):>16.2f} "
                f"{sum(r['HAC_verdict'] == 'rejected' for r in g) / len(g):>5.2f}  "
                f"{statistics.median(r['nonrobust_error'] for r in g):>20.3f} "
                f"{statistics.median(r['HAC_error'] for r in g):>6.3f} "
                f"{statistics.median(r['oracle_error'] for r in g):>7.3f}  "
                f"{statistics.median(r['HAC_seconds'] / r['nonrobust_seconds'] for r in g):>13.2f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--designs", type=int, default=5)
    ap.add_argument("--rhos", type=float, nargs="+", default=[0.0, 0.5, 0.8])
    ap.add_argument("--ns", type=int, nargs="+", default=[2000, 20000])
    ap.add_argument("--out", default="benchmarks/results/dependent.json")
    args = ap.parse_args()
    rows = []
    for rho in args.rhos:
        for n in args.ns:
            for design in range(args.designs):
                rows.append(one(design, rho, n))
                print(rows[-1], flush=True)
    write_result(args.out, table, rows=rows)


if __name__ == "__main__":
    main()
