"""What planning costs: intervention advice (API and CLI) and a sample-size replicate
against one fit of the same design.

Usage:  python benchmarks/bench_planning_cost.py [--reps 10] [--runs 3] [--examples]
        [--out benchmarks/results/planning_cost.json]

1. ``advice``: ``LinearSEM.suggest_interventions(condition=c)`` for c in any / 1b / 4 / 6
   on four p = 10 plans -- the partial-shift design (docs/design.rst; Condition 6
   identifies it), the same with the correlation of X1 and Y moved by 1e-6, the same with
   its child X4 of Y never shifted, and eq. (33)'s graph with every covariate shifted but
   the child X4 -- the sets and the seconds; and ``negdro design plan.toml`` on the first
   and third (wall time of the command, interpreter start included, median of 3).
2. ``cost``: per design and n, the seconds of each replicate of ``plan_sample_size(sem,
   [n], reps=R)`` (``--runs`` plans, one job: ``NEGDRO_N_JOBS=1``; each replicate of the
   plan's loop timed) against one fit, ``NegDRO(sem.sample(n), env="env",
   outcome="Y").fit(n_boot=0)`` on as many row samples, medians and means; plans and
   fits in turn so that the machine's load falls on both.  Designs: the README's (eq. (33),
   p = 10, n = 25 ... 200), docs/planning.rst's (Example 3 strong, n = 250 ... 4,000) and
   the partial-shift design (n = 250 ... 4,000).
3. ``--examples``: the README's line ``plan_sample_size(simulate.eq33(p=10), n=[25, 50,
   100, 200], reps=50, rng=0).required_n(target_error=0.1)`` and docs/planning.rst's
   usage (Example 3 strong, n = 250 ... 4,000, ``reps=200`` and the page's ``reps=50``)
   as written (default workers), wall time.

Prints a table and writes JSON (with the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("NEGDRO_N_JOBS", "1")   # part 2 compares one job with one fit

from _timing import write_result  # noqa: E402

from negdro_stats import LinearSEM, NegDRO, simulate  # noqa: E402
from negdro_stats.planning import plan_sample_size, sample_size  # noqa: E402

COVARIATES = [f"X{j}" for j in range(1, 11)]
PARTIAL = {"X2": {"X1": 0.8}, "Y": {"X1": 1.0, "X2": -0.5, "X3": 0.3}, "X4": {"Y": 0.7},
           "X5": {"X4": 0.6}}
SHIFTS = [{}, {"X1": [1.0, 1.0], "X3": 1.5}, {"X2": [0.5, 1.0], "X4": 1.0, "X6": 1.0},
          {"X1": 2.0, "X4": [1.0, 0.5], "X3": [0.5, 0.5]}]


def partial_plan(rho: float = 0.5, child_shifted: bool = True) -> dict:
    """The partial-shift design's plan (``LinearSEM.from_equations``'s arguments)."""
    shifts = [{k: v for k, v in env.items() if child_shifted or k != "X4"} for env in SHIFTS]
    return dict(equations=PARTIAL, covariates=COVARIATES, noise_var={"Y": 2.0, "X1": 2.0},
                confounders=[["X1", "Y", rho]], interventions=shifts)


def child_plan() -> dict:
    """Eq. (33)'s graph, every covariate shifted in the second environment but X4."""
    return dict(equations={"X2": {"X1": 1.0}, "X3": {"X2": 1.0}, "Y": {"X1": 0.5, "X3": -0.5},
                           "X4": {"Y": 1.0}, "X5": {"Y": -1.0}},
                covariates=COVARIATES,
                interventions=[{}, {c: 1.0 for c in COVARIATES if c != "X4"}])


PLANS = {"partial-shift (identified)": partial_plan(),
         "partial-shift, rho + 1e-6": partial_plan(0.5 + 1e-6),
         "partial-shift, X4 never shifted": partial_plan(child_shifted=False),
         "eq. (33) graph, X4 never shifted": child_plan()}


def _toml(plan: dict) -> str:
    """The plan as a TOML file for ``negdro design``."""
    def value(v):
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[ " + ", ".join(value(x) for x in v) + " ]"
        return f'"{v}"' if isinstance(v, str) else repr(float(v))
    head = [f"{k} = {value(v)}" for k, v in plan.items() if k != "equations"]
    return "\n".join(head + ["", "[equations]"]
                     + [f"{k} = {value(v)}" for k, v in plan["equations"].items()]) + "\n"


def advice() -> list[dict]:
    rows = []
    for name, plan in PLANS.items():
        sem = LinearSEM.from_equations(**{**plan, "confounders": {
            (a, b): r for a, b, r in plan.get("confounders", [])}})
        report = sem.check_identification()
        for condition in ("any", "1b", "4", "6"):
            t = time.perf_counter()
            try:
                found = sem.suggest_interventions(condition=condition)
                sets, via = list(found.covariates), found.condition
            except ValueError as error:
                sets, via = None, str(error)[:60]
            rows.append(dict(plan=name, identified=report.identified, routes=report.routes,
                             condition=condition, advice=sets, via=via,
                             seconds=time.perf_counter() - t))
    return rows


def cli() -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("partial-shift (identified)", "partial-shift, X4 never shifted"):
            path = Path(tmp) / "plan.toml"
            path.write_text(_toml(PLANS[name]))
            times = []
            for _ in range(3):
                t = time.perf_counter()
                run = subprocess.run([sys.executable, "-m", "negdro_stats", "design",
                                      str(path), "--json"], capture_output=True, text=True)
                times.append(time.perf_counter() - t)
                assert run.returncode == 0, run.stderr
            rows.append(dict(plan=name, seconds=statistics.median(times)))
    return rows


DESIGNS = {"README: eq. (33), p = 10": (lambda: simulate.eq33(p=10), [25, 50, 100, 200]),
           "docs: Example 3 strong": (lambda: simulate.example3("strong"),
                                      [250, 500, 1000, 2000, 4000]),
           "partial-shift, p = 10": (lambda: LinearSEM.from_equations(**{
               **partial_plan(), "confounders": {("X1", "Y"): 0.5}}), [250, 1000, 4000])}


def _timed_replicates(times: list) -> None:
    """Time every replicate of the plan's own loop (one job: in this process)."""
    loop = sample_size.replicate

    def timed(one, n, rng, **kwargs):
        def clocked(k, child):
            t = time.perf_counter()
            out = one(k, child)
            times.append(time.perf_counter() - t)
            return out
        return loop(clocked, n, rng, **kwargs)

    sample_size.replicate = timed


def cost(reps: int, runs: int) -> list[dict]:
    rows, times = [], []
    _timed_replicates(times)
    for name, (make, grid) in DESIGNS.items():
        sem = make()
        for n in grid:
            times.clear()
            fits, seed = [], 0
            for run in range(runs):
                plan_sample_size(sem, [n], reps=reps, rng=run, verbose=False)
                for _ in range(reps):
                    df = sem.sample(n, rng=seed)
                    seed += 1
                    t = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
                    fits.append(time.perf_counter() - t)
            rep, fit = statistics.median(times), statistics.median(fits)
            rows.append(dict(design=name, n=n, replicate=rep, fit=fit, ratio=rep / fit,
                             replicate_mean=statistics.mean(times),
                             fit_mean=statistics.mean(fits)))
    return rows


def examples() -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "NEGDRO_N_JOBS"}   # as written
    code = {"README line": "plan_sample_size(simulate.eq33(p=10), n=[25, 50, 100, 200], "
                           "reps=50, rng=0).required_n(target_error=0.1)",
            "docs/planning.rst, reps=200": "plan_sample_size(simulate.example3('strong'), "
                                           "n=[250, 500, 1000, 2000, 4000], reps=200, rng=0)",
            "docs/planning.rst, reps=50": "plan_sample_size(simulate.example3('strong'), "
                                          "n=[250, 500, 1000, 2000, 4000], reps=50, rng=0)"}
    rows = []
    for name, line in code.items():
        script = ("import time; t = time.perf_counter()\n"
                  "from negdro_stats import simulate, plan_sample_size\n"
                  f"{line}\nprint(time.perf_counter() - t)")
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env)
        assert run.returncode == 0, run.stderr
        rows.append(dict(example=name, code=line, seconds=float(run.stdout.split()[-1])))
    return rows


def table(result: dict) -> str:
    lines = ["advice (suggest_interventions, p = 10):",
             f"{'plan':>33} {'ident':>5} {'cond':>4} {'seconds':>7}  advice (condition)"]
    for r in result["advice"]:
        lines.append(f"{r['plan']:>33} {str(r['identified']):>5} {r['condition']:>4} "
                     f"{r['seconds']:>7.3f}  {r['advice']} ({r['via']})")
    lines += ["", "negdro design plan.toml --json (wall time, interpreter start included):"]
    lines += [f"{r['plan']:>33} {r['seconds']:>7.2f} s" for r in result["cli"]]
    lines += ["", "plan_sample_size per replicate (one job) against one fit on rows, seconds:",
              f"{'design':>26} {'n':>5} {'median: replicate':>17} {'fit':>7} {'ratio':>6}"
              f" {'mean: replicate':>15} {'fit':>7}"]
    for r in result["cost"]:
        lines.append(f"{r['design']:>26} {r['n']:>5} {r['replicate']:>17.4f} {r['fit']:>7.4f} "
                     f"{r['ratio']:>6.2f} {r['replicate_mean']:>15.4f} {r['fit_mean']:>7.4f}")
    ratios = [r["ratio"] for r in result["cost"]]
    lines.append(f"ratio replicate / fit: median {statistics.median(ratios):.2f}, "
                 f"largest {max(ratios):.2f}")
    if result.get("examples"):
        lines += ["", "examples as written (default workers), wall time:"]
        lines += [f"{r['example']:>30} {r['seconds']:>7.1f} s" for r in result["examples"]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--examples", action="store_true")
    ap.add_argument("--out", default="benchmarks/results/planning_cost.json")
    args = ap.parse_args()
    write_result(args.out, table, advice=advice(), cli=cli(), cost=cost(args.reps, args.runs),
                 examples=examples() if args.examples else [], reps=args.reps, runs=args.runs)


if __name__ == "__main__":
    main()
