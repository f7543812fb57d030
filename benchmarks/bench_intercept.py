"""Issue 65 item 2: do the intercept's intervals cover?  With ``fit_intercept=True`` the
intercept ``c = ybar - b^T xbar`` gets an interval of every kind (Wald by the delta
method, robust by Bonferroni over the slopes' set and the noise's mean, bootstrap from
the refits; ``negdro_stats.inference.intercept``).  Fresh samples of designs whose
covariates have non-zero means (so that ``xbar^T b`` carries the slopes' error into the
intercept) and an intercept of 2 in the outcome; per design and kind, the share of
intervals that cover the true intercept (with its binomial standard error), the share
that are bounded, the median width and, for Wald, the spread of the z scores
``(c_hat - c) / se`` (1 where the standard error is right).

    python benchmarks/bench_intercept.py [--designs confounded random_p8 partial]
        [--samples 200] [--robust 100] [--boot 100] [--n-boot 50] [--n 1000] [--jobs 1]
        [--out benchmarks/results/intercept.json]

Designs: ``confounded`` (``bench_inference._robust_design``: hidden confounding of X1
and Y, mean shifts of X1, X2, X3; the invariance GMM is reported), ``random_p8``
(``simulate.random_sem(8, n_envs=4, rng=3)``: shifts of means and variances),
``partial`` (``bench_partial.design(10)``: the environments leave directions
undetermined, Theorem 6's fit, intervals conditional on Condition 4).  Every covariate
``X_j`` gets the offset ``j`` (``c = 2 - beta*^T offsets``).  Sample ``k`` draws its
rows from seed ``80,000 + k``; the robust intervals are computed on the first
``--robust`` samples, the bootstrap (``--n-boot`` refits) on the first ``--boot``.
Prints the table and writes JSON (date, command) to ``--out`` and the table beside it.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _timing import run_jobs, write_result

from negdro_stats import NegDRO, simulate

ROW_SEED = 80_000
INTERCEPT = 2.0
KINDS = ("wald", "robust", "bootstrap")


def _sample(design: str, n: int, seed: int) -> tuple:
    """``(frame, true intercept, beta*)`` of one sample."""
    if design == "confounded":
        from bench_inference import _robust_design

        df, beta = _robust_design("confounded", n, seed), np.array([1.0, -0.5, 0.0])
    else:
        if design == "partial":
            from bench_partial import design as partial

            sem = partial(10)
        else:
            sem = simulate.random_sem(8, n_envs=4, n_parents=2, n_children=2, rng=3)
        df, beta = sem.sample(n, rng=seed), sem.beta_star
    names = [c for c in df.columns if c not in ("Y", "env")]
    offsets = np.arange(1.0, len(names) + 1.0)
    df[names] = df[names] + offsets
    df["Y"] = df["Y"] + INTERCEPT
    return df, INTERCEPT - float(beta @ offsets), beta


def one_sample(job: tuple) -> dict:
    """One fresh sample: the route, and per kind asked for the intercept's interval."""
    design, k, n, kinds, n_boot = job
    df, c, _ = _sample(design, n, ROW_SEED + k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(
            n_boot=n_boot if "bootstrap" in kinds else 0, rng=k, n_jobs=1)
        out = dict(design=design, sample=k, route=res.solver.refit, verdict=res.verdict,
                   c=c, c_hat=float(res.params["const"]), se=float(res.bse["const"]))
        for kind in kinds:
            lo, hi = res.conf_int(kind=kind).loc["const"]
            out[kind] = [float(lo), float(hi)]
    return out


def summarise(rows: list) -> list[dict]:
    found = []
    for design in dict.fromkeys(r["design"] for r in rows):
        mine = [r for r in rows if r["design"] == design]
        z = np.array([(r["c_hat"] - r["c"]) / r["se"] for r in mine])
        for kind in KINDS:
            got = [r for r in mine if kind in r]
            if not got:
                continue
            lo, hi = np.array([r[kind] for r in got]).T
            c = np.array([r["c"] for r in got])
            cover = float(np.mean((lo <= c) & (c <= hi)))
            bounded = np.isfinite(lo) & np.isfinite(hi)
            found.append(dict(
                design=design, kind=kind, samples=len(got), coverage=cover,
                coverage_se=float(np.sqrt(cover * (1 - cover) / len(got))),
                bounded=float(bounded.mean()),
                median_width=float(np.median((hi - lo)[bounded])) if bounded.any() else None,
                z_sd=float(np.std(z[np.isfinite(z)], ddof=1)) if kind == "wald" else None,
                routes=sorted({r["route"] for r in got})))
    return found


def table(result: dict) -> str:
    lines = [f"{'design':<12}{'kind':<11}{'n':>5}{'cover':>8}{'(se)':>8}{'bounded':>9}"
             f"{'width':>9}{'z sd':>7}  routes"]
    for r in result["summary"]:
        width = "-" if r["median_width"] is None else f"{r['median_width']:.4f}"
        zsd = "-" if r["z_sd"] is None else f"{r['z_sd']:.2f}"
        lines.append(f"{r['design']:<12}{r['kind']:<11}{r['samples']:>5}"
                     f"{r['coverage']:>8.3f}{r['coverage_se']:>8.3f}{r['bounded']:>9.2f}"
                     f"{width:>9}{zsd:>7}  {','.join(r['routes'])}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--designs", nargs="+", default=["confounded", "random_p8", "partial"])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--robust", type=int, default=100)
    ap.add_argument("--boot", type=int, default=100)
    ap.add_argument("--n-boot", type=int, default=50)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="benchmarks/results/intercept.json")
    args = ap.parse_args()
    jobs = [(d, k, args.n, ("wald",) + (("robust",) if k < args.robust else ())
             + (("bootstrap",) if k < args.boot else ()), args.n_boot)
            for d in args.designs for k in range(args.samples)]
    rows = run_jobs(one_sample, jobs, args.jobs)
    write_result(args.out, table, n=args.n, n_boot=args.n_boot, summary=summarise(rows),
                 rows=rows)


if __name__ == "__main__":
    main()
