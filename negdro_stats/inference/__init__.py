"""The inference stage: the stratified bootstrap of the whole estimator
(:mod:`.stratified`), confidence sets by inverting the invariance test (:mod:`.robust`),
the analytic covariance of the refit (:mod:`.sandwich`) and the profiled intercept's
terms of both (:mod:`.intercept`).

Imports the foundations, :mod:`negdro_stats.data`, and only the public names of
:mod:`negdro_stats.estimation` (its ``__all__``).
"""

from .._resampling import replicate
from .robust import RobustSet, robust_set
from .sandwich import refit_cov
from .stratified import CI_METHODS, SHOWN_FREQ, BootstrapResult, bootstrap

__all__ = ["BootstrapResult", "CI_METHODS", "SHOWN_FREQ", "bootstrap", "RobustSet",
           "robust_set", "refit_cov", "replicate"]

