# %% [markdown]
# # Real data: protein signalling (Sachs et al. 2005)
#
# Single-cell measurements of 11 phosphoproteins under experimental conditions
# (environments).  Outcome: log `Erk`; covariates: the log of the other ten.  The
# consensus graph has `Erk <- {Mek, PKA}`.  Following the notes of `load_sachs`, we
# leave out the condition that acts on Erk's own mechanism (U0126, a MEK inhibitor:
# environment 6) and use the other eight of the nine main conditions.
#
# Caveats, said plainly: the consensus graph is debated (data-driven analyses often find
# `Erk -> Akt`), relations are nonlinear and probably cyclic, and the reagents change
# kinase activity rather than adding a shift -- the additive-intervention model fits only
# roughly.  Read the result as a stress test, not as a recovery of a known beta*.
#
# The nine main conditions ship with the package: `negdro_stats.datasets.load_sachs`
# (its docstring has the provenance, the licence and the citation).

# %%
from __future__ import annotations

import pandas as pd

from negdro_stats import NegDRO, fit_baseline
from negdro_stats.datasets import load_sachs
from negdro_stats.studies import vignette_options

QUICK, FIGURES = vignette_options()   # --quick: the tests' sizes; --out DIR: figures

# %% The nine main conditions without the MEK inhibitor, log scale.

envs = [e for e in range(1, 10) if e != 6]                # main set, no MEK inhibitor
logged = load_sachs(conditions=envs, log=True)
PROTEINS = [c for c in logged.columns if c not in ("env", "condition")]
data = logged[["Erk"] + [c for c in PROTEINS if c != "Erk"] + ["env"]]

model = NegDRO(data, env="env", outcome="Erk", fit_intercept=True)
res = model.fit(n_boot=30 if QUICK else 200, rng=0)    # (its warnings are the verdict)
print(res.summary())
report = model.diagnose(n_boot=9 if QUICK else 199, n_perm=9 if QUICK else 199, rng=0,
                        results=res)
print(report)

# Peers on the same moments (ICP: all subsets of the 10 covariates + intercept).
mom = model.moments.subset(list(range(len(PROTEINS) - 1)))   # without the constant
icp = fit_baseline("icp", mom, alpha=0.05)
erm = fit_baseline("erm", model.moments)
table = pd.DataFrame({"NegDRO": res.params, "sel. freq": res.support_freq,
                      "ERM": erm.params, "ICP": icp.params.reindex(res.params.index)})
print(table.round(3))
print("ICP accepted", len(icp.details["accepted_sets"]), "sets; estimate:",
      [mom.names[j] for j in icp.details["estimate"]],
      "(model rejected)" if icp.details["model_rejected"] else "")

FIGURES.mkdir(parents=True, exist_ok=True)
res.plot_coefficients(show="all").savefig(FIGURES / "sachs_coefficients.png", dpi=110)
res.plot_selection().savefig(FIGURES / "sachs_selection.png", dpi=110)
