"""What a result reads from the fit that made it: :class:`FitSource`, handed to
:class:`~negdro_stats.results.NegDROResults` at construction (the model, in practice).

A result never reaches into the model beyond this protocol (no private attribute;
``tests/project/test_architecture.py`` checks the results stage for it), so what results need
from a fit is written in one place and a type checker sees it.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .._resampling import Jobs
from .._typing import FloatArray
from ..estimation import SolverOutput
from ..identification.conditions import IdentificationResult
from ..inference.stratified import BootstrapResult

__all__ = ["FitSource", "DataView"]


class DataView(Protocol):
    """The fit's data as a result uses it: the working moments and the map from the
    working frame to the user's (the intercept's origin)."""

    @property
    def moments(self) -> Any: ...

    @property
    def outcome_first_column(self) -> bool: ...

    @property
    def dependence(self) -> Any: ...

    def to_user(self, b: FloatArray) -> FloatArray: ...

    def cov_to_user(self, cov: FloatArray) -> FloatArray: ...

    @property
    def long_run(self) -> Any: ...


class FitSource(Protocol):
    """The fit behind a result: its data, Condition 1b on its moments (computed on first
    use where the fit did not), the bootstrap it runs on request, predictions, and the
    equal-risk test at any ``b`` (:meth:`NegDRO.risk_test <negdro_stats.NegDRO.risk_test>`)."""

    @property
    def data(self) -> DataView: ...

    def condition_1b(self, paper: bool = False) -> IdentificationResult: ...

    def run_bootstrap(self, out: SolverOutput, n_boot: int, rng: np.random.Generator,
                      n_jobs: Jobs | None, verbose: bool | None) -> BootstrapResult: ...

    def predict(self, params: Any, exog: Any = None) -> Any: ...

    def risk_test(self, b: FloatArray, score_cov: Any = None) -> Any: ...
