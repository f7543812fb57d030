"""Why the least-risk search takes descendants of Y on sparse-shift designs (issue 68
item 1): on ``bench_sparse``'s design ``k`` at ``p``, the invariance tests at pooled OLS on
the true parents and on the parents with each descendant of Y added, as the selection
reads them: the fixed-fit J test on the walk's instruments (Lemma 1's reading), the
support's own moments, and the equal-risk test.

    python benchmarks/study_sparse_proxies.py [--p 300] [--design 0] [--n 20000]
        [--out benchmarks/results/sparse_proxies.json]

A descendant whose own conditions and equal risks pass while the instruments' J rejects
is what the "own moments and equal risks" reading admits (on design 0 at p = 300,
session 49: X138, J p = 2e-8, own p = 0.3, risks p = 0.37).  The walk's state is read by
wrapping ``selection.verdict.walk`` (a diagnostic, not an interface).  Prints a table and
writes JSON (with the date and command).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _timing import write_result
from bench_sparse import design

import negdro_stats.estimation.selection.verdict as verdict_stage
from negdro_stats import NegDRO
from negdro_stats.estimation.selection.exogeneity import pooled_ols
from negdro_stats.estimation.selection.least_risk import FixedFits


def descendants_of_y(B: np.ndarray) -> np.ndarray:
    """Covariate indices (0-based) that descend from Y in ``B`` (``B[i, j]``: j -> i)."""
    seen, todo = np.zeros(len(B), dtype=bool), [0]
    while todo:
        for i in np.flatnonzero(B[:, todo.pop()]):
            if not seen[i]:
                seen[i] = True
                todo.append(i)
    return np.flatnonzero(seen[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=300)
    ap.add_argument("--design", type=int, default=0)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--out", default="benchmarks/results/sparse_proxies.json")
    a = ap.parse_args()
    sem = design(a.p, a.design)
    df = sem.sample(a.n, rng=10_000 + a.design)
    walked = []
    walk = verdict_stage.walk
    verdict_stage.walk = lambda *args, **kw: walked.append(walk(*args, **kw)) or walked[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    verdict_stage.walk = walk
    w = walked[0]
    parents = np.flatnonzero(sem.beta_star)
    children = set(np.flatnonzero(sem.B[1:, 0]).tolist())
    fixed, own = FixedFits(w, w.instruments), FixedFits(w, np.zeros(0, dtype=int))
    rows = []
    for j in [None, *descendants_of_y(sem.B)]:
        S = np.sort(parents if j is None else np.append(parents, j))
        b = pooled_ols(w.pooled, S)[0]
        full = np.zeros(sem.p)
        full[S] = b
        rows.append(dict(added=None if j is None else f"X{j + 1}",
                         child=j in children, shifted=j in set(sem.S_L.tolist()),
                         J=fixed.test_at(S, b)[2], own=own.gmm_on(S, b, own=True).test_at(S, b)[2],
                         risks=float(w.risk_test(w.pooled, full).pvalue),
                         coef=None if j is None else float(b[np.searchsorted(S, j)])))
    write_result(a.out, table, p=a.p, design=a.design, n=a.n, verdict=res.verdict,
                 error=float(np.linalg.norm(res.params.to_numpy() - sem.beta_star)),
                 instruments=len(w.instruments), rows=rows)


def table(result: dict) -> str:
    lines = [f"# {result['command']}  ({result['date']})", "",
             f"p = {result['p']}, design {result['design']}, n = {result['n']}: NegDRO "
             f"{result['verdict']}, error {result['error']:.3f}; {result['instruments']} "
             "instruments", "",
             "| OLS on the parents + | child of Y | shifted | coefficient | J (instruments) p "
             "| own moments p | equal risks p |", "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        coef = "" if r["coef"] is None else f"{r['coef']:+.3f}"
        lines.append(f"| {r['added'] or '(nothing)'} | {r['child']} | {r['shifted']} | {coef} | "
                     f"{r['J']:.2g} | {r['own']:.2g} | {r['risks']:.2g} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
