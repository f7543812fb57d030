"""Sparse shifts at p = 300-1,000 (issue 68 item 1): few covariates shifted in each
environment, every child of the outcome among them (Condition 4 holds), most parents
never shifted.

    python benchmarks/bench_sparse.py [--ps 300 1000] [--designs 5] [--n 20000]
        [--out benchmarks/results/sparse.json]

Design ``k`` at ``p``: ``simulate.random_sem(p, n_envs=4 + k % 3, n_parents=5 + k % 6,
n_children=5, intervened=(0.02, 0.05, 0.1)[k % 3], shift_children=True, rng=k)``, ``n``
rows per environment (``sample(n, rng=10_000 + k)``).  Per design: NegDRO's default fit
(error ``||b - beta*||``, verdict, parents kept, children of Y kept), OLS on the true
parents (the oracle), and the times of the data pass (``MultiEnvData.from_frame``: the
per-environment Gram matrices) and of the fit, on one thread.  Prints a table and
writes JSON (with the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _timing import write_result
from threadpoolctl import threadpool_limits

from negdro_stats import MultiEnvData, NegDRO, simulate


def design(p: int, k: int) -> simulate.LinearSEM:
    """Design ``k`` at ``p`` (the module docstring)."""
    return simulate.random_sem(p, n_envs=4 + k % 3, n_parents=5 + k % 6, n_children=5,
                               intervened=(0.02, 0.05, 0.1)[k % 3], shift_children=True,
                               rng=k)


def one(p: int, k: int, n: int) -> dict:
    sem = design(p, k)
    df = sem.sample(n, rng=10_000 + k)
    beta = sem.beta_star
    parents = np.flatnonzero(beta)
    children = np.flatnonzero(sem.B[1:, 0])
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        data = MultiEnvData.from_frame(df, "env", outcome="Y")
        gram_s = time.perf_counter() - start
        start = time.perf_counter()
        res = NegDRO(data).fit(n_boot=0)
        fit_s = time.perf_counter() - start
    X = df.drop(columns=["Y", "env"]).to_numpy()
    oracle = np.zeros(p)
    oracle[parents] = np.linalg.lstsq(X[:, parents], df["Y"].to_numpy(), rcond=None)[0]
    kept = res.support.to_numpy()
    return dict(p=p, design=k, n=n, n_envs=4 + k % 3, parents=len(parents),
                error=float(np.linalg.norm(res.params.to_numpy() - beta)),
                oracle_error=float(np.linalg.norm(oracle - beta)),
                verdict=res.verdict, route=res.selection.route,
                estimator=res.selection.estimator,
                parents_kept=int(kept[parents].sum()), children_kept=int(kept[children].sum()),
                gram_s=gram_s, fit_s=fit_s)


def table(result: dict) -> str:
    lines = [f"# {result['command']}  ({result['date']})", "",
             "| p | design | envs | parents kept | children in | error | oracle | verdict | "
             "route | data pass s | fit s | fit / pass |", "|---|---|---|---|---|---|---|---|"
             "---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['p']} | {r['design']} | {r['n_envs']} | {r['parents_kept']}/"
                     f"{r['parents']} | {r['children_kept']} | {r['error']:.3f} | "
                     f"{r['oracle_error']:.4f} | {r['verdict']} | {r['route']}/"
                     f"{r['estimator']} | {r['gram_s']:.1f} | {r['fit_s']:.1f} | "
                     f"{r['fit_s'] / r['gram_s']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ps", type=int, nargs="+", default=[300, 1000])
    ap.add_argument("--designs", type=int, default=5)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--out", default="benchmarks/results/sparse.json")
    a = ap.parse_args()
    rows = []
    for p in a.ps:
        for k in range(a.designs):
            rows.append(one(p, k, a.n))
            print(rows[-1], flush=True)
    write_result(a.out, table, rows=rows)


if __name__ == "__main__":
    main()
