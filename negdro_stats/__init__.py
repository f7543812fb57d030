"""negdro_stats: NegDRO for causal invariance learning from multi-environment data.

>>> from negdro_stats import NegDRO, simulate
>>> df = simulate.eq33(p=10).sample(2000, rng=0)
>>> NegDRO(df, env="env", outcome="Y").fit().summary()   # doctest: +SKIP
"""

from . import datasets, planning, studies
from ._version import __version__  # noqa: F401  (re-exported)
from .data import MomentAccumulator, Moments, MultiEnvData
from .estimation import SolverOptions
from .exceptions import (
    BootstrapFailureWarning,
    BootstrapPendingError,
    ConvergenceWarning,
    DataError,
    DataWarning,
    IdentificationWarning,
    SelectionWarning,
    SolverError,
    SubsetCapError,
)
from .identification import (
    IdentificationReport,
    IdentificationResult,
    RiskInvarianceTest,
    check_condition_1b,
    check_condition_4,
    check_condition_6,
)
from .inference import BootstrapResult
from .model import NegDRO, diagnose
from .peers import BaselineResult, LOEOResult, fit_baseline
from .planning import SamplePlan, plan_sample_size, simulate
from .planning.design import DesignReport, Intervention, InterventionAdvice, LinearSEM
from .results import NegDROResults, PathResult, load

__all__ = [
    "NegDRO",
    "NegDROResults",
    "PathResult",
    "load",
    "MultiEnvData",
    "SolverOptions",
    "diagnose",
    "fit_baseline",
    "BaselineResult",
    "Moments",
    "MomentAccumulator",
    "LinearSEM",
    "Intervention",
    "DesignReport",
    "InterventionAdvice",
    "IdentificationResult",
    "IdentificationReport",
    "RiskInvarianceTest",
    "check_condition_1b",
    "check_condition_4",
    "check_condition_6",
    "datasets",
    "planning",
    "plan_sample_size",
    "SamplePlan",
    "simulate",
    "studies",
    "BootstrapFailureWarning",
    "BootstrapPendingError",
    "BootstrapResult",
    "LOEOResult",
    "DataError",
    "DataWarning",
    "ConvergenceWarning",
    "IdentificationWarning",
    "SelectionWarning",
    "SolverError",
    "SubsetCapError",
    "NegDRORegressor",
]


def __getattr__(name: str):
    """``NegDRORegressor`` on first use: scikit-learn stays an optional dependency."""
    if name == "NegDRORegressor":
        from .regressor import NegDRORegressor

        return NegDRORegressor
    raise AttributeError(f"module 'negdro_stats' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, the lazily imported ``NegDRORegressor`` among them."""
    return sorted(set(globals()) | set(__all__))
