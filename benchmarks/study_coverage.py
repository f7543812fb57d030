"""Issue 63 item 4: do the intervals conditional on Condition 4 cover?  Fresh samples of
named designs of ``study_condition4.py``'s families; among the fits that claim
("identified" or "if Condition 4") and whose support is the true parents, the share of
Wald intervals (``conf_int(kind="wald")``, the ones those claims report) that cover
each parent's beta*, and the spread of the z scores ``(b_j - beta*_j) / se_j``
(1 where the standard errors are right).

    python benchmarks/study_coverage.py [--designs children_shifted:0:2000 ...]
        [--samples 100] [--jobs 1] [--out benchmarks/results/study_coverage.json]

A design is ``family:seed:n`` (n rows per environment, as in the study); sample ``k``
draws its rows from seed ``70,000 + k`` (the study's own rows are ``10,000 + seed``).
Each fit is ``NegDRO(df, env="env", outcome="Y").fit(n_boot=0)``.  Per design: the
claims, the claims with the true support, coverage per parent with a binomial standard
error, the z scores' standard deviation per parent, and the same coverage over every
fit with the true support (claimed or not: what the selection's conditioning costs).
Prints the table and writes JSON (date, command) to ``--out`` and the table beside it.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _timing import run_jobs, write_result
from study_condition4 import CLAIMS, FAMILIES, _names, _parents

from negdro_stats import NegDRO

DESIGNS = ["children_shifted:0:2000", "discrete:0:2000", "partial_p30:0:20000",
           "children_shifted:8:2000"]
ROW_SEED = 70_000


def one_sample(job: tuple) -> dict:
    """One fresh sample of a design: the verdict, whether the support is the parents,
    and each parent's estimate, standard error and Wald interval."""
    name, k = job
    family, seed, n = name.split(":")
    d = FAMILIES[family](int(seed))
    parents = _parents(d.sem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(d.draw(int(n), ROW_SEED + k), env="env", outcome="Y").fit(n_boot=0)
    names = _names(parents)
    lo, hi = res.conf_int(kind="wald").loc[names].to_numpy().T
    beta = d.sem.beta_star[parents]
    return dict(design=name, sample=k, verdict=res.verdict, estimator=res.selection.estimator,
                right_support=bool(set(res.support[res.support].index) == set(names)),
                b=res.params[names].tolist(), se=res.bse[names].tolist(),
                cover=((lo <= beta) & (beta <= hi)).tolist(), beta=beta.tolist())


def _cover(rows: list) -> str:
    if not rows:
        return "-"
    c = np.mean([r["cover"] for r in rows], axis=0)
    se = np.sqrt(c * (1 - c) / len(rows))
    return " ".join(f"{x:.3f}({s:.3f})" for x, s in zip(c, se, strict=True))


def _z_sd(rows: list) -> str:
    if len(rows) < 2:
        return "-"
    z = [(np.array(r["b"]) - r["beta"]) / np.array(r["se"]) for r in rows]
    return " ".join(f"{x:.2f}" for x in np.std(z, axis=0, ddof=1))


def table(result: dict) -> str:
    lines = [f"{result['command']}  ({result['date']})", "",
             "coverage of each parent's beta* by the Wald intervals (nominal 0.95; binomial "
             "s.e. in brackets) and the z scores' s.d. (1 if the standard errors are right):",
             f"{'design':>26} {'fits':>4} {'claims':>6} {'right':>5} {'estimators':>10}  "
             "coverage among right claims / z s.d. / coverage among every right support"]
    for name in dict.fromkeys(r["design"] for r in result["rows"]):
        rows = [r for r in result["rows"] if r["design"] == name]
        right = [r for r in rows if r["right_support"]]
        claims = [r for r in right if r["verdict"] in CLAIMS]
        kinds = ",".join(sorted({r["estimator"] for r in claims}))
        lines += [f"{name:>26} {len(rows):4d} "
                  f"{sum(r['verdict'] in CLAIMS for r in rows):6d} {len(claims):5d} "
                  f"{kinds:>10}  {_cover(claims)}",
                  f"{'':>57}z s.d. {_z_sd(claims)}",
                  f"{'':>57}all {len(right)}: {_cover(right)}"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--designs", nargs="+", default=DESIGNS, help="family:seed:n")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1, help="processes")
    ap.add_argument("--out", default="benchmarks/results/study_coverage.json")
    a = ap.parse_args()
    for name in a.designs:
        family, *rest = name.split(":")
        if family not in FAMILIES or len(rest) != 2:
            ap.error(f"--designs: {name!r} is not family:seed:n with a family of "
                     f"{sorted(FAMILIES)}")
    jobs = [(name, k) for name in a.designs for k in range(a.samples)]
    t0 = time.perf_counter()
    rows = run_jobs(one_sample, jobs, a.jobs, chunksize=4)
    write_result(a.out, table, rows=rows, seconds=time.perf_counter() - t0)


if __name__ == "__main__":
    main()
