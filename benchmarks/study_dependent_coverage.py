"""Issue 66's acceptance on coverage: with rows that are not independent and the
matching ``cov_type``, do the robust set and the bootstrap cover ``beta*``?

    python benchmarks/study_dependent_coverage.py [--designs ar0.8:2:20000 ...]
        [--samples 100] [--boot 200] [--jobs 2]
        [--out benchmarks/results/study_dependent_coverage.json]

A design is ``kind:seed:n``: ``simulate.random_sem(8, n_envs=4, confounding=True,
rng=seed)`` (every covariate shifted, hidden confounding; none tuned on), ``n`` rows per
environment drawn with ``LinearSEM.sample`` as ``bench_dependent.py`` draws them: ``arR``
AR(1) rows with coefficient R fitted with ``cov_type="HAC"``, ``clC`` clusters of 20 rows
with intra-cluster correlation C fitted with ``cov_type="cluster"``, ``iid`` independent
rows fitted with ``"HAC"`` (the option where it is not needed).  Sample ``k`` draws from
seed ``80,000 + k``.  Per sample: whether the joint robust set holds ``beta*``
(``RobustSet.contains``), whether each coefficient's robust interval (KJ) and bootstrap
percentile interval (``--boot`` replicates: moving blocks or whole clusters) hold its
``beta*_j``, the parents' and the others' apart, the share of the parents' robust
intervals that are bounded (an unbounded one covers trivially), and the parents'
coverage by the intervals the fit reports (``res.conf_int()``: its ``interval_kind``,
robust / bootstrap / Wald, counted).  Prints the coverage with binomial
standard errors and writes JSON (date, command) to ``--out`` and the table beside it.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("NEGDRO_N_JOBS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _timing import run_jobs, write_result  # noqa: E402
from bench_dependent import rows as draw  # noqa: E402

from negdro_stats import NegDRO, simulate  # noqa: E402

DESIGNS = ["ar0.8:2:2000", "ar0.8:2:20000", "cl0.6:0:2000", "cl0.6:0:20000",
           "iid:2:2000"]
ROW_SEED = 80_000


def one_sample(job: tuple) -> dict:
    name, k, n_boot = job
    kind, seed, n = name.split(":")
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=int(seed))
    df, (cov_type, cov_kwds) = draw(sem, kind, int(n), ROW_SEED + k)
    names = list(sem.names[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y", covariates=names).fit(
            cov_type=cov_type, cov_kwds=cov_kwds, n_boot=n_boot, rng=k)
        rs = res.robust_set()
        robust = rs.conf_int().to_numpy().T
        boot = res.conf_int(kind="bootstrap").to_numpy().T
        shown = res.conf_int().to_numpy().T
    beta = sem.beta_star
    return dict(design=name, sample=k, verdict=res.verdict, joint=bool(rs.contains(beta)),
                empty=bool(rs.empty), parents=(beta != 0).tolist(),
                bounded=np.isfinite(robust).all(axis=0).tolist(),
                robust=((robust[0] <= beta) & (beta <= robust[1])).tolist(),
                boot=((boot[0] <= beta) & (beta <= boot[1])).tolist(),
                shown=((shown[0] <= beta) & (beta <= shown[1])).tolist(),
                kind=res.interval_kind)


def _share(flags: list) -> str:
    if not flags:
        return "-"
    c = float(np.mean(flags))
    return f"{c:.3f}({np.sqrt(c * (1 - c) / len(flags)):.3f})"


def _least(rows: list, key: str, parents: bool) -> str:
    """The least per-coefficient coverage among the parents (or the others)."""
    mask = np.array(rows[0]["parents"]) == parents
    c = np.mean([r[key] for r in rows], axis=0)[mask]
    return f"{c.min():.2f}-{c.max():.2f}" if len(c) else "-"


def _bounded(rows: list) -> str:
    """The share of the parents' robust intervals that are bounded."""
    flags = [b for r in rows if "bounded" in r
             for b, m in zip(r["bounded"], r["parents"], strict=True) if m]
    return f"{np.mean(flags):.2f}" if flags else "-"


def _shown(rows: list) -> str:
    """The parents' coverage by the intervals each fit reports (rows before it was kept:
    '-')."""
    return _share([c for r in rows if "shown" in r
                   for c, m in zip(r["shown"], r["parents"], strict=True) if m])


def _kinds(rows: list) -> str:
    """How many fits reported robust / bootstrap / Wald intervals."""
    kinds = [r.get("kind") for r in rows]
    return "/".join(str(kinds.count(k)) for k in ("robust", "bootstrap", "wald"))


def table(result: dict) -> str:
    lines = [f"{result['command']}  ({result['date']})", "",
             "coverage of beta* (nominal 0.95; binomial s.e. in brackets): the joint robust "
             "set, and per coefficient (pooled; least-most over coefficients) the robust "
             "(KJ) and bootstrap percentile intervals, parents and the others apart",
             f"{'design':>14} {'fits':>4} {'rejected':>8} {'not id.':>7} {'empty':>5} "
             f"{'joint':>12}  "
             f"{'robust parents':>14} {'(range)':>9} {'others':>12} {'(range)':>9}  "
             f"{'boot parents':>12} {'(range)':>9} {'others':>12} {'(range)':>9}  "
             f"{'bounded':>7}  {'shown parents':>13} {'kinds r/b/w':>11}"]
    for name in dict.fromkeys(r["design"] for r in result["rows"]):
        rows = [r for r in result["rows"] if r["design"] == name]
        cells = []
        for key in ("robust", "boot"):
            for parents in (True, False):
                flags = [c for r in rows for c, m in zip(r[key], r["parents"], strict=True)
                         if m == parents]
                cells.append(f"{_share(flags):>12} {_least(rows, key, parents):>9}")
        lines.append(f"{name:>14} {len(rows):4d} "
                     f"{sum(r['verdict'] == 'rejected' for r in rows):8d} "
                     f"{sum(r['verdict'] == 'not identified' for r in rows):7d} "
                     f"{sum(r['empty'] for r in rows):5d} "
                     f"{_share([r['joint'] for r in rows]):>12}  {cells[0]:>24} {cells[1]}  "
                     f"{cells[2]} {cells[3]}  {_bounded(rows):>7}  {_shown(rows):>13} "
                     f"{_kinds(rows):>11}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--designs", nargs="+", default=DESIGNS, help="kind:seed:n")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2, help="processes")
    ap.add_argument("--out", default="benchmarks/results/study_dependent_coverage.json")
    a = ap.parse_args()
    jobs = [(name, k, a.boot) for name in a.designs for k in range(a.samples)]
    t0 = time.perf_counter()
    rows = run_jobs(one_sample, jobs, a.jobs, chunksize=2)
    write_result(a.out, table, rows=rows, seconds=time.perf_counter() - t0)


if __name__ == "__main__":
    main()
