"""Peer methods in the same API: pooled OLS, anchor regression, DRIG, causal Dantzig,
ICP and EILLS on moments (:mod:`.baselines`), and leave-one-environment-out validation
of NegDRO against them (:mod:`.holdout`).

Imports the foundations and :mod:`negdro_stats.data`.
"""

from .baselines import BASELINES, ENUMERATING, BaselineResult, fit_baseline
from .holdout import (
    LOEO_METHODS,
    LOEOResult,
    LOEOSummary,
    fit_method,
    leave_one_environment_out,
)

__all__ = ["BaselineResult", "BASELINES", "ENUMERATING", "fit_baseline", "LOEOResult",
           "LOEOSummary", "LOEO_METHODS", "fit_method", "leave_one_environment_out"]
