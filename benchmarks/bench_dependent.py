"""Rows that are not independent (issue 66): the default fit against the fit with the
matching ``cov_type`` on AR(1) rows and on clustered rows.

Usage:  python benchmarks/bench_dependent.py [--designs 10] [--ns 2000 20000]
        [--kinds iid ar0.5 ar0.8 cl0.3 cl0.6] [--out benchmarks/results/dependent.json]

Designs (none tuned on), ``k < --designs``: even k ``simulate.random_sem(8, n_envs=4,
confounding=True, rng=k)`` (every covariate shifted, hidden confounding), odd k
``random_sem(10, n_envs=5, intervened=0.5, rng=k)`` (half the covariates shifted, no
hidden confounding: OLS on the true parents is the oracle there).  Rows drawn with
``LinearSEM.sample`` with the population moments of the i.i.d. design: ``arR`` every
standardised component AR(1) with coefficient R in row order within each environment
(``serial=R``; fitted with ``cov_type="HAC"``), ``clC`` clusters of 20 consecutive rows
with intra-cluster correlation C (``cluster_size=20, icc=C``; fitted with
``cov_type="cluster"``), ``iid`` independent rows (fitted with ``"HAC"``: the cost of the
option where it is not needed).  Per design, kind and n: the verdict and ``||b - beta*||``
of the default fit and of the matching fit, whether the default's warning names the
dependence, the error of OLS on the true parents (same rows), and the seconds of each fit
(one job, one BLAS thread, the best of three).  Prints a table per kind and n and writes
JSON with the date and command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

os.environ.setdefault("NEGDRO_N_JOBS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _timing import write_result  # noqa: E402

from negdro_stats import NegDRO, simulate  # noqa: E402

ICC_CLUSTER = 20     # rows per cluster


def design(k: int):
    if k % 2 == 0:
        return simulate.random_sem(8, n_envs=4, confounding=True, rng=k)
    return simulate.random_sem(10, n_envs=5, intervened=0.5, rng=k)


def rows(sem, kind: str, n: int, seed: int):
    if kind == "iid":
        return sem.sample(n, rng=seed), ("HAC", None)
    if kind.startswith("ar"):
        return sem.sample(n, rng=seed, serial=float(kind[2:])), ("HAC", None)
    return (sem.sample(n, rng=seed, cluster_size=ICC_CLUSTER, icc=float(kind[2:])),
            ("cluster", {"groups": "cluster"}))


def timed_fit(model: NegDRO, **kwargs):
    best, res, said = np.inf, None, ""
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = time.perf_counter()
            res = model.fit(n_boot=0, **kwargs)
            best = min(best, time.perf_counter() - t)
        said = " ".join(str(w.message) for w in caught)
    return res, best, said


def one(k: int, kind: str, n: int) -> dict:
    sem = design(k)
    df, (cov_type, cov_kwds) = rows(sem, kind, n, 100 + k)
    names = list(sem.names[1:])
    row = dict(design=k, kind=kind, n=n, confounded=k % 2 == 0)
    X, y = df[names].to_numpy(), df["Y"].to_numpy()
    parents = np.flatnonzero(sem.beta_star)
    oracle = np.zeros(sem.p)
    oracle[parents] = np.linalg.lstsq(X[:, parents], y, rcond=None)[0]
    row["oracle_error"] = float(np.linalg.norm(oracle - sem.beta_star))
    model = NegDRO(df, env="env", outcome="Y", covariates=names)
    for key, kwargs in (("default", {}), ("matching", dict(cov_type=cov_type,
                                                           cov_kwds=cov_kwds))):
        res, seconds, said = timed_fit(model, **kwargs)
        row[f"{key}_seconds"] = seconds
        row[f"{key}_verdict"] = res.verdict
        row[f"{key}_error"] = float(np.linalg.norm(res.params.to_numpy() - sem.beta_star))
        row[f"{key}_warned"] = bool(said)
        row[f"{key}_names_dependence"] = "look dependent" in said
    row["matching_cov_type"] = cov_type
    return row


def table(result: dict) -> str:
    rows_ = result["rows"]
    lines = [f"{'kind':>5} {'n':>6} {'fits':>4}  {'rejected default':>16} {'matching':>8}  "
             f"{'warned default':>14} {'naming dep.':>11}  {'median error default':>20} "
             f"{'matching':>8} {'oracle*':>7}  {'matching/default s':>18}"]
    for kind in dict.fromkeys(r["kind"] for r in rows_):
        for n in sorted({r["n"] for r in rows_}):
            g = [r for r in rows_ if r["kind"] == kind and r["n"] == n]
            if not g:
                continue
            warned = [r for r in g if r["default_warned"]]
            named = (f"{sum(r['default_names_dependence'] for r in warned)}/{len(warned)}"
                     if warned else "-")
            clean = [r for r in g if not r["confounded"]]
            oracle = statistics.median(r["oracle_error"] for r in clean) if clean else np.nan
            cost = statistics.median(r["matching_seconds"] / r["default_seconds"] for r in g)
            lines.append(
                f"{kind:>5} {n:>6} {len(g):>4}  "
                f"{sum(r['default_verdict'] == 'rejected' for r in g) / len(g):>16.2f} "
                f"{sum(r['matching_verdict'] == 'rejected' for r in g) / len(g):>8.2f}  "
                f"{len(warned) / len(g):>14.2f} {named:>11}  "
                f"{statistics.median(r['default_error'] for r in g):>20.3f} "
                f"{statistics.median(r['matching_error'] for r in g):>8.3f} "
                f"{oracle:>7.3f}  {cost:>18.2f}")
    lines.append("* OLS on the true parents, on the designs without hidden confounding (odd k); "
                 "'naming dep.': default fits whose warning says the rows look dependent, of "
                 "those that warn")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--designs", type=int, default=10)
    ap.add_argument("--kinds", nargs="+", default=["iid", "ar0.5", "ar0.8", "cl0.3", "cl0.6"])
    ap.add_argument("--ns", type=int, nargs="+", default=[2000, 20000])
    ap.add_argument("--out", default="benchmarks/results/dependent.json")
    args = ap.parse_args()
    rows_ = []
    for kind in args.kinds:
        for n in args.ns:
            for k in range(args.designs):
                rows_.append(one(k, kind, n))
                print(rows_[-1], flush=True)
    write_result(args.out, table, rows=rows_)


if __name__ == "__main__":
    main()
