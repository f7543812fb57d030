"""Limited interventions: the causes of Y are shifted weakly or never (Condition 4/6).

    python benchmarks/bench_limited.py [--seeds 20] [--ns 2000 20000]
        [--only example3 half confounded tunnel] [--out benchmarks/results/limited.json]

Families (errors ``||b - beta*||_2``; the reference in the same run is OLS on the true
parents):

- ``example3``: Section 5.2, limited and weak regimes (only the child X3 shifted clearly).
- ``half``: :func:`simulate.random_sem` with ``shift_downstream=True`` (every descendant
  of Y shifted, half of the upstream covariates), p = 12 and 30, 2-3 environments;
  summarised over the designs where Condition 4 holds on the population moments.
- ``confounded``: the same with a hidden confounder (Condition 6 checked on the
  population moments; OLS on the parents is biased there, so it is context, not an
  oracle).
- ``tunnel``: a simulated light tunnel.  A light source ``L`` (uniform, unobserved)
  drives five causal sensors (one through ``tanh``), ``Y`` is linear in them, and four
  other sensors read ``Y`` and ``L``; only those four are exposed to interventions
  (mean and variance shifts), never the causes.  Six training environments; judged by
  the worst R^2 over three held-out environments with stronger exposures, against pooled
  OLS, anchor regression, DRIG (NaN, left out of the median, where its objective is not
  convex) and OLS on the true causes.

Per fit also the kind of interval the result reports; where it is the Wald interval of
Theorem 6's fit (valid if Condition 4/6 holds), whether it covers beta* on every parent
and selected covariate: the summary gives the share of fits with such a conditional
claim and the share of claims that cover, over the designs where the condition holds.

Prints a table and writes JSON (with the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
from _timing import fit_warned, verdict_lines, write_result

from negdro_stats import NegDRO, simulate
from negdro_stats.exceptions import DataError
from negdro_stats.identification.conditions import check_condition_4, check_condition_6
from negdro_stats.peers.baselines import fit_baseline

FAMILIES = ("example3", "half", "confounded", "tunnel")


def _fit(df: pd.DataFrame):
    res, warned, seconds = fit_warned(lambda: NegDRO(df, env="env", outcome="Y").fit(n_boot=0))
    return res, seconds, warned


def _oracle(df: pd.DataFrame, beta: np.ndarray) -> np.ndarray:
    """OLS of Y on the true parents (pooled)."""
    par = np.flatnonzero(beta)
    out = np.zeros(len(beta))
    if len(par):
        X = df[[f"X{j + 1}" for j in par]].to_numpy()
        out[par] = np.linalg.lstsq(X, df["Y"].to_numpy(), rcond=None)[0]
    return out


def _claim(res, beta: np.ndarray) -> bool | None:
    """Whether the Wald intervals that the result reports (``interval_kind`` "wald":
    Theorem 6's fit, conditional on Condition 4/6) cover ``beta*`` on every parent and
    every selected covariate (a parent left out is not covered); None where the result
    makes no such claim."""
    if res.interval_kind != "wald":
        return None
    ci = res.conf_int(kind="wald").to_numpy()
    judged = (beta != 0) | res.support.to_numpy()
    return bool(np.all(((ci[:, 0] <= beta) & (beta <= ci[:, 1]))[judged]))


def _row(family, label, n, seed, sem, df, holds=None):
    res, seconds, warned = _fit(df)
    beta = sem.beta_star
    b = res.params.to_numpy()
    sel = res.support.to_numpy()
    return dict(family=family, design=label, n=n, seed=seed, holds=holds,
                kind=res.interval_kind, covered=_claim(res, beta),
                err=float(np.linalg.norm(b - beta)),
                err_oracle=float(np.linalg.norm(_oracle(df, beta) - beta)),
                exact=bool(np.array_equal(sel, beta != 0)),
                child=bool(sel[sem.D].any()), route=res.selection.route,
                estimator=res.selection.estimator, verdict=res.verdict, warned=warned,
                seconds=seconds)


def example3_rows(seeds, ns):
    rows = []
    for regime in ("limited", "weak"):
        sem = simulate.example3(regime)
        for n in ns:
            for seed in range(seeds):
                rows.append(_row("example3", regime, n, seed, sem, sem.sample(n, rng=seed)))
                print(json.dumps(rows[-1]), flush=True)
    return rows


def half_rows(seeds, ns, confounding):
    family = "confounded" if confounding else "half"
    rows = []
    for p in (12, 30):
        for seed in range(seeds):
            sem = simulate.random_sem(p, n_envs=2 + seed % 2, n_parents=3, n_children=3,
                                      intervened=0.5, shift_downstream=True,
                                      confounding=confounding, rng=seed)
            mom = sem.moments()
            cond = (check_condition_6(sem.Delta, sem.H, sem.h) if confounding else
                    check_condition_4(mom.Sigma, sem.Delta, sem.S_L, sem.D))
            for n in ns:
                rows.append(_row(family, f"p={p}", n, seed, sem,
                                 sem.sample(n, rng=10_000 + seed), holds=bool(cond.holds)))
                print(json.dumps(rows[-1]), flush=True)
    return rows


def _tunnel(rng, n, exposures):
    """One environment of the light tunnel per exposure ``(mean, sd)`` of the four
    non-causal sensors."""
    beta = np.array([1.0, -0.8, 0.6, 0.5, -0.4])
    a = np.array([1.0, 0.8, -0.6, 0.7, 0.5])
    c = np.array([0.9, -0.7, 0.6, 0.8])            # the other sensors read Y ...
    d = np.array([0.5, 0.4, -0.5, 0.3])            # ... and the source
    frames = []
    for e, (mean, sd) in enumerate(exposures):
        L = rng.uniform(-1.0, 1.0, n)
        C = np.outer(L, a) + 0.5 * rng.standard_normal((n, 5))
        C[:, 0] = np.tanh(2.0 * L) + 0.5 * rng.standard_normal(n)    # non-linear input
        Y = C @ beta + 0.5 * rng.standard_normal(n)
        shift = mean + sd * rng.standard_normal((n, 4))
        N = np.outer(Y, c) + np.outer(L, d) + 0.3 * rng.standard_normal((n, 4)) + shift
        frame = pd.DataFrame(np.column_stack([Y, C, N]),
                             columns=["Y"] + [f"X{j}" for j in range(1, 10)])
        frame["env"] = e
        frames.append(frame)
    return pd.concat(frames, ignore_index=True), np.append(beta, np.zeros(4))


def tunnel_rows(seeds, n):
    train_exp = [(0.0, 0.0)] + [(m, s) for m, s in ((0.5, 0.5), (-0.5, 1.0), (1.0, 0.3),
                                                    (0.0, 1.2), (-1.0, 0.6))]
    test_exp = [(2.0, 1.5), (-2.0, 2.0), (0.0, 3.0)]
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        train, beta = _tunnel(rng, n, train_exp)
        test, _ = _tunnel(rng, n, test_exp)
        names = [f"X{j}" for j in range(1, 10)]
        res, seconds, _ = _fit(train)
        mom = NegDRO(train, env="env", outcome="Y").moments
        fits = {"negdro": res.params.to_numpy(), "oracle": _oracle(train, beta)}
        for method in ("erm", "anchor", "drig"):
            try:
                fits[method] = fit_baseline(method, mom).params.to_numpy()
            except DataError:                     # DRIG: reference not dominated
                fits[method] = np.full(len(names), np.nan)
        row = dict(family="tunnel", n=n, seed=seed, seconds=seconds,
                   support=[nm for nm, s in zip(names, res.support.to_numpy(), strict=True)
                            if s], route=res.selection.route)
        for method, b in fits.items():
            r2 = []
            for _, env in test.groupby("env"):
                y = env["Y"].to_numpy()
                r2.append(1.0 - np.mean((y - env[names].to_numpy() @ b) ** 2) / np.var(y))
            row[f"worst_r2_{method}"] = float(min(r2))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _share(flags: list) -> float:
    return float(np.mean(flags)) if flags else float("nan")


def summarise(rows):
    out = []
    keys = sorted({(r["family"], r.get("design", "-"), r["n"]) for r in rows},
                  key=lambda k: (FAMILIES.index(k[0]), k[1], k[2]))
    for family, design, n in keys:
        group = [r for r in rows if (r["family"], r.get("design", "-"), r["n"])
                 == (family, design, n)]
        if family == "tunnel":
            out.append(dict(family=family, design="-", n=n, fits=len(group), **{
                k: float(np.nanmedian([r[k] for r in group])) for k in group[0]
                if k.startswith("worst_r2")}))
            continue
        held = [r for r in group if r["holds"] in (None, True)]
        mean = lambda k, g=held: float(np.mean([r[k] for r in g])) if g else float("nan")  # noqa: E731
        out.append(dict(
            family=family, design=design, n=n, fits=len(group), condition_holds=len(held),
            err=mean("err"), err_oracle=mean("err_oracle"),
            ratio=mean("err") / mean("err_oracle") if held else float("nan"),
            exact=mean("exact"), child=mean("child"),
            err_all=mean("err", group),
            claims=float(np.mean([r.get("covered") is not None for r in held])) if held
            else float("nan"),
            claims_covering=_share([r.get("covered") for r in held
                                    if r.get("covered") is not None]),
            seconds_median=float(np.median(
                [r["seconds"] for r in group])),
            routes={k: int(v) for k, v in pd.Series(
                [r["route"] + "/" + r["estimator"] for r in held]).value_counts().items()}))
    return out


def table(result):
    lines = [f"# {result['command']}  ({result['date']})", "",
             "## errors ||b - beta*||_2 (means over the designs where the condition holds)",
             "| family | design | n/env | fits | condition holds | default | OLS on parents | "
             "ratio | exact support | child | all designs | conditional claims | claims "
             "covering | median fit s | routes |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    tunnel = []
    for s in result["summary"]:
        if s["family"] == "tunnel":
            tunnel.append(s)
            continue
        lines.append(f"| {s['family']} | {s['design']} | {s['n']} | {s['fits']} | "
                     f"{s['condition_holds']} | {s['err']:.4f} | {s['err_oracle']:.4f} | "
                     f"{s['ratio']:.2f} | {s['exact']:.2f} | {s['child']:.2f} | "
                     f"{s['err_all']:.4f} | {s.get('claims', float('nan')):.2f} | "
                     f"{s.get('claims_covering', float('nan')):.2f} | "
                     f"{s['seconds_median']:.2f} | {s['routes']} |")
    if tunnel:
        lines += ["", "## light tunnel: median over seeds of the worst held-out R^2",
                  "| n/env | fits | NegDRO | pooled OLS | anchor | DRIG | OLS on true causes |",
                  "|---|---|---|---|---|---|---|"]
        for s in tunnel:
            lines.append(f"| {s['n']} | {s['fits']} | {s['worst_r2_negdro']:.3f} | "
                         f"{s['worst_r2_erm']:.3f} | {s['worst_r2_anchor']:.3f} | "
                         f"{s['worst_r2_drig']:.3f} | {s['worst_r2_oracle']:.3f} |")
    verdicts = verdict_lines([r for r in result["rows"] if r["family"] != "tunnel"], "err")
    return "\n".join(lines + ([""] + verdicts if verdicts else [])) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--ns", type=int, nargs="+", default=[2000, 20_000])
    ap.add_argument("--only", choices=FAMILIES, nargs="+", default=list(FAMILIES))
    ap.add_argument("--out", default="benchmarks/results/limited.json")
    a = ap.parse_args()
    rows = []
    if "example3" in a.only:
        rows += example3_rows(a.seeds, a.ns)
    if "half" in a.only:
        rows += half_rows(a.seeds, a.ns, confounding=False)
    if "confounded" in a.only:
        rows += half_rows(a.seeds, a.ns, confounding=True)
    if "tunnel" in a.only:
        rows += tunnel_rows(a.seeds, min(a.ns))
    write_result(a.out, table, rows=rows, summary=summarise(rows))


if __name__ == "__main__":
    main()
