"""Planning benchmark (issue 12): does ``plan_sample_size`` (moments drawn without rows)
give the sample sizes that full simulation gives?

Usage:  python benchmarks/bench_planning.py [--reps 300] [--diagnose-reps 40] [--speed-reps 5]
        [--boot-reps 100] [--only "Example 3 strong"]
        [--out benchmarks/results/planning.json]

For three designs -- eq. (33) with p = 10 (uniform noise in environment 4: the Gaussian
approximation), Example 3 "strong", and ``simulate.random_sem(10, n_envs=4,
confounding=True, strong_env=True, rng=2)`` (hidden confounding) -- and a grid of n per
environment:

1. ``plan``: ``plan_sample_size(sem, grid, reps=R)`` (Wishart moments, ``solve`` on them);
2. ``full``: R row samples ``sem.sample(n)`` fitted by ``NegDRO(...).fit(n_boot=0)``,
   tabulated by the same :class:`SamplePlan` rules;

and ``required_n`` at power 0.8 for a target error, for the exact support and for the
margin's bound, from both, with the ratio plan / full and a 90% Monte Carlo interval of
it (both sets of replicates resampled 200 times).  The speed-up is full-simulation time
over plan time, per replicate.

3. ``speed``: seconds per replicate of both on eq. (33), p = 10, at n = 10^3, 10^4, 10^5
   per environment (``--speed-reps`` replicates each).

4. ``diagnose``: on Example 3, the share of ``NegDRO.diagnose(n_boot=99, n_perm=0)``
   lower bounds above the tolerance (a real bootstrap in each of ``--diagnose-reps`` row
   samples) against the plan's shift approximation of it and its parametric bootstrap
   (``margin_boot=30``, ``--boot-reps`` replicates; module docstring of
   ``negdro_stats.planning.sample_size``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from negdro_stats import NegDRO, simulate
from negdro_stats.identification.conditions import check_condition_1b
from negdro_stats.planning import SamplePlan, plan_sample_size

DESIGNS = {   # name: (design, grid of n per environment, target error)
    "eq33 p=10": (lambda: simulate.eq33(p=10), [25, 50, 100, 200, 400, 800, 1600], 0.05),
    "Example 3 strong": (lambda: simulate.example3("strong"),
                         [250, 500, 1000, 2000, 4000, 8000], 0.05),
    "random_sem confounded": (lambda: simulate.random_sem(
        10, n_envs=4, confounding=True, strong_env=True, rng=2),
        [200, 400, 800, 1600, 3200, 6400], 0.1),
}
POWER = 0.8


def _fit(df):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NegDRO(df, env="env", outcome="Y").fit(n_boot=0)


def full_simulation(sem, grid, reps, rng) -> SamplePlan:
    """Rows drawn with ``sem.sample`` and fitted with ``NegDRO(...).fit(n_boot=0)``."""
    shape = (len(grid), reps)
    errors, support, margins = np.empty(shape), np.zeros(shape, bool), np.empty(shape)
    start = time.perf_counter()
    for k, n in enumerate(grid):
        for r in range(reps):
            res = _fit(sem.sample(n, rng))
            errors[k, r] = np.linalg.norm(res.params.to_numpy() - sem.beta_star)
            support[k, r] = np.array_equal(res.support.to_numpy(), sem.beta_star != 0)
            margins[k, r] = res.identification.relative_margin
    return SamplePlan(n=np.asarray(grid), errors=errors, support_ok=support, margins=margins,
                      population_margin=check_condition_1b(sem.moments()).relative_margin,
                      draw="rows", seconds=time.perf_counter() - start)


def required(plan: SamplePlan, target: float) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"error": plan.required_n(target, power=POWER),
                "support": plan.required_n(power=POWER, criterion="support"),
                "margin": plan.required_n(power=POWER, criterion="margin")}


def resampled(plan: SamplePlan, rng) -> SamplePlan:
    """The plan with its replicates drawn with replacement (per candidate n)."""
    idx = rng.integers(0, plan.reps, size=(len(plan.n), plan.reps))
    return replace(plan, **{name: np.take_along_axis(getattr(plan, name), idx, axis=1)
                            for name in ("errors", "support_ok", "margins")})


def compare(name, reps, rng) -> tuple[dict, SamplePlan]:
    make, grid, target = DESIGNS[name]
    sem = make()
    plan = plan_sample_size(sem, grid, reps=reps, rng=rng, verbose=False)
    full = full_simulation(sem, grid, reps, rng)
    n_plan, n_full = required(plan, target), required(full, target)
    ratios = {c: [] for c in n_plan}
    for _ in range(200):
        a, b = required(resampled(plan, rng), target), required(resampled(full, rng), target)
        for c in ratios:
            ratios[c].append(a[c] / b[c])
    row = dict(design=name, grid=grid, reps=reps, target_error=target, power=POWER,
               population_margin=plan.population_margin,
               gaussian_approximation=plan.gaussian_approximation,
               seconds_plan=plan.seconds, seconds_full=full.seconds,
               speedup=full.seconds / plan.seconds,
               table_plan=plan.to_frame().reset_index().to_dict(orient="list"),
               table_full=full.to_frame().reset_index().to_dict(orient="list"))
    for c in n_plan:
        lo, hi = np.quantile(np.asarray(ratios[c])[np.isfinite(ratios[c])], [0.05, 0.95])
        row[f"n_{c}_plan"], row[f"n_{c}_full"] = n_plan[c], n_full[c]
        row[f"ratio_{c}"] = n_plan[c] / n_full[c]
        row[f"ratio_{c}_mc90"] = [float(lo), float(hi)]
    return row, plan


def diagnose_check(plan: SamplePlan, ns, reps, boot_reps, rng) -> list[dict]:
    """Real bootstrap bounds (``NegDRO.diagnose`` on rows) against the plan's shift
    approximation and its parametric bootstrap (``margin_boot=30``)."""
    sem = simulate.example3("strong")
    nested = plan_sample_size(sem, ns, reps=boot_reps, rng=rng, margin_boot=30, verbose=False)
    out = []
    for n in ns:
        shown, start = 0, time.perf_counter()
        for _ in range(reps):
            model = NegDRO(sem.sample(n, rng), env="env", outcome="Y")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rep = model.diagnose(n_boot=99, n_perm=0, rng=rng, verbose=False)
            shown += rep.holds_with_confidence
        k = int(np.flatnonzero(plan.n == n)[0])
        out.append(dict(n=n, reps=reps, p_margin_bootstrap=shown / reps,
                        p_margin_shift=float(plan.to_frame()["p_margin"].iloc[k]),
                        boot_reps=boot_reps, p_margin_nested=float(
                            nested.to_frame()["p_margin"].iloc[ns.index(n)]),
                        seconds=time.perf_counter() - start))
        print(json.dumps(out[-1]), flush=True)
    return out


def speed(reps, rng) -> list[dict]:
    """Seconds per replicate, moments against rows, as n grows."""
    sem, out = simulate.eq33(p=10), []
    for n in (1_000, 10_000, 100_000):
        plan = plan_sample_size(sem, [n], reps=reps, rng=rng, verbose=False)
        full = full_simulation(sem, [n], reps, rng)
        out.append(dict(n=n, reps=reps, seconds_plan=plan.seconds / reps,
                        seconds_full=full.seconds / reps, speedup=full.seconds / plan.seconds))
        print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--diagnose-reps", type=int, default=40)
    ap.add_argument("--speed-reps", type=int, default=5)
    ap.add_argument("--boot-reps", type=int, default=100,
                    help="replicates of the plan with margin_boot=30 (diagnose check)")
    ap.add_argument("--only", choices=list(DESIGNS), help="compare on this design only")
    ap.add_argument("--out", default="benchmarks/results/planning.json")
    a = ap.parse_args()
    rng = np.random.default_rng(20261130)
    result = dict(date=time.strftime("%Y-%m-%d %H:%M"), machine=platform.platform(),
                  command=" ".join(["python", *sys.argv]), comparisons=[])
    plans = {}
    with threadpool_limits(limits=1):
        for name in [a.only] if a.only else DESIGNS:
            row, plans[name] = compare(name, a.reps, rng)
            result["comparisons"].append(row)
            print(json.dumps({k: v for k, v in row.items() if not k.startswith("table")}),
                  flush=True)
        if a.speed_reps:
            result["speed"] = speed(a.speed_reps, rng)
        if a.diagnose_reps and "Example 3 strong" in plans:
            result["diagnose"] = diagnose_check(plans["Example 3 strong"], [500, 1000, 2000],
                                                a.diagnose_reps, a.boot_reps, rng)
    Path(a.out).write_text(json.dumps(result, indent=1, default=float))
    print(f"\n# {result['command']}  ({result['date']})")
    print(f"{'design':24s} {'criterion':9s} {'n plan':>8s} {'n full':>8s} {'ratio':>6s} "
          f"{'MC 90%':>13s} {'speed-up':>8s}")
    for row in result["comparisons"]:
        for c in ("error", "support", "margin"):
            lo, hi = row[f"ratio_{c}_mc90"]
            print(f"{row['design']:24s} {c:9s} {row[f'n_{c}_plan']:8.0f} "
                  f"{row[f'n_{c}_full']:8.0f} {row[f'ratio_{c}']:6.2f} "
                  f"[{lo:5.2f}, {hi:5.2f}] {row['speedup']:8.1f}")
    for row in result.get("speed", []):
        print(f"n = {row['n']:>7,} per env: {row['seconds_plan']:.3f} s (moments) vs "
              f"{row['seconds_full']:.3f} s (rows) per replicate: {row['speedup']:.1f}x")
    for row in result.get("diagnose", []):
        print(f"Example 3 strong, n = {row['n']}: P(margin bound > tol) "
              f"{row['p_margin_bootstrap']:.2f} (diagnose, {row['reps']} samples), "
              f"{row['p_margin_shift']:.2f} (plan, shift), {row['p_margin_nested']:.2f} "
              f"(plan, margin_boot=30, {row['boot_reps']} replicates)")


if __name__ == "__main__":
    main()
