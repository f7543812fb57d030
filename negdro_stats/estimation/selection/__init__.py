"""The selection stage of the default route (``refit="auto"``): which covariates are in
the model, which coefficients the environments determine, and what is reported.

- :mod:`.standardise`: the problem on standardised moments (an intercept profiled);
- :mod:`.walk`: the pilot, the instruments and the walk over nested supports (J tests,
  GMM-BIC);
- :mod:`.exogeneity`: pooled least squares beside the invariance fit (causes added,
  the Hausman contrast);
- :mod:`.rank`: which directions the environment differences determine;
- :mod:`.least_risk`: Theorem 6's least-risk invariant fit where they leave some open;
- :mod:`.verdict`: :func:`select_by_invariance`, the decision and the report.

Why the steps are consistent, and what each rests on: ``docs/design.rst`` ("The
selection").  Imports the foundations, :mod:`negdro_stats.data`,
:mod:`negdro_stats.identification` and the estimation stage's GMM, objective and options.
"""

from .rank import RankTest, rank_test
from .standardise import centred_problem, exact_fit, standardised_cov
from .verdict import select_by_invariance
from .walk import instrument_budget, most_heterogeneous

__all__ = ["select_by_invariance", "instrument_budget", "most_heterogeneous", "rank_test",
           "RankTest", "centred_problem", "standardised_cov", "exact_fit"]
