"""Results of :meth:`NegDRO.fit`, statsmodels style, with a ``Summary`` as text/HTML/LaTeX.

Why one module of ~930 lines: the results object and its summary, built from small table
helpers that read the results' fields (saving and loading are in
:mod:`negdro_stats._saving`); moving the summary helpers into a module of their own is
the next step (issue 23's notes).
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

from ._json import jsonable
from ._saving import Saveable, load
from ._typing import ArrayLike, FloatArray
from ._validation import check_option, check_scalar, generator_from_state
from .data import intercept_index
from .diagnostics import IdentificationResult
from .exceptions import DataError
from .fourth import MAX_P
from .inference import CI_METHODS, SHOWN_FREQ, BootstrapResult
from .moments import Moments
from .report import RiskInvarianceTest
from .robust import RobustSet, robust_set
from .sandwich import refit_cov
from .solvers import SolverOutput

__all__ = ["NegDROResults", "NegDROSummary", "PathResult", "load"]

WIDTH = 78                     # of the summary's tables and notes (as statsmodels)
ROBUST_TABLE_MAX_P = 30        # beyond, the summary gives the robust set's verdict only
_METHOD_LABELS = {
    ("algorithm3", "sqp"): "NegDRO Alg. 3 (SQP)",
    ("algorithm3", "gdm"): "NegDRO Alg. 3 (GDM)",
    ("algorithm1", "algorithm1"): "NegDRO Alg. 1",
    ("algorithm2", "algorithm2"): "NegDRO Alg. 2",
}
_REFIT_SHORT = {"ols": "pooled OLS", "gmm": "GMM", "ils": "inv. LS", "negdro": "Phi_mu",
                "invariant": "eq. (31)"}


_LATEX = {"\\": r"\textbackslash{}", "%": r"\%", "&": r"\&", "_": r"\_", "#": r"\#",
          "$": r"\$", "{": r"\{", "}": r"\}", "^": r"\textasciicircum{}",
          "~": r"\textasciitilde{}"}


# statsmodels' table cells already replace # $ % & > _ | (its default_latex_fmt)
_LATEX_CELL = {ch: _LATEX[ch] for ch in "\\{}^~"} | {"<": r"\textless{}"}


def _latex_escape(text: str, table: dict = _LATEX) -> str:
    return "".join(table.get(ch, ch) for ch in text)


def _escaped_cells(summary: Summary, escape: Callable[[str], str]) -> list:
    """Escape the text of every table cell of ``summary`` in place; returns what
    :func:`_restore` puts back (statsmodels writes cell text into HTML and LaTeX as it
    is: a column name ``<script>`` would run in a notebook)."""
    saved = []
    for table in summary.tables:
        saved.append((table, "title", table.title))
        table.title = escape(table.title) if isinstance(table.title, str) else table.title
        for row in table:
            for cell in row:
                if isinstance(cell.data, str):
                    saved.append((cell, "data", cell.data))
                    cell.data = escape(cell.data)
    return saved


def _restore(saved: list) -> None:
    for obj, attr, value in saved:
        setattr(obj, attr, value)


class NegDROSummary(Summary):
    """A statsmodels ``Summary`` with a one-line ``verdict`` above the tables when the
    reader must not miss it, and notes LaTeX-escaped in :meth:`as_latex` (statsmodels
    escapes table stubs but not ``extra_txt``: "50%" would start a comment)."""

    verdict: str | None = None

    def as_text(self) -> str:
        text = super().as_text()
        return text if self.verdict is None else f"{self.verdict}\n{text}"

    def as_html(self) -> str:
        saved, notes = _escaped_cells(self, html.escape), self.extra_txt
        self.extra_txt = None if notes is None else html.escape(notes)
        try:
            page = super().as_html()
        finally:
            _restore(saved)
            self.extra_txt = notes
        return (page if self.verdict is None else
                f"<p><b>{html.escape(self.verdict)}</b></p>\n{page}")

    def as_latex(self) -> str:
        notes, self.extra_txt = self.extra_txt, None
        saved = _escaped_cells(self, lambda text: _latex_escape(text, _LATEX_CELL))
        try:
            latex = super().as_latex()
        finally:
            _restore(saved)
            self.extra_txt = notes
        if notes:
            latex += "\n\n" + _latex_escape(notes).replace("\n", "\n\n")
        if self.verdict is not None:
            latex = "\\textbf{" + _latex_escape(self.verdict) + "}\n\n" + latex
        return latex


class NegDROResults(Saveable):
    """Results of :meth:`NegDRO.fit`; not constructed by users.

    Attributes
    ----------
    model : NegDRO
        The model that was fitted (used only by :meth:`predict`, through
        ``model.predict``).
    endog_name : str
        The outcome's name.
    fit_intercept : bool
        Whether the last coefficient is an intercept (``const``).
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
        Standardised coefficients ``b_j d_j / s_y`` (the scale of ``threshold``).
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
    invariance : RiskInvarianceTest or None
        Test of equal environment risks at the estimate (the model-rejection signal);
        None when the model was built from moments.
    bootstrap : BootstrapResult or None
        The stratified bootstrap refits: run by ``fit(n_boot=B)``, or on first use of
        ``bootstrap``, ``boot_se``, ``support_freq``, ``bootstrap_draws`` or the bootstrap
        intervals after ``fit()`` (``DEFAULT_N_BOOT`` replicates, with the fit's ``rng``);
        None with ``n_boot=0`` and for models built from moments.
    selection : SelectionReport or None
        How ``refit="auto"`` chose the support: the J tests along the walk, the pruning,
        the OLS-versus-GMM contrast, the route and why (``solver.selection``).
    """

    def __init__(self, *, model: Any, moments: Moments, solver: SolverOutput,
                 fit_intercept: bool = False,
                 can_resample: bool = True,
                 identification: IdentificationResult | Callable[[], IdentificationResult]
                 | None = None,
                 invariance: RiskInvarianceTest | None = None,
                 bootstrap: BootstrapResult | None = None,
                 deferred_bootstrap: dict | None = None) -> None:
        names = pd.Index(moments.names, name="covariate")
        envs = pd.Index(moments.envs, name="environment")
        d, s_y = moments.scales()
        self.model = model
        self.endog_name = moments.outcome
        self.fit_intercept = bool(fit_intercept)
        self.can_resample = bool(can_resample)
        self.population = moments.source == "population"
        self.solver = solver
        self._identification = identification
        self.invariance = invariance
        self._bootstrap, self._deferred = bootstrap, deferred_bootstrap
        self.selection = solver.selection
        self.params = pd.Series(solver.b, index=names, name="coef")
        self.support = pd.Series(solver.support, index=names, name="selected")
        self.std_params = pd.Series(solver.b * d / s_y, index=names, name="std coef")
        self.weights = pd.Series(solver.w, index=envs, name="weight")
        self.risks = pd.Series(solver.risks, index=envs, name="risk")
        self.nobs_env = pd.Series(moments.n, index=envs, name="nobs")
        self.objective = solver.objective
        self.grad_norm = solver.grad_norm
        self.converged = solver.converged
        self.n_iter = solver.n_iter

    @property
    def undetermined(self) -> pd.Series:
        """Whether each coefficient is left undetermined by these environments (the
        route ``"not identified"``; :attr:`selection`): its standard error is
        infinite and its interval unbounded, whatever the bootstrap says."""
        sel = self.selection
        names = set(() if sel is None or sel.identified else sel.undetermined)
        return pd.Series([name in names for name in self.params.index],
                         index=self.params.index, name="undetermined")

    @property
    def bootstrap(self) -> BootstrapResult | None:
        """The bootstrap refits (see the class's attributes); run now if ``fit()``
        deferred them."""
        self._run_deferred()
        return self._bootstrap

    def _run_deferred(self) -> None:
        if self._deferred is not None:                   # (the fit's rng, as plain data)
            rng = generator_from_state(self._deferred["rng"])
            self._bootstrap = self.model._bootstrap(self.solver, **{**self._deferred,
                                                                    "rng": rng})
            self._deferred = None

    @property
    def bootstrap_pending(self) -> bool:
        """True while the default bootstrap waits for its first use (:attr:`bootstrap`);
        the summary and :meth:`to_dict` never run it."""
        return self._deferred is not None

    @property
    def bse(self) -> pd.Series:
        """Analytic standard errors ``sqrt(diag(cov_params()))``, conditional on the
        selected support (NaN off it); inf for a coefficient the environments do not
        determine (:attr:`undetermined`).  The bootstrap's are :attr:`boot_se`."""
        values = np.sqrt(np.diag(self._refit_cov[0]))
        values = np.where(self.undetermined.to_numpy(), np.inf, values)
        return pd.Series(values, index=self.params.index, name="std err")

    @cached_property
    def boot_se(self) -> pd.Series:
        """Bootstrap standard errors (sd of the refits, selection included); NaN without
        a bootstrap; inf for a coefficient the environments do not determine."""
        values = (np.full(len(self.params), np.nan) if self.bootstrap is None
                  else self.bootstrap.standard_error())
        values = np.where(self.undetermined.to_numpy(), np.inf, values)
        return pd.Series(values, index=self.params.index, name="boot se")

    @cached_property
    def support_freq(self) -> pd.Series:
        """Selection frequency: the share of bootstrap refits that kept each covariate.

        Read it as in stability selection: covariates kept in (nearly) every refit are
        stable findings; frequencies well below 1 say the selection depends on the
        sample.  NaN without a bootstrap.
        """
        values = (np.full(len(self.params), np.nan) if self.bootstrap is None
                  else self.bootstrap.support_freq())
        return pd.Series(values, index=self.params.index, name="sel. freq")

    @property
    def bootstrap_draws(self) -> pd.DataFrame:
        """The bootstrap refits as a DataFrame (replicates x covariates)."""
        draws = (np.empty((0, len(self.params))) if self.bootstrap is None
                 else self.bootstrap.draws)
        return pd.DataFrame(draws, columns=self.params.index)

    def conf_int(self, alpha: float = 0.05, method: str = "percentile",
                 kind: str = "bootstrap") -> pd.DataFrame:
        """Confidence intervals with coverage ``1 - alpha``.

        ``kind="bootstrap"`` (default): ``method`` is ``"percentile"`` (default),
        ``"basic"`` or ``"normal"``; see
        :meth:`negdro_stats.inference.BootstrapResult.interval`.  NaN without a bootstrap.
        A coefficient the environments do not determine (:attr:`undetermined`, route
        ``"not identified"``) gets ``(-inf, inf)``: the data are consistent with any value
        of it, so a bootstrap of the reported fit would only show that fit's noise.

        ``kind="robust"``: the intervals of :meth:`robust_set` (test inversion, valid
        however weak the identification; +-inf where unbounded, NaN where the set is
        empty and for the intercept).
        """
        kind = check_option(kind, "kind", "conf_int", ("bootstrap", "robust"))
        if isinstance(alpha, float | int) and 0.5 < alpha < 1:
            raise ValueError(f"conf_int(alpha={alpha!r}): alpha is 1 - the coverage, as in "
                             f"statsmodels; for {alpha:.0%} intervals pass "
                             f"alpha={1 - alpha:.3g}.")
        alpha = check_scalar(alpha, "alpha", "conf_int", min_val=0, max_val=0.5,
                             closed="neither")
        if kind == "robust":
            return self.robust_set(alpha).conf_int()
        method = check_option(method, "method", "conf_int", CI_METHODS)
        if self.bootstrap is None:
            lo = hi = np.full(len(self.params), np.nan)
        else:
            lo, hi = self.bootstrap.interval(self.params.to_numpy(), alpha, method)
        free = self.undetermined.to_numpy()
        lo, hi = np.where(free, -np.inf, lo), np.where(free, np.inf, hi)
        return pd.DataFrame({"lower": lo, "upper": hi}, index=self.params.index)

    def _score_cov(self) -> Callable[[FloatArray, np.ndarray], FloatArray] | None:
        """The rows' (or fourth moments') ``Var_e(X r)``, None where the model keeps
        neither (the Gaussian form is used then)."""
        data = getattr(self.model, "data", None)
        return data.score_cov if data is not None and data.has_score_cov else None

    @cached_property
    def _refit_cov(self) -> tuple[FloatArray, str]:
        return refit_cov(self.model.moments, self.params.to_numpy(),
                         self.support.to_numpy(), self.solver.refit,
                         selection=self.selection, score_cov=self._score_cov(),
                         const=intercept_index(self.params.size, self.fit_intercept))

    def cov_params(self) -> pd.DataFrame:
        """Analytic covariance of the coefficients **conditional on the selected
        support** (:mod:`negdro_stats.sandwich`): White's HC0 sandwich for pooled OLS,
        the inverse information for the invariance GMM; NaN outside the support and
        for the other refits.  It ignores that the support was chosen from the same
        data: the robust p-values (:attr:`robust_pvalues`) do not.  ``cov_method``
        names what was computed."""
        return pd.DataFrame(self._refit_cov[0], index=self.params.index,
                            columns=self.params.index)

    @property
    def cov_method(self) -> str:
        """What :meth:`cov_params` computed, in words."""
        return self._refit_cov[1]

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
        return pd.Series(2.0 * stats.norm.sf(np.abs(self.tvalues.to_numpy())),
                         index=self.params.index, name="P>|t|")

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
            raise DataError("This model was built from moments: it has no rows, so no "
                            "residuals (predict(exog) gives fitted values for new rows).")
        fitted = self.fittedvalues
        return (y.astype(np.float64) - fitted).rename("resid") if isinstance(y, pd.Series) \
            else np.asarray(y, dtype=np.float64) - fitted

    def robust_set(self, alpha: float = 0.05, test: str = "kj") -> RobustSet:
        """The confidence set of ``beta*`` by inverting the invariance test of every
        covariate's residual moments (:mod:`negdro_stats.robust`): its coverage does not
        depend on how strongly the environments identify ``beta*``; it is unbounded along
        what they leave undetermined and empty when no invariant linear model fits.
        Computed on first use for each ``alpha`` (its intervals on first use of them):
        about 15 statistic fits per coefficient (~18 fits of the model at p = 30, 13 at
        p = 10), a few in all where no interval is bounded.  ``test``: the subvector
        test of the intervals and p-values, Kleibergen's KJ (``"kj"``, default: about the
        efficient GMM's Wald interval where ``beta*`` is identified) or Anderson-Rubin's
        (``"ar"``, wider there; see :class:`~negdro_stats.robust.RobustSet`)."""
        cache = self.__dict__.setdefault("_robust_sets", {})
        if (alpha, test) not in cache:
            cache[alpha, test] = robust_set(
                self.model.moments, self.params.to_numpy(), alpha=alpha,
                score_cov=self._score_cov(), test=test,
                const=intercept_index(self.params.size, self.fit_intercept))
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
        """Condition 1b on the moments (computed on first use for p > 30; ``fit`` warns
        when it fails for p <= 30, where it computes it)."""
        src = self._identification
        return src() if callable(src) else src

    @property
    def ident_margin(self) -> float:
        """Identifiability margin lambda of Condition 1b (eq. (16)); NaN if not computed."""
        return float("nan") if self.identification is None else self.identification.margin

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
        """The solver settings used (:class:`~negdro_stats.solvers.SolverOptions`, with the
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
        refit that produced the coefficients (``route``), convergence, the
        identification check, the equal-risk test and the settings.  A pending bootstrap
        is not run: the intervals are then the robust ones (``kind``), for at most
        ``ROBUST_TABLE_MAX_P`` coefficients, as in the summary."""
        kind = ("bootstrap" if self._bootstrap is not None else
                "robust" if len(self.params) <= ROBUST_TABLE_MAX_P else None)
        ci = (self.conf_int(alpha=alpha, kind=kind) if kind is not None else
              pd.DataFrame(np.nan, index=self.params.index, columns=["lower", "upper"]))
        return jsonable({
            "outcome": self.endog_name, "covariates": list(self.params.index),
            "params": self.params, "support": self.support, "bse": self.bse,
            "boot_se": (self.boot_se if self._bootstrap is not None
                        else pd.Series(np.nan, index=self.params.index)),
            "conf_int": {"alpha": alpha, "kind": kind, "lower": ci["lower"],
                         "upper": ci["upper"]},
            "support_freq": (self.support_freq if self._bootstrap is not None
                             else pd.Series(np.nan, index=self.params.index)),
            "weights": self.weights, "risks": self.risks,
            "nobs": {str(e): int(n) for e, n in self.nobs_env.items()},
            "route": self.solver.refit, "converged": self.converged,
            "identification": (None if self.identification is None
                               else self.identification.to_dict()),
            "invariance": None if self.invariance is None else self.invariance.to_dict(),
            "n_boot": 0 if self._bootstrap is None else self._bootstrap.n_boot,
            "settings": self.settings,
        })

    def summary(self, alpha: float = 0.05, show: str | None = None,
                ci_method: str = "percentile", intervals: str = "auto") -> NegDROSummary:
        """Summary tables: header, coefficients, environments, and numbered notes.

        Parameters
        ----------
        alpha : float
            Significance level of the intervals (coverage ``1 - alpha``).
        show : {"all", "selected"}, optional
            Coefficient rows: all of them, or the selected ones plus any with selection
            frequency >= 0.1 (and a count of the rest).  Default: all when p <= 30.
        ci_method : {"percentile", "basic", "normal"}
            The bootstrap intervals' method.
        intervals : {"auto", "bootstrap", "robust"}
            Which intervals the table shows.  ``"auto"``: the robust ones
            (:meth:`robust_set`, valid however weak the identification) beside the
            analytic standard errors until a bootstrap has run, and whenever the
            environments may not identify the model or the data reject invariance (the
            warning line above the tables); else the bootstrap's.  ``"bootstrap"`` runs
            a pending bootstrap; no other choice does.  When the robust set
            is empty, the summary opens with "no invariant linear model is consistent
            with these data".
        """
        show = check_option(show if show is not None else
                            ("all" if len(self.params) <= 30 else "selected"),
                            "show", "summary", ["all", "selected"])
        intervals = check_option(intervals, "intervals", "summary",
                                 ["auto", "bootstrap", "robust"])
        if intervals == "bootstrap":
            self._run_deferred()                  # asked for: a pending one runs now
        alpha = check_scalar(alpha, "alpha", "summary", min_val=0, max_val=0.5,
                             closed="neither")
        return _build_summary(self, alpha=alpha, show=show, ci_method=ci_method,
                              intervals=intervals)

    def __str__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def __repr__(self) -> str:
        outcome = f"{self.endog_name!r}" + (" (first column)" if _first_column(self) else "")
        return (f"<NegDROResults: outcome={outcome}, p={len(self.params)}, "
                f"selected={int(self.support.sum())}, "
                f"gamma={self.gamma:g}, converged={self.converged}>")


_REFIT_LABELS = {"ols": "pooled OLS", "gmm": "invariance GMM", "negdro": "Phi_mu (paper)",
                 "invariant": "gradient inv., eq. (31)", "ils": "invariance-constrained LS"}


def _method_label(res: NegDROResults) -> str:
    """What produced the coefficients: the support's choice + the refit on it."""
    sel, refit = res.selection, res.solver.refit
    if refit == "none":                               # Algorithms 1, 2, or an empty support
        return _METHOD_LABELS[(res.solver.method, res.solver.inner)]
    if sel is None:                                   # refit="negdro" / "invariant" asked
        return "NegDRO (paper)" if refit == "negdro" else _REFIT_LABELS[refit]
    support = "J tests" if sel.route == "invariance" else "Alg. 3"
    return f"{support} + {_REFIT_SHORT[refit]}"


def _first_column(res: NegDROResults) -> bool:
    """The outcome was not named: the first column was taken."""
    return getattr(getattr(res.model, "data", None), "outcome_first_column", False)


def _is_intercept(res: NegDROResults, j: int) -> bool:
    """The appended constant column (``fit_intercept=True``): in every model, never selected."""
    return res.fit_intercept and j == len(res.params) - 1


def _num(x: float) -> str:
    """A table number formatted by magnitude (as statsmodels' ``forg``): fixed with four
    decimals between 1e-4 and 1e4, else scientific; exact zeros as 0."""
    if x == 0:
        return "0"
    if not np.isfinite(x) or 1e-4 <= abs(x) < 1e4:
        return f"{x:.4f}"
    return f"{x:.4e}"


def identification_advice(can_resample: bool) -> str:
    """Where to go when Condition 1b fails: never to something that cannot run."""
    if can_resample:
        return ("NegDRO.diagnose() gives a confidence bound for the margin and what to do.")
    return ("diagnose() needs rows, but if these are the moments of a planned LinearSEM, its "
            "check_identification() also checks Conditions 4 and 6, under which NegDRO still "
            "identifies beta* with limited interventions.")


def _problems(res: NegDROResults) -> list[str]:
    """What the reader must not miss: identification fails or invariance is rejected."""
    problems = []
    ident = res.identification
    if ident is not None and not ident.holds:
        problems.append(ident.failure)
    sel = res.selection
    if sel is not None and not sel.identified:
        names = ", ".join(sel.undetermined[:5]) + (" ..." if len(sel.undetermined) > 5 else "")
        problems.append(f"NOT IDENTIFIED: these environments do not determine {names}")
    if sel is not None and sel.rejected:
        problems.append("the J test rejects invariance on the reported support")
    if res.invariance is not None and res.invariance.rejects:
        problems.append(f"the environment risks differ at the estimate "
                        f"(p = {res.invariance.pvalue:.2g})")
    return problems


def _verdict(problems: list[str], robust: RobustSet | None) -> str | None:
    """One line above the tables: an empty robust set first, then the problems."""
    lines = []
    if robust is not None and robust.empty:
        lines.append(f"NO INVARIANT LINEAR MODEL is consistent with these data: the "
                     f"invariance test rejects every b (least AR = {robust.statistic:.4g} > "
                     f"{robust.critical:.4g}, the chi2({robust.df}) quantile at level "
                     f"{robust.alpha:g}); no interval is reported.")
    if problems:
        lines.append("WARNING: " + "; ".join(problems) + " -- see the notes below.")
    return "\n".join(lines) or None



def _robust_or_reason(res: NegDROResults, alpha: float, intervals: str,
                      problems: list[str]) -> tuple[RobustSet | None, bool, str | None]:
    """The robust set the summary uses (``intervals``, see :meth:`summary`) or None,
    whether its intervals fill the table, and the note that says why (or why not)."""
    ran = res._bootstrap is not None                     # (the summary never runs it)
    if intervals == "bootstrap" or (intervals == "auto" and not problems and ran):
        return None, False, None
    try:
        rs = res.robust_set(alpha)
    except DataError as err:
        return None, False, f"Robust intervals not computed: {err}"
    p = int(rs.estimate.notna().sum())
    if intervals == "auto" and not rs.empty and p > ROBUST_TABLE_MAX_P:
        return rs, False, (f"The robust set is not empty (least AR = {rs.statistic:.4g} <= "
                           f"{rs.critical:.4g}, chi2({rs.df})); its intervals cost about 15 "
                           f"fits per coefficient, so with {p} they are not computed for "
                           "the summary: res.conf_int(kind='robust'), or "
                           "summary(intervals='robust').")
    why = ("asked for" if intervals == "robust" else
           "shown instead of the bootstrap's because of the warning above: where "
           "identification is weak or invariance is rejected, a bootstrap of the fit "
           "gives confidence the data do not support" if problems else
           "the default until a bootstrap has run")
    causes = rs.causes()
    state = ("The set is empty (no b passes the test)." if rs.empty else
             "Bounded for " + (", ".join(rs.bounded.index[rs.bounded]) or "none")
             + "; +-inf where the environments leave a coefficient undetermined.  Direct "
             f"causes at family-wise error {rs.alpha:g} (Holm on robust p): "
             + (", ".join(causes.index[causes]) or "none") + ".")
    tested = ("every covariate's" if len(rs.instruments) == rs.estimate.notna().sum()
              else f"{len(rs.instruments)} covariates' (those whose second moments vary "
              "most across environments; too few rows for all)")
    return rs, True, (f"Robust intervals ({why}): the b_j at which the invariance test of "
                      f"{tested} residual moments and of the risks does not reject "
                      f"({_SUBVECTOR_TESTS[rs.test].format(df=rs.df_sub)} at level "
                      f"{rs.alpha:g}), valid however weak the identification; robust p = "
                      f"its p-value of b_j = 0.  {state}")


_SUBVECTOR_TESTS = {"kj": "Kleibergen's KJ test: score chi2(1), J chi2({df} - 1)",
                    "ar": "subvector Anderson-Rubin, chi2({df})"}


def _format_test(test: tuple) -> str:
    stat, df, pvalue = test
    return f"chi2({df}) = {stat:.3g}, p = {pvalue:.3g}"


def _build_summary(res: NegDROResults, *, alpha: float, show: str, ci_method: str,
                   intervals: str) -> NegDROSummary:
    """The summary: the header, the coefficients, the environments, then the verdict
    line and the numbered notes (each part from one helper below)."""
    top, width = _header_table(res)
    rows = np.arange(len(res.params))
    if show == "selected":
        rows = rows[res.support.to_numpy()
                    | (res._bootstrap is not None
                       and res.support_freq.fillna(0).to_numpy() >= SHOWN_FREQ)]
    problems = _problems(res)
    checked, in_table, robust_note = _robust_or_reason(res, alpha, intervals, problems)
    robust = checked if in_table else None
    env_rows = [[f"{n:g}", f"{w:.3f}", _num(r)]
                for n, w, r in zip(res.nobs_env, res.weights, res.risks, strict=True)]
    smry = NegDROSummary()
    smry.tables = [top, _coef_table(res, rows, alpha, ci_method, robust, width),
                   _table(env_rows, ["n_e", "weight w_e", "risk R_e(b)"],
                          [str(e) for e in res.weights.index], "environment", width)]
    verdict = _verdict(problems, checked)
    smry.verdict = None if verdict is None else "\n".join(
        _wrap(line, width, indent="") for line in verdict.split("\n"))
    notes = [*_selection_notes(res), *([robust_note] if robust_note is not None else []),
             _bootstrap_note(res, ci_method, robust is not None),
             *_fit_notes(res, shown=len(rows), show=show)]
    smry.add_extra_txt([_wrap(f"[{k}] {t}", width)
                        for k, t in enumerate(notes, start=1)])
    return smry


def _header_table(res: NegDROResults) -> tuple[SimpleTable, int]:
    """The two-column header and the width of every table (WIDTH, unless a value is too
    long for it)."""
    s = res.settings
    left = [
        ("Dep. Variable:", f"{res.endog_name} (first column)" if _first_column(res)
         and len(res.endog_name) <= 4 else _short(res.endog_name, 19)),
        ("Method:", _method_label(res)),
        ("Solver:", _METHOD_LABELS[(res.solver.method, res.solver.inner)]),
        ("gamma:", f"{res.gamma:g}" + (" (unused)" if res.selection is not None
                                       and res.selection.route == "invariance" else "")),
        ("No. Observations:", f"{res.nobs:g}"),
        ("No. Environments:", f"{res.n_envs}"),
        ("Boot reps:", "on first use" if res.bootstrap_pending else
         "0" if res._bootstrap is None else f"{res._bootstrap.n_boot}"),
    ]
    ident = res.identification
    right = [
        ("Cond. 1b rel. margin:", "n/a" if ident is None else
         f"{ident.relative_margin:.3g} {'holds' if ident.holds else 'fails'}"),
        ("Selected:", f"{int(res.support.sum())} of {len(res.params)}"),
        ("Selection:", "not identified" if res.selection is not None
         and not res.selection.identified else "J test + BIC" if res.selection is not None
         and res.selection.route == "invariance" else f"c0 = {s['threshold']:g}"
         if s["method"] == "algorithm3" else "none"),
        ("Converged:", "yes" if res.converged else "NO"),
        ("Iterations:", f"{res.n_iter}"),
        ("Stationarity:", f"{res.grad_norm:.2e}"),
        ("Objective Phi_mu:", f"{res.objective:.4g}"),
    ]
    widths = _widths([left, right], WIDTH, sep=2)
    top = SimpleTable([[a, b, c, d] for (a, b), (c, d) in zip(left, right, strict=True)],
                      txt_fmt={"data_fmts": ["%s"], "empty_cell": "", "colsep": "  ",
                               "data_aligns": "lrlr", "colwidths": widths})
    return top, sum(widths) + 2 * 3


def _coef_table(res: NegDROResults, rows: np.ndarray, alpha: float, ci_method: str,
                robust: RobustSet | None, width: int) -> SimpleTable:
    """The coefficients of ``rows``: the analytic standard errors with the robust
    p-values and intervals where ``robust`` is given, else the bootstrap's standard
    errors and intervals if it has run, else the analytic standard errors and p-values."""
    has_boot = res._bootstrap is not None                # (never runs a pending one)
    lo_lab, hi_lab = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
    headers = ["coef", "std coef", "selected"] + (     # (at most 7 columns: 78 wide)
        ["robust p", lo_lab, hi_lab] if robust is not None and has_boot else
        ["std err", "robust p", lo_lab, hi_lab] if robust is not None else
        ["boot se", lo_lab, hi_lab] if has_boot else ["std err", "P>|t|"]) + (
        ["sel. freq"] if has_boot else [])
    ci = (robust.conf_int() if robust is not None else
          res.conf_int(alpha, ci_method) if has_boot else None)
    coef_rows = []
    for j in rows:
        row = [_num(res.params.iloc[j]), _num(res.std_params.iloc[j]),
               "always" if _is_intercept(res, j) else "yes" if res.support.iloc[j] else "-"]
        if has_boot and robust is None:
            row.append(_num(res.boot_se.iloc[j]))
        elif not has_boot:                               # (conditional on the support)
            row.append(_num(res.bse.iloc[j]) if res.support.iloc[j] else "-")
        if robust is not None:
            row.append("n/a" if np.isnan(robust.pvalues.iloc[j])
                       else f"{robust.pvalues.iloc[j]:.3g}")
        elif not has_boot:
            row.append(f"{res.pvalues.iloc[j]:.3g}" if res.support.iloc[j] else "-")
        if robust is not None and robust.empty:
            row += ["empty", "empty"]
        elif ci is not None:
            row += [_num(ci["lower"].iloc[j]), _num(ci["upper"].iloc[j])]
        if has_boot:
            row.append(f"{res.support_freq.iloc[j]:.2f}")
        coef_rows.append(row)
    return _table(coef_rows or [["-"] * len(headers)], headers,
                  [str(res.params.index[j]) for j in rows] or ["(none)"], "", width)


def _selection_notes(res: NegDROResults) -> list[str]:
    """How the support and the coefficients were chosen (the first notes)."""
    sel = res.selection
    if sel is not None and np.isfinite(sel.fixed_test[3]):
        J, df, pvalue, level = sel.fixed_test
        fitted = ("pooled OLS fit passes the invariance test at that fixed fit (residual "
                  "moments E_e[X (Y - b'X)] equal across environments, Lemma 1; no "
                  "estimation from the differences), with the smallest pooled risk (BIC); "
                  "pooled OLS on it is reported" if sel.estimator == "ols" else
                  "fit passes the invariance test at that fit (residual moments E_e[X (Y - "
                  "b'X)] equal across environments, Lemma 1), with the smallest pooled risk "
                  "(BIC); reported: least squares constrained by those conditions where the "
                  "differences determine the coefficients (pooled OLS was not invariant: "
                  "hidden confounding, or a child of the outcome)")
        notes = [
            "std coef = coef x RMS(X_j) / RMS(Y).  The environment differences do not "
            "determine the coefficients, so the support is the one, among those whose "
            f"{fitted}.  Test at the reported fit: J = {J:.3g}, df = {df}, p = "
            f"{pvalue:.3g}, accepted at level alpha / p = {level:.2g}.  This is beta* if "
            "every child of the outcome is among the intervened covariates (Condition 4) "
            "or, with hidden confounding, Condition 6 holds, which the data cannot check.",
        ]
    elif sel is not None and sel.estimator != "negdro":
        notes = [
            "std coef = coef x RMS(X_j) / RMS(Y).  Support chosen by invariance: GMM-BIC "
            "over nested supports of the gradient-invariance conditions (Lemma 1), "
            + ("no support passed the J test" if sel.rejected else
               "grown until the J test accepts") + ", pruned by abs(t) >= "
            f"{sel.critical_t:.3g}" + (f" (removed: {', '.join(sel.pruned)})" if sel.pruned
                                       else "") + f"; J = {sel.J:.3g}, df = {sel.df}, "
            f"p = {sel.pvalue:.3g}.",
            *(["WARNING: the J test rejects invariance on the reported support (no support "
               "from the BIC choice on passed it); the invariance assumption may be "
               "violated."] if sel.rejected else []),
            ("Hausman contrast of pooled OLS with the invariance GMM on the support "
             + _format_test(sel.exogeneity) + ": " + (
                "not rejected, so pooled OLS on the support is reported (efficient)."
                if sel.estimator == "ols" else "rejected (hidden confounding, or a child "
                "of the outcome in the support), so the invariance GMM is reported.")
             + (f"  Added by their pooled t (the invariance fit agrees): "
                f"{', '.join(sel.added)}." if sel.added else "")
             + (f"  Removed (pooled OLS and the invariance fit disagree most: a child "
                f"of the outcome?): {', '.join(sel.removed)}." if sel.removed else "")),
        ]
    else:
        notes = [
            "std coef = coef x RMS(X_j) / RMS(Y); Algorithm 3 keeps covariates with "
            "|std coef| >= c0 and refits on them.",
        ]
        if sel is not None:
            notes.append(f"Invariance selection not used: {sel.reason}; Algorithm 3's "
                         "support and Phi_mu fit are reported.")
    if sel is not None and not len(sel.cumulant.cols) and not res.population:
        notes.append("The J tests used the Gaussian form of the score covariances: the "
                     f"source keeps no rows and the fourth moments are carried up to {MAX_P} "
                     "covariates only.  Exact for Gaussian rows; with heavier or lighter "
                     "tails the tests are approximate (a frame in memory, or fewer "
                     "covariates, gives the exact form).")
    if sel is not None and not sel.identified:
        notes.insert(0, f"NOT IDENTIFIED: {sel.reason}.  The intervals of "
                     f"{', '.join(sel.undetermined)} are (-inf, inf) and their standard "
                     "errors inf: the data are consistent with other values of them "
                     "(more environments, or interventions on these covariates, would "
                     "determine them).")
    return notes


def _bootstrap_note(res: NegDROResults, ci_method: str, robust: bool) -> str:
    """What the bootstrap did (or that there is none), and how to read its columns."""
    if res._bootstrap is not None:                       # (never runs a pending one)
        boot = res._bootstrap
        unconverged = int((~boot.converged & ~boot.failed).sum())
        blocks = getattr(getattr(res.model, "data", None), "blocks", None)
        unit = ("" if blocks is None else f" (by blocks: each environment's "
                f"{blocks.n_blocks} random blocks of rows drawn with replacement)")
        what = (f"{ci_method} intervals; sel. freq = share of refits that selected the "
                "covariate.  Intervals of a thresholded estimator are not normal: read them "
                "with sel. freq." if not robust else "sel. freq = share of "
                "refits that selected the covariate; boot se and the bootstrap's intervals: "
                "summary(intervals='bootstrap').")
        return (f"Bootstrap: {boot.n_boot} stratified refits of the whole "
                f"estimator{unit}; {what}"
                + (f"  {int(boot.failed.sum())} refits failed (left out)."
                   if boot.failed.any() else "")
                + (f"  {unconverged} refits stopped before tol (kept; 'Converged' "
                   "above is the fit's own)." if unconverged else ""))
    analytic = ("std err: analytic, conditional on the selected support "
                f"({res.cov_method}; cov_params()).")
    if res.bootstrap_pending:
        return (f"{analytic}  The bootstrap ({res._deferred['n_boot']} stratified refits of "
                "the whole estimator, selection included) runs on first use: "
                "res.conf_int(), res.boot_se, res.support_freq, or fit(n_boot=B) at once.")
    return (f"{analytic}  No bootstrap (n_boot=0, or a model built from moments): no "
            "bootstrap standard errors, intervals or selection frequencies"
            + ("." if robust else "; robust intervals: summary(intervals='robust')."))


def _fit_notes(res: NegDROResults, *, shown: int, show: str) -> list[str]:
    """The rest: rows not shown, the refit, identification, convergence, the equal-risk
    test, the intercept and population moments."""
    s, ident, notes = res.settings, res.identification, []
    if _first_column(res):
        notes.append(f"The outcome is the first column, {res.endog_name!r}, regressed on the "
                     "others: outcome= was not given.")
    if show == "selected" and shown < len(res.params):
        notes.append(f"{len(res.params) - shown} covariates neither selected nor selected "
                     f"in >= {SHOWN_FREQ:.0%} of refits are not shown; summary(show='all') "
                     "lists them.")
    if res.solver.refit == "invariant":
        notes.append("Coefficients on the support refitted by gradient invariance, eq. (31); "
                     "Stationarity refers to the last Phi_mu stage.")
    elif s.get("refit") == "invariant" and res.solver.refit == "negdro":
        notes.append("The gradient-invariance refit is not identified on the support (the "
                     "environments' second moments differ too little there); the Phi_mu "
                     "fit is reported.")
    if ident is not None and not ident.holds:
        notes.append(f"{ident.failure}; " + identification_advice(res.can_resample))
    if not res.converged:
        notes.append(f"The solver did not reach tol = {s['tol']:g}: treat the estimate "
                     "with care, or raise max_iter.")
    if res.invariance is not None:
        notes.append(str(res.invariance))
    if ident is not None and res.fit_intercept:
        notes.append("The margin leaves out the constant column, which is never intervened "
                     "on.")
    if res.population:
        notes.append("Fitted on population moments: No. Observations is infinite.")
    return notes


def _wrap(note: str, width: int = WIDTH, indent: str = "    ") -> str:
    """A note in lines of ``width``, indented under its number; words and hyphenated
    names ("GMM-BIC") are never split."""
    return textwrap.fill(note, width, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False)


def _short(text: str, k: int) -> str:
    """``text``, cut to ``k`` characters with "..." when longer (a header cell)."""
    return text if len(text) <= k else text[:k - 3] + "..."


def _widths(columns: list[list[tuple[str, str]]], width: int, sep: int) -> list[int]:
    """Column widths for (label, value) pairs that fill ``width``: labels as wide as the
    longest, values share what is left (at least as wide as the longest)."""
    labels = [max(len(a) for a, _ in col) for col in columns]
    values = [max(len(b) for _, b in col) for col in columns]
    spare = max(width - sum(labels) - sum(values) - sep * (2 * len(columns) - 1), 0)
    values = [v + spare // len(columns) + (k == 0) * (spare % len(columns))
              for k, v in enumerate(values)]
    return [w for pair in zip(labels, values, strict=True) for w in pair]


def _table(rows: list[list[str]], headers: list[str], stubs: list[str], stub_header: str,
           width: int = WIDTH) -> SimpleTable:
    """A table of ``rows`` as wide as the header table (``width``): data columns as wide
    as their longest entry (at least 8) plus a space; the stub column, left-aligned,
    takes the rest."""
    cols = [max(8, *(len(c) for c in column)) + 1 for column in zip(headers, *rows,
                                                               strict=True)]
    stub = max(len(stub_header), *(len(t) for t in stubs), width - sum(cols) - len(cols))
    table = SimpleTable(rows, headers=headers, stubs=stubs,
                        txt_fmt={"data_fmts": ["%s"], "header_align": "r",
                                 "colwidths": [stub, *cols]})
    table[0][0].data, table[0][0].datatype = stub_header, "stub"   # the header row's stub
    return table


class PathResult(Saveable):
    """NegDRO along a grid of gamma (like the paper's Figures 5 and 7).

    Attributes
    ----------
    gammas : ndarray
    params : pandas.DataFrame
        Coefficients, one row per gamma.
    support : pandas.DataFrame of bool
        Selected covariates per gamma.
    risks : pandas.DataFrame
        Environment risks ``R_e(b)`` at each estimate.
    objective : pandas.Series
        ``Phi_mu(b)`` at each estimate (its gamma's objective).
    invariance_pvalue : pandas.Series
        p-value of the equal-risk test at each estimate (NaN without rows).
    refit : pandas.Series of str
        How each estimate's coefficients were computed (``SolverOutput.refit``).
    """

    def __init__(self, *, gammas, params, support, risks, objective, invariance_pvalue,
                 refit) -> None:
        self.gammas = np.asarray(gammas, dtype=np.float64)
        self.params, self.support, self.risks = params, support, risks
        self.objective, self.invariance_pvalue = objective, invariance_pvalue
        self.refit = refit

    @classmethod
    def from_fits(cls, gammas: FloatArray, fits: list[NegDROResults]) -> PathResult:
        """The path from one fit per gamma (in the order of ``gammas``)."""
        idx = pd.Index(gammas, name="gamma")
        names, envs = fits[0].params.index, fits[0].risks.index
        return cls(
            gammas=gammas,
            params=pd.DataFrame([r.params for r in fits], index=idx, columns=names),
            support=pd.DataFrame([r.support for r in fits], index=idx, columns=names),
            risks=pd.DataFrame([r.risks for r in fits], index=idx, columns=envs),
            objective=pd.Series([r.objective for r in fits], index=idx, name="objective"),
            invariance_pvalue=pd.Series(
                [np.nan if r.invariance is None else r.invariance.pvalue for r in fits],
                index=idx, name="equal-risk p"),
            refit=pd.Series([r.solver.refit for r in fits], index=idx, name="refit"))

    def to_frame(self) -> pd.DataFrame:
        """One row per gamma: support size, worst and mean environment risk, ``Phi_mu``,
        the equal-risk p-value and the refit; the coefficients are in ``params``."""
        return pd.DataFrame({"selected": self.support.sum(axis=1),
                             "max risk": self.risks.max(axis=1),
                             "mean risk": self.risks.mean(axis=1),
                             "Phi_mu": self.objective,
                             "equal-risk p": self.invariance_pvalue,
                             "refit": self.refit.map(lambda r: _REFIT_LABELS.get(r, r))})

    def summary(self) -> NegDROSummary:
        """:meth:`to_frame` as a table (text, HTML, LaTeX), with the support of each gamma
        and a note on why the estimates may coincide."""
        frame = self.to_frame()
        names = self.support.columns
        rows = [[f"{row['selected']:d}", _num(row["max risk"]), _num(row["mean risk"]),
                 _num(row["Phi_mu"]), "n/a" if np.isnan(row["equal-risk p"])
                 else f"{row['equal-risk p']:.3g}", row["refit"]]
                for _, row in frame.iterrows()]
        table = _table(rows, ["selected", "max risk", "mean risk", "Phi_mu", "risk p",
                              "refit"], [f"{g:g}" for g in self.gammas], "gamma")
        supports = {tuple(names[m]) for m in self.support.to_numpy()}
        smry = NegDROSummary()
        smry.tables = [table]
        notes = ["risk p = p-value of the equal-risk test at the estimate; coefficients: "
                 ".params, supports: .support."]
        if len(supports) == 1 and (self.refit != "negdro").all():
            notes.append("Every gamma selected the same support "
                         f"({', '.join(map(str, next(iter(supports)))) or 'none'}); with the "
                         "default refit the coefficients on it do not depend on gamma.  "
                         "refit='negdro' shows Phi_mu's own path (the paper's Figures 5 and 7).")
        smry.add_extra_txt([_wrap(f"[{k}] {t}")
                            for k, t in enumerate(notes, start=1)])
        return smry

    def plot(self, beta_star: ArrayLike | None = None):
        """Coefficients and environment risks along gamma; returns the Figure."""
        from .plotting import plot_path

        return plot_path(self, beta_star=beta_star)

    def __repr__(self) -> str:
        return (f"<PathResult: {len(self.gammas)} gammas in [{self.gammas.min():g}, "
                f"{self.gammas.max():g}], p={self.params.shape[1]}>")
