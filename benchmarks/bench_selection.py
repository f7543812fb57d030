"""Selection benchmark (issue 8): is the default support right on designs nobody tuned on?

Usage:  python benchmarks/bench_selection.py [--seeds 20] [--ns 2000 20000 100000]
        [--boot-reps 100] [--only random|strong|paper|coverage|families]
        [--family-ns 500 2000 20000] [--families large_p mean_only ...] [--large-p 100 200]
        [--out benchmarks/results/selection.json]

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
4. ``families`` (issue 19): new families of designs nobody tuned on, for design seeds
   0..seeds-1 (sampling seed 10_000 + design seed) and ``--family-ns`` rows per
   environment:

   - ``large_p``: ``random_sem(p, n_envs=E, n_parents=5, n_children=5, edge_prob=4/p)``
     for (p, E) = (60, 8), (100, 10), (200, 10);
   - ``mean_only`` / ``variance_only``: ``random_sem(20, n_envs=6, n_parents=3,
     n_children=3, shift="mean" | "variance")``; with mean shifts only, A(w) of eq. (16)
     has rank < |E| and Condition 1b fails on the population moments (not identified);
   - ``nongaussian``: ``random_sem(20, n_envs=5, n_parents=3, n_children=3)`` with every
     noise component t(5), uniform or centred exponential, standardised, so that the
     population moments are the Gaussian SEM's (:func:`sample_nongaussian`; checked on
     10^6 rows, ``sampler_check`` in the output); n <= 2000 only;
   - ``child_unshifted``: ``random_sem(20, n_envs=5, n_parents=3, n_children=3)`` with
     its first child of Y never shifted: Condition 4 fails (``D`` not within ``S_L``),
     the child's fit is invariant too, and no data can tell the child from a parent
     that no environment shifts; a good answer is flagged (``flagged_rate``), and
     ``unflagged_max_err`` is the worst error of an answer that was not;
   - ``near_copy``: the same design with a near copy of its first parent, ``X21 = X_j +
     0.05 d_j u`` (``d_j`` the parent's root mean square), ``u`` shifted (variance x3)
     in the last environment: beta* is identified, but the J test barely tells the
     parent from its copy (an adversarial review found the copy reported in its place);
   - ``limited_p50``: ``random_sem(50, n_envs=6, n_parents=4, n_children=4,
     edge_prob=0.08, intervened=0.5, shift_downstream=True)``: half the covariates
     upstream of Y shifted, every descendant of Y shifted, so Condition 4 holds in the
     population; an ordinary experiment at p = 50 (found by a helper of session 31: a
     third of the fits "if Condition 4", unwarned, with errors up to 2, parents that no
     environment shifts missed);
   - ``intercept``: the same design sampled normally, then covariate j offset by
     ``a_j ~ N(0, 5^2)`` and ``Y`` by ``3 + beta*'a`` (the causal model has intercept 3),
     fitted with ``fit_intercept=True``; and the same data with 10 added to the first
     parent (the slopes must not move).

   Per fit: the errors ``||b - beta*||_2`` of the default, of ``refit="negdro"`` (the
   paper) and of pooled OLS on the true parents (the oracle), the support's mistakes, the
   routes, the selection's ``identified`` / ``undetermined`` (None where the code has no
   such field), the J test, the negdro warnings raised and the fit time; the population
   Condition 1b margin for p <= 30 (at p >= 100 the SDP takes 36 s or more per design).
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
import pandas as pd
from _timing import verdict_lines

from negdro_stats import Intervention, LinearSEM, Moments, NegDRO, exceptions, simulate
from negdro_stats.estimation.gmm import Cumulant, InvarianceGMM
from negdro_stats.identification.conditions import check_condition_1b

WEAK = (0.05, 0.1, 0.15)
FAMILIES = ("large_p", "mean_only", "variance_only", "nongaussian", "intercept",
            "child_unshifted", "near_copy", "limited_p50")
COPY_NOISE = 0.05         # near_copy: X_{p+1} = X_j + COPY_NOISE d_j u
LARGE_P = ((60, 8), (100, 10), (200, 10))
NOISES = ("t5", "uniform", "exponential")
NEGDRO_WARNINGS = tuple(getattr(exceptions, name) for name in exceptions.__all__
                        if name.endswith("Warning"))
INTERCEPT = 3.0           # c of the intercept family
OFFSET_SD = 5.0           # a_j ~ N(0, OFFSET_SD^2)
SHIFT = 10.0              # added to the first parent in the intercept family's second fit


def _fit(df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NegDRO(df, env="env", outcome="Y").fit(check_identification=False, **kw)


def oracle_ols(df, parents, intercept=False):
    """Pooled OLS on the true parents; with ``intercept`` a constant too, last in ``b``."""
    p = len(df.columns) - 2
    X = df[[f"X{j + 1}" for j in parents]].to_numpy()
    cols = list(parents)
    if intercept:
        X, cols = np.column_stack([X, np.ones(len(df))]), cols + [p]
    b = np.zeros(p + intercept)
    if cols:
        b[cols] = np.linalg.lstsq(X, df["Y"].to_numpy(), rcond=None)[0]
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

def _standardised(noise, size, rng):
    """Independent mean-0, variance-1 draws: t with 5 df, uniform or centred exponential."""
    if noise == "t5":
        return rng.standard_t(5, size) * np.sqrt(3 / 5)
    if noise == "uniform":
        return rng.uniform(-np.sqrt(3), np.sqrt(3), size)
    return rng.standard_exponential(size) - 1.0


def _psd_root(C):
    vals, vecs = np.linalg.eigh(C)
    return (vecs * np.sqrt(np.clip(vals, 0, None))) @ vecs.T


def sample_nongaussian(sem, n, noise, rng):
    """Rows of an additive :class:`LinearSEM` with non-Gaussian noise and its moments.

    ``eps^e = (eta_Y, eta_X + delta^e)`` with ``eta = Omega^{1/2} z``,
    ``delta^e = E[delta^e] + Cov(delta^e)^{1/2} z'`` and ``z, z'`` independent
    standardised draws of law ``noise``; ``(Y, X) = (I - B)^{-1} eps^e`` (eq. (11)).
    Only means and covariances of ``z`` enter the population moments, so they are
    ``sem.moments()``.
    """
    rng = np.random.default_rng(rng)
    k = sem.p + 1
    root = _psd_root(sem.Omega)
    frames = []
    for label, iv in zip(sem.envs, sem.interventions, strict=True):
        eps = _standardised(noise, (n, k), rng) @ root.T
        eps[:, 1:] += iv.mean + _standardised(noise, (n, sem.p), rng) @ _psd_root(iv.cov).T
        frame = pd.DataFrame(np.linalg.solve(np.eye(k) - sem.B, eps.T).T,
                             columns=list(sem.names))
        frame["env"] = label
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _moments_of(df):
    cols = [c for c in df.columns if c not in ("Y", "env")]
    return Moments.from_arrays(df[cols].to_numpy(), df["Y"].to_numpy(), df["env"].to_numpy())


def sampler_check(rows=1_000_000):
    """Largest |sample - population| entry of (Sigma, sxy, syy, mean_x) for each noise
    law, on ``rows`` rows of the nongaussian family's design 0, with the largest entry for
    scale; ``normal`` (``sem.sample``) shows the sampling error to expect."""
    sem = simulate.random_sem(20, n_envs=5, n_parents=3, n_children=3, rng=0)
    pop = sem.moments()
    out = {}
    for noise in ("normal", *NOISES):
        df = (sem.sample(rows // sem.n_envs, rng=1) if noise == "normal" else
              sample_nongaussian(sem, rows // sem.n_envs, noise, rng=1))
        mom = _moments_of(df)
        out[noise] = dict(
            rows=rows,
            **{f"max_abs_diff_{a}": float(np.abs(getattr(mom, a) - getattr(pop, a)).max())
               for a in ("Sigma", "sxy", "syy", "mean_x")},
            mean_abs_diff_Sigma=float(np.abs(mom.Sigma - pop.Sigma).mean()),
            max_abs_Sigma=float(np.abs(pop.Sigma).max()), max_syy=float(np.max(pop.syy)))
        print(json.dumps({"sampler_check": noise, **out[noise]}), flush=True)
    return out


def _plain(value):
    """A selection field of unknown type (the new code's) as JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    return [str(v) for v in value]


def _fit_recorded(df, fit_intercept=False, **kw):
    """A fit as :func:`_fit` makes it (no bootstrap, no margin), with the class names of
    the negdro warnings it raised and the time of ``fit`` (s)."""
    model = NegDRO(df, env="env", outcome="Y", fit_intercept=fit_intercept)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.perf_counter()
        res = model.fit(n_boot=0, check_identification=False, **kw)
        seconds = time.perf_counter() - t
    names = sorted({w.category.__name__ for w in caught
                    if issubclass(w.category, NEGDRO_WARNINGS)})
    return res, names, seconds


def _design_facts(sem):
    """Population Condition 1b (relative margin, holds) and whether any of Conditions
    1b/4/6 holds, for p <= 30 (None beyond: the SDPs take minutes)."""
    if sem.p > 30:
        return dict(pop_margin_1b=None, pop_1b_holds=None, pop_identified=None)
    c1b = check_condition_1b(sem.moments())
    return dict(pop_margin_1b=float(c1b.relative_margin), pop_1b_holds=bool(c1b.holds),
                pop_identified=bool(sem.check_identification().identified))


def _fit_row(df, sem, facts, fit_intercept=False, **labels):
    """Fit the default and the paper on ``df`` and record the errors and selection."""
    beta = sem.beta_star
    parents, children = np.flatnonzero(beta), sem.D
    res, warned, seconds = _fit_recorded(df, fit_intercept)
    paper, warned_paper, seconds_paper = _fit_recorded(df, fit_intercept, refit="negdro")
    oracle = oracle_ols(df, parents, intercept=fit_intercept)
    p = sem.p
    b, b_paper = res.params.to_numpy(), paper.params.to_numpy()
    sel = res.support.to_numpy()[:p]
    report = res.selection
    row = dict(**labels, p=p, E=sem.n_envs, **facts,
               err_default=float(np.linalg.norm(b[:p] - beta)),
               err_paper=float(np.linalg.norm(b_paper[:p] - beta)),
               err_oracle=float(np.linalg.norm(oracle[:p] - beta)),
               parent_missed=bool(not sel[parents].all()),
               child=bool(sel[children].any()),
               noncause=bool(sel[beta == 0].any()),
               child_paper=bool(paper.support.to_numpy()[children].any()),
               noncause_paper=bool(paper.support.to_numpy()[:p][beta == 0].any()),
               route=res.solver.refit, selection_route=report.route,
               identified=_plain(getattr(report, "identified", None)),
               undetermined=_plain(getattr(report, "undetermined", None)),
               rejected=bool(report.rejected), pvalue=float(report.pvalue),
               warnings=warned, warnings_paper=warned_paper, verdict=res.verdict,
               warned="IdentificationWarning" in warned,
               seconds=seconds, seconds_paper=seconds_paper)
    if fit_intercept:
        assert res.params.index[-1] == "const"
        row.update(err_intercept=float(abs(b[-1] - INTERCEPT)),
                   err_intercept_paper=float(abs(b_paper[-1] - INTERCEPT)),
                   err_intercept_oracle=float(abs(oracle[-1] - INTERCEPT)))
    return row, res


def _intercept_rows(sem, seed, n, facts):
    """The intercept family: offsets a_j ~ N(0, 5^2) on the covariates, c + beta*'a on Y;
    then the same data with SHIFT added to the first parent."""
    beta = sem.beta_star
    df = sem.sample(n, rng=10_000 + seed)
    a = np.random.default_rng(30_000 + seed).normal(0.0, OFFSET_SD, sem.p)
    cols = [f"X{j + 1}" for j in range(sem.p)]
    df[cols] += a
    df["Y"] += INTERCEPT + beta @ a
    row, res = _fit_row(df, sem, facts, fit_intercept=True, family="intercept", n=n,
                        seed=seed)
    j = int(np.flatnonzero(beta)[0])
    df[cols[j]] += SHIFT
    moved, _, _ = _fit_recorded(df, fit_intercept=True)
    b, b2 = res.params.to_numpy(), moved.params.to_numpy()
    row.update(shifted=cols[j],
               shift_max_slope_diff=float(np.abs(b2[:-1] - b[:-1]).max()),
               shift_intercept_diff=float(abs(b2[-1] - (b[-1] - SHIFT * b[j]))),
               shift_support_changed=bool((moved.support != res.support).any()),
               shift_route_changed=bool(moved.solver.refit != res.solver.refit or
                                        moved.selection.route != res.selection.route))
    return row


def _unshifted_child(sem):
    """The design with the interventions on its first child of Y removed."""
    keep = np.ones(sem.p)
    keep[int(sem.D[0])] = 0.0
    ivs = [Intervention(iv.mean * keep, iv.cov * np.outer(keep, keep), iv.dist)
           for iv in sem.interventions]
    return LinearSEM(sem.B, sem.Omega, ivs)


def _with_near_copy(sem):
    """The design with a near copy of its first parent (module docstring)."""
    p, j = sem.p, int(np.flatnonzero(sem.beta_star)[0])
    d = sem.moments().scales()[0][j]
    B, Omega = np.zeros((p + 2, p + 2)), np.zeros((p + 2, p + 2))
    B[:p + 1, :p + 1], Omega[:p + 1, :p + 1] = sem.B, sem.Omega
    B[p + 1, j + 1], Omega[p + 1, p + 1] = 1.0, (COPY_NOISE * d) ** 2
    ivs = []
    for e, iv in enumerate(sem.interventions):
        cov = np.zeros((p + 1, p + 1))
        cov[:p, :p] = iv.cov
        cov[p, p] = 2.0 * (COPY_NOISE * d) ** 2 if e == len(sem.interventions) - 1 else 0.0
        ivs.append(Intervention(np.append(iv.mean, 0.0), cov, iv.dist + ("normal",)))
    return LinearSEM(B, Omega, ivs)


def family_rows(family, seeds, ns, large_p=None):
    """Per-fit records of one family (see the module docstring); ``large_p``: the
    numbers of covariates of the large-p family to run (default all of ``LARGE_P``)."""
    small = dict(n_parents=3, n_children=3)
    rows = []
    if family == "large_p":
        designs = [lambda s, p=p, E=E: simulate.random_sem(
            p, n_envs=E, n_parents=5, n_children=5, edge_prob=4 / p, rng=s)
            for p, E in LARGE_P if large_p is None or p in large_p]
    elif family == "limited_p50":
        designs = [lambda s: simulate.random_sem(
            50, n_envs=6, n_parents=4, n_children=4, edge_prob=0.08, intervened=0.5,
            shift_downstream=True, rng=s)]
    elif family == "near_copy":
        designs = [lambda s: _with_near_copy(simulate.random_sem(20, n_envs=5, rng=s,
                                                                 **small))]
    elif family == "child_unshifted":
        designs = [lambda s: _unshifted_child(simulate.random_sem(20, n_envs=5, rng=s,
                                                                  **small))]
    else:
        shift = {"mean_only": "mean", "variance_only": "variance"}.get(family, "both")
        E = 6 if family in ("mean_only", "variance_only") else 5
        designs = [lambda s: simulate.random_sem(20, n_envs=E, shift=shift, rng=s, **small)]
    if family == "nongaussian":
        ns = [n for n in ns if n <= 2000]
    for make in designs:
        for seed in range(seeds):
            sem = make(seed)
            facts = _design_facts(sem)
            for n in ns:
                if family == "intercept":
                    rows.append(_intercept_rows(sem, seed, n, facts))
                elif family == "nongaussian":
                    for k, noise in enumerate(NOISES):
                        df = sample_nongaussian(sem, n, noise, rng=10_000 + seed + 1000 * k)
                        rows.append(_fit_row(df, sem, facts, family=family, noise=noise,
                                             n=n, seed=seed)[0])
                else:
                    rows.append(_fit_row(sem.sample(n, rng=10_000 + seed), sem, facts,
                                         family=family, n=n, seed=seed)[0])
                for row in rows[-(3 if family == "nongaussian" else 1):]:
                    print(json.dumps(row), flush=True)
    return rows


def _counts(values):
    return {str(k): values.count(k) for k in sorted(set(values), key=str)}


def summarise_families(rows):
    """One summary per (family, p, E, n, noise)."""
    out = []
    keys = sorted({(r["family"], r["p"], r["E"], r["n"], r.get("noise") or "")
                   for r in rows}, key=lambda k: (FAMILIES.index(k[0]), *k[1:]))
    for family, p, E, n, noise in keys:
        sub = [r for r in rows if (r["family"], r["p"], r["E"], r["n"],
                                   r.get("noise") or "") == (family, p, E, n, noise)]
        err = {m: np.array([r[f"err_{m}"] for r in sub]) for m in ("default", "paper",
                                                                  "oracle")}
        margins = [r["pop_margin_1b"] for r in sub if r["pop_margin_1b"] is not None]
        flagged = [r["identified"] is False or "IdentificationWarning" in r["warnings"]
                   for r in sub]
        row = dict(family=family, p=p, E=E, n=n, noise=noise or None, fits=len(sub),
                   **{f"mean_err_{m}": float(e.mean()) for m, e in err.items()},
                   **{f"median_err_{m}": float(np.median(e)) for m, e in err.items()},
                   ratio_default_to_oracle=float(err["default"].mean() / err["oracle"].mean()),
                   max_err_default=float(err["default"].max()),
                   max_err_paper=float(err["paper"].max()),
                   max_err_oracle=float(err["oracle"].max()),
                   max_err_to_worst_oracle=float(err["default"].max() / err["oracle"].max()),
                   parent_missed_rate=float(np.mean([r["parent_missed"] for r in sub])),
                   child_rate=float(np.mean([r["child"] for r in sub])),
                   noncause_rate=float(np.mean([r["noncause"] for r in sub])),
                   child_rate_paper=float(np.mean([r["child_paper"] for r in sub])),
                   noncause_rate_paper=float(np.mean([r["noncause_paper"] for r in sub])),
                   flagged_rate=float(np.mean(flagged)),
                   unflagged_max_err=max((r["err_default"] for r, f in zip(sub, flagged,
                                                                          strict=True)
                                          if not f), default=None),
                   identified=_counts([r["identified"] for r in sub]),
                   routes=_counts([r["route"] for r in sub]),
                   selection_routes=_counts([r["selection_route"] for r in sub]),
                   invariance_rejected=sum(r["rejected"] for r in sub),
                   warnings=_counts([w for r in sub for w in r["warnings"]]),
                   median_seconds=float(np.median([r["seconds"] for r in sub])),
                   median_seconds_paper=float(np.median([r["seconds_paper"] for r in sub])),
                   pop_margin_1b=(dict(min=float(np.min(margins)),
                                       median=float(np.median(margins)),
                                       max=float(np.max(margins))) if margins else None),
                   pop_1b_holds=(sum(r["pop_1b_holds"] for r in sub) if margins else None),
                   pop_identified=(sum(r["pop_identified"] for r in sub) if margins
                                   else None))
        if family == "intercept":
            row.update(
                **{f"mean_err_intercept{m}": float(np.mean([r[f"err_intercept{m}"]
                                                           for r in sub]))
                   for m in ("", "_paper", "_oracle")},
                max_shift_slope_diff=float(max(r["shift_max_slope_diff"] for r in sub)),
                max_shift_intercept_diff=float(max(r["shift_intercept_diff"] for r in sub)),
                shift_support_changed=sum(r["shift_support_changed"] for r in sub),
                shift_route_changed=sum(r["shift_route_changed"] for r in sub))
        out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--ns", type=int, nargs="+", default=[2000, 20_000, 100_000])
    ap.add_argument("--boot-reps", type=int, default=100)
    ap.add_argument("--only", choices=["random", "strong", "paper", "coverage", "families"],
                    default=None)
    ap.add_argument("--family-ns", type=int, nargs="+", default=[500, 2000, 20_000])
    ap.add_argument("--families", choices=FAMILIES, nargs="+", default=list(FAMILIES))
    ap.add_argument("--large-p", type=int, nargs="+", choices=[p for p, _ in LARGE_P],
                    help="covariate counts of the large_p family to run (default all)")
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
    if a.only in (None, "families"):
        rows, seconds = [], {}
        for family in a.families:
            t = time.perf_counter()
            rows += family_rows(family, a.seeds, a.family_ns, a.large_p)
            seconds[family] = time.perf_counter() - t
        result["families"] = dict(
            seeds=a.seeds, seconds=seconds, rows=rows, summary=summarise_families(rows),
            sampler_check=sampler_check() if "nongaussian" in a.families else None)
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
    if "families" in result:
        lines += family_table(result["families"])
    return "\n".join(lines) + "\n"


def family_table(fam):
    """The families' summaries as markdown (errors are means over seeds)."""
    lines = ["", f"## families (issue 19), {fam['seeds']} design seeds; errors ||b - beta*||_2",
             "| family | p | E | n/env | noise | fits | default mean/median | paper | "
             "OLS oracle | ratio | max default / worst oracle | parent missed | child | "
             "non-cause | flagged | max err unflagged | pop. 1b margin (median) / holds | routes | "
             "J rejected | median fit s |",
             "|" + "---|" * 20]
    for r in fam["summary"]:
        m = r["pop_margin_1b"]
        unflagged = "-" if r["unflagged_max_err"] is None else f"{r['unflagged_max_err']:.2f}"
        margin = "-" if m is None else f"{m['median']:.2g} / {r['pop_1b_holds']}"
        lines.append(
            f"| {r['family']} | {r['p']} | {r['E']} | {r['n']} | {r['noise'] or '-'} | "
            f"{r['fits']} | {r['mean_err_default']:.3f}/{r['median_err_default']:.3f} | "
            f"{r['mean_err_paper']:.3f} | {r['mean_err_oracle']:.4f} | "
            f"{r['ratio_default_to_oracle']:.1f} | {r['max_err_default']:.2f} / "
            f"{r['max_err_oracle']:.3f} | {r['parent_missed_rate']:.2f} | "
            f"{r['child_rate']:.2f} | {r['noncause_rate']:.2f} | {r['flagged_rate']:.2f} | "
            f"{unflagged} | {margin} | {r['routes']} | {r['invariance_rejected']} | "
            f"{r['median_seconds']:.2f} |")
    for n in sorted({r["n"] for r in fam["rows"]}):
        by_verdict = verdict_lines([r for r in fam["rows"] if r["n"] == n], "err_default")
        lines += ["", f"### n = {n} per environment, every family: {by_verdict[0]}",
                  *by_verdict[1:]] if by_verdict else []
    icpt = [r for r in fam["summary"] if r["family"] == "intercept"]
    if icpt:
        lines += ["", f"### intercept family (c = {INTERCEPT:g}, offsets N(0, {OFFSET_SD:g}^2); "
                  f"then +{SHIFT:g} on the first parent)",
                  "| n/env | slopes default | intercept default / paper / oracle | "
                  "max slope change | max intercept inconsistency | support changed | "
                  "route changed |", "|" + "---|" * 7]
        for r in icpt:
            lines.append(
                f"| {r['n']} | {r['mean_err_default']:.4f} | {r['mean_err_intercept']:.4f} / "
                f"{r['mean_err_intercept_paper']:.4f} / {r['mean_err_intercept_oracle']:.4f} "
                f"| {r['max_shift_slope_diff']:.2g} | {r['max_shift_intercept_diff']:.2g} | "
                f"{r['shift_support_changed']} | {r['shift_route_changed']} |")
    check = fam.get("sampler_check")
    if check:
        lines += ["", "### non-Gaussian sampler: max |sample - population| on "
                  f"{next(iter(check.values()))['rows']:,} rows",
                  "| noise | Sigma (mean) | sxy | syy | mean_x | max |Sigma| |",
                  "|" + "---|" * 6]
        for noise, c in check.items():
            lines.append(f"| {noise} | {c['max_abs_diff_Sigma']:.3g} "
                         f"({c['mean_abs_diff_Sigma']:.2g}) | "
                         f"{c['max_abs_diff_sxy']:.3g} | {c['max_abs_diff_syy']:.3g} | "
                         f"{c['max_abs_diff_mean_x']:.3g} | {c['max_abs_Sigma']:.3g} |")
    return lines


if __name__ == "__main__":
    main()
