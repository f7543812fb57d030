"""The NegDRO model: data in, :class:`~negdro_stats.results.NegDROResults` out.

``NegDRO(data, env).fit().summary()``.  The constructor holds the specification (data,
environments, outcome, gamma) and validates it once; ``fit`` holds the algorithm options
(the linearmodels split).  All data checks live in :func:`_prepare`; everything after it
works on the :class:`~negdro_stats.moments.Moments` built there in one pass.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._typing import ArrayLike
from ._validation import check_int, check_option, check_scalar
from .diagnostics import IdentificationResult, check_condition_1b
from .exceptions import ConvergenceWarning, DataError, DataWarning, IdentificationWarning
from .moments import DEFAULT_CHUNK_ROWS, MomentAccumulator, Moments
from .report import (
    IdentificationReport,
    RiskInvarianceTest,
    identification_report,
    risk_invariance_test,
)
from .results import NegDROResults
from .solvers import (
    DEFAULT_MU,
    DEFAULT_TAU,
    DEFAULT_THRESHOLD,
    INNER_SOLVERS,
    METHODS,
    REFITS,
    negdro,
)

__all__ = ["NegDRO", "diagnose"]


class NegDRO:
    r"""Negative-weighted distributionally robust optimisation (NegDRO) for causal
    invariance learning from several environments.

    Estimates the causal outcome model :math:`\beta^*` of
    :math:`Y^e = \beta^{*T} X^e + \varepsilon_Y^e` (eq. (1)) by

    .. math::

        \hat b \in \arg\min_b \max_{w \in \mathcal U(\gamma)} \sum_e w_e \hat R_e(b),\quad
        \mathcal U(\gamma) = \{w : \textstyle\sum_e w_e = 1,\ \min_e w_e \ge -\gamma\},

    eq. (9), with :math:`\hat R_e(b)` the mean squared error in environment ``e``.  The
    negative weights enforce equal risks across environments (the risk-invariance
    principle (2)); :math:`\gamma` sets how strongly.  Computed by Algorithm 3 of the
    paper (Appendix F.3) with a fast SQP inner solver, and by default a refit on the
    selected support by gradient invariance (31) where that is identified; see
    :meth:`fit`.

    Parameters
    ----------
    data : pandas.DataFrame or array of shape (n, p + 1)
        The outcome and the covariates (and optionally the environment column).
    env : str or array-like of length n
        Environment labels, or the name of the column of ``data`` that holds them.
    outcome : str, optional
        Name of the outcome column; default the first column (other than ``env``).
        For an array, the outcome is column 0.
    gamma : float, default 20
        Invariance strength (eq. (9)); defines the estimand.  20 is the paper's choice.
    fit_intercept : bool, default False
        Add a constant covariate.  The paper's model has none.  Caveat: a constant is
        never intervened on, so it is never identified by heterogeneity alone
        (``A(w)`` is 0 in its direction); its coefficient comes from the
        mean-risk part of the objective.
    missing : {"raise", "drop"}
        What to do with rows holding NaN or infinite values.

    Raises
    ------
    DataError
        (a ``ValueError``) for NaN/inf with ``missing="raise"``, fewer than two
        environments, an environment with fewer than two rows, non-numeric covariates,
        unknown column names, length mismatch, a constant outcome, duplicate column
        names, a constant covariate, or collinear covariates.

    Warns
    -----
    DataWarning
        When an environment has fewer rows than covariates, or rows were dropped.

    Examples
    --------
    >>> from negdro_stats import NegDRO, simulate
    >>> df = simulate.eq33(p=6).sample(2000, rng=0)      # beta* = (0.5, 0, -0.5, 0, 0, 0)
    >>> res = NegDRO(df, env="env", outcome="Y").fit()
    >>> res.support[res.support].index.tolist()
    ['X1', 'X3']
    >>> res.params.round(2).tolist()
    [0.5, 0.0, -0.5, 0.0, 0.0, 0.0]
    >>> res.solver.refit
    'invariant'
    >>> NegDRO(df, env="env", outcome="Y").fit(refit="negdro").params.round(1).tolist()
    [0.4, 0.0, -0.5, 0.0, 0.0, 0.0]
    """

    def __init__(
        self,
        data: pd.DataFrame | ArrayLike,
        env: str | ArrayLike,
        *,
        outcome: str | None = None,
        gamma: float = 20.0,
        fit_intercept: bool = False,
        missing: str = "raise",
    ) -> None:
        self.gamma = check_scalar(gamma, "gamma", "NegDRO", min_val=0)
        self.fit_intercept = bool(fit_intercept)
        self.missing = check_option(missing, "missing", "NegDRO", ["raise", "drop"])
        self.data = data
        self.moments, self.exog_names, self.endog_name, self._rows = _prepare(
            data, env, outcome, self.missing, self.fit_intercept)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_arrays(
        cls,
        y: ArrayLike,
        X: ArrayLike,
        env: ArrayLike,
        *,
        names: Sequence[str] | None = None,
        outcome: str = "y",
        **kwargs: Any,
    ) -> NegDRO:
        """Build from an outcome vector, a covariate matrix and environment labels."""
        X = np.asarray(X)
        if X.ndim != 2:
            raise DataError(f"X must be a 2-d array (n, p); got shape {X.shape}.")
        y = np.asarray(y)
        if y.ndim != 1:
            raise DataError(f"y must be a 1-d array of length n; got shape {y.shape}.")
        if len(y) != len(X):
            raise DataError(f"y has {len(y)} rows but X has {len(X)}; they must match.")
        names = [f"x{j + 1}" for j in range(X.shape[1])] if names is None else list(names)
        if len(names) != X.shape[1]:
            raise DataError(f"names has {len(names)} entries for {X.shape[1]} columns of X.")
        if outcome in names:
            raise DataError(f"The outcome name {outcome!r} is also a covariate name.")
        return cls(_Columns(y, X, names, outcome), env, outcome=outcome, **kwargs)

    @classmethod
    def from_formula(
        cls, formula: str, data: pd.DataFrame, env: str | ArrayLike, **kwargs: Any
    ) -> NegDRO:
        """Build from a formula such as ``"y ~ 0 + x1 + x2 + np.log(x3)"`` (via formulaic).

        The usual formula rules apply: an intercept is included (as
        ``fit_intercept=True``) unless the formula removes it with ``0 +`` or ``- 1``.
        The paper's model has no intercept, so write ``"y ~ 0 + x1 + x2"`` for it.
        """
        from formulaic import model_matrix

        if not isinstance(data, pd.DataFrame):
            raise DataError("from_formula needs a pandas DataFrame as data.")
        env_values = data[env].to_numpy() if isinstance(env, str) and env in data else env
        try:
            y, X = model_matrix(formula, data, na_action="ignore")
        except Exception as exc:                       # formulaic's errors vary by cause
            raise DataError(f"Could not parse formula {formula!r}: {exc}") from exc
        has_const = "Intercept" in X.columns
        X = X.drop(columns=["Intercept"]) if has_const else X
        if y.shape[1] != 1:
            raise DataError(f"The formula must have exactly one outcome; got {list(y.columns)}.")
        frame = pd.concat([pd.DataFrame(y), pd.DataFrame(X)], axis=1)
        kwargs.setdefault("fit_intercept", has_const)
        return cls(frame, np.asarray(env_values), outcome=str(y.columns[0]), **kwargs)

    @classmethod
    def from_moments(cls, moments: Moments, *, gamma: float = 20.0) -> NegDRO:
        """Build from per-environment moments (population moments of a design, or moments
        accumulated elsewhere); ``predict`` then needs explicit covariates."""
        self = cls.__new__(cls)
        self.gamma = check_scalar(gamma, "gamma", "NegDRO", min_val=0)
        self.fit_intercept, self.missing, self.data = False, "raise", None
        _check_moments(moments)
        self.moments, self._rows = moments, None
        self.exog_names, self.endog_name = list(moments.names), moments.outcome
        return self

    # ------------------------------------------------------------------------- fit
    def fit(
        self,
        *,
        method: str = "algorithm3",
        inner: str = "sqp",
        mu: float = DEFAULT_MU,
        tau: float = DEFAULT_TAU,
        threshold: float = DEFAULT_THRESHOLD,
        step_size: float | None = None,
        max_iter: int | None = None,
        tol: float | None = None,
        refit: str = "auto",
        check_identification: bool = True,
    ) -> NegDROResults:
        r"""Fit NegDRO.

        Parameters
        ----------
        method : {"algorithm3", "algorithm1", "algorithm2"}
            ``"algorithm3"`` (default): Appendix F.3 -- minimise the tau-adjusted
            objective (124), keep covariates with standardised
            :math:`|b_j| d_j / s_y \ge` ``threshold``, halve tau and repeat on them until
            the support is stable, then minimise :math:`\Phi_\mu` (19) on the support.
            ``"algorithm1"``: gradient descent-maximisation on :math:`\Phi_\mu`, eqs.
            (22)-(24), as printed (no thresholding).  ``"algorithm2"``: subgradient
            descent-maximisation on :math:`\Phi` (50) with the proximal output rule (52).
        inner : {"sqp", "gdm"}
            Inner solver of Algorithm 3: SQP on the max of quadratics (default; about
            10 steps, each one p x p Cholesky) or Algorithm 1 as printed.
        mu : float, default 1e-3
            Ridge penalty on the weights in (19), in units of the outcome's mean square
            (counted once, as in (19), not once per environment as in (22)).  Small
            values keep the estimator close to (17); 1e-3 smooths risk differences of
            about a thousandth of E[Y^2], well below sampling noise.
        tau : float, default 0.1
            Initial adjustment tau0 of (124); halved at every stage.
        threshold : float, default 0.15
            Hard threshold c0 on standardised coefficients :math:`|b_j| d_j / s_y`, with
            :math:`d_j, s_y` the root mean squares of :math:`X_j` and :math:`Y` averaged
            over environments.  Scale-free.  Measured on eq. (33) at n = 2,000 per
            environment, spurious standardised coefficients of the first stage reach
            about 0.1 and causal ones are about 0.5; 0.15 separates them.  Set 0 to get
            the unthresholded NegDRO estimate.
        step_size : float, optional
            Step size alpha of Algorithms 1 and 2 (standardised scale); default 1/L with
            :math:`L = 2(1 + \tau + c|E|)\max_e\|\Sigma_e\|`.
        max_iter : int, optional
            Iteration cap T: default 200 SQP steps per stage, or 10,000 iterations for
            Algorithms 1 and 2 (and ``inner="gdm"``).
        tol : float, optional
            Stop when the stationarity measure (gradient norm on the standardised
            scale; the proximal measure for Algorithm 2) is at most ``tol``; default
            1e-8 for SQP (which converges quadratically; near beta* the curvature of
            Phi_mu can be as small as 1/(1 + gamma|E|), so a 1e-6 gradient could leave
            an error of 1e-4) and 1e-6 for Algorithms 1 and 2.
        refit : {"auto", "negdro", "invariant"}
            Coefficients on the support selected by Algorithm 3.  ``"negdro"`` (the
            paper, verbatim): the minimiser of Phi_mu there.  ``"invariant"``: least
            squares on the gradient-invariance equations (31) restricted to the support
            (:func:`negdro_stats.solvers.invariant_refit`); under additive interventions
            it is consistent for beta* on any support that contains the causes, and it
            converges at the n^{-1/2} rate instead of about n^{-1/4}: mean error 0.012
            instead of 0.054 on eq. (33), p = 10, n = 2,000 per environment
            (benchmarks/bench_core.py).  ``"auto"`` (default): ``"invariant"`` when the
            environments' second moments differ on the support by well over their
            sampling noise (Condition 1b there, with room to spare), else ``"negdro"``
            -- as in the limited and weak intervention regimes of Example 3, where only
            Phi_mu identifies beta*.  ``results.solver.refit`` says which was used.

        Returns
        -------
        NegDROResults

        Warns
        -----
        ConvergenceWarning
            If a stage stopped at ``max_iter`` before reaching ``tol``.
        """
        method = check_option(method, "method", "NegDRO.fit", METHODS)
        inner = check_option(inner, "inner", "NegDRO.fit", INNER_SOLVERS)
        refit = check_option(refit, "refit", "NegDRO.fit", REFITS)
        mu = check_scalar(mu, "mu", "NegDRO.fit", min_val=0)
        if method == "algorithm1" or inner == "gdm":
            mu = check_scalar(mu, "mu", "NegDRO.fit (gradient methods)", min_val=0,
                              closed="neither")
        tau = check_scalar(tau, "tau", "NegDRO.fit", min_val=0)
        threshold = check_scalar(threshold, "threshold", "NegDRO.fit", min_val=0)
        if tol is not None:
            tol = check_scalar(tol, "tol", "NegDRO.fit", min_val=0, closed="neither")
        if step_size is not None:
            step_size = check_scalar(step_size, "step_size", "NegDRO.fit", min_val=0,
                                     closed="neither")
        if max_iter is not None:
            max_iter = check_int(max_iter, "max_iter", "NegDRO.fit", min_val=1)
        out = negdro(self.moments, gamma=self.gamma, method=method, inner=inner, mu=mu,
                     tau=tau, threshold=threshold, step_size=step_size, max_iter=max_iter,
                     tol=tol, refit=refit)
        identification = self._condition_1b() if check_identification else None
        invariance = self._risk_test(out.b)
        if identification is not None and not identification.holds:
            warnings.warn(
                "Condition 1b fails on these data (identifiability margin "
                f"{identification.margin:.3g}): the environments may not differ enough to "
                "identify the causal model; see NegDRO.diagnose().",
                IdentificationWarning, stacklevel=2)
        if not out.converged:
            warnings.warn(
                f"NegDRO ({method}) did not reach tol = {out.params['tol']:g} within max_iter = "
                f"{out.params['max_iter']} (stationarity {out.grad_norm:.2e}); raise "
                "max_iter, or use the default method='algorithm3'.",
                ConvergenceWarning, stacklevel=2)
        return NegDROResults(model=self, solver=out, identification=identification,
                             invariance=invariance)

    def _risk_test(self, b: np.ndarray) -> RiskInvarianceTest | None:
        """The equal-risks test at ``b`` (needs the rows; None for moment-only models)."""
        if self._rows is None:
            return None
        names = self.exog_names
        keep = [j for j, n in enumerate(names) if n != "const"]
        intercept = b[names.index("const")] if self.fit_intercept else 0.0
        sums = self._rows.residual_sums(b[keep], intercept, self.moments.n_envs)
        return risk_invariance_test(*sums, self.moments.envs)

    def _condition_1b(self) -> IdentificationResult:
        """Condition 1b on the moments, without the constant column (never intervened on,
        so it would make the margin 0; STYLE.md's intercept decision)."""
        mom = self.moments
        if self.fit_intercept:
            mom = mom.subset([j for j, n in enumerate(mom.names) if n != "const"])
        return check_condition_1b(mom)

    def diagnose(
        self,
        *,
        n_boot: int = 199,
        n_perm: int = 199,
        alpha: float = 0.05,
        rng: np.random.Generator | int | None = None,
        results: NegDROResults | None = None,
        verbose: bool | None = None,
    ) -> IdentificationReport:
        """How well do these environments identify beta*?  (Condition 1b/1a with
        uncertainty, and a test of the invariance assumption.)

        Parameters
        ----------
        n_boot : int, default 199
            Bootstrap resamples (rows drawn with replacement within each environment) for
            a lower confidence bound of the relative margin; 0 skips it.
        n_perm : int, default 199
            Permutations of the environment labels for the test of "no heterogeneity";
            0 skips it.
        alpha : float, default 0.05
            One minus the confidence level of the bound.
        rng : numpy Generator or seed, optional
        results : NegDROResults, optional
            A fit to test for equal environment risks; default: ``self.fit()``.
        verbose : bool, optional
            Show a progress bar (tqdm, if installed); default: when stderr is a terminal.

        Returns
        -------
        IdentificationReport
            ``print(report)`` explains the result in words.

        Notes
        -----
        Each resample or permutation rebuilds the per-environment moments from the rows,
        so the cost is ``(n_boot + n_perm) n p^2``.  A constant column (``fit_intercept``)
        is left out of the margin: it is never intervened on.
        """
        if self._rows is None:
            raise DataError("diagnose() resamples rows; this model was built from moments. "
                            "Use negdro_stats.diagnostics.check_condition_1b on them.")
        n_boot = check_int(n_boot, "n_boot", "NegDRO.diagnose", min_val=0)
        n_perm = check_int(n_perm, "n_perm", "NegDRO.diagnose", min_val=0)
        alpha = check_scalar(alpha, "alpha", "NegDRO.diagnose", min_val=0, max_val=1,
                             closed="neither")
        rng = np.random.default_rng(rng)
        if results is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", IdentificationWarning)
                results = self.fit()
        X, y, codes = self._rows.arrays()
        keep = [j for j, n in enumerate(self.exog_names) if n != "const"]
        return identification_report(
            X, y, codes, envs=self.moments.envs,
            names=[self.exog_names[j] for j in keep], condition_1b=self._condition_1b(),
            invariance=self._risk_test(results.params.to_numpy()), n_boot=n_boot,
            n_perm=n_perm, alpha=alpha, rng=rng,
            progress=_progress_bar(n_boot + n_perm, verbose, "diagnose"))

    def _exog(self) -> pd.DataFrame | np.ndarray | None:
        """The covariates of the fitted data (for ``predict``), or None without rows."""
        if self.data is None or isinstance(self.data, pd.DataFrame):
            return self.data
        if isinstance(self.data, _Columns):
            return self.data.X
        return np.asarray(self.data)[:, 1:]

    def __repr__(self) -> str:
        m = self.moments
        return (f"<NegDRO: outcome={self.endog_name!r}, p={m.p}, envs={m.n_envs}, "
                f"nobs={m.nobs:g}, gamma={self.gamma:g}>")


def diagnose(
    data: pd.DataFrame | ArrayLike, env: str | ArrayLike, *, outcome: str | None = None,
    missing: str = "raise", **kwargs: Any,
) -> IdentificationReport:
    """Function form of :meth:`NegDRO.diagnose`: ``diagnose(df, "env", outcome="y")``.

    Keyword arguments other than ``outcome`` and ``missing`` go to :meth:`NegDRO.diagnose`.
    """
    return NegDRO(data, env, outcome=outcome, missing=missing).diagnose(**kwargs)


# ------------------------------------------------------------------------- validation
def _prepare(
    data: Any, env: Any, outcome: str | None, missing: str, fit_intercept: bool
) -> tuple[Moments, list[str], str, _Rows]:
    """Validate the user's data and build the moments in one pass over the rows."""
    if isinstance(data, _Columns):
        return _prepare_arrays(data, env, missing, fit_intercept)
    if isinstance(data, pd.DataFrame):
        frame = data
    else:
        arr = np.asarray(data)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise DataError("data must be a DataFrame or a 2-d array with the outcome in "
                            f"column 0 and at least one covariate; got shape {arr.shape}.")
        names = [f"x{j}" for j in range(1, arr.shape[1])]
        return _prepare(_Columns(arr[:, 0], arr[:, 1:], names, "y"), env, outcome, missing,
                        fit_intercept)
    columns = [str(c) for c in frame.columns]
    dupes = sorted({c for c in columns if columns.count(c) > 1})
    if dupes:
        raise DataError(f"data has duplicate column names {dupes}; rename them.")
    n = len(frame)
    if isinstance(env, str):
        if env not in columns:
            raise DataError(f"env={env!r} is not a column of data; columns are {columns}. "
                            "Pass a column name or an array of labels of length n.")
        env_values = frame[env].to_numpy()
        columns = [c for c in columns if c != env]
    else:
        env_values = np.asarray(env)
        if env_values.ndim != 1 or len(env_values) != n:
            raise DataError(f"env has {env_values.size} labels in shape {env_values.shape} "
                            f"but data has {n} rows; pass one label per row.")
    if outcome is None:
        outcome = columns[0]
    elif outcome not in columns:
        raise DataError(f"outcome={outcome!r} is not a column of data; columns are {columns}.")
    covariates = [c for c in columns if c != outcome]
    if not covariates:
        raise DataError("data has no covariate columns besides the outcome.")
    sub = frame.loc[:, [outcome, *covariates]]
    non_numeric = [c for c in sub.columns if not pd.api.types.is_numeric_dtype(sub[c])
                   or pd.api.types.is_bool_dtype(sub[c])]
    if non_numeric:
        raise DataError(f"Columns {non_numeric} are not numeric. Encode them first (e.g. "
                        "pandas.get_dummies) or use NegDRO.from_formula.")

    def block(rows: slice | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values = sub.iloc[rows].to_numpy(dtype=np.float64)     # one chunk, copied once
        return values[:, 1:], values[:, 0]

    return _accumulate(block, n, env_values, covariates, outcome, missing, fit_intercept)


class _Rows:
    """Row access kept by the model for diagnostics that resample rows."""

    def __init__(self, block, rows: np.ndarray | None, codes: np.ndarray) -> None:
        self.block, self.rows, self.codes = block, rows, codes

    def residual_sums(self, b: np.ndarray, intercept: float, n_envs: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per environment: rows, sum of r^2 and of r^4 for ``r = y - X b - intercept``,
        one chunk at a time (O(n p))."""
        n, s2, s4 = (np.zeros(n_envs) for _ in range(3))
        total = len(self.codes)
        for start in range(0, total, DEFAULT_CHUNK_ROWS):
            stop = min(start + DEFAULT_CHUNK_ROWS, total)
            X, y = self.block(slice(start, stop) if self.rows is None
                              else self.rows[start:stop])
            r2 = (np.asarray(y, dtype=np.float64) - np.asarray(X, dtype=np.float64) @ b
                  - intercept) ** 2
            codes = self.codes[start:stop]
            n += np.bincount(codes, minlength=n_envs)
            s2 += np.bincount(codes, weights=r2, minlength=n_envs)
            s4 += np.bincount(codes, weights=r2**2, minlength=n_envs)
        return n, s2, s4

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(X, y, codes)`` as float64 arrays of the rows used (one copy)."""
        X, y = self.block(slice(None) if self.rows is None else self.rows)
        return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), self.codes


class _Columns:
    """Outcome vector and covariate matrix kept as arrays (``NegDRO.from_arrays``)."""

    def __init__(self, y: np.ndarray, X: np.ndarray, names: list[str], outcome: str) -> None:
        self.y, self.X, self.names, self.outcome = y, X, names, outcome


def _prepare_arrays(cols: _Columns, env: Any, missing: str, fit_intercept: bool):
    n = len(cols.y)
    env_values = np.asarray(env)
    if env_values.ndim != 1 or len(env_values) != n:
        raise DataError(f"env has {env_values.size} labels in shape {env_values.shape} "
                        f"but data has {n} rows; pass one label per row.")
    for name, arr in (("y", cols.y), ("X", cols.X)):
        if not (np.issubdtype(arr.dtype, np.number) and not np.issubdtype(arr.dtype, bool)):
            raise DataError(f"{name} must be numeric; got dtype {arr.dtype}.")

    def block(rows: slice | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return cols.X[rows], cols.y[rows]

    return _accumulate(block, n, env_values, cols.names, cols.outcome, missing, fit_intercept)


def _accumulate(block, n, env_values, covariates, outcome, missing, fit_intercept):
    """One pass over the rows, chunk by chunk; NaN handling; then the moment checks."""
    env_missing = pd.isna(env_values)
    if env_missing.any():
        raise DataError(f"env has {int(env_missing.sum())} missing labels; drop those rows.")
    keep = None
    if missing == "drop":
        keep = np.ones(n, dtype=bool)
        for start in range(0, n, DEFAULT_CHUNK_ROWS):
            X, y = block(slice(start, start + DEFAULT_CHUNK_ROWS))
            keep[start:start + len(y)] = np.isfinite(X).all(axis=1) & np.isfinite(y)
        if keep.all():
            keep = None
        else:
            warnings.warn(f"Dropped {int((~keep).sum())} of {n} rows with NaN or infinite "
                          "values (missing='drop').", DataWarning, stacklevel=4)
    rows = np.arange(n) if keep is None else np.flatnonzero(keep)
    codes, labels = pd.factorize(env_values if keep is None else env_values[keep], sort=True)
    acc = MomentAccumulator(p=len(covariates), n_envs=len(labels))
    for start in range(0, len(rows), DEFAULT_CHUNK_ROWS):
        stop = start + DEFAULT_CHUNK_ROWS
        X, y = block(slice(start, stop) if keep is None else rows[start:stop])
        acc.add(X, y, codes[start:stop])
    mom = acc.finish(envs=tuple(labels.tolist()), names=covariates, outcome=outcome)
    if not (np.isfinite(mom.Sigma).all() and np.isfinite(mom.sxy).all()
            and np.isfinite(mom.syy).all()):
        bad = 0
        for start in range(0, n, DEFAULT_CHUNK_ROWS):            # only on the error path
            X, y = block(slice(start, start + DEFAULT_CHUNK_ROWS))
            bad += int((~(np.isfinite(X).all(axis=1) & np.isfinite(y))).sum())
        raise DataError(f"data has {bad} rows with NaN or infinite values. Clean them, or "
                        "pass missing='drop'.")
    if fit_intercept:
        mom = mom.add_constant("const")
    _check_moments(mom)
    return mom, list(mom.names), outcome, _Rows(block, None if keep is None else rows, codes)


def _check_moments(mom: Moments) -> None:
    """Checks that need only the moments: environments, sizes, constants, collinearity."""
    if mom.n_envs < 2:
        raise DataError(f"NegDRO needs at least 2 environments; got {mom.n_envs} "
                        f"({list(mom.envs)}). Invariance cannot be learnt from one.")
    small = [e for e, n in zip(mom.envs, mom.n, strict=True) if n < 2]
    if small:
        raise DataError(f"Environments {small} have fewer than 2 rows; drop or merge them.")
    thin = [e for e, n in zip(mom.envs, mom.n, strict=True) if n < mom.p]
    if thin:
        warnings.warn(f"Environments {thin} have fewer rows than the {mom.p} covariates; "
                      "their second moments are singular and estimates will be noisy.",
                      DataWarning, stacklevel=4)
    var_y = mom.syy - mom.mean_y**2
    if np.all(var_y <= 1e-12 * np.maximum(mom.syy, 1e-300)):
        raise DataError(f"The outcome {mom.outcome!r} is constant; there is nothing to model.")
    var_x = np.einsum("ejj->ej", mom.Sigma) - mom.mean_x**2           # within-env variances
    const = [name for j, name in enumerate(mom.names) if name != "const"
             and np.all(var_x[:, j] <= 1e-12 * np.maximum(mom.Sigma[:, j, j], 1e-300))]
    if const:
        raise DataError(f"Covariates {const} are constant. Drop them, or use "
                        "fit_intercept=True for an intercept.")
    d, _ = mom.scales()
    corr = mom.Sigma.mean(axis=0) / np.multiply.outer(d, d)
    try:                         # Cholesky: L_jj^2 = share of X_j not explained by X_<j
        resid = np.diag(np.linalg.cholesky(corr)) ** 2
    except np.linalg.LinAlgError:
        resid = np.zeros(1)
    if resid.min() <= 1e-10:
        vals, vecs = np.linalg.eigh(corr)                         # only on the error path
        involved = [mom.names[j] for j in np.flatnonzero(np.abs(vecs[:, 0]) > 1e-3)]
        raise DataError(f"Covariates {involved} are collinear (the pooled second-moment "
                        "matrix is singular); drop one of them.")
    if resid.min() <= 1e-8:
        warnings.warn(f"A covariate is nearly collinear with the others (only "
                      f"{resid.min():.1e} of its second moment is unexplained); estimates "
                      "may be unstable.", DataWarning, stacklevel=4)


def _progress_bar(total: int, verbose: bool | None, desc: str):
    """A tqdm wrapper when asked for (or when stderr is a terminal), else None."""
    import sys

    if verbose is False or (verbose is None and not sys.stderr.isatty()) or total == 0:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return lambda steps: tqdm(steps, total=total, desc=desc)
