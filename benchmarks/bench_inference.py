"""Inference benchmark (issue: inference): bootstrap cost, interval coverage, gamma="auto".

Usage:  python benchmarks/bench_inference.py [--quick] [--reps 100] [--seeds 20]
        [--out benchmarks/results/inference.json]

1. Cost: B = 200 bootstrap refits at p = 100, n = 20,000 per environment (eq. (33)):
   wall time of fit(n_boot=200) minus fit(n_boot=0), vs 200 x one fit (from arrays,
   n_boot=0) and vs 200 x pooled OLS (numpy.linalg.lstsq), same data, same run.
2. Coverage: eq. (33), p = 10, n = 5,000 per environment, ``--reps`` repetitions of
   fit(n_boot=200): share of 95% percentile intervals covering beta*_j for the causal
   X1, X3, and containing 0 for the non-causal coordinates; also the selection
   frequencies of X1 and X3.
3. gamma="auto" vs gamma = 20: mean ||b - beta*||_2 over ``--seeds`` seeds on eq. (33)
   (p = 10, n = 2,000), Appendix F.2 (p = 10, n = 2,000) and Example 3's three regimes
   (n = 10,000), for the default estimator and for the paper's Algorithm 3 verbatim
   (refit="negdro"), with the chosen gammas.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import timed

from negdro_stats import NegDRO, simulate


def cost(p, n, B):
    sem = simulate.eq33(p=p)
    df = sem.sample(n, rng=1)
    X = df[[f"X{j}" for j in range(1, p + 1)]].to_numpy()
    y, env = df["Y"].to_numpy(), df["env"].to_numpy()
    one_fit = timed(lambda: NegDRO.from_arrays(y, X, env).fit(n_boot=0), reps=3)[1]
    one_ols = timed(lambda: np.linalg.lstsq(X, y, rcond=None), reps=3)[1]
    model = NegDRO.from_arrays(y, X, env)
    t0 = time.perf_counter()
    model.fit(n_boot=B, rng=0, verbose=False)
    t_boot = time.perf_counter() - t0 - timed(lambda: model.fit(n_boot=0), reps=3)[1]
    row = dict(p=p, n_per_env=n, B=B, boot_s=t_boot, one_fit_s=one_fit,
               ratio_to_B_fits=t_boot / (B * one_fit), one_ols_s=one_ols,
               ratio_to_B_ols=t_boot / (B * one_ols))
    print(row, flush=True)
    return row


def coverage(reps, n, p=10, B=200):
    sem = simulate.eq33(p=p)
    beta = sem.beta_star
    causal = beta != 0
    cover, zero, freq = [], [], []
    for r in range(reps):
        df = sem.sample(n, rng=50_000 + r)
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=B, rng=r, verbose=False)
        ci = res.conf_int(0.05)
        inside = (ci["lower"].to_numpy() <= beta) & (beta <= ci["upper"].to_numpy())
        cover.append(inside[causal])
        zero.append(inside[~causal])
        freq.append(res.support_freq.to_numpy()[causal])
    cover, zero, freq = np.array(cover), np.array(zero), np.array(freq)
    row = dict(reps=reps, n_per_env=n, p=p, B=B,
               causal_coverage=cover.mean(axis=0).tolist(),
               noncausal_contains_zero=float(zero.mean()),
               noncausal_contains_zero_min=float(zero.mean(axis=0).min()),
               mean_sel_freq_causal=freq.mean(axis=0).tolist())
    print(row, flush=True)
    return row


def auto_gamma(seeds):
    designs = [("eq33", simulate.eq33(10), 2000), ("F.2", simulate.appendix_f2(10), 2000)]
    designs += [(f"ex3-{r}", simulate.example3(r), 10_000) for r in ("limited", "weak", "strong")]
    rows = []
    for name, sem, n in designs:
        out = {k: [] for k in ("fixed", "auto", "fixed_paper", "auto_paper")}
        chosen = []
        for s in range(seeds):
            df = sem.sample(n, rng=70_000 + s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for refit, tag in (("auto", ""), ("negdro", "_paper")):
                    fixed = NegDRO(df, env="env", outcome="Y").fit(n_boot=0, refit=refit)
                    auto = NegDRO(df, env="env", outcome="Y", gamma="auto").fit(
                        n_boot=0, refit=refit)
                    out["fixed" + tag].append(np.linalg.norm(fixed.params - sem.beta_star))
                    out["auto" + tag].append(np.linalg.norm(auto.params - sem.beta_star))
                    if refit == "auto":
                        chosen.append(auto.gamma)
        row = dict(design=name, n_per_env=n, seeds=seeds,
                   **{f"err_{k}": float(np.mean(v)) for k, v in out.items()},
                   gamma_auto_median=float(np.median(chosen)),
                   gamma_auto_range=[float(min(chosen)), float(max(chosen))])
        print(row, flush=True)
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--only", choices=["cost", "coverage", "auto_gamma"], default=None,
                    help="run one part and keep the others of an existing --out file")
    ap.add_argument("--out", default="benchmarks/results/inference.json")
    a = ap.parse_args()
    res = json.loads(Path(a.out).read_text()) if a.only and Path(a.out).exists() else {}
    parts = {
        "cost": lambda: cost(20, 2000, 20) if a.quick else cost(100, 20_000, 200),
        "coverage": lambda: coverage(3, 1000, B=50) if a.quick else coverage(a.reps, 5000),
        "auto_gamma": lambda: auto_gamma(2 if a.quick else a.seeds),
    }
    for name, run in parts.items():
        if a.only in (None, name):
            res[name] = run()
    res["meta"] = dict(machine=platform.platform(), python=platform.python_version(),
                       date=time.strftime("%Y-%m-%d"))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
