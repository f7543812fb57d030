"""A scikit-learn regressor around :class:`~negdro_stats.NegDRO` (needs ``scikit-learn``).

``NegDRORegressor().fit(X, y, env=env)`` fits NegDRO and keeps its results (``results_``);
in a ``Pipeline``, ``cross_validate`` or a search, the environment labels reach ``fit``
through scikit-learn's metadata routing::

    with sklearn.config_context(enable_metadata_routing=True):
        reg = NegDRORegressor().set_fit_request(env=True)
        cross_validate(make_pipeline(StandardScaler(), reg), X, y, cv=LeaveOneGroupOut(),
                       params={"env": env, "groups": env},
                       scoring="neg_mean_squared_error")

With ``LeaveOneGroupOut`` over environments each fold's score is the risk on one unseen
environment, so ``-scores.min()`` is the worst held-out risk; with folds that hold out
several environments, :func:`worst_environment_scorer` scores the worst of them.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

try:
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.metrics import make_scorer
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:                       # optional dependency
    raise ImportError("NegDRORegressor needs scikit-learn (>= 1.6): "
                      "pip install 'negdro-stats[sklearn]'.") from exc

from ._typing import ArrayLike, FloatArray
from .data.container import split_intercept
from .exceptions import DataError
from .model import NegDRO
from .results.results import NegDROResults

__all__ = ["NegDRORegressor", "worst_environment_mse", "worst_environment_scorer"]


class NegDRORegressor(RegressorMixin, BaseEstimator):
    """NegDRO as a scikit-learn regressor: ``fit(X, y, env=env)``, ``predict(X)``.

    Parameters
    ----------
    gamma : float, default 20
        Invariance strength (eq. (9)), as in :class:`~negdro_stats.NegDRO`.
    fit_intercept : bool, default True
        Fit a constant (never thresholded or intervened on).  True, unlike
        :class:`~negdro_stats.NegDRO` (the paper's model has none), because scikit-learn
        pipelines centre the covariates (``StandardScaler``) and not the outcome.
    refit : {"auto", "negdro", "invariant"}, default "auto"
        The selection and refit route of :meth:`NegDRO.fit <negdro_stats.NegDRO.fit>`.
    n_boot : int, default 0
        Bootstrap replicates for ``results_`` (standard errors, intervals, selection
        frequencies).  0 by default: cross-validation and searches refit many times and
        use only the coefficients.
    check_identification : bool, default True
        Compute Condition 1b's margin in each fit (a few ms for p <= 30), which warns
        with :class:`~negdro_stats.IdentificationWarning` when it fails.
    random_state : int, numpy Generator, numpy RandomState or None, default None
        Randomness of the bootstrap.
    solver_options : dict, optional
        Further solver settings for :meth:`NegDRO.fit <negdro_stats.NegDRO.fit>`
        (``method``, ``mu``, ``tau``, ``threshold``, ``max_iter``, ``tol``, ``test_level``, ...).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        0.0 when ``fit_intercept=False``.
    results_ : NegDROResults
        The full NegDRO fit: ``results_.summary()``, ``support``, ``identification``,
        environment risks, ...
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` is a DataFrame with string column names.

    Notes
    -----
    Covariates keep the column names of a DataFrame ``X`` (in ``results_`` and in the
    fit's warnings).  An ndarray has none: scikit-learn's ``x0``, ``x1``, ... stand in,
    and the fit's warnings and errors say where each is (``"x4 (the 5th column of
    X)"``).  In a ``Pipeline`` the steps before the regressor pass it an ndarray; call
    ``set_output(transform="pandas")`` on the pipeline to pass the columns' names on.

    Examples
    --------
    >>> from negdro_stats import simulate
    >>> from negdro_stats.regressor import NegDRORegressor
    >>> df = simulate.eq33(p=6).sample(2000, rng=0)
    >>> reg = NegDRORegressor(fit_intercept=False).fit(df.drop(columns=["Y", "env"]), df["Y"],
    ...                                                env=df["env"])
    >>> reg.coef_.round(2).tolist()
    [0.5, 0.0, -0.5, 0.0, 0.0, 0.0]
    """

    def __init__(
        self,
        gamma: float = 20.0,
        *,
        fit_intercept: bool = True,
        refit: str = "auto",
        n_boot: int = 0,
        check_identification: bool = True,
        random_state: int | np.random.Generator | None = None,
        solver_options: dict[str, Any] | None = None,
    ) -> None:
        self.gamma = gamma
        self.fit_intercept = fit_intercept
        self.refit = refit
        self.n_boot = n_boot
        self.check_identification = check_identification
        self.random_state = random_state
        self.solver_options = solver_options

    def fit(self, X: ArrayLike, y: ArrayLike, *, env: ArrayLike | None = None
            ) -> NegDRORegressor:
        """Fit NegDRO on covariates ``X``, outcome ``y`` and environment labels ``env``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n, p)
        y : array-like of shape (n,)
        env : array-like of shape (n,)
            The environment of each row (at least two environments, two rows each).
            In a ``Pipeline`` or ``cross_validate``, route it: enable metadata routing,
            call ``set_fit_request(env=True)`` and pass ``params={"env": env}``.

        Returns
        -------
        self

        Raises
        ------
        DataError
            Without ``env``, or for data NegDRO refuses (see :class:`~negdro_stats.NegDRO`).
        """
        _same_rows(X, y=y, env=env)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True,
                             ensure_min_samples=4)        # two environments of two rows
        if env is None:
            raise DataError(
                "NegDRORegressor.fit needs env, the environment label of each row: "
                "fit(X, y, env=labels). In a Pipeline, cross_validate or a search, enable "
                "metadata routing (sklearn.set_config(enable_metadata_routing=True)), call "
                "set_fit_request(env=True) on the regressor and pass params={'env': labels}.")
        env = np.asarray(env)
        if env.ndim != 1 or len(env) != len(y):
            raise DataError(f"env must hold one label per row of X: {len(y)} labels; got "
                            f"shape {env.shape}.")
        named = hasattr(self, "feature_names_in_")
        names = (list(self.feature_names_in_) if named
                 else [f"x{j}" for j in range(X.shape[1])])
        outcome = "y"
        while outcome in names:                  # a name the covariates do not use
            outcome = "_" + outcome

        def fit() -> NegDROResults:
            model = NegDRO.from_arrays(y, X, env, names=names, outcome=outcome,
                                       fit_intercept=self.fit_intercept, gamma=self.gamma)
            return model.fit(
                n_boot=self.n_boot, rng=_generator(self.random_state), refit=self.refit,
                check_identification=self.check_identification, **(self.solver_options or {}))

        self.results_: NegDROResults = fit() if named else _locating_columns(fit, len(names))
        self.coef_, self.intercept_ = split_intercept(self.results_.params,
                                                      self.results_.fit_intercept)
        return self

    def predict(self, X: ArrayLike) -> FloatArray:
        """Predictions ``X coef_ + intercept_``."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


def _generator(random_state: object) -> object:
    """scikit-learn's ``RandomState`` instances as a seeded numpy Generator; the rest
    (None, a seed, a Generator) as given, for NegDRO.fit to check."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31))
    return random_state


#: A name scikit-learn generates for a column of an ndarray (``x0``, ``x1``, ...).
_GENERATED_NAME = re.compile(r"\bx(0|[1-9][0-9]*)\b")


def _locating_columns(fit: Callable[[], NegDROResults], p: int) -> NegDROResults:
    """``fit()``, its warnings and its :class:`DataError` saying where each generated
    name is in ``X`` (:func:`_located`), for a user who sees only their own columns (an
    ndarray inside a ``Pipeline``).  The warnings are raised again from the caller of
    :meth:`NegDRORegressor.fit`, where the user's filters apply."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return fit()
    except DataError as exc:
        exc.args = (_located(str(exc), p),)
        raise
    finally:
        for w in caught:
            warnings.warn(_located(str(w.message), p), w.category, stacklevel=3)


def _located(message: str, p: int) -> str:
    """``message`` with each generated name ``xj`` (``j < p``) followed, where first
    named, by its column: ``"x4 (the 5th column of X)"``."""
    seen: set[int] = set()

    def locate(match: re.Match) -> str:
        j = int(match.group(1))
        if j >= p or j in seen:
            return match.group(0)
        seen.add(j)
        return f"{match.group(0)} (the {_ordinal(j + 1)} column of X)"

    return _GENERATED_NAME.sub(locate, message)


def _ordinal(k: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st, ..."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _same_rows(X: Any, **others: Any) -> None:
    """scikit-learn matches rows by position; pandas by index.  A Series whose index is
    not X's (a shuffled or sorted copy) would be matched to the wrong rows in silence, so
    it is refused."""
    if not isinstance(X, pd.DataFrame):
        return
    for name, value in others.items():
        if (isinstance(value, pd.Series) and len(value) == len(X)       # (a length
                and not value.index.equals(X.index)):            # error comes later)
            raise DataError(f"{name} is a pandas Series whose index differs from X's; "
                            "scikit-learn matches rows by position, so pass "
                            f"{name}.reindex(X.index) (rows by label) or "
                            f"{name}.to_numpy() (rows by position).")


def worst_environment_mse(y_true: ArrayLike, y_pred: ArrayLike, *, env: ArrayLike) -> float:
    """The largest mean squared error over the environments in ``env``:
    ``max_e mean_{i in e} (y_i - yhat_i)^2`` (the worst-case risk NegDRO guards)."""
    y_true, y_pred, env = (np.asarray(a) for a in (y_true, y_pred, env))
    if not len(y_true) == len(y_pred) == len(env):
        raise DataError(f"y_true, y_pred and env must have the same length; got "
                        f"{len(y_true)}, {len(y_pred)} and {len(env)}.")
    codes = np.unique(env, return_inverse=True)[1]
    sq = (y_true - y_pred) ** 2
    return float(np.max(np.bincount(codes, weights=sq) / np.bincount(codes)))


def worst_environment_scorer():
    """A scorer of ``-worst_environment_mse`` (greater is better) that asks for ``env``
    through metadata routing; call it with routing enabled, and pass ``env`` in the
    ``params`` of ``cross_validate`` (it is routed to ``fit`` and to this scorer)."""
    return make_scorer(worst_environment_mse, greater_is_better=False
                       ).set_score_request(env=True)
