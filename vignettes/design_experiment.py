# %% [markdown]
# # Designing an experiment: Example 3's limited, weak and strong regimes
#
# Before collecting data, write the planned linear SEM and the planned interventions and
# ask whether NegDRO will identify the causal model.  Example 3: `X1 -> X2 -> Y -> X3`,
# `X1 -> X3`, an irrelevant `X4`; environment 1 is observational, environment 2 shifts
# the outcome's child `X3` (variance 2) and the other covariates with variance 0
# (limited), 0.01 (weak) or 0.25 (strong).
#
# Condition 1b (every direction heterogeneous) fails in the limited regime, but
# Condition 4 (only the children of the outcome need interventions) holds in all three,
# so the constrained problem (7) still identifies `beta*` (Theorem 6).
#
# Run: `python vignettes/design_experiment.py [--quick] [--out DIR]`.

# %%
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from negdro_stats import LinearSEM, simulate
from negdro_stats.studies import vignette_options

QUICK, FIGURES = vignette_options()   # --quick: the tests' sizes; --out DIR: figures

margins = {}
for regime in ("limited", "weak", "strong"):
    report = simulate.example3(regime).check_identification()
    print(f"--- {regime} regime\n{report}\n")
    margins[regime] = (report.condition_1b.relative_margin,
                       report.conditions["4"].relative_margin)

# %% A plan that misses the outcome's child: what should we add?
plan = LinearSEM.from_equations(
    {"X2": {"X1": 1.0}, "Y": {"X2": 2.0}, "X3": {"X1": 0.5, "Y": -1.0}},
    interventions=[{}, {"X1": 1.0, "X2": 1.0}], covariates=["X1", "X2", "X3", "X4"])
print(plan.check_identification())
advice_4 = plan.suggest_interventions(condition="4")
advice_1b = plan.suggest_interventions(condition="1b")
print(advice_4)
print(advice_1b)

# %% Margins of Conditions 1b and 4 by regime.
fig, ax = plt.subplots(figsize=(5.5, 3.2))
x = np.arange(3)
vals = np.array(list(margins.values()))
ax.bar(x - 0.18, vals[:, 0], 0.36, label="Condition 1b (relative margin)")
ax.bar(x + 0.18, vals[:, 1], 0.36, label="Condition 4 (relative margin)")
ax.set_xticks(x, list(margins))
ax.axhline(0, color="k", lw=0.8)
ax.set_ylabel("relative margin")
ax.set_title("Example 3: identification margins by regime", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
FIGURES.mkdir(parents=True, exist_ok=True)
fig.savefig(FIGURES / "design_margins.png", dpi=110)
