"""What ``summary()`` costs against the fit it describes.

Usage:  python benchmarks/bench_summary_cost.py [--reps 3] [--seeds 0 1 2 3 4]
        [--out benchmarks/results/summary_cost.json]

Per design and seed: the seconds of ``NegDRO(df, env="env", outcome="Y").fit(n_boot=0)``
(median of ``--reps`` fits) and of ``summary()`` and ``summary(detail=True)`` on a fresh
fit each time (a result keeps what its summary computed, so a second call is free), the
ratio summary / fit, the summary's interval kind and how many robust intervals it
computed.  Designs (none tuned on): eq. (33) at p = 10 and 30 (every covariate shifted:
robust intervals); the partial-shift design at p = 10 and 30 (``bench_partial.design``:
"if Condition 4", Wald intervals beside robust p); random SEMs (``simulate.random_sem``,
p = 8 and 20, 4 environments, confounded, half the covariates intervened on), and the
bundled Sachs cells as the README fits them (rejected).  n = 1,000 rows per environment.

Prints a table and writes JSON (with the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

from _timing import write_result
from bench_partial import design as partial_design

from negdro_stats import NegDRO, datasets, simulate

N = 1000


def designs(seed: int) -> dict:
    """Name -> (data, NegDRO keyword arguments) for one seed."""
    def rows(sem):
        return sem.sample(N, rng=seed)

    out = {f"eq33 p={p}": (rows(simulate.eq33(p=p)), {}) for p in (10, 30)}
    out |= {f"partial p={p}": (rows(partial_design(p)), {}) for p in (10, 30)}
    out |= {f"random p={p}": (rows(simulate.random_sem(p, n_envs=4, confounding=True,
                                                       intervened=0.5, rng=seed)), {})
            for p in (8, 20)}
    if seed == 0:                                       # the README's Sachs fit
        cells = datasets.load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True)
        out["sachs"] = (cells.drop(columns="condition"),
                        dict(outcome="Erk", fit_intercept=True))
    return out


def measure(df, kwargs: dict, reps: int) -> dict:
    """Seconds of the fit, of summary() and summary(detail=True) (fresh fits)."""
    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return NegDRO(df, env="env", **({"outcome": "Y"} | kwargs)).fit(n_boot=0)

    fits, short, detail = [], [], []
    for _ in range(reps):
        t = time.perf_counter()
        res = fit()
        fits.append(time.perf_counter() - t)
        t = time.perf_counter()
        res.summary()
        short.append(time.perf_counter() - t)
        computed = len(res.robust_set().__dict__.get("_projected", {})) \
            if res.interval_kind == "robust" else 0
        res = fit()
        t = time.perf_counter()
        res.summary(detail=True)
        detail.append(time.perf_counter() - t)
    f = statistics.median(fits)
    return dict(fit=f, summary=statistics.median(short), detail=statistics.median(detail),
                ratio=statistics.median(short) / f, ratio_detail=statistics.median(detail) / f,
                kind=res.interval_kind, p=len(res.params), intervals=computed)


def table(result: dict) -> str:
    head = (f"{'design':<14} {'seed':>4} {'p':>3} {'kind':<9} {'fit s':>7} {'summary s':>9} "
            f"{'x fit':>6} {'detail x fit':>12} {'intervals':>9}")
    lines = [head, "-" * len(head)]
    for r in result["rows"]:
        lines.append(f"{r['design']:<14} {r['seed']:>4} {r['p']:>3} {r['kind']:<9} "
                     f"{r['fit']:>7.3f} {r['summary']:>9.3f} {r['ratio']:>6.1f} "
                     f"{r['ratio_detail']:>12.1f} {r['intervals']:>9}")
    ratios = [r["ratio"] for r in result["rows"]]
    details = [r["ratio_detail"] for r in result["rows"]]
    lines.append(f"summary / fit: median {statistics.median(ratios):.1f}, max "
                 f"{max(ratios):.1f}; detail=True: median {statistics.median(details):.1f}, "
                 f"max {max(details):.1f} ({len(ratios)} fits)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", default="benchmarks/results/summary_cost.json")
    args = ap.parse_args()
    rows = []
    for seed in args.seeds:
        for name, (df, kwargs) in designs(seed).items():
            rows.append(dict(design=name, seed=seed, **measure(df, kwargs, args.reps)))
            print(rows[-1], flush=True)
    write_result(args.out, table, rows=rows)


if __name__ == "__main__":
    main()
