"""Results of :meth:`NegDRO.fit`, statsmodels style: coefficients, standard errors (analytic,
and the bootstrap's on first use), intervals (robust and bootstrap), JSON, plots; the
``Summary`` as text/HTML/LaTeX is built by :mod:`negdro_stats.results.summary` (imported on the
first ``summary()``), saving and loading are in :mod:`negdro_stats._saving`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._json import jsonable
from .._saving import Saveable, load
from .._stats import norm_isf, norm_sf
from .._typing import ArrayLike, FloatArray
from .._validation import check_bool, check_option, check_scalar
from ..estimation import SolverOutput
from ..exceptions import DataError
from ..identification.conditions import IdentificationResult
from ..identification.declared import Declarations
from ..identification.report import ClosestSupport, RiskInvarianceTest
from ..inference.robust import RobustSet, robust_set
from ..inference.sandwich import refit_cov
from ..inference.stratified import CI_METHODS, BootstrapResult
from .path import PathResult
from .resampled import BootstrapViews
from .source import FitSource
from .verdicts import (
    closest_fit,
    condition_1b,
    conditional,
    declared,
    fit_problems,
    interval_kind,
    least_risk_tests,
    rests_on,
    rests_on_line,
    verdict,
)

if TYPE_CHECKING:
    from .tables import NegDROSummary

__all__ = ["NegDROResults", "PathResult", "load"]

ON_FIRST_USE = "on first use"   # the identification check waits for its first use

SHOW_ALL_MAX_P = 60      # the summary lists every coefficient up to this many (show="all")
MEAN_SHARE = 0.05        # a residual mean above this share of its mean square: see below

def _check_alpha(alpha: object, owner: str) -> float:
    """The intervals' level: 1 - the coverage, in (0, 0.5); a coverage is refused with the
    level it meant."""
    if isinstance(alpha, float | int) and 0.5 < alpha < 1:
        raise ValueError(f"{owner}(alpha={alpha!r}): alpha is 1 - the coverage, as in "
                         f"statsmodels; for {alpha:.0%} intervals pass alpha={1 - alpha:.3g}.")
    return check_scalar(alpha, "alpha", owner, min_val=0, max_val=0.5, closed="neither")


class NegDROResults(BootstrapViews, Saveable):
    """Results of :meth:`NegDRO.fit`; not constructed by users.

    Attributes
    ----------
    model : NegDRO
        The model that was fitted (used only by :meth:`predict`, through
        ``model.predict``).
    endog_name : str
        The outcome's name.
    fit_intercept : bool
        Whether the model has an intercept (``const``; its position is
        :attr:`intercept`).
    can_resample : bool
        False for a model built from moments alone (no rows or blocks: no bootstrap, no
        ``diagnose()``).
    params : pandas.Series
        Estimated coefficients, named by covariate; 0 outside the support.
    support : pandas.Series of bool
        The selected covariates: chosen by J tests on the default route
        (``selection.route == "invariance"``), by Algorithm 3's hard threshold on its
        route and with ``refit="negdro"``.
    std_params : pandas.Series
        Standardised coefficients ``b_j d_j / s_y`` (the scale of ``threshold``): root
        mean squares ``d_j``, ``s_y`` of the working moments, about the pooled means with
        an intercept (whose own is then 0).
    weights : pandas.Series
        Worst-case simplex weights ``w`` at the estimate, eq. (20), by environment.
    risks : pandas.Series
        Environment risks ``R_e(b)`` at the estimate.
    nobs_env : pandas.Series
        Rows per environment.
    objective : float
        ``Phi_mu(b)``, eq. (19).
    grad_norm : float
        Stationarity measure at the output (standardised scale).
    converged : bool
        Whether every stage met its stopping rule.
    n_iter : int
        Solver iterations over all stages.
    solver : SolverOutput
        Everything the solver reported, including the settings used and, for
        Algorithm 3, its stages.
    identification : IdentificationResult or None
        Condition 1b on the moments (``fit(check_identification=True)``, the default);
        ``ident_margin`` is its margin.
    declarations : Declarations or None
        What the user declared (``NegDRO(not_descendants=, targets=)``); :attr:`declared`
        says whether it settles what the fit rests on.
    invariance : RiskInvarianceTest or None
        Test of equal environment risks at the estimate (the model-rejection signal);
        None when the model was built from moments.
    bootstrap : BootstrapResult or None
        The stratified bootstrap refits: run by ``fit(n_boot=B)`` (``fit_bootstrap``, the
        one the summary and ``to_dict`` read), or after ``fit()`` on request by
        :meth:`run_bootstrap` or ``conf_int(kind="bootstrap")`` (``DEFAULT_N_BOOT``
        replicates, with the fit's ``rng``); None while pending, with ``n_boot=0`` and for
        models built from moments (:mod:`~negdro_stats.results.resampled`).
    fit_seconds : float
        The fit's time in seconds (what :meth:`run_bootstrap`'s estimate scales).
    selection : SelectionReport or None
        How ``refit="auto"`` chose the support: the J tests along the walk, the pruning,
        the OLS-versus-GMM contrast, the route and why (``solver.selection``).
    """

    declarations: Declarations | None = None      # (files saved before it existed)

    def __init__(self, *, model: FitSource, moments: Any, solver: SolverOutput,
                 fit_intercept: bool = False,
                 can_resample: bool = True,
                 identification: IdentificationResult | str | None = None,
                 declarations: Declarations | None = None,
                 invariance: RiskInvarianceTest | None = None,
                 bootstrap: BootstrapResult | None = None,
                 deferred_bootstrap: dict | None = None,
                 fit_seconds: float = float("nan")) -> None:
        names = pd.Index(moments.names, name="covariate")
        envs = pd.Index(moments.envs, name="environment")
        d, s_y = moments.scales()
        if fit_intercept:           # about the pooled means a constant has no spread
            d = np.append(d[:-1], 0.0)
        self.model = model
        self.endog_name = moments.outcome
        self.fit_intercept = bool(fit_intercept)
        self.can_resample = bool(can_resample)
        self.population = moments.source == "population"
        self.solver = solver
        self._identification = identification
        self.declarations = declarations
        self.invariance = invariance
        self._bootstrap, self._deferred = bootstrap, deferred_bootstrap
        self.fit_seconds = float(fit_seconds)
        self.selection = solver.selection
        self.params = pd.Series(model.data.to_user(solver.b), index=names, name="coef")
        self.support = pd.Series(solver.support, index=names, name="selected")
        self.std_params = pd.Series(solver.b * d / s_y, index=names, name="std coef")
        self.weights = pd.Series(solver.w, index=envs, name="weight")
        self.risks = pd.Series(solver.risks, index=envs, name="risk")
        self.nobs_env = pd.Series(moments.n, index=envs, name="nobs")
        self.residual_mean, self.residual_mean_share = moments.residual_mean(solver.b)
        self.objective = solver.objective
        self.grad_norm = solver.grad_norm
        self.converged = solver.converged
        self.n_iter = solver.n_iter

    @property
    def intercept(self) -> int | None:
        """The intercept's position among the coefficients (None without one): the
        column the estimator profiled (``SolverOptions.fixed``, which the model sets from
        its data)."""
        fixed = self.solver.options.fixed if self.fit_intercept else ()
        return fixed[0] if fixed else None

    @property
    def mean_left_out(self) -> bool:
        """Without an intercept, the residuals' pooled mean (``residual_mean``) is more than
        ``MEAN_SHARE`` of their pooled mean square (``residual_mean_share``).  The model's
        noise has mean 0, so the outcome has an intercept that ``fit_intercept=False``
        leaves out, or the estimate misses a cause with a non-zero mean; either way it
        is not the causal model, and a left-out intercept also breaks the invariance
        conditions (``E_e[X r]`` then moves with the covariates' means)."""
        return not self.fit_intercept and self.residual_mean_share > MEAN_SHARE

    @property
    def undetermined(self) -> pd.Series:
        """Whether each coefficient is left undetermined by these environments (the
        route ``"not identified"``; :attr:`selection`).  Unless the reported fit is
        Theorem 6's least-risk invariant fit (:func:`~.verdicts.conditional`, whose
        intervals are conditional on Condition 4: :attr:`interval_kind`), its standard
        error is infinite and its interval unbounded, whatever the bootstrap says."""
        sel = self.selection
        names = set(() if sel is None or sel.identified else sel.undetermined)
        return pd.Series([name in names for name in self.params.index],
                         index=self.params.index, name="undetermined")

    def _unbounded(self) -> np.ndarray:
        """The coefficients whose standard errors are inf and intervals (-inf, inf):
        :attr:`undetermined`, unless the intervals are conditional on Condition 4; and
        then the intercept, ``ybar - b^T xbar``, too."""
        free = self.undetermined.to_numpy() & (not conditional(self))
        if self.intercept is not None and free.any():
            free[self.intercept] = True
        return free

    @property
    def verdict(self) -> str:
        """"identified", "if Condition 4", "not identified" or "rejected", decided once
        (:func:`~negdro_stats.results.verdicts.verdict`) and read by the summary, the
        fit's warnings and :meth:`to_dict`."""
        return verdict(self)

    @property
    def rests_on(self) -> tuple[str, ...]:
        """The selected covariates whose coefficients the environments leave open, where
        the verdict is "if Condition 4" (:func:`~negdro_stats.results.verdicts.rests_on`):
        each is a cause only if no child of the outcome goes unshifted, which the data
        cannot check.  Empty otherwise."""
        return rests_on(self)

    @property
    def declared(self) -> bool:
        """The declarations settle what this fit rests on (:func:`.verdicts.declared`)."""
        return declared(self)

    @property
    def interval_kind(self) -> str:
        """The kind of interval this result reports, decided once
        (:func:`~negdro_stats.results.verdicts.interval_kind`): ``"wald"``,
        ``"bootstrap"`` or ``"robust"``.  :meth:`conf_int` (its default),
        :meth:`summary` and :meth:`to_dict` (the CLI's JSON) read it."""
        return interval_kind(self)

    @property
    def outcome_first_column(self) -> bool:
        """The outcome was not named: the first column was taken (the summary says so)."""
        return getattr(getattr(self.model, "data", None), "outcome_first_column", False)

    @property
    def bse(self) -> pd.Series:
        """Analytic standard errors ``sqrt(diag(cov_params()))``, conditional on the
        selected support (NaN off it); inf for a coefficient the environments do not
        determine (:attr:`undetermined`, and then for the intercept) unless the fit is
        Theorem 6's least-risk fit, whose standard errors hold under Condition 4
        (:attr:`interval_kind`).  The intercept's by the delta method
        (:mod:`negdro_stats.inference.intercept`).  The bootstrap's are :attr:`boot_se`."""
        values = np.sqrt(np.maximum(np.diag(self._refit_cov[0]), 0.0))   # (an exact fit:
        values = np.where(self._unbounded(), np.inf, values)          # -1e-37 by rounding)
        return pd.Series(values, index=self.params.index, name="std err")

    def conf_int(self, alpha: float = 0.05, method: str | None = None,
                 kind: str | None = None) -> pd.DataFrame:
        """Confidence intervals with coverage ``1 - alpha``, of the kind ``kind``
        (default :attr:`interval_kind`, the summary's):

        - ``"wald"``: ``b +- z_{1 - alpha / 2} se`` from :meth:`cov_params`, conditional
          on the selected support (NaN off it, and where the covariance is not
          available); for Theorem 6's least-risk fit also on Condition 4 (or 6).
        - ``"bootstrap"``: ``method`` is ``"percentile"`` (default), ``"basic"`` or
          ``"normal"`` (the other kinds refuse a ``method``); see
          :meth:`negdro_stats.BootstrapResult.interval` (runs a pending bootstrap; NaN
          without one).  The refits' distribution, selection included: a covariate
          that no refit selects has ``[0, 0]`` (a point mass at 0, with ``boot_se``
          0), which :meth:`to_dict` writes too.
        - ``"robust"``: the intervals of :meth:`robust_set` (test inversion, valid
          however weak the identification; +-inf where unbounded, NaN where the set is
          empty); the intercept's by Bonferroni over the slopes' set and the noise's
          mean (:mod:`negdro_stats.inference.intercept`).

        Where the environments do not determine a coefficient (:attr:`undetermined`,
        route ``"not identified"``) and the fit is not Theorem 6's least-risk invariant
        fit, its Wald and bootstrap intervals are ``(-inf, inf)``: the data are
        consistent with any value of it, so a bootstrap of the reported fit would only
        show that fit's noise.
        """
        kind = check_option(self.interval_kind if kind is None else kind, "kind",
                            "conf_int", ("wald", "bootstrap", "robust"))
        alpha = _check_alpha(alpha, "conf_int")
        if method is not None and kind != "bootstrap":
            raise DataError(f"conf_int(method={method!r}) applies to kind='bootstrap' only; "
                            f"the {kind} intervals have one method (leave method out).")
        if kind == "robust":
            return self.robust_set(alpha).conf_int()
        if kind == "wald":
            b, half = self.params.to_numpy(), norm_isf(alpha / 2.0) * self.bse.to_numpy()
            with np.errstate(invalid="ignore"):
                lo, hi = b - half, b + half
        else:
            method = check_option(method or "percentile", "method", "conf_int", CI_METHODS)
            boot = self.run_bootstrap() if self.bootstrap_pending else self.bootstrap
            if boot is None:
                lo = hi = np.full(len(self.params), np.nan)
            else:
                lo, hi = boot.interval(self.params.to_numpy(), alpha, method)
            free = self._unbounded()
            lo, hi = np.where(free, -np.inf, lo), np.where(free, np.inf, hi)
        return pd.DataFrame({"lower": lo, "upper": hi}, index=self.params.index)

    def _score_cov(self) -> Callable[[FloatArray, np.ndarray], FloatArray] | None:
        """The rows' (or fourth moments') ``Var_e(X r)``, None where the model keeps
        neither (the Gaussian form is used then)."""
        data = getattr(self.model, "data", None)
        return data.score_cov if data is not None and data.has_score_cov else None

    @cached_property
    def _refit_cov(self) -> tuple[FloatArray, str]:
        cov, method = refit_cov(self.model.data.moments, self.solver.b,
                                self.support.to_numpy(), self.solver.refit,
                                selection=self.selection, score_cov=self._score_cov(),
                                const=self.intercept)
        return self.model.data.cov_to_user(cov), method

    def cov_params(self) -> pd.DataFrame:
        """Analytic covariance of the coefficients **conditional on the selected
        support** (:mod:`negdro_stats.inference.sandwich`): White's HC0 sandwich for pooled OLS,
        the inverse information for the invariance GMM; NaN outside the support and
        for the other refits.  It ignores that the support was chosen from the same
        data: the robust p-values (:attr:`robust_pvalues`) do not.  ``cov_method``
        names what was computed."""
        return pd.DataFrame(self._refit_cov[0], index=self.params.index,
                            columns=self.params.index)

    @property
    def cov_method(self) -> str:
        """What :meth:`cov_params` computed, in words."""
        dependence = self.model.data.dependence
        return self._refit_cov[1] + ("" if dependence is None else
                                     f", {dependence.covariance}")

    @cached_property
    def closest_to_invariance(self) -> ClosestSupport | None:
        """The fit closest to invariance, for where no support is invariant (the verdict
        "rejected"; :func:`~negdro_stats.results.verdicts.closest_fit`).  Not a causal
        claim."""
        return closest_fit(self)

    @cached_property
    def serial_correlation(self) -> FloatArray | None:
        """Per environment the lag-1 autocorrelation of the residuals at the estimate,
        rows in their order (None without the rows): the check for dependent rows
        (:func:`~negdro_stats.results.verdicts.rows_look_dependent`)."""
        data = getattr(self.model, "data", None)
        if data is None or not data.has_rows:
            return None
        return data.serial_correlation(self.solver.b)

    @property
    def cov_type(self) -> str:
        """How the rows are taken to depend (``fit(cov_type=)``): ``"nonrobust"``
        (independent), ``"HAC"`` or ``"cluster"``."""
        dependence = self.model.data.dependence
        return "nonrobust" if dependence is None else dependence.cov_type

    @property
    def tvalues(self) -> pd.Series:
        """``params / bse``, conditional on the support (NaN off it)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return pd.Series(self.params.to_numpy() / self.bse.to_numpy(),
                             index=self.params.index, name="t")

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided normal p-values of :attr:`tvalues`, conditional on the selected
        support (NaN off it); the unconditional ones are :attr:`robust_pvalues`."""
        return pd.Series(2.0 * norm_sf(np.abs(self.tvalues.to_numpy())),
                         index=self.params.index, name="P>|z|")

    @property
    def fittedvalues(self) -> pd.Series:
        """``X b`` on the model's rows (as :meth:`predict` without ``exog``)."""
        return self.predict()

    @property
    def resid(self) -> pd.Series | np.ndarray:
        """``Y - X b`` on the model's rows (every row given; a dropped row's is NaN where
        its outcome or a covariate is)."""
        data = getattr(self.model, "data", None)
        y = None if data is None else data.endog()
        if y is None:
            raise DataError("This model keeps no rows (built from moments, or read as a "
                            "stream: CSV, Parquet, Dask, batches), so no "
                            "residuals (predict(exog) gives fitted values for new rows).")
        fitted = self.fittedvalues
        return (y.astype(np.float64) - fitted).rename("resid") if isinstance(y, pd.Series) \
            else np.asarray(y, dtype=np.float64) - fitted

    def robust_set(self, alpha: float = 0.05, test: str = "kj") -> RobustSet:
        """The confidence set of ``beta*`` by inverting the invariance test of every
        covariate's residual moments (:mod:`negdro_stats.inference.robust`): its coverage does not
        depend on how strongly the environments identify ``beta*``; it is unbounded along
        what they leave undetermined and empty when no invariant linear model fits.
        Computed on first use for each ``alpha`` (its p-values and intervals on first
        use of them, each coefficient's apart): a few statistic fits per p-value, about
        15 per interval (every interval: ~14 fits of the model at p = 30, 10 at p = 10),
        a few in all where no interval is bounded.  ``test``: the subvector
        test of the intervals and p-values, Kleibergen's KJ (``"kj"``, default: about the
        efficient GMM's Wald interval where ``beta*`` is identified) or Anderson-Rubin's
        (``"ar"``, wider there; see :class:`~negdro_stats.inference.robust.RobustSet`)."""
        cache = self.__dict__.setdefault("_robust_sets", {})
        if (alpha, test) not in cache:
            data = self.model.data
            cache[alpha, test] = robust_set(
                data.moments, self.solver.b, alpha=alpha, score_cov=self._score_cov(),
                test=test, const=self.intercept, origin=getattr(data, "origin", None),
                long_run=data.long_run)
        return cache[alpha, test]

    @property
    def robust_pvalues(self) -> pd.Series:
        """Robust p-values of "X_j has no direct effect" (``b_j = 0``) by the subvector
        invariance test (:meth:`robust_set`; they do not depend on its ``alpha``)."""
        cache = self.__dict__.get("_robust_sets") or {}
        rs = next((rs for (_, test), rs in cache.items() if test == "kj"), None)
        return (rs or self.robust_set()).pvalues.rename("robust p")

    @cached_property
    def identification(self) -> IdentificationResult | None:
        """Condition 1b on the moments (computed on first use for p > 30, where the fit
        passed ``ON_FIRST_USE``; ``fit`` warns when it fails for p <= 30, where it
        computes it).  (A marker, not a bound method of the model: results must pickle
        by value.)"""
        src = self._identification
        return self.model.condition_1b() if isinstance(src, str) else src  # ON_FIRST_USE

    @property
    def ident_margin(self) -> float:
        """Identifiability margin lambda of Condition 1b (eq. (16)); NaN if not computed."""
        return float("nan") if self.identification is None else self.identification.margin

    @property
    def rsquared(self) -> float:
        """Pooled R-squared: 1 - the pooled mean squared residual over the outcome's
        pooled mean square about its mean with an intercept, about 0 without one
        (statsmodels' uncentred R-squared), rows weighted as in pooled OLS."""
        mom = self.model.data.moments
        w = mom.pooled_weights()
        total = float(w @ mom.syy) - (float(w @ mom.mean_y) ** 2 if self.fit_intercept else 0.0)
        return 1.0 - float(w @ self.risks.to_numpy()) / total

    @property
    def gamma(self) -> float:
        """The invariance strength gamma of the fit (eq. (9))."""
        return self.solver.options.gamma

    @property
    def nobs(self) -> float:
        """Total number of rows used."""
        return float(self.nobs_env.sum())

    @property
    def n_envs(self) -> int:
        """Number of environments."""
        return len(self.nobs_env)

    @property
    def settings(self) -> dict:
        """The solver settings used (:class:`~negdro_stats.SolverOptions`, with the
        defaults resolved from the data filled in): gamma, method, inner, mu, tau, ..."""
        return self.solver.options.as_dict()

    def predict(self, exog: pd.DataFrame | ArrayLike | None = None) -> pd.Series | np.ndarray:
        """Predictions ``X b`` (intercept included); see :meth:`NegDRO.predict`.

        ``exog`` is a DataFrame with the covariate columns (extra columns are ignored) or
        an array with the covariates in model order; default: the model's data.
        """
        return self.model.predict(self.params, exog)

    # ------------------------------------------------------------------- plots
    def plot_coefficients(self, *, alpha: float = 0.05, beta_star: ArrayLike | None = None,
                          show: str = "selected"):
        """Forest plot of the estimates and bootstrap intervals; returns the Figure."""
        from .plotting import plot_coefficients

        return plot_coefficients(self, alpha=alpha, beta_star=beta_star, show=show)

    def plot_selection(self, *, top: int = 30):
        """Bar chart of the bootstrap selection frequencies; returns the Figure."""
        from .plotting import plot_selection

        return plot_selection(self, top=top)

    def plot_risks(self):
        """Environment risks and worst-case weights at the estimate; returns the Figure."""
        from .plotting import plot_risks

        return plot_risks(self)

    # ------------------------------------------------------------------- printing
    def to_dict(self, alpha: float = 0.05) -> dict:
        """Plain JSON values of the fit (NaN and infinities as None; the CLI's ``fit
        --json``): coefficients, support, bootstrap standard errors and ``1 - alpha``
        intervals, selection frequencies, environment weights, risks and rows, the
        refit that produced the coefficients (``route``), the :attr:`verdict` and the
        summary's warning line (``problems``), convergence, the identification check,
        the equal-risk test, the residuals' mean and the settings.  The intervals are
        those of :attr:`interval_kind` (``kind``), as in the summary; a pending
        bootstrap is not run, nor one run on request read (one truth: the summary's)."""
        ran = self.fit_bootstrap is not None
        none = pd.Series(np.nan, index=self.params.index)
        ci = self.conf_int(alpha=alpha, kind=(kind := self.interval_kind))
        return jsonable({
            "outcome": self.endog_name, "covariates": list(self.params.index),
            "params": self.params, "support": self.support, "bse": self.bse,
            "boot_se": self.boot_se if ran else none,
            "conf_int": {"alpha": alpha, "kind": kind, "lower": ci["lower"],
                         "upper": ci["upper"]},
            "support_freq": self.support_freq if ran else none,
            "weights": self.weights, "risks": self.risks,
            "nobs": {str(e): n if math.isinf(n) else int(n) for e, n in self.nobs_env.items()},
            "route": self.solver.refit, "verdict": self.verdict,
            "rests_on": {"covariates": list(self.rests_on), "said": rests_on_line(self),
                         "declared": self.declared, **least_risk_tests(self)},
            "declarations": self.declarations and self.declarations.to_dict(),
            "problems": fit_problems(self), "converged": self.converged,
            "identification": None if self.identification is None else {
                **self.identification.to_dict(), "verdict": (said := condition_1b(self)),
                "holds": None if said == "unclear" else said == "holds"},
            "invariance": None if self.invariance is None else self.invariance.to_dict(),
            "closest_to_invariance": None if self.verdict != "rejected" or (
                c := self.closest_to_invariance) is None else c.to_dict(list(self.params.index)),
            "cov_type": self.cov_type,
            "residual_mean": {"mean": self.residual_mean, "share": self.residual_mean_share,
                              "left_out": self.mean_left_out},
            "n_boot": self.fit_bootstrap.n_boot if ran else 0,
            "settings": self.settings,
        })

    def summary(self, alpha: float = 0.05, show: str | None = None,
                ci_method: str = "percentile", intervals: str = "auto",
                detail: bool = False) -> NegDROSummary:
        """The verdict and what it rests on, a header, the coefficients with intervals
        titled by what they assume, the environments, and a few lines: the direct
        causes under the assumption that identifies them, and how to see the notes.

        Parameters
        ----------
        alpha : float
            Significance level of the intervals (coverage ``1 - alpha``).
        show : {"all", "selected"}, optional
            Coefficient rows: all of them, or the selected ones plus any unselected one
            with something to show (robust p below ``alpha``, an interval that excludes
            0, selection frequency >= 0.1), the rest in one line.  Default: like
            "selected" where at least ``FOLD_MIN`` (4) rows would fold, else all; with
            ``detail``, all when p <= 60 (``SHOW_ALL_MAX_P``).
        ci_method : {"percentile", "basic", "normal"}
            The bootstrap intervals' method.
        intervals : {"auto", "wald", "bootstrap", "robust"}
            Which intervals the table shows.  ``"auto"``: :attr:`interval_kind`, the
            kind :meth:`conf_int` and :meth:`to_dict` report too (the table's title
            names it and what it assumes); another kind by name (:meth:`conf_int`).
            ``"bootstrap"`` runs a pending bootstrap; no other choice does.  The robust
            p-values stand beside Theorem 6's conditional intervals
            (:func:`~.verdicts.conditional`).  When the robust set is empty, the
            summary opens with "no invariant linear model is consistent with these data".
        detail : bool
            The numbered notes (how the support and the coefficients were chosen, the
            tests, what every figure assumes), the solver's facts and ``std coef``;
            without it the notes are the HTML's collapsible block.
        """
        detail = check_bool(detail, "detail", "summary")
        if show is not None:
            show = check_option(show, "show", "summary", ["all", "selected"])
        elif detail:
            show = "all" if len(self.params) <= SHOW_ALL_MAX_P else "selected"
        intervals = check_option(intervals, "intervals", "summary",
                                 ["auto", "wald", "bootstrap", "robust"])
        if intervals == "bootstrap" and self.bootstrap_pending:
            self.run_bootstrap()                  # asked for: a pending one runs now
        elif intervals == "bootstrap" and self.bootstrap is None:    # (a column of NaN)
            raise DataError("summary(intervals='bootstrap'): this result has no bootstrap ("
                            + ("res.run_bootstrap() runs one, or fit(n_boot=B)" if
                               self.can_resample else "a model built from moments has no "
                               "rows to resample") + ").")
        alpha = _check_alpha(alpha, "summary")
        from .summary import build_summary  # (statsmodels' tables: on first use)

        return build_summary(self, alpha=alpha, show=show, ci_method=ci_method,
                             intervals=intervals, detail=detail)

    def __str__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def __repr__(self) -> str:
        outcome = f"{self.endog_name!r}" + (" (first column)" if self.outcome_first_column
                                             else "")
        return (f"<NegDROResults: outcome={outcome}, p={len(self.params)}, "
                f"selected={int(self.support.sum())}, "
                f"gamma={self.gamma:g}, converged={self.converged}>")
