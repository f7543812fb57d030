"""Inference benchmark (issue: inference): bootstrap cost, interval coverage, gamma="auto".

Usage:  python benchmarks/bench_inference.py [--quick] [--reps 100] [--seeds 20]
        [--only cost|defaults|replicates|coverage|auto_gamma|robust|
                robust_cost|robust_width|robust_noise]
        [--designs ...]
        [--ns ...] [--test kj|ar]
        [--out benchmarks/results/inference.json]

0. Defaults (``--only defaults``): on eq. (33), p = 10, n = 20,000 per environment, the
   cost in fits of ``fit()``, ``fit()`` + ``summary()``, the deferred bootstrap (B = 200)
   on first use and ``diagnose()``; import time against ``pandas`` + ``scipy.stats``.
   (``summary()``'s cost on other designs: ``benchmarks/bench_summary_cost.py``.)
0b. Replicates (``--only replicates``): the deferred B = 200 bootstrap's cost in fits on
   eq. (33) and a random confounded p = 15 design, and each replicate's distance from the
   replicate whose continuously updated fits are minimised to the end (:func:`replicates`).
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
4. Robust sets (``--robust``): ``--reps`` samples per design and n of Y <- X1 - X2 / 2
   with a child X3 = 0.8 Y + noise, four environments: "identified" (mean and scale
   shifts of X1, X2, X3 in turn), "t5" (the same, t5 noise), "confounded" (X1 and Y's
   noises correlated 0.5), "mean shifts" (means only, of X1 and X2), and out of model
   "scaled confounding" (X1's shift scales the noise Y shares: no b is invariant, the
   set should be empty), "Y shifted" (Y's mean moves by 1 in environment 1: empty) and
   "Y noise scaled" (Y's noise variance doubles there: the residual moments stay
   invariant at beta*, only the risks differ, which the set does not test); coverage of the
   robust interval of every coefficient (``res.conf_int(kind="robust")``), of the joint
   set (``contains(beta*)``), the share of empty sets, the share of bounded intervals,
   the median seconds per set and per set / fit (cost in fits), at ``--ns`` rows, for the
   subvector test ``--test`` (KJ by default); the share of samples in which Holm's
   step-down at 5% (``RobustSet.causes``) declares the non-cause X3 (family-wise error)
   and how often it declares each coefficient.
5. Robust cost (``--only robust_cost``): seconds of the robust set / seconds of the fit
   on random SEMs at p = 10 and 30 (:func:`robust_cost`).
6. Robust width (``--only robust_width``): robust (KJ, AR) and efficient-Wald widths /
   the bootstrap's at n = 20,000 on the in-model designs (:func:`robust_width`).
7. Robust sets on non-Gaussian noise (``--only robust_noise``, issue 41 item 7): random
   SEMs (p = 10 and 30, three parents, three children, strong shifts) whose every
   standardised component is normal, t(5) or Exp(1) - 1 (``LinearSEM.sample(noise=)``:
   the same beta* and invariance), 2,000 rows x 5 environments, ``--reps`` samples:
   coverage of the parents' and the other coefficients' KJ intervals and of the joint set,
   the share of empty sets, the Bartlett factor (median, max), the parents' median width
   (:func:`robust_noise`).
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
from _timing import timed

from negdro_stats import NegDRO, simulate
from negdro_stats._resampling import default_jobs


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


def defaults(p, n, B):
    """What the defaults cost, in fits of the model (``fit(n_boot=0)``, median of 5) on
    eq. (33): ``fit()`` (the bootstrap deferred), ``fit()`` + ``summary()`` (the robust
    intervals), ``conf_int()`` of the default kind, the deferred B-replicate bootstrap
    on first use (``conf_int(kind="bootstrap")``; until 2026-12-06 this row timed
    ``conf_int()``, which became the robust intervals when they became the default),
    with the default workers and, for reference, with one, and ``diagnose()``; and
    ``import negdro_stats`` against ``import pandas, scipy.stats`` (fresh interpreters,
    median of 5)."""
    import subprocess

    df = simulate.eq33(p=p).sample(n, rng=1)
    model = NegDRO(df, env="env", outcome="Y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = timed(lambda: model.fit(n_boot=0))[1]
        default = timed(lambda: model.fit(rng=0))[1]
        summary = timed(lambda: model.fit(rng=0).summary(), reps=3)[1]
        res = model.fit(rng=0)
        t0 = time.perf_counter()
        res.conf_int()                      # the default kind (robust, unless identified
        first = time.perf_counter() - t0    # with a bootstrap run: res.interval_kind)
        t0 = time.perf_counter()
        res.conf_int(kind="bootstrap")                   # runs the deferred bootstrap
        boot = time.perf_counter() - t0
        alone = model.fit(rng=0, n_jobs=1)               # the reference: one worker
        t0 = time.perf_counter()
        alone.conf_int(kind="bootstrap")
        boot_one = time.perf_counter() - t0
        diag = timed(lambda: model.diagnose(rng=0, results=res), reps=1)[1]

    def imported(code):
        return timed(lambda: subprocess.run([sys.executable, "-c", code], check=True),
                     reps=5)[1] - timed(lambda: subprocess.run([sys.executable, "-c", "0"],
                                                               check=True), reps=5)[1]

    t_pkg, t_ref = imported("import negdro_stats"), imported("import pandas, scipy.stats")
    row = dict(p=p, n_per_env=n, B=B, one_fit_s=one, fit_default_fits=default / one,
               fit_and_summary_fits=summary / one, interval_kind=res.interval_kind,
               conf_int_fits=first / one, bootstrap_on_first_use_fits=boot / one,
               bootstrap_one_worker_fits=boot_one / one, workers=default_jobs(model.data),
               diagnose_fits=diag / one, import_s=t_pkg, import_pandas_scipy_s=t_ref,
               import_ratio=t_pkg / t_ref)
    print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                   for k, v in row.items()), flush=True)
    return row


def replicates(B: int = 200) -> list[dict]:
    """Issue 42's bootstrap check (``--only replicates``): the deferred B-replicate
    bootstrap with the default ``n_jobs`` on eq. (33) (p = 10, 20,000 rows x 4) and a
    random confounded design (random_sem(15, n_envs=4, confounding=True, rng=2), 2,000
    x 4), rng = 0: its cost in fits (``fit(n_boot=0)``, median of 5, same run) and how
    far each replicate's estimate lies from the one whose continuously updated fits are
    minimised far past the package's stopping rule (L-BFGS-B to ftol 1e-16, gtol 1e-12):
    the same optimum, whatever the minimiser's start and steps."""
    from scipy import optimize

    from negdro_stats.estimation import cue

    def tight(evaluate, b, objective, **_):
        opt = optimize.minimize(objective, np.array(b, dtype=float), jac=True,
                                method="L-BFGS-B",
                                options={"maxiter": 5000, "ftol": 1e-16, "gtol": 1e-12})
        return cue.Minimum(opt.x, float(opt.fun), True)

    designs = {"eq33": (simulate.eq33(p=10), 20_000),
               "confounded15": (simulate.random_sem(15, n_envs=4, confounding=True, rng=2),
                                2000)}
    rows = []
    for name, (sem, n) in designs.items():
        model = NegDRO(sem.sample(n, rng=1), env="env", outcome="Y")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            one = timed(lambda: model.fit(n_boot=0))[1]       # noqa: B023
            res = model.fit(rng=0)
            t0 = time.perf_counter()
            draws = res.run_bootstrap(B).draws
            boot = time.perf_counter() - t0
            shipped, cue.gauss_newton = cue.gauss_newton, tight
            try:
                exact = model.fit(rng=0).run_bootstrap(B).draws
            finally:
                cue.gauss_newton = shipped
        gap = np.abs(draws - exact).max(axis=1)
        row = dict(design=name, n_per_env=n, B=B, one_fit_s=one, bootstrap_s=boot,
                   bootstrap_fits=boot / one, gap_median=float(np.median(gap)),
                   gap_q99=float(np.quantile(gap, 0.99)), gap_max=float(gap.max()),
                   replicates_over_1e6=int((gap > 1e-6).sum()),
                   supports_differ=int(((draws != 0) != (exact != 0)).any(axis=1).sum()))
        print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in row.items()), flush=True)
        rows.append(row)
    return rows


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


def _robust_design(name: str, n: int, seed: int):
    """One sample of the robust-set designs (module docstring, 4)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    shifts = {"mean shifts": [(0, 0, 0, 0), (2, 0, 0, 0), (0, 2, 0, 0), (2, 2, 0, 0)]}.get(
        name, [(0, 0, 0, 1), (2, 0, 0, 1), (0, 2, 0, 1), (0, 0, 2, 1)])
    parts = []
    for e, (a, b, c, scale) in enumerate(shifts):
        noise = ((lambda k: rng.standard_t(5, k) / np.sqrt(5 / 3)) if name == "t5"
                 else (lambda k: rng.normal(size=k)))
        h = noise(n)                                    # X1 and Y share it if confounded
        # interventions are additive and independent of the noises (eq. (12)): a shift
        # of the mean by a and of the variance by (scale a)^2
        X1 = (h if name == "confounded" else noise(n)) + scale * a * noise(n) + a
        if name == "scaled confounding":     # out of model: the shift scales the noise
            X1 = h * (1 + a) + a             # that Y shares, so E_e[X r] moves with e
        confounded = name in ("confounded", "scaled confounding")
        X2 = noise(n) + scale * b * noise(n) + b
        eps = 0.5 * h + np.sqrt(0.75) * noise(n) if confounded else noise(n)
        if name == "Y shifted" and e == 1:   # out of model: Y's own mean moves
            eps = eps + 1.0
        if name == "Y noise scaled" and e == 1:   # Y's noise variance doubles (its
            eps = eps * np.sqrt(2.0)              # residual moments stay invariant)
        Y = X1 - 0.5 * X2 + eps
        X3 = 0.8 * Y + noise(n) + scale * c * noise(n) + c
        parts.append(pd.DataFrame({"Y": Y, "X1": X1, "X2": X2, "X3": X3, "env": e}))
    return pd.concat(parts, ignore_index=True)


ROBUST_DESIGNS = ("identified", "t5", "confounded", "mean shifts", "scaled confounding",
                  "Y shifted", "Y noise scaled")


def robust_coverage(reps: int, ns=(500, 2000), designs=ROBUST_DESIGNS, test="kj"
                    ) -> list[dict]:
    beta = np.array([1.0, -0.5, 0.0])
    rows = []
    for name in designs:
        for n in ns:
            inside, joint, empty, bounded, secs, fits, declared = [], [], [], [], [], [], []
            for r in range(reps):
                df = _robust_design(name, n, 70_000 + r)
                res, rs, t_fit, t_set = _timed_set(NegDRO(df, env="env", outcome="Y"),
                                                   test)
                secs.append(t_set)
                fits.append(t_set / t_fit)
                ci = rs.conf_int().to_numpy()
                inside.append((ci[:, 0] <= beta) & (beta <= ci[:, 1]))
                joint.append(rs.contains(beta))
                empty.append(rs.empty)
                bounded.append(rs.bounded.to_numpy())
                declared.append(rs.causes().to_numpy())
            declared = np.array(declared)
            row = dict(design=name, n_per_env=n, reps=reps, test=test,
                       coverage=np.mean(inside, axis=0).round(3).tolist(),
                       joint_coverage=float(np.mean(joint)), empty=float(np.mean(empty)),
                       bounded=np.mean(bounded, axis=0).round(3).tolist(),
                       # Holm at 5%: a non-cause declared (family-wise error), each declared
                       fwer=float(declared[:, beta == 0].any(axis=1).mean()),
                       declared=declared.mean(axis=0).round(3).tolist(),
                       median_s=float(np.median(secs)),
                       median_fits=float(np.median(fits)))
            print(row, flush=True)
            rows.append(row)
    return rows


def robust_width(reps: int, n: int = 20_000, designs=("identified", "t5", "confounded"),
                 B: int = 200) -> list[dict]:
    """Median width of the robust intervals (KJ and AR) / the bootstrap's (percentile,
    ``B`` replicates) of the causes X1, X2, on designs where both are valid, and the
    efficient GMM's Wald width (1.96 x 2 s.e. of the joint CUE) / the bootstrap's: no
    interval that does not assume the support can be much narrower than that.  NaN
    widths (AR's projection on a coefficient can be empty while the joint set is not)
    are left out of the medians and counted."""
    rows = []
    for name in designs:
        ratios = {"kj": [], "ar": [], "wald": []}
        for r in range(reps):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = NegDRO(_robust_design(name, n, 90_000 + r), env="env",
                             outcome="Y").fit(n_boot=B, rng=r)
            boot = res.conf_int()
            width_boot = (boot.upper - boot.lower).to_numpy()[:2]
            for test in ("kj", "ar"):
                ci = res.robust_set(0.05, test=test).conf_int()
                ratios[test].append((ci.upper - ci.lower).to_numpy()[:2] / width_boot)
            rs = res.robust_set(0.05)
            every = np.arange(3)
            fit = rs._gmm.fit_cue(every, start=rs._starts[0])
            _, _, info = rs._gmm.evaluate(fit.b, every, information=True)
            se = np.sqrt(np.diag(np.linalg.inv(info))) / rs._to_std
            ratios["wald"].append(2 * 1.96 * se[:2] / width_boot)
        row = dict(design=name, n_per_env=n, reps=reps, B=B,
                   **{f"width_{k}_over_boot": np.nanmedian(v, axis=0).round(3).tolist()
                      for k, v in ratios.items()},
                   ar_projection_empty=np.isnan(ratios["ar"]).mean(axis=0).round(3).tolist())
        print(row, flush=True)
        rows.append(row)
    return rows


def _timed_set(model, test="kj"):
    """Fit ``model`` (n_boot=0), then its robust set and intervals; returns both and
    their seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        res = model.fit(n_boot=0)
        t1 = time.perf_counter()
        rs = res.robust_set(0.05, test=test)
        rs.conf_int()                                   # the intervals: computed on use
        return res, rs, t1 - t0, time.perf_counter() - t1


def robust_cost(seeds: int, ps=(10, 30)) -> list[dict]:
    """Cost of the robust set in fits of the model: random_sem(p, strong_env=True) with 2
    parents and 2 children, 2,000 rows per environment, ``seeds`` seeds; the ratio of
    the set's seconds to the fit's (n_boot=0), both measured in the same run."""
    rows = []
    for p in ps:
        ratios, secs, bounded = [], [], []
        for s in range(seeds):
            sem = simulate.random_sem(p, rng=s, strong_env=True, n_parents=2,
                                      n_children=2)
            _, rs, t_fit, t_set = _timed_set(NegDRO(sem.sample(2000, rng=1000 + s),
                                                    env="env", outcome="Y"))
            ratios.append(t_set / t_fit)
            secs.append(t_set)
            bounded.append(float(rs.bounded.mean()))
        row = dict(p=p, seeds=seeds, median_fits=float(np.median(ratios)),
                   median_s=float(np.median(secs)), share_bounded=float(np.mean(bounded)))
        print(row, flush=True)
        rows.append(row)
    return rows


NOISE_DESIGNS = (("p10", 10, 7), ("p30", 30, 7), ("p30b", 30, 3))   # (name, p, SEM seed)


def robust_noise(reps: int, laws=("normal", "t5", "exponential"),
                 designs=NOISE_DESIGNS) -> list[dict]:
    """Module docstring, 7: per design and noise law, ``reps`` samples (seeds 0, 1, ...)."""
    rows = []
    for name, p, seed in designs:
        sem = simulate.random_sem(p, n_parents=3, n_children=3, strong_env=True, rng=seed)
        beta = np.asarray(sem.beta_star)
        for law in laws:
            inside, joint, empty, factors, widths, secs = [], [], [], [], [], []
            for r in range(reps):
                _, rs, _, t_set = _timed_set(NegDRO(sem.sample(2000, rng=r, noise=law),
                                                    env="env", outcome="Y"))
                ci = rs.conf_int().to_numpy()
                inside.append((ci[:, 0] <= beta) & (beta <= ci[:, 1]))
                joint.append(rs.contains(beta))
                empty.append(rs.empty)
                factors.append(rs.bartlett)
                widths.append(ci[beta != 0, 1] - ci[beta != 0, 0])
                secs.append(t_set)
            inside = np.array(inside)
            parents = inside[:, beta != 0]
            row = dict(design=name, p=p, noise=law, reps=reps,
                       parents=float(parents.mean()),
                       parents_se=float(np.sqrt(parents.mean() * (1 - parents.mean())
                                                / parents.size)),
                       others=float(inside[:, beta == 0].mean()),
                       joint=float(np.mean(joint)), empty=float(np.mean(empty)),
                       bartlett_median=float(np.median(factors)),
                       bartlett_max=float(np.max(factors)),
                       parents_width=float(np.nanmedian(widths)),   # (NaN: empty)
                       median_s=float(np.median(secs)))
            print(row, flush=True)
            rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--only", choices=["cost", "defaults", "replicates",
                                       "coverage",
                                       "auto_gamma",
                                       "robust", "robust_cost", "robust_width",
                                       "robust_noise"],
                    default=None,
                    help="run one part and keep the others of an existing --out file")
    ap.add_argument("--designs", default=",".join(ROBUST_DESIGNS),
                    help="for --only robust: a comma-separated subset")
    ap.add_argument("--ns", default="500,2000,20000",
                    help="for --only robust: rows per environment, comma-separated")
    ap.add_argument("--test", default="kj", choices=["kj", "ar"],
                    help="for --only robust: the subvector test of the intervals")
    ap.add_argument("--out", default="benchmarks/results/inference.json")
    a = ap.parse_args()
    res = json.loads(Path(a.out).read_text()) if a.only and Path(a.out).exists() else {}
    parts = {
        "cost": lambda: cost(20, 2000, 20) if a.quick else cost(100, 20_000, 200),
        "defaults": lambda: defaults(10, 2000 if a.quick else 20_000, 200),
        "replicates": lambda: replicates(20 if a.quick else 200),
        "coverage": lambda: coverage(3, 1000, B=50) if a.quick else coverage(a.reps, 5000),
        "auto_gamma": lambda: auto_gamma(2 if a.quick else a.seeds),
        "robust": lambda: robust_coverage(3 if a.quick else a.reps,
                                          ns=(500, 2000) if a.quick else
                                          tuple(int(n) for n in a.ns.split(",")),
                                          designs=a.designs.split(","), test=a.test),
        "robust_cost": lambda: robust_cost(2 if a.quick else 5),
        "robust_width": lambda: robust_width(2 if a.quick else a.reps,
                                             n=2000 if a.quick else 20_000,
                                             B=50 if a.quick else 200),
        "robust_noise": lambda: robust_noise(2 if a.quick else a.reps),
    }
    for name, run in parts.items():
        if a.only in (None, name):
            res[name] = run()
    res["meta"] = dict(machine=platform.platform(), python=platform.python_version(),
                       date=time.strftime("%Y-%m-%d"), command=" ".join(sys.argv))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
