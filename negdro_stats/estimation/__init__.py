"""The estimation stage: NegDRO on per-environment moments.

- :mod:`.objective`: the risks, Phi (17) and Phi_mu (19), their gradients;
- :mod:`.algorithms`: the paper's Algorithms 1, 2 and 3, the options and the output;
- :mod:`.gmm`: the invariance GMM (Lemma 1): moment conditions, J tests, fits;
- :mod:`.cue`: the continuously updated criterion (the selection's and the robust
  sets'), its score covariances and its one minimiser;
- :mod:`.selection`: the default route's selection (walk, exogeneity, rank, least
  risk, verdict);
- :mod:`.options`: the settings and the output (:class:`SelectionReport` among them);
- :mod:`.pipeline`: :func:`solve`, the one entry point that every caller uses to fit
  moments (samples, population moments and resamples alike).

Imports the foundations, :mod:`negdro_stats.data` and
:mod:`negdro_stats.identification`.  Its ``__all__`` is what later stages may import.
"""

from .cue import (
    SECANT_AFTER,
    ContinuouslyUpdated,
    counted_rows,
    cumulant_scaling,
    gauss_newton,
    inv_psd,
    score_form,
    score_weights,
    with_cumulant,
)
from .gmm import N_POPULATION, Cumulant, InvarianceGMM
from .objective import env_risks, gradient, negative_weight
from .options import DEFAULT_ALPHA, REFITS, SelectionReport, SolverOptions, SolverOutput
from .pipeline import solve
from .selection import (
    centred_problem,
    instrument_budget,
    most_heterogeneous,
    standardised_cov,
)

__all__ = [
    "solve", "SolverOptions", "SolverOutput", "SelectionReport", "REFITS", "DEFAULT_ALPHA",
    "env_risks", "gradient", "negative_weight",
    "InvarianceGMM", "ContinuouslyUpdated", "Cumulant", "N_POPULATION", "inv_psd",
    "score_weights", "with_cumulant",
    "gauss_newton", "cumulant_scaling", "score_form", "counted_rows", "SECANT_AFTER",
    "centred_problem", "standardised_cov", "instrument_budget", "most_heterogeneous",
]
