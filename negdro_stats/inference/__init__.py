"""The inference stage: the stratified bootstrap of the whole estimator
(:mod:`.stratified`), confidence sets by inverting the invariance test (:mod:`.robust`)
and the analytic covariance of the refit (:mod:`.sandwich`).

Imports the foundations, :mod:`negdro_stats.data`, and only the public names of
:mod:`negdro_stats.estimation` (its ``__all__``).
"""

from .. import _moved
from .._resampling import replicate
from .robust import RobustSet, robust_set
from .sandwich import refit_cov
from .stratified import CI_METHODS, SHOWN_FREQ, BootstrapResult, bootstrap

__all__ = ["BootstrapResult", "CI_METHODS", "SHOWN_FREQ", "bootstrap", "RobustSet",
           "robust_set", "refit_cov", "replicate"]


def __getattr__(name: str):  # noqa: N807  (a module's __getattr__)
    """The other names of 0.1's negdro_stats.inference module, with a DeprecationWarning."""
    return _moved.old_name(__name__, name)
