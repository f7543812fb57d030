# %% [markdown]
# # Figure 7: Algorithm 1's error against gamma, n and the number of iterations T
#
# eq. (33) (text variant), p in {5, 10, 40}.  Left: n = 20,000 per environment, T = 1,000,
# gamma in [0, 17].  Middle: gamma = 20, T = 1,000, n from 100 to 20,000.  Right: n =
# 20,000, gamma = 20, T from 1 to 1,000.  Algorithm 1 as printed (gradient
# descent-maximisation on Phi_mu, b0 = 0, step 1/L, mu = 1e-3, output = the iterate with
# the smallest gradient norm), averaged over repetitions (the paper: 200; full size here:
# 20).  The dashed line in the middle panel is this package's default estimator.
#
# Run: `python vignettes/figure7.py [--quick] [--out DIR]`.

# %%
from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np

from negdro_stats import Moments, simulate
from negdro_stats.estimation import solve
from negdro_stats.estimation.options import SolverOptions
from negdro_stats.studies import vignette_options

QUICK, FIGURES = vignette_options()   # --quick: the tests' sizes; --out DIR: figures

ps = [5] if QUICK else [5, 10, 40]
reps = 1 if QUICK else 20
gammas = [0, 1, 3, 5, 9, 13, 17]
ns = [100, 500, 2000] if QUICK else [100, 300, 1000, 3000, 10_000, 20_000]
Ts = [1, 10, 100, 1000]
n_big = 2000 if QUICK else 20_000

def moments(sem, n, seed):
    df = sem.sample(n, rng=seed)
    return Moments.from_arrays(df.iloc[:, 1:-1].to_numpy(), df["Y"].to_numpy(),
                               df["env"].to_numpy())

def alg1(mom, gamma=20.0, T=1000):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = SolverOptions(gamma=gamma, method="algorithm1", max_iter=T, tol=1e-12)
        return solve(mom, options).b

results = {}
for p in ps:
    sem = simulate.eq33(p)
    big = [moments(sem, n_big, 100 + r) for r in range(reps)]
    err = lambda b, beta=sem.beta_star: np.linalg.norm(b - beta)  # noqa: E731
    results[p] = {
        "gamma": [np.mean([err(alg1(m, gamma=g)) for m in big]) for g in gammas],
        "n": [np.mean([err(alg1(moments(sem, n, 200 + r))) for r in range(reps)])
              for n in ns],
        "n_default": [np.mean([err(solve(moments(sem, n, 200 + r)).b)
                               for r in range(reps)]) for n in ns],
        "T": [np.mean([err(alg1(m, T=T)) for m in big]) for T in Ts],
    }
    print(p, {k: np.round(v, 4).tolist() for k, v in results[p].items()}, flush=True)

fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
for k, p in enumerate(ps):
    c = f"C{k}"
    axes[0].plot(gammas, results[p]["gamma"], "o-", color=c, ms=3, label=f"p = {p}")
    axes[1].plot(ns, results[p]["n"], "o-", color=c, ms=3, label=f"p = {p}")
    axes[1].plot(ns, results[p]["n_default"], "--", color=c, lw=1)
    axes[2].plot(Ts, results[p]["T"], "o-", color=c, ms=3, label=f"p = {p}")
axes[0].set_xlabel("gamma")
axes[1].set_xlabel("n per environment")
axes[2].set_xlabel("iterations T")
for ax in axes[1:]:
    ax.set_xscale("log")
for ax in axes:
    ax.set_yscale("log")
axes[0].set_ylabel("||b - beta*||_2")
axes[0].legend(fontsize=8)
fig.suptitle(f"eq. (33), Algorithm 1, {reps} repetition(s); dashed: default estimator",
             fontsize=10)
fig.tight_layout()
FIGURES.mkdir(parents=True, exist_ok=True)
fig.savefig(FIGURES / ("figure7_quick.png" if QUICK else "figure7.png"), dpi=110)
