"""negdro_stats: NegDRO for causal invariance learning from multi-environment data.

>>> from negdro_stats import NegDRO, simulate
>>> df = simulate.eq33(p=10).sample(2000, rng=0)
>>> NegDRO(df, env="env", outcome="Y").fit().summary()   # doctest: +SKIP

The public names are imported on first use (PEP 562), so ``import negdro_stats`` and
``negdro --help`` load neither pandas nor scipy; ``_HOMES`` says where each name lives
and the block under ``TYPE_CHECKING`` repeats it for type checkers
(``tests/project/test_lazy_imports.py`` holds the two to each other and to ``__all__``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from . import datasets, planning, studies
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
    from .regressor import NegDRORegressor
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

# The module each public name is taken from; a module named after itself is the name
# (datasets, planning, studies).  NegDRORegressor's module imports scikit-learn.
_HOMES: dict[str, tuple[str, ...]] = {
    "datasets": ("datasets",),
    "planning": ("planning", "SamplePlan", "plan_sample_size", "simulate"),
    "studies": ("studies",),
    "data": ("MomentAccumulator", "Moments", "MultiEnvData"),
    "estimation": ("SolverOptions",),
    "exceptions": ("BootstrapFailureWarning", "BootstrapPendingError", "ConvergenceWarning",
                   "DataError", "DataWarning", "IdentificationWarning", "SelectionWarning",
                   "SolverError", "SubsetCapError"),
    "identification": ("IdentificationReport", "IdentificationResult", "RiskInvarianceTest",
                       "check_condition_1b", "check_condition_4", "check_condition_6"),
    "inference": ("BootstrapResult",),
    "model": ("NegDRO", "diagnose"),
    "peers": ("BaselineResult", "LOEOResult", "fit_baseline"),
    "planning.design": ("DesignReport", "Intervention", "InterventionAdvice", "LinearSEM"),
    "regressor": ("NegDRORegressor",),
    "results": ("NegDROResults", "PathResult", "load"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name on first use: its module is imported then, and the name kept here."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'negdro_stats' has no attribute {name!r}")
    home = importlib.import_module(f"{__name__}.{module}")
    value = home if module == name else getattr(home, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, those not yet imported among them."""
    return sorted(set(globals()) | set(__all__))
