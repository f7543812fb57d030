"""The estimator's settings and output: :class:`SolverOptions` (validated once),
:class:`SolverOutput` (what :func:`~negdro_stats.estimation.solve` returns) and
:class:`SelectionReport` (how the default route chose its support and coefficients)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._typing import FloatArray
from .._validation import check_int, check_option, check_scalar, did_you_mean, listed, warn_user
from ..exceptions import DataError, SelectionWarning
from .gmm import Cumulant

__all__ = ["SolverOptions", "SolverOutput", "SelectionReport", "InnerResult", "METHODS",
           "ALARM_SHARE", "OPEN_SHARE", "REFITS"]

METHODS = ("algorithm3", "algorithm1", "algorithm2")

REFITS = ("auto", "negdro", "invariant")
# Defaults of Algorithm 3 (standardised scale); reasons in the SolverOptions docstring.
DEFAULT_MU, DEFAULT_TAU, DEFAULT_THRESHOLD = 1e-3, 0.1, 0.15
DEFAULT_ALPHA = 0.05     # level of the invariance (J), pruning and Hausman tests
ALARM_SHARE = 3          # the supplementary checks of a Condition 4 fit at alpha / this
OPEN_SHARE = 0.5         # left open: a covariate (or a set) mostly in the open directions
INNER_SOLVERS = ("sqp", "gdm")


@dataclass(frozen=True, slots=True, kw_only=True)
class SolverOptions:
    r"""The settings of a NegDRO fit, validated once (``NegDRO.fit(**options)`` builds it).

    All numerical settings refer to the standardised problem (covariates and outcome
    rescaled to unit root mean square by :meth:`Moments.scales`).  The options that
    :func:`solve` resolves from the data (``step_size``, ``max_iter``, ``tol``,
    ``upsilon``) are filled in on :attr:`SolverOutput.options`.

    Parameters
    ----------
    gamma : float, default 20
        Invariance strength (eq. (9)); set on the model (``NegDRO(..., gamma=)``).
    method : {"algorithm3", "algorithm1", "algorithm2"}
        ``"algorithm3"`` (default): Appendix F.3 -- minimise the tau-adjusted objective
        (124), keep covariates with standardised :math:`|b_j| d_j / s_y \ge` ``threshold``,
        halve tau and repeat on them until the support is stable, then minimise
        :math:`\Phi_\mu` (19) on the support.  ``"algorithm1"``: gradient
        descent-maximisation on :math:`\Phi_\mu`, eqs. (22)-(24), as printed (no
        thresholding).  ``"algorithm2"``: subgradient descent-maximisation on :math:`\Phi`
        (50) with the proximal output rule (52).  Cost: Algorithms 1 and 2 take thousands
        of iterations (Algorithm 2 about 1-2 s per fit at p = 10-100, and it rarely meets
        ``tol``: ``benchmarks/results/core_speed.txt``), so with the bootstrap multiply by
        ``n_boot``; use them to reproduce the paper, Algorithm 3 otherwise.
    inner : {"sqp", "gdm"}
        Inner solver of Algorithm 3: SQP on the max of quadratics (default; about 10
        steps, each one p x p Cholesky) or Algorithm 1 as printed.
    mu : float, default 1e-3
        Ridge penalty on the weights in (19), in units of the outcome's mean square
        (counted once, as in (19), not once per environment as in (22)).  Small values keep
        the estimator close to (17); 1e-3 smooths risk differences of about a thousandth of
        E[Y^2], well below sampling noise.  Must be > 0 for the gradient methods; at most 1e6.
    tau : float, default 0.1
        Initial adjustment tau0 of (124); halved at every stage; at most 1e6.
    threshold : float, default 0.15
        Hard threshold c0 on standardised coefficients :math:`|b_j| d_j / s_y`, with
        :math:`d_j, s_y` the root mean squares of :math:`X_j` and :math:`Y` averaged over
        environments.  0 gives the unthresholded NegDRO estimate.
    step_size : float, optional
        Step size alpha of Algorithms 1 and 2; default 1/L with
        :math:`L = 2(1 + \tau + c|E|)\max_e\|\Sigma_e\|`.
    max_iter : int, optional
        Iteration cap T: default 200 SQP steps per stage, or 10,000 iterations for
        Algorithms 1 and 2 (and ``inner="gdm"``).
    tol : float, optional
        Stop when the stationarity measure (gradient norm; the proximal measure for
        Algorithm 2) is at most ``tol``; default 1e-8 for SQP (near beta* the curvature of
        Phi_mu can be as small as 1/(1 + gamma|E|), so a 1e-6 gradient could leave an
        error of 1e-4) and 1e-6 for Algorithms 1 and 2.
    upsilon : float, optional
        Proximal parameter of Algorithm 2's output rule (52); default ``1/(2m)`` with m
        the weak-convexity constant of Phi.
    refit : {"auto", "negdro", "invariant"}
        How the support and the coefficients on it are chosen.  ``"auto"`` (default):
        consistent selection by over-identified gradient invariance (Lemma 1), see
        :mod:`negdro_stats.estimation.gmm` and the user guide: supports nested in the order of a
        pilot GMM fit's ``|t|`` are scored by Hansen's J test; GMM-BIC chooses, grown
        until the J test accepts at level ``test_level``; covariates are pruned while
        their ``|t|`` is below ``max(z_{1-test_level/(2|S|)}, sqrt(log n))``; causes that only the
        pooled regression sees are added unless the invariance fit disagrees (a child of
        Y); pooled OLS is reported when a Hausman contrast with the invariance GMM
        accepts, else the GMM.  Taken only when the environment differences identify the
        support (worst standardised s.e. below 0.1); otherwise -- e.g. the limited and
        weak regimes of Example 3 -- Algorithm 3's support and Phi_mu fit.
        ``"negdro"``: the paper verbatim.  ``"invariant"``: Algorithm 3's support,
        refitted on the gradient-invariance equations (31).
    test_level : float, default 0.05
        Level of the J test, the pruning (Bonferroni part) and the Hausman contrast of
        ``refit="auto"``.  (``alpha`` is the intervals' level, as in statsmodels:
        ``conf_int(alpha)``, ``summary(alpha)``.)
    fixed : tuple of int
        Covariates never thresholded, pruned or ordered (the intercept column; set by
        the model).
    """

    gamma: float = 20.0
    method: str = "algorithm3"
    inner: str = "sqp"
    mu: float = DEFAULT_MU
    tau: float = DEFAULT_TAU
    threshold: float = DEFAULT_THRESHOLD
    step_size: float | None = None
    max_iter: int | None = None
    tol: float | None = None
    upsilon: float | None = None
    refit: str = "auto"
    test_level: float = DEFAULT_ALPHA
    fixed: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        owner = "NegDRO.fit"
        valid: dict[str, Any] = {
            "method": check_option(self.method, "method", owner, METHODS),
            "inner": check_option(self.inner, "inner", owner, INNER_SOLVERS),
            "refit": check_option(self.refit, "refit", owner, REFITS)}
        gradient_method = valid["method"] == "algorithm1" or valid["inner"] == "gdm"
        valid |= {
            "mu": check_scalar(self.mu, "mu", owner, min_val=0, max_val=1e6,
                               closed="right" if gradient_method else "both"),
            "tau": check_scalar(self.tau, "tau", owner, min_val=0, max_val=1e6),
            "test_level": check_scalar(self.test_level, "test_level", owner, min_val=0,
                                       max_val=1, closed="neither"),
            "fixed": tuple(int(j) for j in self.fixed),
        }
        for name in ("gamma", "threshold"):
            valid[name] = check_scalar(getattr(self, name), name, owner, min_val=0)
        for name in ("step_size", "tol", "upsilon"):
            if getattr(self, name) is not None:
                valid[name] = check_scalar(getattr(self, name), name, owner, min_val=0,
                                           closed="neither")
        if self.max_iter is not None:
            valid["max_iter"] = check_int(self.max_iter, "max_iter", owner, min_val=1)
        for name, value in valid.items():               # frozen: set the checked values
            object.__setattr__(self, name, value)

    @classmethod
    def from_user(cls, owner: str, options: dict, **fixed_by_model) -> SolverOptions:
        """Options from a user's keywords plus those the model sets (``gamma``, ``fixed``),
        with a typed error naming an unknown or misplaced one."""
        known = [f.name for f in fields(cls) if f.name not in fixed_by_model]
        if "alpha" in options:
            alpha = options["alpha"]
            coverage = isinstance(alpha, float | int) and 0.5 < alpha < 1
            raise DataError(
                f"{owner} does not take 'alpha': alpha is the intervals' level, given to "
                "conf_int(alpha=0.05) and summary(alpha=0.05) (1 - the coverage, as in "
                "statsmodels); the level of the selection's J tests and pruning is "
                f"{owner}(test_level=...), default 0.05"
                + (f" ({alpha!r} reads as a coverage: test_level={1 - alpha:.3g})."
                   if coverage else "."))
        for name in options:
            if name in fixed_by_model:
                raise DataError(f"{owner} does not take {name!r}: it is set on the model "
                                f"(gamma: NegDRO(..., gamma=...); fixed: fit_intercept).")
            if name not in known:
                raise DataError(f"{owner} got an unknown option {name!r}."
                                f"{did_you_mean(name, known)} The "
                                f"options are {known} (see SolverOptions).")
        out = cls(**options, **fixed_by_model)
        if out.threshold > 1:
            warn_user(f"{owner}(threshold={out.threshold:g}): Algorithm 3 keeps covariates "
                      "whose standardised coefficient |b_j| d_j / s_y is at least that, "
                      "rarely any: the paper's is 0.15.", SelectionWarning)
        return out

    def as_dict(self) -> dict:
        """The settings by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class InnerResult:
    """One minimisation of Phi_{mu,tau} on a fixed support (standardised scale)."""

    b: FloatArray
    w: FloatArray
    value: float
    grad_norm: float
    n_iter: int
    converged: bool

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SolverOutput:
    """What a NegDRO solver reports (coefficients on the original scale).

    Attributes
    ----------
    b : ndarray, shape (p,)
        Coefficients; zero outside ``support``.
    support : ndarray of bool, shape (p,)
        Covariates kept by the hard threshold (all of them for Algorithms 1 and 2).
    w : ndarray, shape (E,)
        Maximising (worst-case) simplex weight at ``b``, eq. (20).
    objective : float
        ``Phi_mu(b)``, eq. (19), on the original scale of the outcome.
    grad_norm : float
        Stationarity: norm of the gradient of Phi_mu on the support, on the
        standardised scale (every covariate and the outcome with unit root mean square).
        For Algorithm 2 it is the proximal measure ``||prox(b) - b|| / upsilon``.
    risks : ndarray, shape (E,)
        Environment risks ``R_e(b)`` on the original scale.
    n_iter : int
        Iterations summed over all stages.
    converged : bool
        Whether every stage met its stopping rule.
    method, inner : str
        The method and inner solver used.
    stages : tuple of dict
        For Algorithm 3: per stage, ``tau``, support size before thresholding, iterations
        and whether it converged (``grad_norm`` is then the first stalled stage's).
    options : SolverOptions
        The settings used, with the defaults resolved from the data filled in.
    refit : str
        How the coefficients on the support were computed: ``"negdro"`` (the final
        Phi_mu stage), ``"invariant"`` (:func:`invariant_refit`), ``"ols"`` or
        ``"gmm"`` (the invariance route of ``refit="auto"``, see ``selection``) or
        ``"none"`` (Algorithms 1 and 2).  ``grad_norm`` always refers to the last
        NegDRO stage.
    selection : SelectionReport or None
        For ``refit="auto"``: the invariance walk, the tests and the route taken.
    """

    b: FloatArray
    support: np.ndarray
    w: FloatArray
    objective: float
    risks: FloatArray
    grad_norm: float
    n_iter: int
    converged: bool
    method: str
    inner: str
    stages: tuple = ()
    options: SolverOptions = SolverOptions()
    refit: str = "none"
    selection: SelectionReport | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SelectionReport:
    """How the default estimator (``refit="auto"``) chose its support and coefficients.

    Attributes
    ----------
    route : {"invariance", "negdro", "not identified"}
        ``"invariance"``: the environment differences determine every coefficient and
        the support was chosen by J tests, so the coefficients come from
        ``estimator``.  ``"negdro"``: Algorithm 3's support and its Phi_mu fit (the
        paper), because ``reason`` (e.g. limited interventions, where Condition 4 on the
        data holds).  ``"not identified"``: the environments do not determine the
        coefficients of ``undetermined`` and Condition 4 fails on the data; Algorithm
        3's fit is reported without a claim.
    reason : str
        Why the route was taken, in words.
    estimator : {"ols", "ils", "gmm", "negdro"}
        Pooled OLS on the support (when the exogeneity test does not reject, or where the
        differences do not determine the coefficients and the invariance conditions
        accept OLS), least squares constrained by the invariance conditions where they
        determine the coefficients (:func:`invariant_ls`: OLS is not invariant there, as
        with hidden confounding), the invariance GMM, or NegDRO's final stage.
    walk : tuple of (size, J, df, pvalue)
        The J test along the nested supports.
    pruned : tuple of str
        Covariates removed by the t-statistic pruning.
    critical_t : float
        The pruning critical value.
    added : tuple of str
        Covariates added afterwards by :func:`augment_support` (pooled t statistic,
        guarded by the invariance fit).
    removed : tuple of str
        Covariates removed by :func:`exogenous_support` (pooled least squares and the
        invariance fit disagree on them most: a child of Y).
    J, df, pvalue : float, int, float
        Hansen's J test (continuously updated) of invariance on the reported support.
    rejected : bool
        The J test rejects invariance on the reported support (then no nested support
        from the BIC choice on passed it; reported with a warning).
    identified : bool
        False when the route is ``"not identified"``.
    undetermined : tuple of str
        Covariates whose coefficients the environment differences do not determine
        (their share in the directions the rank test finds undetermined is at least
        0.1), least determined first.
    exogeneity : tuple of (H, df, pvalue)
        Hausman contrast of pooled OLS against the invariance GMM on the support
        (:func:`hausman`); OLS is reported when it does not reject.
    worst_se : float
        Standardised standard error along the least identified direction of the
        selected support's invariance fit; the invariance route needs it at most
        ``gate_se``.
    gate_se : float
    rank_test : tuple of (stat, df, pvalue)
        The rank test of the invariance conditions on every covariate
        (:func:`negdro_stats.estimation.selection.rank_test`): the smallest normalised information;
        a p-value above ``alpha`` means some direction is not determined.
    instruments : tuple of str
        The covariates whose residual moments are required to be invariant.
    cumulant : Cumulant
        The non-Gaussian part of the score covariances on the instruments, at the
        chosen estimate (original scale; empty without rows).  The bootstrap reuses it.
    misfit : ndarray (E, p) or None
        ``g_e(b) - mean_f g_f(b)`` at the GMM estimate on the selected support (original
        scale): the sample's departure from exact invariance.  The bootstrap subtracts it
        from every replicate's moment conditions (recentring, Hall and Horowitz 1996), so
        that the selected model holds exactly in the bootstrap world, as the true one
        does in the real world; without it the J test rejects the true support in most
        replicates.
    fixed_test : tuple of (J, df, pvalue, level)
        Where the environment differences do not determine the coefficients: the
        invariance test at the reported pooled OLS fit itself (a fixed ``b``), which
        accepted it at ``level`` among the supports tried, the one with the smallest
        pooled risk (:func:`negdro_stats.estimation.selection.least_risk.invariant_ols`; then
        ``J``, ``df``, ``pvalue`` are this test's).  NaN when that path was not taken.
    constrained : tuple of (ndarray, ndarray) or None
        Where the estimator is ``"ils"``: ``(P, C_d)`` on the support (original scale; of
        the slopes with an intercept), ``b = P b_gmm + (I - P) b_ols`` with ``P`` the
        projector onto the directions the invariance conditions determine and ``C_d``
        the GMM's covariance along them
        (:class:`~negdro_stats.estimation.selection.least_risk.ConstrainedLS`);
        :func:`~negdro_stats.inference.sandwich.refit_cov` adds pooled OLS's sandwich
        along the others.  None otherwise.
    test_level : float
        The level ``alpha`` of the selection's tests (NaN where nothing was tested).
    covariance_shift : tuple of (stat, df, pvalue)
        Where the environment differences leave directions undetermined (the sample):
        the test that the within-environment variance of some covariate differs across
        environments (:func:`~negdro_stats.identification.determined.covariance_shift`);
        where it does not reject, the differences are mean shifts, which cannot give
        Condition 4 on more than ``|E| - 1`` covariates.  NaN otherwise.
    stand_ins : tuple of (str, str)
        Pairs ``(selected, stand-in)`` of near copies (pooled cosine at least 0.95)
        where the J test accepts the support with the stand-in too: the data barely tell
        which of the two is the cause
        (:func:`negdro_stats.estimation.selection.walk._substitutes`; the reported one has
        the smaller pooled risk).
    contested : tuple of (tuple of str, float), or ()
        Where Theorem 6's least-risk fit differs between the two readings of invariance
        (:class:`negdro_stats.estimation.selection.least_risk.Readings`: the intervened
        covariates' residual moments, or the support's own moments and the risks) and
        the own reading's fit, reported, predicts held-out environments better: the
        linear reading's support and its worst leave-one-environment-out risk over the
        reported fit's (above 1).  Such a fit is not identified: the data cannot tell
        whether the outcome's mechanism is linear.
    no_invariant_fit : str
        Why no fit the selection tried is invariant (empty where one may be): the J
        test rejects every support tried, or the equal-risk test rejects at the route's
        fit, at level :data:`~negdro_stats.identification.report.RISK_WARN_LEVEL`
        (1e-4).  Then Algorithm 3's fit is reported (:attr:`invariance_rejected`).
    rival : tuple of (str, float, int, float), or ()
        Where the walk's support is reported with directions left open: an
        undetermined covariate ``j`` such that the reported fit (pooled OLS, or least
        squares constrained by invariance) with ``j`` added passes the invariance test
        at that fixed fit at ``test_level`` (``(name, J, df, pvalue)``), a fit of
        smaller pooled risk: ``j`` is a cause that no environment shifts, which the
        report misses, or a descendant of the outcome whose shift the data do not
        show.  Such a fit is not identified (Theorem 6 needs the least-risk invariant
        fit over every support).  A rival loads on ``j`` decisively (``|t|`` at least
        the selection's critical value) and, where it is pooled OLS, passes ``j``'s own
        invariance condition (``E_e[X_j r]`` equal across environments, ``|E| - 1``
        df: :meth:`~negdro_stats.estimation.gmm.InvarianceGMM.own_tests_at_ols`).
    left_open : tuple of str
        Covariates whose coordinate lies mostly (share at least 0.5) in the directions
        the environments leave undetermined (the sample; ``()`` in replicates): their
        coefficients are set by the least pooled risk (Theorem 6), not by invariance,
        so where one is in the support the data cannot tell a cause from an unshifted
        child of the outcome there, and the answer rests on Condition 4 for it
        (:func:`negdro_stats.results.verdicts.rests_on`).
    open_span : ndarray of shape (p, k), or None
        An orthonormal basis of the directions the environments leave undetermined
        (the sample; None in replicates): ``left_open`` are the covariates whose share
        in it, ``||Q^T e_j||^2``, is at least ``OPEN_SHARE``, and :meth:`open_among`
        whether a set of covariates holds that share of one direction.
    focused_test : tuple of (J, df, pvalue, str)
        Where the reported fit is Theorem 6's least-risk pooled OLS (the sample): each
        support member's own invariance condition (``E_e[X_j r]`` equal across
        environments, ``|E| - 1`` df:
        :meth:`~negdro_stats.estimation.gmm.InvarianceGMM.own_tests_at_ols`), the
        smallest p-value's ``J`` and ``df``, that p-value times the support's size
        (Bonferroni) and the member: a child of ``Y``
        that an environment shifts moves its own condition, which an omnibus test over
        every instrument dilutes.  NaN otherwise.
    contrast_test : tuple of (H, df, pvalue)
        Where the reported fit is Theorem 6's least-risk fit (the sample): along the
        directions it takes from pooled OLS, the Hausman contrast of OLS against the
        invariance GMM on the same support
        (:func:`~negdro_stats.estimation.selection.least_risk.ols_contrast`): hidden
        confounding (or a wrong support) moves it, which neither invariance test at the
        fixed fit sees where the environments barely move the support.  NaN where
        nothing is contrasted.
    """

    route: str
    reason: str
    estimator: str
    walk: tuple
    pruned: tuple
    critical_t: float
    added: tuple
    removed: tuple
    J: float
    df: int
    pvalue: float
    exogeneity: tuple
    worst_se: float
    gate_se: float
    instruments: tuple
    cumulant: Cumulant
    misfit: FloatArray | None = None
    rejected: bool = False
    rank_test: tuple = (np.nan, 0, np.nan)
    identified: bool = True
    undetermined: tuple = ()
    fixed_test: tuple = (np.nan, 0, np.nan, np.nan)
    stand_ins: tuple = ()
    constrained: tuple | None = None
    test_level: float = np.nan
    covariance_shift: tuple = (np.nan, 0, np.nan)
    contested: tuple = ()
    no_invariant_fit: str = ""
    rival: tuple = ()
    left_open: tuple = ()
    open_span: FloatArray | None = None
    focused_test: tuple = (np.nan, 0, np.nan, "")
    contrast_test: tuple = (np.nan, 0, np.nan)

    def __setstate__(self, state: list) -> None:
        """Unpickling (a frozen dataclass's list of field values): fields are only ever
        appended, and those a file saved by an earlier version lacks take their defaults
        (``covariance_shift``, ``contested``, ... were read from files that had none)."""
        for i, f in enumerate(fields(self)):
            object.__setattr__(self, f.name, state[i] if i < len(state) else f.default)

    @property
    def assumes_condition_4(self) -> bool:
        """Identified only under an assumption the data cannot check: the environments
        leave ``undetermined`` undetermined, and the reported fit is the invariant one of
        least pooled risk, which is ``beta*`` when every child of the outcome is
        intervened on (Condition 4, Theorem 6; Condition 6 with hidden confounding).  A
        child of ``Y`` that no environment shifts makes other fits invariant too, and
        data cannot tell it from a parent that no environment shifts."""
        return self.identified and bool(self.undetermined)

    @property
    def mean_shifts_only(self) -> bool:
        """The within-environment variances of the covariates are the same in every
        environment (:attr:`covariance_shift` does not reject at
        ``test_level``): the differences are mean shifts, which cannot give Condition 4
        or 6 on more than ``|E| - 1`` shifted covariates."""
        return bool(self.covariance_shift[2] >= self.test_level)

    @property
    def least_risk(self) -> bool:
        """The reported fit is Theorem 6's least-risk invariant fit (pooled OLS, or least
        squares constrained by invariance) where the environments leave directions
        undetermined (route ``"not identified"``, or :attr:`assumes_condition_4`): it is
        ``beta*`` if every child of the outcome is intervened on (Condition 4; Condition
        6 with hidden confounding), which the data cannot check, and its analytic
        covariance is valid under that condition."""
        return self.estimator in ("ols", "ils") and (not self.identified or
                                                     self.assumes_condition_4) and not (
            self.narrow or self.contested or self.rival)

    def open_among(self, covariates: list[int]) -> bool:
        """Some direction the environments leave undetermined lies mostly (share at least
        ``OPEN_SHARE``) among ``covariates`` (indices): the largest eigenvalue of
        ``Q_C Q_C^T`` for the rows ``C`` of :attr:`open_span`; for one covariate, whether
        it is :attr:`left_open`."""
        if self.open_span is None or not self.open_span.shape[1] or not len(covariates):
            return False
        return bool(np.linalg.norm(self.open_span[covariates], ord=2) ** 2 >= OPEN_SHARE)

    @property
    def alarm_level(self) -> float:
        """The level of the two supplementary checks of a fit resting on Condition 4,
        beside its invariance tests (:attr:`narrow`, at ``test_level``): a rival
        (:attr:`rival`, its added covariate's pooled ``|t|``) and unequal risks at the
        estimate (:func:`~negdro_stats.results.verdicts.risk_alarm`), each at
        ``test_level / ALARM_SHARE``: at ``test_level`` they make most of the flags on
        good fits (a rival from an unshifted non-cause's spurious pooled ``|t|``, unequal
        risks by chance) and, where Condition 4 holds, catch no badly wrong fit that the
        invariance tests miss (measured: docs/design.rst, Measured choices)."""
        return self.test_level / ALARM_SHARE

    @property
    def narrow(self) -> bool:
        """The data cannot tell whether the least-risk fit is invariant, so no interval
        conditional on Condition 4 is given: its invariance test at its fixed fit
        (:attr:`fixed_test`, every instrument: what a missing cause or confounding moves)
        rejects at ``test_level``, or, where the fit is pooled OLS, a support member's
        own condition does (:attr:`focused_test`: what a shifted child of ``Y`` in the
        support moves, which the omnibus test dilutes), or the invariance GMM on the
        support moves the directions the fit takes from OLS (:attr:`contrast_test`:
        what hidden confounding moves where the environments barely move the support).
        Three tests aimed at three failures, each at ``test_level``: either of the first
        two alone lets through badly wrong fits that the other catches, and a fit that
        passes the omnibus test only at the search's level ``alpha / p`` is further from
        ``beta*`` than the others; the contrast catches a third of the confounded
        fits both pass (measured: docs/design.rst, Measured choices)."""
        return bool(self.fixed_test[2] < self.test_level
                    or self.focused_test[2] < self.test_level
                    or self.contrast_test[2] < self.test_level)

    @property
    def invariance_rejected(self) -> bool:
        """No fit the selection tried is invariant (:attr:`no_invariant_fit` says
        why): what is reported is Algorithm 3's fit of NegDRO's objective (9) at the
        model's ``gamma`` (the trade-off between the worst environment's risk and the
        spread of the risks, which needs no invariance), and the verdict is
        "rejected" where no linear model is invariant
        (:func:`~negdro_stats.results.verdicts.no_invariant_model`), else "not
        identified"."""
        return bool(self.no_invariant_fit)

    @property
    def fixed_test_requires(self) -> str:
        """What the least-risk search's test at a fixed fit (:attr:`fixed_test`)
        required: the reading of invariance reported (:attr:`contested`)."""
        if self.contested:
            return ("the support's own residual moments E_e[X_S (Y - b'X)] and the risks "
                    "equal across environments, Theorem 6")
        return "residual moments E_e[X (Y - b'X)] equal across environments, Lemma 1"

    @property
    def exact(self) -> bool:
        """The covariates give the outcome exactly
        (:func:`negdro_stats.estimation.selection.exact_fit`): pooled OLS reported, nothing
        tested."""
        return self.route == "invariance" and not self.walk

    def __repr__(self) -> str:
        """The route and its evidence in a few lines (the arrays stay attributes)."""
        lines = [f"<SelectionReport: route={self.route!r}, estimator={self.estimator!r}",
                 f"  reason: {self.reason}"]
        lines.append(f"  J = {self.J:.4g}, df = {self.df}, p = {self.pvalue:.3g}; "
                     f"worst standardised s.e. {self.worst_se:.3g} (gate {self.gate_se:g})")
        if self.undetermined:
            lines.append(f"  not determined: {listed(self.undetermined, 10)}")
        if self.route == "invariance":
            lines += [f"  {label}: {', '.join(map(str, names))}" for label, names in
                      (("pruned", self.pruned), ("added", self.added),
                       ("removed", self.removed)) if names]
        lines.append(f"  walk: {len(self.walk)} supports tried; instruments: "
                     f"{len(self.instruments)}>")
        return "\n".join(lines)
