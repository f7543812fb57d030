"""Selection benchmark (issue 8): is the default support right on designs nobody tuned on?

Usage:  python benchmarks/bench_selection.py [--seeds 20] [--ns 2000 20000 100000]
        [--boot-reps 100] [--only random|paper|coverage] [--out benchmarks/results/selection.json]

1. ``random``: ``simulate.random_sem(30, n_envs=5, n_parents=3, n_children=3,
   weak_effects=(0.05, 0.1, 0.15), confounding=...)`` for design seeds 0..seeds-1 (the
   sampling seed is 10_000 + design seed), n rows per environment.  Per fit: error
   ``||b - beta*||_2`` of the default (``refit="auto"``), of the paper's Algorithm 3
   (``refit="negdro"``), of ``refit="invariant"`` (Algorithm 3's support refitted by
   eq. (31)) and of pooled OLS on the true parents (the oracle; biased under
   confounding) and of the invariance GMM on the true parents (the oracle of an
   invariance method); whether a child of Y or any non-cause is selected, which parents are
   kept, the route taken and whether the J test rejected invariance.
   ``strong``: the same with ``strong_env=True`` (the last environment shifts every
   covariate, so Condition 1b holds with a clear margin).
2. ``paper``: the paper's designs, default vs paper: eq. (33) and Appendix F.2 (p = 10,
   n = 2,000), Example 3's three regimes (n = 10,000), 20 seeds each.
3. ``coverage``: 95% percentile bootstrap intervals (``--boot-reps`` replicates) for the
   parents of the random designs at n = 2,000 and 20,000 (unconfounded and confounded):
   share of (fit, parent) pairs whose interval covers beta*_j.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from negdro_stats import Moments, NegDRO, simulate
from negdro_stats.selection import Cumulant, InvarianceGMM

WEAK = (0.05, 0.1, 0.15)


def _fit(df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NegDRO(df, env="env", outcome="Y").fit(check_identification=False, **kw)


def oracle_ols(df, parents):
    X = df[[f"X{j + 1}" for j in parents]].to_numpy()
    b = np.zeros(len(df.columns) - 2)
    if len(parents):
        b[parents] = np.linalg.lstsq(X, df["Y"].to_numpy(), rcond=None)[0]
    return b


def oracle_gmm(df, parents):
    """The invariance GMM (continuously updated, all covariates as instruments) on the
    true parents: the best an invariance method can do when it knows the support --
    the reference under confounding, where OLS on the parents is biased."""
    cols = [c for c in df.columns if c not in ("Y", "env")]
    mom = Moments.from_arrays(df[cols].to_numpy(), df["Y"].to_numpy(), df["env"].to_numpy())
    gmm = InvarianceGMM(mom, instruments=np.arange(mom.p), cumulant=Cumulant.zero(mom.n_envs),
                        b_ref=np.zeros(mom.p))
    b = np.zeros(mom.p)
    b[parents] = gmm.fit_cue(np.asarray(parents)).b
    return b


def random_designs(seeds, ns, confounded, strong_env=False):
    rows = []
    for seed in range(seeds):
        sem = simulate.random_sem(30, n_envs=5, weak_effects=WEAK, confounding=confounded,
                                  strong_env=strong_env, rng=seed)
        beta = sem.beta_star
        parents = np.flatnonzero(beta)
        d, s_y = sem.moments().scales()
        std_effect = np.abs(beta) * d / s_y
        children = sem.D
        for n in ns:
            df = sem.sample(n, rng=10_000 + seed)
            res = {r: _fit(df, refit=r, n_boot=0) for r in ("auto", "negdro", "invariant")}
            sel = res["auto"].support.to_numpy()
            row = dict(seed=seed, n=n, confounded=confounded, strong_env=strong_env,
                       route=res["auto"].solver.refit,
                       rejected=bool(res["auto"].selection.rejected),
                       err={r: float(np.linalg.norm(v.params.to_numpy() - beta))
                            for r, v in res.items()},
                       err_oracle=float(np.linalg.norm(oracle_ols(df, parents) - beta)),
                       err_oracle_gmm=float(np.linalg.norm(oracle_gmm(df, parents) - beta)),
                       child=bool(sel[children].any()),
                       child_paper=bool(res["negdro"].support.to_numpy()[children].any()),
                       noncause=bool(sel[beta == 0].any()),
                       noncause_paper=bool(res["negdro"].support.to_numpy()[beta == 0].any()),
                       kept=[dict(effect=float(std_effect[j]), kept=bool(sel[j]),
                                  kept_paper=bool(res["negdro"].support.iloc[j]))
                             for j in parents])
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "kept"}), flush=True)
    return rows


def summarise_random(rows):
    out = []
    for (strong_env, conf, n) in sorted({(r["strong_env"], r["confounded"], r["n"])
                                         for r in rows}):
        sub = [r for r in rows if r["confounded"] == conf and r["n"] == n
               and r["strong_env"] == strong_env]
        kept = [k for r in sub for k in r["kept"]]
        weak = {w: [k for k in kept if abs(k["effect"] - w) < 1e-6] for w in WEAK}
        strong = [k for k in kept if k["effect"] > 0.16]
        err = {m: np.array([r["err"][m] for r in sub]) for m in ("auto", "negdro", "invariant")}
        oracle = np.array([r["err_oracle"] for r in sub])
        out.append(dict(
            strong_env=strong_env, confounded=conf, n=n, fits=len(sub),
            mean_err_default=float(err["auto"].mean()),
            median_err_default=float(np.median(err["auto"])),
            mean_err_paper=float(err["negdro"].mean()),
            mean_err_invariant_refit=float(err["invariant"].mean()),
            mean_err_oracle=float(oracle.mean()),
            mean_err_oracle_gmm=float(np.mean([r["err_oracle_gmm"] for r in sub])),
            ratio_default_to_oracle=float(err["auto"].mean() / oracle.mean()),
            median_ratio_to_oracle=float(np.median(err["auto"] / oracle)),
            child_rate=float(np.mean([r["child"] for r in sub])),
            child_rate_paper=float(np.mean([r["child_paper"] for r in sub])),
            noncause_rate=float(np.mean([r["noncause"] for r in sub])),
            noncause_rate_paper=float(np.mean([r["noncause_paper"] for r in sub])),
            kept_strong=float(np.mean([k["kept"] for k in strong])),
            **{f"kept_{w:g}": float(np.mean([k["kept"] for k in weak[w]])) for w in WEAK},
            **{f"kept_{w:g}_paper": float(np.mean([k["kept_paper"] for k in weak[w]]))
               for w in WEAK},
            routes={k: sum(r["route"] == k for r in sub) for k in ("ols", "gmm", "negdro")},
            invariance_rejected=sum(r["rejected"] for r in sub),
        ))
    return out


def paper_designs(seeds):
    designs = {
        "eq33 p=10": (simulate.eq33(p=10), 2000),
        "F.2 p=10": (simulate.appendix_f2(p=10), 2000),
        "Example 3 limited": (simulate.example3("limited"), 10_000),
        "Example 3 weak": (simulate.example3("weak"), 10_000),
        "Example 3 strong": (simulate.example3("strong"), 10_000),
    }
    out = []
    for name, (sem, n) in designs.items():
        errs = {"auto": [], "negdro": [], "invariant": []}
        routes, rejected = [], 0
        for seed in range(seeds):
            df = sem.sample(n, rng=20_000 + seed)
            for r in errs:
                res = _fit(df.rename(columns={sem.names[0]: "Y"}), refit=r, n_boot=0)
                errs[r].append(float(np.linalg.norm(res.params.to_numpy() - sem.beta_star)))
                if r == "auto":
                    routes.append(res.solver.refit)
                    rejected += bool(res.selection.rejected)
        row = dict(design=name, n=n, seeds=seeds,
                   mean_err_default=float(np.mean(errs["auto"])),
                   mean_err_paper=float(np.mean(errs["negdro"])),
                   mean_err_invariant_refit=float(np.mean(errs["invariant"])),
                   routes={k: routes.count(k) for k in sorted(set(routes))},
                   invariance_rejected=rejected)
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def coverage(seeds, ns, B):
    out = []
    for conf in (False, True):
        for n in ns:
            hits, widths = [], []
            for seed in range(seeds):
                sem = simulate.random_sem(30, n_envs=5, weak_effects=WEAK, confounding=conf,
                                          rng=seed)
                beta = sem.beta_star
                df = sem.sample(n, rng=10_000 + seed)
                res = _fit(df, n_boot=B, rng=seed, verbose=False)
                ci = res.conf_int(0.05).to_numpy()
                for j in np.flatnonzero(beta):
                    hits.append(ci[j, 0] <= beta[j] <= ci[j, 1])
                    widths.append(ci[j, 1] - ci[j, 0])
            row = dict(confounded=conf, n=n, fits=seeds, B=B, parents=len(hits),
                       coverage=float(np.mean(hits)), median_width=float(np.median(widths)))
            print(json.dumps(row), flush=True)
            out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--ns", type=int, nargs="+", default=[2000, 20_000, 100_000])
    ap.add_argument("--boot-reps", type=int, default=100)
    ap.add_argument("--only", choices=["random", "strong", "paper", "coverage"], default=None)
    ap.add_argument("--out", default="benchmarks/results/selection.json")
    a = ap.parse_args()
    result = dict(date=time.strftime("%Y-%m-%d %H:%M"), command=" ".join(sys.argv),
                  machine=platform.platform())
    if a.only in (None, "random"):
        rows = []
        for conf in (False, True):
            rows += random_designs(a.seeds, a.ns, conf)
        result["random"] = summarise_random(rows)
        for r in result["random"]:
            print(json.dumps(r))
    if a.only in (None, "strong"):
        rows = []
        for conf in (False, True):
            rows += random_designs(a.seeds, a.ns, conf, strong_env=True)
        result["strong_env"] = summarise_random(rows)
        for r in result["strong_env"]:
            print(json.dumps(r))
    if a.only in (None, "paper"):
        result["paper"] = paper_designs(a.seeds)
    if a.only in (None, "coverage"):
        result["coverage"] = coverage(a.seeds, [n for n in a.ns if n <= 20_000], a.boot_reps)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=1))
    text = table(result)
    print(text)
    Path(a.out).with_suffix(".txt").write_text(text)


def table(result):
    """The headline numbers as text tables."""
    lines = [f"# {result['command']}  ({result['date']})"]
    for key in ("random", "strong_env"):
        if key not in result:
            continue
        lines += ["", f"## {key} family (p = 30, 5 envs, weak parents 0.05/0.1/0.15)",
                  "| confounded | n/env | default | paper | invariant refit | OLS oracle | "
                  "GMM oracle | "
                  "ratio (mean/median) | child | non-cause | kept 0.05/0.1/0.15/strong | "
                  "routes ols/gmm/negdro | J rejected |"]
        for r in result[key]:
            lines.append(
                f"| {r['confounded']} | {r['n']} | {r['mean_err_default']:.4f} | "
                f"{r['mean_err_paper']:.3f} | {r['mean_err_invariant_refit']:.3f} | "
                f"{r['mean_err_oracle']:.4f} | {r.get('mean_err_oracle_gmm', np.nan):.4f} | "
                f"{r['ratio_default_to_oracle']:.2f}/"
                f"{r['median_ratio_to_oracle']:.2f} | {r['child_rate']:.2f} | "
                f"{r['noncause_rate']:.2f} | {r['kept_0.05']:.2f}/{r['kept_0.1']:.2f}/"
                f"{r['kept_0.15']:.2f}/{r['kept_strong']:.2f} | {r['routes']['ols']}/"
                f"{r['routes']['gmm']}/{r['routes']['negdro']} | {r['invariance_rejected']} |")
    if "paper" in result:
        lines += ["", "## paper designs (mean error over seeds)",
                  "| design | n/env | default | paper Alg. 3 | invariant refit | routes | "
                  "J rejected |"]
        for r in result["paper"]:
            lines.append(f"| {r['design']} | {r['n']} | {r['mean_err_default']:.4f} | "
                         f"{r['mean_err_paper']:.4f} | {r['mean_err_invariant_refit']:.4f} | "
                         f"{r['routes']} | {r['invariance_rejected']} |")
    if "coverage" in result:
        lines += ["", "## 95% percentile bootstrap intervals for the parents",
                  "| confounded | n/env | fits | B | coverage | median width |"]
        for r in result["coverage"]:
            lines.append(f"| {r['confounded']} | {r['n']} | {r['fits']} | {r['B']} | "
                         f"{r['coverage']:.3f} | {r['median_width']:.4f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
