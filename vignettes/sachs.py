# %% [markdown]
# # Real data: protein signalling (Sachs et al. 2005)
#
# Single-cell measurements of 11 phosphoproteins under experimental conditions
# (environments).  Outcome: log `Erk`; covariates: the log of the other ten.  The
# consensus graph has `Erk <- {Mek, PKA}`.  Following the data's README, we leave out the
# conditions that act on Erk's own mechanism (U0126, a MEK inhibitor: environments 6 and
# 13) and use the nine main conditions minus that one.
#
# Caveats, said plainly: the consensus graph is debated (data-driven analyses often find
# `Erk -> Akt`), relations are nonlinear and probably cyclic, and the reagents change
# kinase activity rather than adding a shift -- the additive-intervention model fits only
# roughly.  Read the result as a stress test, not as a recovery of a known beta*.
#
# The data are read from `../shared/data/sachs2005/` (not copied into the repository);
# the vignette skips itself when that folder is absent.

# %%
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from negdro_stats import NegDRO, fit_baseline

# QUICK (environment variable NEGDRO_QUICK=1, or --quick): the small sizes that the test
# suite runs.  Figures go to NEGDRO_FIGURES (default: vignettes/figures).
QUICK = os.environ.get("NEGDRO_QUICK") == "1" or "--quick" in sys.argv
HERE = Path(__file__).parent if "__file__" in globals() else Path.cwd()   # script / notebook
FIGURES = Path(os.environ.get("NEGDRO_FIGURES", HERE / "figures"))

DATA = HERE.resolve().parents[1] / "shared" / "data" / "sachs2005"
PROTEINS = ["Raf", "Mek", "Plcg", "PIP2", "PIP3", "Erk", "Akt", "PKA", "PKC", "P38", "Jnk"]
if not (DATA / "sachs_14conditions.csv").exists():
    sys.exit(f"Sachs data not found at {DATA}; skipping this vignette.")

# %% The nine main conditions without the MEK inhibitor, log scale.

raw = pd.read_csv(DATA / "sachs_14conditions.csv")
envs = [e for e in range(1, 10) if e != 6]                # main set, no MEK inhibitor
df = raw[raw["env"].isin(envs)]
logged = np.log(df[PROTEINS]).assign(env=df["env"].to_numpy())
data = logged[["Erk"] + [c for c in PROTEINS if c != "Erk"] + ["env"]]

model = NegDRO(data, env="env", outcome="Erk", fit_intercept=True)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    res = model.fit(n_boot=30 if QUICK else 200, rng=0)
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
