# %% [markdown]
# # Figures 8 and 10: error and run time against p, NegDRO and its peers
#
# eq. (33) in the paper's text variant and in the authors' code variant (Figure 8), and
# Appendix F.2 with a hidden confounder (Figure 10).  Methods: NegDRO (this package's
# default, and `negdro_paper`: the paper's Algorithm 3 verbatim), ERM, ICP, anchor
# regression, EILLS, DRIG and CausalDantzig, all fitted on the same per-environment
# moments; ICP and EILLS enumerate subsets and are stopped after 2^15 of them (every
# subset of 15 covariates; the paper stops them after 30 minutes), then marked as capped.
#
# Full size: p in {5, 10, 15, 20, 30, 50, 100}, n = 2,000 per environment, 20 repetitions,
# (`python benchmarks/figure8.py` runs it and writes JSON).  Quick: p in {5, 8},
# 2 repetitions, capped at 2^6 subsets (so that the cap shows at p = 8).

# %%
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from negdro_stats.studies import vignette_options

QUICK, FIGURES = vignette_options()   # --quick: the tests' sizes; --out DIR: figures

def study(ps, n_per_env, reps, max_subsets):
    from negdro_stats import simulate, studies

    designs = {"eq. (33), text": lambda p: simulate.eq33(p, "text"),
               "eq. (33), authors' code": lambda p: simulate.eq33(p, "code"),
               "F.2, hidden confounder": simulate.appendix_f2}
    frames = []
    for name, make in designs.items():
        dead: set[str] = set()            # capped at a smaller p: not run again
        for p in ps:
            methods = tuple(m for m in studies.METHODS if m not in dead)
            df = studies.compare_methods(make(p), n_per_env=n_per_env, reps=reps,
                                          methods=methods, max_subsets=max_subsets, rng=p)
            df = pd.concat([df, pd.DataFrame(
                [dict(rep=r, method=m, error=np.nan, seconds=np.nan, status="capped")
                 for m in sorted(dead) for r in range(reps)])], ignore_index=True)
            dead |= set(df.loc[df["status"] == "capped", "method"])
            df["design"], df["p"] = name, p
            frames.append(df)
            summary = df.groupby("method")[["error", "seconds"]].mean()  # NaN: capped
            print(name, p, summary.round(4).to_dict(), flush=True)
    return pd.concat(frames, ignore_index=True)


def plot(table: pd.DataFrame, path: Path):
    import matplotlib.pyplot as plt

    designs = list(dict.fromkeys(table["design"]))
    fig, axes = plt.subplots(2, len(designs), figsize=(4.3 * len(designs), 6.4))
    agg = table.groupby(["design", "method", "p"]).agg(
        error=("error", "mean"), seconds=("seconds", "mean"),
        capped=("status", lambda s: (s == "capped").all())).reset_index()
    for j, design in enumerate(designs):
        sub = agg[agg["design"] == design]
        for method, g in sub.groupby("method"):
            g = g[~g["capped"]]
            style = {"negdro": dict(color="k", lw=2.2),
                     "negdro_paper": dict(color="k", lw=1.2, ls="--")}.get(method, dict(lw=1.2))
            axes[0, j].plot(g["p"], g["error"], marker="o", ms=3, label=method, **style)
            axes[1, j].plot(g["p"], g["seconds"], marker="o", ms=3, label=method, **style)
        axes[0, j].set_title(design, fontsize=10)
        axes[0, j].set_yscale("log")
        axes[1, j].set_yscale("log")
        axes[1, j].set_xlabel("p")
    axes[0, 0].set_ylabel("||b - beta*||_2")
    axes[1, 0].set_ylabel("seconds per fit (incl. reading the data)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Missing points: subset enumeration capped (ICP, EILLS)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return fig


# %% The study (the full size takes hours: `python benchmarks/figure8.py` runs it and
# writes the table as JSON).
if QUICK:
    table = study([5, 8], 1000, 2, 2**6)
else:
    table = study([5, 10, 15, 20, 30, 50, 100], 2000, 20, 2**15)

# %% Error and time against p.
FIGURES.mkdir(parents=True, exist_ok=True)
fig = plot(table, FIGURES / ("figure8_quick.png" if QUICK else "figure8.png"))
