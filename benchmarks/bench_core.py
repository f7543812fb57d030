"""Core estimator benchmark (issue: core estimator): speed and accuracy of NegDRO.

Usage:  python benchmarks/bench_core.py [--quick] [--seeds 20] [--only speed|accuracy]
        [--out benchmarks/results/core.json]

Speed (eq. (33), text variant, 4 environments, n = 20,000 per environment):
  * wall time of ``NegDRO.from_arrays(y, X, env).fit(n_boot=0)`` (validation + one pass for the
    moments + Algorithm 3 with SQP) vs pooled OLS by ``numpy.linalg.lstsq`` on the same
    arrays and vs one Gram pass (each environment's ``[X, y]' [X, y]``: the limit of a
    moment-based fit), median of 5, and the ratios;
  * iterations and time to the same stationarity on the same objective: SQP vs Algorithm 1
    on Phi_mu (gradient norm <= 1e-6, standardised scale), and SQP (mu = 0) vs Algorithm 2
    on Phi (proximal measure <= 1e-4; p <= 100, Algorithm 2 needs a proximal solve per
    iteration).
Accuracy: mean ||b - beta*||_2 over seeds of the default fit (Algorithm 3, SQP,
refit="auto"), the paper's Algorithm 3 verbatim (refit="negdro": Phi_mu on the support),
the oracle (pooled OLS on the true support {X1, X3}) and Algorithm 1 (unthresholded, as
printed), for n in {2000, 20000}
per environment, p in {5, 10, 20, 100}, without (eq. (33)) and with (Appendix F.2) the
hidden confounder; plus the share of seeds with exact support {X1, X3}.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from _timing import timed

from negdro_stats import NegDRO, simulate
from negdro_stats.estimation import solve
from negdro_stats.estimation.algorithms import _lipschitz, gdm, sqp, subgradient_prox
from negdro_stats.estimation.options import SolverOptions


def _arrays(sem, n, seed):
    df = sem.sample(n, rng=seed)
    X = df[[f"X{j}" for j in range(1, sem.p + 1)]].to_numpy()
    return df["Y"].to_numpy(), X, df["env"].to_numpy()


def _gram_pass(X, y, env):
    """The limit of any moment-based fit: one pass for each environment's Gram matrix of
    ``[X, y]`` (what the moments need, nothing else)."""
    Z = np.column_stack([X, y])
    return [Z[env == e].T @ Z[env == e] for e in np.unique(env)]


def speed(ps, n):
    rows = []
    for p in ps:
        sem = simulate.eq33(p=p)
        y, X, env = _arrays(sem, n, seed=1)
        names = [f"X{j}" for j in range(1, p + 1)]
        t_fit = timed(
            lambda: NegDRO.from_arrays(y, X, env, names=names).fit(n_boot=0))[1]  # noqa: B023
        t_ols = timed(lambda: np.linalg.lstsq(X, y, rcond=None))[1]  # noqa: B023
        t_gram = timed(lambda: _gram_pass(X, y, env))[1]  # noqa: B023
        model = NegDRO.from_arrays(y, X, env, names=names)
        res = model.fit(n_boot=0)
        t_ident = timed(model.condition_1b, reps=1)[1]    # Condition 1b check (lazy, p > 200)
        mom = model.moments
        d, s = mom.scales()
        st = mom.rescale(d, s)
        args = (st.Sigma, st.sxy, st.syy)
        b0 = np.zeros(p)
        step = 1.0 / _lipschitz(st.Sigma, 20.0, 0.0)
        t0 = time.perf_counter()
        r_sqp = sqp(*args, gamma=20.0, mu=1e-3, b_init=b0, tol=1e-6)
        t_sqp = time.perf_counter() - t0
        t0 = time.perf_counter()
        r_a1 = gdm(*args, gamma=20.0, mu=1e-3, step_size=step, tol=1e-6, b_init=b0,
                   max_iter=50_000 if p <= 100 else 20_000)
        t_a1 = time.perf_counter() - t0
        row = dict(p=p, n_per_env=n, fit_s=t_fit, ols_s=t_ols, ratio=t_fit / t_ols,
                   gram_s=t_gram, ratio_gram=t_fit / t_gram,
                   ident_s=t_ident,
                   fit_error=float(np.linalg.norm(res.params.to_numpy() - sem.beta_star)),
                   sqp_iter=r_sqp.n_iter, sqp_s=t_sqp, sqp_grad=r_sqp.grad_norm,
                   alg1_iter=r_a1.n_iter, alg1_s=t_a1, alg1_grad=r_a1.grad_norm,
                   alg1_agrees=float(np.abs(r_a1.b - r_sqp.b).max()))
        if p <= 100:
            ups = solve(mom, SolverOptions(method="algorithm2", max_iter=1)).options.upsilon
            t0 = time.perf_counter()
            r_sqp0 = sqp(*args, gamma=20.0, mu=0.0, b_init=b0, tol=1e-8)
            t_sqp0 = time.perf_counter() - t0
            t0 = time.perf_counter()
            r_a2 = subgradient_prox(*args, gamma=20.0, step_size=step, max_iter=3000,
                                    tol=1e-4, upsilon=ups, b_init=b0)
            t_a2 = time.perf_counter() - t0
            row.update(sqp0_iter=r_sqp0.n_iter, sqp0_s=t_sqp0, alg2_iter=r_a2.n_iter,
                       alg2_s=t_a2, alg2_prox=r_a2.grad_norm,
                       alg2_agrees=float(np.abs(r_a2.b - r_sqp0.b).max()))
        rows.append(row)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in row.items()), flush=True)
    return rows


def accuracy(ps, ns, seeds):
    rows = []
    for confounded in (False, True):
        for n in ns:
            for p in ps:
                sem = simulate.appendix_f2(p) if confounded else simulate.eq33(p)
                err, err_paper, err_or, err_a1, exact, times, used_inv = [], [], [], [], 0, [], 0
                for seed in range(seeds):
                    y, X, env = _arrays(sem, n, seed=1000 + seed)
                    t = time.perf_counter()
                    model = NegDRO.from_arrays(y, X, env)
                    res = model.fit(n_boot=0)
                    times.append(time.perf_counter() - t)
                    err.append(np.linalg.norm(res.params.to_numpy() - sem.beta_star))
                    exact += list(np.flatnonzero(res.support.to_numpy())) == [0, 2]
                    paper = model.fit(refit="negdro", n_boot=0)
                    err_paper.append(np.linalg.norm(paper.params.to_numpy() - sem.beta_star))
                    used_inv += res.solver.refit in ("ols", "gmm", "invariant")
                    b_or = np.zeros(p)
                    b_or[[0, 2]] = np.linalg.lstsq(X[:, [0, 2]], y, rcond=None)[0]
                    err_or.append(np.linalg.norm(b_or - sem.beta_star))
                    a1 = solve(model.moments, SolverOptions(method="algorithm1"))
                    err_a1.append(np.linalg.norm(a1.b - sem.beta_star))
                row = dict(confounded=confounded, n_per_env=n, p=p, seeds=seeds,
                           default=float(np.mean(err)), paper_alg3=float(np.mean(err_paper)),
                           oracle=float(np.mean(err_or)),
                           alg1=float(np.mean(err_a1)), ratio_to_oracle=float(
                               np.mean(err) / np.mean(err_or)),
                           paper_ratio_to_oracle=float(np.mean(err_paper) / np.mean(err_or)),
                           invariance_route=used_inv / seeds,
                           exact_support=exact / seeds, fit_s=float(np.median(times)))
                rows.append(row)
                print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in row.items()), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--only", choices=["speed", "accuracy"], default=None,
                    help="run one part and keep the other of an existing --out file")
    ap.add_argument("--out", default="benchmarks/results/core.json")
    a = ap.parse_args()
    res = json.loads(Path(a.out).read_text()) if a.only and Path(a.out).exists() else {}
    if a.only != "accuracy":
        res["speed"] = speed([10, 100], 2000) if a.quick else speed([10, 100, 1000], 20_000)
    if a.only != "speed":
        res["accuracy"] = (accuracy([5, 10], [2000], 3) if a.quick else
                           accuracy([5, 10, 20, 100], [2000, 20_000], a.seeds))
    res["meta"] = dict(machine=platform.platform(), python=platform.python_version(),
                       numpy=np.__version__, date=time.strftime("%Y-%m-%d %H:%M"),
                       command=" ".join(sys.argv))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
