"""What ``summary()`` costs against the fit it describes.

Usage:  python benchmarks/bench_summary_cost.py [--reps 3] [--seeds 0 1 2] [--quick]
        [--out benchmarks/results/summary_cost.json]

Per design and seed: the seconds of ``NegDRO(df, env="env", outcome="Y").fit(n_boot=0)``
(median of ``--reps`` fits) and of ``summary()`` and ``summary(detail=True)``, each on a
fresh fit (a result keeps what its summary computed, so a second call is free), with
the default workers and with one (``can_fork`` off: the robust p-values and intervals
one after another), same run; the ratios summary / fit, the summary's interval kind, how
many robust intervals it computed, and whether every summary's text is the same.
Designs (none tuned on): eq. (33) at p = 10 and 30 (every covariate shifted: robust
intervals); the partial-shift design at p = 10 and 30 (``bench_partial.design``: "if
Condition 4", Wald intervals beside robust p); random SEMs (``simulate.random_sem``, p =
8 and 20, 4 environments, confounded, half the covariates intervened on; p = 100, 5
environments, every covariate intervened on), and the bundled Sachs cells as the README
fits them (rejected).  n = 1,000 rows per environment (2,000 at p = 100); ``--quick``
leaves out p = 100.

Prints a table and writes JSON (with the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

from _timing import write_result
from bench_partial import design as partial_design

from negdro_stats import NegDRO, _resampling, datasets, simulate

N = 1000


def designs(seed: int, quick: bool) -> dict:
    """Name -> (data, NegDRO keyword arguments) for one seed."""
    def rows(sem, n=N):
        return sem.sample(n, rng=seed), {}

    out = {f"eq33 p={p}": rows(simulate.eq33(p=p)) for p in (10, 30)}
    out |= {f"partial p={p}": rows(partial_design(p)) for p in (10, 30)}
    out |= {f"random p={p}": rows(simulate.random_sem(p, n_envs=4, confounding=True,
                                                      intervened=0.5, rng=seed))
            for p in (8, 20)}
    if not quick:
        out["random p=100"] = rows(simulate.random_sem(100, n_envs=5, rng=seed), 2000)
    if seed == 0:
        cells = datasets.load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True)
        out["sachs"] = (cells.drop(columns="condition"),
                        dict(outcome="Erk", fit_intercept=True))
    return out


def measure(df, kwargs: dict, reps: int) -> dict:
    """Seconds of the fit, and summary() and summary(detail=True) on fresh fits with the
    default workers and with one; whether their texts agree."""
    def fit():
        return NegDRO(df, env="env", **({"outcome": "Y"} | kwargs)).fit(n_boot=0)

    def summarised(detail: bool) -> tuple[float, str]:
        res = fit()
        t = time.perf_counter()
        text = str(res.summary(detail=detail))
        return time.perf_counter() - t, text

    fork, texts, seconds = _resampling.can_fork, set(), {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = []
        for _ in range(reps):
            t = time.perf_counter()
            res = fit()
            fits.append(time.perf_counter() - t)
        for label, can in (("", fork), ("_one_worker", lambda: False)):
            _resampling.can_fork = can
            try:
                for detail in (False, True):
                    runs = [summarised(detail) for _ in range(reps)]
                    seconds[f"{'detail' if detail else 'summary'}{label}"] = \
                        statistics.median(t for t, _ in runs)
                    texts |= {(detail, text) for _, text in runs}
            finally:
                _resampling.can_fork = fork
        res.summary()
    f = statistics.median(fits)
    computed = (len(res.robust_set().__dict__.get("_projected", {}))
                if res.interval_kind == "robust" else 0)
    return dict(fit=f, **seconds, **{f"ratio_{k}": v / f for k, v in seconds.items()},
                kind=res.interval_kind, p=len(res.params), intervals=computed,
                same_text=len(texts) == 2)


def table(result: dict) -> str:
    head = (f"{'design':<13} {'seed':>4} {'p':>3} {'kind':<7} {'fit s':>6} {'summ. s':>7} "
            f"{'x fit':>5} {'1 worker':>8} {'detail':>6} {'intervals':>9} {'same':>4}")
    lines = [head, "-" * len(head)]
    for r in result["rows"]:
        lines.append(f"{r['design']:<13} {r['seed']:>4} {r['p']:>3} {r['kind']:<7} "
                     f"{r['fit']:>6.3f} {r['summary']:>7.3f} {r['ratio_summary']:>5.1f} "
                     f"{r['ratio_summary_one_worker']:>8.1f} {r['ratio_detail']:>6.1f} "
                     f"{r['intervals']:>9} {'yes' if r['same_text'] else 'NO':>4}")
    lines.append("x fit: summary() / fit(n_boot=0), default workers; 1 worker: the same with "
                 "one; detail: summary(detail=True) / fit.")
    for key, label in (("ratio_summary", "summary"), ("ratio_summary_one_worker",
                                                        "one worker"),
                       ("ratio_detail", "detail=True")):
        values = [r[key] for r in result["rows"]]
        lines.append(f"{label}: median {statistics.median(values):.1f} fits, max "
                     f"{max(values):.1f} ({len(values)} designs x seeds)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="benchmarks/results/summary_cost.json")
    args = ap.parse_args()
    rows = []
    for seed in args.seeds:
        for name, (df, kwargs) in designs(seed, args.quick).items():
            rows.append(dict(design=name, seed=seed, **measure(df, kwargs, args.reps)))
            print(rows[-1], flush=True)
    write_result(args.out, table, rows=rows)


if __name__ == "__main__":
    main()
