"""The default selection stage (refit="auto"): over-identified gradient invariance."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy import optimize

from negdro_stats import IdentificationWarning, LinearSEM, NegDRO, simulate
from negdro_stats import testing as nt
from negdro_stats.data.fourth import gaussian_score_cov
from negdro_stats.data.moments import Moments
from negdro_stats.estimation.cue import cumulant_scaling
from negdro_stats.estimation.gmm import Cumulant, InvarianceGMM, first_stage_wald
from negdro_stats.estimation.selection.exogeneity import augment_support, pooled_ols

from ..helpers import cause_effects, descendants


@st.composite
def designs_with_weak_causes(draw):
    """simulate.random_sem with 1-3 strong parents, 1-2 weak ones (standardised effects
    0.01-0.15), 0-2 children of Y, hidden confounding on or off."""
    p = draw(st.integers(8, 12))
    weak = tuple(draw(st.lists(st.floats(0.01, 0.15), min_size=1, max_size=2)))
    return simulate.random_sem(
        p, n_envs=draw(st.integers(3, 5)), n_parents=draw(st.integers(1, 4 - len(weak))),
        n_children=draw(st.integers(0, 2)), weak_effects=weak,
        confounding=draw(st.booleans()), rng=draw(st.integers(0, 2**32 - 1)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                  HealthCheck.too_slow])
@given(sem=designs_with_weak_causes())
def test_population_recovery_with_weak_causes(sem):
    """Population moments where Condition 1b holds: the default returns the exact support
    and beta* to 1e-6, for weak causes down to standardised effects of 0.01, children of
    Y and hidden confounding included.

    Why it must: Lemma 1 makes the invariance conditions (M) hold exactly at beta* on
    every support containing the causes, and Condition 1b makes beta* their unique
    solution there; a support missing a cause violates them by a fixed amount, which
    population moments (n = 1e12 in the tests) turn into an infinite J statistic."""
    check = nt.default_exactness(sem)
    assume(check.details["condition_1b"])
    event(f"route {check.details['route']}, confounded {bool(np.any(sem.Omega[0, 1:]))}")
    assert "IdentificationWarning" not in dict(check.details["warnings"])
    assert check.details["route"] == "invariance"
    assert check.holds, check


def _standardised(sem, n, rng):
    df = sem.sample(n, rng=rng)
    model = NegDRO(df, env="env", outcome="Y")
    mom = model.moments
    d, s_y = mom.scales()
    return model, mom.rescale(d, s_y), d, s_y


def test_j_statistic_true_support_vs_missing_cause():
    """J at the causes is chi-square sized; dropping a cause makes it explode."""
    sem = simulate.eq33(p=8)
    model, std, d, s_y = _standardised(sem, 20_000, 3)
    beta = sem.beta_star * d / s_y
    gmm = InvarianceGMM(std, instruments=np.arange(8), cumulant=Cumulant.zero(4),
                        b_ref=beta)
    true = gmm.fit(np.array([0, 2]))
    assert true.df == 3 * 8 - 2 and true.pvalue > 1e-3
    assert gmm.fit(np.array([2])).J > 100 * true.df
    assert_allclose(true.b, beta[[0, 2]], atol=0.02)


def test_gaussian_score_cov_matches_rows_for_gaussian_data():
    """Isserlis' formula for Var_e(X r) equals the row estimate up to sampling noise
    (Gaussian rows, non-zero means)."""
    sem = simulate.random_sem(6, n_envs=3, n_parents=2, n_children=1, rng=4)
    df = sem.sample(200_000, rng=5)
    model = NegDRO(df, env="env", outcome="Y")
    b = sem.beta_star + 0.3
    rows = model.data.score_cov(b)
    gauss = gaussian_score_cov(model.moments, b)
    assert np.abs(rows - gauss).max() < 0.03 * np.abs(rows).max()


def test_first_stage_wald_matches_the_rows_variances():
    """The first-stage statistic of :meth:`InvarianceGMM.relevant` with Isserlis'
    variances of ``z X_S`` equals the one with the rows' own variances up to sampling
    noise (Gaussian rows, non-zero means, every instrument)."""
    sem = simulate.random_sem(6, n_envs=3, n_parents=2, n_children=1, shift="mean",
                              rng=4)
    df = sem.sample(100_000, rng=5)
    mom = NegDRO(df, env="env", outcome="Y").moments
    S = np.array([0, 2, 5])
    T = first_stage_wald(mom, np.arange(6), S, mom.n)
    by_rows = np.zeros(6)
    for z in range(6):
        d, W = [], []
        for _, rows in df.groupby("env"):
            X = rows[[f"X{j + 1}" for j in range(6)]].to_numpy()
            zx = X[:, [z]] * X[:, S]
            d.append(zx.mean(axis=0))
            W.append(len(X) * np.linalg.inv(np.cov(zx.T)))
        centre = np.linalg.solve(sum(W), sum(w @ m for w, m in zip(W, d, strict=True)))
        by_rows[z] = sum((m - centre) @ w @ (m - centre) for w, m in zip(W, d, strict=True))
    assert T.min() > 100                    # every instrument informs b_S here
    assert_allclose(T, by_rows, rtol=0.05)


def test_only_instruments_whose_first_stage_moves_inform_the_constrained_fit():
    """Y = X1 + X2, both shifted; a child X5 of X1 that no environment shifts moves with
    X1 (an instrument); X3 (never shifted) and X4 (shifted, independent of X1 and X2)
    have the same ``E_e[z X_S]`` in every environment: they add moment conditions, not
    information, and the constrained fit leaves them out."""
    sem = LinearSEM.from_equations(
        {"Y": {"X1": 1.0, "X2": 1.0}, "X5": {"X1": 0.8}},
        covariates=["X1", "X2", "X3", "X4", "X5"],
        interventions=[{}, {"X1": 2.0, "X4": 3.0}, {"X2": (1.0, 2.0), "X4": 0.5}])
    for mom in (sem.moments(), NegDRO(sem.sample(5000, rng=1), env="env",
                                      outcome="Y").moments):
        gmm = InvarianceGMM(mom, instruments=np.arange(5), cumulant=Cumulant.zero(3),
                            b_ref=np.zeros(5))
        assert list(gmm.relevant(np.array([0, 1]), 0.05).R) == [0, 1, 4]
        assert gmm.relevant(np.array([2]), 0.05) is None      # X3 itself: nothing moves


@pytest.mark.parametrize("size", [0.01, 5.0])
def test_cue_gradient_matches_finite_differences(size):
    """The CUE criterion's gradient equals finite differences with a small cumulant and
    with one the positive-definiteness guard scales down (its scale moves with b)."""
    sem = simulate.random_sem(10, n_envs=4, weak_effects=(0.1,), confounding=True, rng=3)
    df = sem.sample(3000, rng=1)
    mom = NegDRO(df, env="env", outcome="Y", fit_intercept=True).moments
    d, s_y = mom.scales()
    std = mom.rescale(d, s_y)
    rng = np.random.default_rng(0)
    K = rng.normal(size=(4, 11, 11)) * size
    gmm = InvarianceGMM(std, instruments=np.arange(11),
                        cumulant=Cumulant(np.arange(11), K + K.transpose(0, 2, 1)),
                        b_ref=np.zeros(11))
    S = np.array([0, 3, 5, 10])
    b = rng.normal(size=4) * 0.3
    t, _ = cumulant_scaling(gaussian_score_cov(std, gmm._full(S, b), gmm.R), gmm.K)
    assert (t == 1).all() if size < 1 else (t < 1).all()
    numeric = optimize.approx_fprime(b, lambda x: gmm.objective(x, S)[0], 1e-7)
    assert_allclose(gmm.objective(b, S)[1], numeric, rtol=1e-4)


@pytest.mark.parametrize("design", ["example3", "confounded"])
def test_continuously_updated_fits_reach_their_minimum(design, monkeypatch):
    """Every CUE fit of a fit's selection (Gauss-Newton, then BFGS updates) ends where
    the criterion is stationary (Newton decrement), with the two-step information at the
    fit, within 1e-4 standard errors (Mahalanobis, by the fit's information) of the
    minimum.  On the confounded design the supports tried include misspecified ones (J
    far above its degrees of freedom), where the criterion can fall on as ``b`` runs
    off: those only improve on their start.
    (L-BFGS-B with its default tolerance, used until issue 42, stopped 0.02 standard
    errors from it on example 3 at n = 1,000: a J of 1.5 met its relative tolerance
    early.)"""
    if design == "example3":
        df = simulate.example3("limited").sample(1000, rng=3)
    else:
        df = simulate.random_sem(10, n_envs=4, confounding=True, rng=0).sample(2000, rng=1)
    fits, fit_cue = [], InvarianceGMM.fit_cue

    def kept(self, S, start=None):
        fit = fit_cue(self, S, start)
        fits.append((self, fit))
        return fit

    monkeypatch.setattr(InvarianceGMM, "fit_cue", kept)
    _default_fit(df)
    assert len(fits) >= 3
    if design == "confounded":
        assert max(f.J / f.df for _, f in fits) > 3
    for gmm, fit in fits:
        J, grad, P = gmm.evaluate(fit.b, fit.support, information=True)
        assert_allclose(P, gmm.fit_at(fit.support, gmm._full(fit.support, fit.b)).info,
                        rtol=1e-10)
        if fit.J > 3 * fit.df:      # misspecified: J can fall on as b runs off to infinity
            assert fit.J <= gmm.objective(gmm.fit(fit.support).b, fit.support)[0]
            continue                # (a growing score variance): no minimum to reach
        assert grad @ np.linalg.solve(P, grad) / 4.0 <= 1e-8 * max(J, 1.0)   # stationary
        opt = optimize.minimize(gmm.objective, fit.b, args=(fit.support,), jac=True,
                                method="L-BFGS-B",
                                options={"maxiter": 5000, "ftol": 1e-16, "gtol": 1e-12})
        d = fit.b - opt.x
        assert np.sqrt(d @ fit.info @ d) <= 1e-4
        assert fit.J <= opt.fun + 1e-9 * max(opt.fun, 1.0)


def _default_fit(df):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentificationWarning)
        return NegDRO(df, env="env", outcome="Y").fit(n_boot=0)


def test_pooled_regression_adds_a_weak_cause_the_walk_misses():
    """bench_selection's random family, design 5 at n = 2,000: the weakest cause (X18,
    standardised effect 0.05) moves J by less than log n, so the walk drops it; its pooled
    t is large and the invariance fit on the support with it agrees with pooled OLS and moves its
    coefficient towards least squares by more than z_0.95 s.e., so it is added and the
    support is exact."""
    sem = simulate.random_sem(30, n_envs=5, weak_effects=(0.05, 0.1, 0.15), rng=5)
    res = _default_fit(sem.sample(2000, rng=10_005))
    assert res.selection.added == (cause_effects(sem).idxmin(),)
    assert res.selection.estimator == "ols"
    assert np.array_equal(res.support.to_numpy(), sem.beta_star != 0)


def test_a_descendant_the_environments_barely_move_is_not_added():
    """p = 100, ten environments, n = 20,000 (bench_selection's large_p family, design 3):
    a descendant of Y (X20 for this seed) has a pooled t above the cut and agrees with the
    invariance fit within its wide standard error, but the invariance fit keeps its coefficient at 0
    (Lemma 1), so the one-sided test refuses it; without that test it was added, and
    eight non-causes followed it by their pooled t.  The support is exact."""
    p = 100
    sem = simulate.random_sem(p, n_envs=10, n_parents=5, n_children=5, edge_prob=4 / p,
                              rng=3)
    res = _default_fit(sem.sample(20_000, rng=10_003))
    assert not descendants(sem) & set(res.selection.added)
    assert np.array_equal(res.support.to_numpy(), sem.beta_star != 0)
    assert res.selection.route == "invariance" and res.selection.identified


def test_child_standing_in_for_a_weak_cause_is_removed():
    """Design 0 at n = 2,000: the walk takes children of Y (X15, X18, X23 for this seed)
    along with the causes, while a weak parent (X29, standardised effect 0.1) moves J too
    little to be taken.  The children go (by t pruning; where pruning keeps one, pooled
    OLS and the invariance fit disagree most on it and :func:`exogenous_support` removes
    it), the pooled step adds the weak parent, and the Hausman contrast then accepts
    pooled OLS on the exact support."""
    sem = simulate.random_sem(30, n_envs=5, weak_effects=(0.05, 0.1, 0.15), rng=0)
    res = _default_fit(sem.sample(2000, rng=10_000))
    sel = res.selection
    weak = set(cause_effects(sem).index[cause_effects(sem) < 0.2])
    assert descendants(sem) & set(sel.pruned + sel.removed)
    assert sel.added and set(sel.added) <= weak
    assert not res.support.to_numpy()[sem.D].any()
    assert res.support.to_numpy()[sem.beta_star != 0].all()
    assert sel.exogeneity[2] >= 0.05 and sel.estimator == "ols"


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_augment_support_on_population_moments(seed):
    """Exact moments: from the causes minus one (any one), :func:`augment_support` adds
    exactly that cause; from the causes, nothing (a child's pooled t is huge, but the
    invariance fit gives it 0 with no uncertainty)."""
    sem = simulate.random_sem(12, n_envs=5, n_parents=2, n_children=2,
                              weak_effects=(0.05,), strong_env=True, rng=seed)
    mom = sem.moments()
    p = mom.p
    gmm = InvarianceGMM(mom, instruments=np.arange(p), cumulant=Cumulant.zero(5),
                        b_ref=sem.beta_star, own_weight=False)
    causes = np.flatnonzero(sem.beta_star)
    S, added = augment_support(gmm, mom, causes, np.arange(p), alpha=0.05, n_min=np.inf,
                               screened=p)
    assert np.array_equal(S, causes) and added == ()
    for j in causes:
        S, added = augment_support(gmm, mom, np.setdiff1d(causes, j), np.arange(p),
                                   alpha=0.05, n_min=np.inf, screened=p)
        assert np.array_equal(S, causes) and added == (j,)


def test_limited_interventions_take_negdro_route():
    """Example 3's limited regime: the environment differences do not identify the
    support (Condition 1b fails) but Condition 4 holds on the data, so the route is
    Algorithm 3's; the coefficients are pooled OLS on the support whose OLS fit passes
    the invariance test at that fixed fit with the smallest pooled risk: the parent X2
    (Algorithm 3's own fit erred by 0.05-0.2 here)."""
    sem = simulate.example3("limited")
    df = sem.sample(10_000, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentificationWarning)
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    sel = res.selection
    assert res.solver.refit == "ols" and sel.route == "negdro" and sel.estimator == "ols"
    J, df_, pvalue, level = sel.fixed_test
    assert pvalue >= level and (sel.J, sel.df, sel.pvalue) == (J, df_, pvalue)
    assert not sel.rejected
    assert "pooled OLS on it is reported" in " ".join(str(res.summary(detail=True)).split())
    assert list(res.support[res.support].index) == ["X2"]
    assert np.linalg.norm(res.params.to_numpy() - sem.beta_star) < 0.02


def test_rejected_invariance_warns_and_says_so():
    """A change of the outcome's mechanism in one environment (Y gains a cause there)
    breaks the invariance of E_e[X r] for every support.  (Extra noise on Y alone would
    not: it leaves E_e[X r] unchanged; the equal-risk test sees that case.)"""
    sem = simulate.eq33(p=6)
    df = sem.sample(5000, rng=1)
    last = df["env"] == df["env"].max()
    df.loc[last, "Y"] += 0.8 * df.loc[last, "X2"]
    with pytest.warns(IdentificationWarning, match="rejects invariance"):
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert res.selection.rejected
    assert "WARNING: the J test rejects invariance" in str(res.summary())


def test_intercept_is_never_thresholded():
    """fit_intercept=True: the constant is in every fit and every bootstrap refit, and an
    outcome offset moves only the intercept."""
    sem = simulate.eq33(p=6)
    df = sem.sample(2000, rng=0)
    base = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(n_boot=20, rng=0)
    shifted = NegDRO(df.assign(Y=df["Y"] + 3.0), env="env", outcome="Y",
                     fit_intercept=True).fit(n_boot=0)
    assert base.support["const"] and base.support_freq["const"] == 1.0
    assert_allclose(shifted.params["const"] - base.params["const"], 3.0, atol=0.05)
    assert_allclose(shifted.params.drop("const"), base.params.drop("const"), atol=0.02)


def test_bootstrap_recentred_replicates_keep_the_support():
    """Without recentring the J test rejects the true support in most replicates; with
    it, eq. (33) at n = 2,000 keeps {X1, X3} in (nearly) every refit."""
    df = simulate.eq33(p=8).sample(2000, rng=0)
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=40, rng=0)
    freq = res.support_freq
    assert freq["X1"] >= 0.95 and freq["X3"] >= 0.95
    assert freq.drop(["X1", "X3"]).max() <= 0.2
    ci = res.conf_int()
    assert ci.loc["X1", "lower"] < 0.5 < ci.loc["X1", "upper"]


def test_selection_report_in_results():
    df = simulate.eq33(p=6).sample(2000, rng=0)
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    sel = res.selection
    assert sel.route == "invariance" and sel.estimator in ("ols", "gmm")
    assert sel.walk and all(len(step) == 4 for step in sel.walk)
    assert list(res.params.index) == [f"X{j}" for j in range(1, 7)]
    assert (res.params != 0).tolist() == res.support.tolist()   # zero off the support
    assert res.support[["X1", "X3"]].all()                     # eq. (33)'s causes
    text = str(res.summary(detail=True))
    assert "GMM-BIC" in text and "Hausman contrast" in text
    H, df, pvalue = sel.exogeneity
    assert df == 2 and H >= 0 and (pvalue >= 0.05) == (sel.estimator == "ols")


def _oracle_ols_error(df, sem):
    """``||b - beta*||`` of pooled OLS on the true parents (the reference of the studies)."""
    parents = np.flatnonzero(sem.beta_star)
    b = np.zeros(len(sem.beta_star))
    b[parents] = np.linalg.lstsq(df[[f"X{j + 1}" for j in parents]].to_numpy(),
                                 df["Y"].to_numpy(), rcond=None)[0]
    return np.linalg.norm(b - sem.beta_star)


@pytest.mark.slow
@pytest.mark.parametrize("confounded", [False, True])
def test_random_designs_n20000(confounded):
    """benchmarks/bench_selection.py's family at n = 20,000 per environment, 20 seeds
    (p = 30, 5 environments, 3 parents, weak parents at 0.05/0.1/0.15 standardised, 3
    children of Y).  Measured: exact parents in 20/20 (unconfounded) and 19/20
    (confounded) fits, mean error 1.00x OLS on the true parents and 0.017.  Tolerances:
    >= 17/20 exact (a miss rate of 15% is over 3 binomial s.e. above the measured 5%),
    error <= 1.2x OLS (the target of issue 8), <= 0.03 under confounding (the OLS oracle
    is biased there: 0.15)."""
    exact, errs, oracle = 0, [], []
    for seed in range(20):
        sem = simulate.random_sem(30, n_envs=5, weak_effects=(0.05, 0.1, 0.15),
                                  confounding=confounded, rng=seed)
        df = sem.sample(20_000, rng=10_000 + seed)
        res = _default_fit(df)
        exact += np.array_equal(res.support.to_numpy(), sem.beta_star != 0)
        errs.append(np.linalg.norm(res.params.to_numpy() - sem.beta_star))
        oracle.append(_oracle_ols_error(df, sem))
    assert exact >= 17
    if confounded:
        assert np.mean(errs) <= 0.03
    else:
        assert np.mean(errs) <= 1.2 * np.mean(oracle)


@pytest.mark.slow
def _near_copy(seed: int, s: float, n: int = 2000):
    """Two parents X1, X2 of Y, a child X3, noise X4, X5 and a near copy of the first
    parent, X6 = X1 + s u; every covariate (u too) is shifted in the last of three
    environments, so beta* = (b1, b2, 0, 0, 0, 0) is identified, but the J test barely
    tells X1 from X6."""
    rng = np.random.default_rng(seed)
    b = rng.choice([-1, 1], 2) * rng.uniform(0.5, 1.5, 2)
    a = rng.choice([-1, 1]) * rng.uniform(0.5, 1.5)
    frames = []
    for e in range(3):
        scale = np.sqrt(2.5) if e == 2 else 1.0
        parents = rng.normal(size=(n, 2)) * scale
        y = parents @ b + rng.normal(size=n)
        child = a * y + rng.normal(size=n) * scale
        noise = rng.normal(size=(n, 2)) * scale
        copy = parents[:, 0] + s * rng.normal(size=n) * (np.sqrt(3.0) if e == 2 else 1.0)
        X = np.column_stack([parents, child, noise, copy])
        frames.append(pd.DataFrame(X, columns=[f"X{j + 1}" for j in range(6)]).assign(
            Y=y, env=e))
    return pd.concat(frames, ignore_index=True), np.r_[b, np.zeros(4)]


@pytest.mark.parametrize(("seed", "s"), [(7, 0.05), (3, 0.05), (0, 0.03)])
def test_a_near_copy_of_a_cause_is_not_reported_in_its_place(seed, s):
    """The walk met the copy X6 first (the pilot's order is noise between them) and
    reported it with X1 = 0: errors 1.1-2.0 against 0.007-0.03 for OLS on the parents, no
    warning (an adversarial review).  Among the supports the J test accepts, the one of
    least pooled risk is the parents'."""
    df, beta = _near_copy(seed, s)
    res = _default_fit(df)
    oracle = np.linalg.lstsq(df[["X1", "X2"]].to_numpy(), df["Y"].to_numpy(), rcond=None)[0]
    assert list(res.params.index[res.support]) == ["X1", "X2"]
    assert_allclose(res.params.to_numpy()[:2], oracle, rtol=1e-6)


def test_a_near_copy_that_cannot_be_told_apart_is_named():
    """s = 0.03, seed 102: the copy X6 keeps the smaller pooled risk (sampling noise) and
    the J test accepts the parents' support too; the pair is named in a warning, in
    ``selection.stand_ins`` and on the summary's first line instead of a confident X6."""
    df, _ = _near_copy(102, 0.03)
    with pytest.warns(IdentificationWarning, match="X1 for X6|X6 for X1"):
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert set(res.selection.stand_ins[0]) == {"X1", "X6"}
    assert str(res.summary(detail=True)).startswith("WARNING: near copies could stand in")


def test_random_designs_n2000_unconfounded():
    """The same family at n = 2,000 per environment without confounding, where the pooled
    regression must find the weak causes that the environment differences cannot see.
    Measured: mean error 1.48x OLS on the true parents, weak parents (0.05) kept in 19/20
    fits, a child of Y in 1/20.  Tolerances: <= 2x OLS (issue 8's target), a child in at
    most 2 of 20 fits, every 0.05 parent kept in >= 16/20."""
    errs, oracle, child, weak_kept = [], [], 0, 0
    for seed in range(20):
        sem = simulate.random_sem(30, n_envs=5, weak_effects=(0.05, 0.1, 0.15), rng=seed)
        df = sem.sample(2000, rng=10_000 + seed)
        res = _default_fit(df)
        sel = res.support.to_numpy()
        errs.append(np.linalg.norm(res.params.to_numpy() - sem.beta_star))
        oracle.append(_oracle_ols_error(df, sem))
        child += sel[sem.D].any()
        parents = np.flatnonzero(sem.beta_star)
        d, s_y = sem.moments().scales()
        weakest = parents[np.argmin(np.abs(sem.beta_star[parents]) * d[parents] / s_y)]
        weak_kept += sel[weakest]
    assert np.mean(errs) <= 2.0 * np.mean(oracle)
    assert child <= 2 and weak_kept >= 16


def test_cumulant_block_lookup():
    """A cumulant estimated on some covariates is reused on others: known entries are
    copied, unknown ones are zero."""
    block = np.arange(2 * 9, dtype=float).reshape(2, 3, 3)
    K = Cumulant(np.array([4, 1, 7]), block)
    out = K.on(np.array([7, 2, 4]))
    assert out.shape == (2, 3, 3)
    assert_allclose(out[:, 0, 0], block[:, 2, 2])
    assert_allclose(out[:, 0, 2], block[:, 2, 0])
    assert np.all(out[:, 1, :] == 0) and np.all(out[:, :, 1] == 0)


def test_selection_report_repr_is_short():
    """res.selection (shown in the README) prints the route and its evidence, not the
    cumulant and misfit arrays (the review measured 9,700 characters)."""
    res = NegDRO(simulate.eq33(p=10).sample(2000, rng=0), env="env", outcome="Y").fit(
        n_boot=0)
    text = repr(res.selection)
    assert text.startswith("<SelectionReport: route='invariance'") and len(text) < 600
    assert f"J = {res.selection.J:.4g}" in text and "worst standardised s.e." in text


def test_the_fast_distribution_functions_are_scipy_stats():
    """chi2_sf, chi2_isf, norm_isf (scipy.special, for the selection's inner loops) agree
    with scipy.stats, NaN where the degrees of freedom are below 1."""
    from scipy import stats

    from negdro_stats._stats import chi2_isf, chi2_sf, norm_isf

    for x, df in [(3.0, 2), (0.0, 3), (1e-3, 1), (500.0, 10), (np.inf, 4), (1e4, 300),
                  (-1.0, 2)]:
        assert chi2_sf(x, df) == pytest.approx(stats.chi2.sf(x, df), rel=1e-12, abs=1e-300)
    for a, df in [(0.05, 1), (1e-8, 20), (0.5, 300)]:
        assert chi2_isf(a, df) == pytest.approx(stats.chi2.isf(a, df), rel=1e-12)
    for a in (0.025, 1e-12, 0.5, 0.9):
        assert norm_isf(a) == pytest.approx(stats.norm.isf(a), rel=1e-12, abs=1e-15)
    assert np.isnan(chi2_sf(2.0, 0)) and np.isnan(chi2_isf(0.05, 0))
    assert np.isnan(chi2_sf(np.nan, 3))


@given(st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.01, 0.0125, 1.0])),
                max_size=12), st.sampled_from([0.01, 0.05, 0.1]))
@example([0.5, 0.0125, 0.9, 0.0125], 0.05)     # at the threshold 0.05 / 4, and a tie
@example([0.04, 0.02, 0.03], 0.05)   # 0.04 <= 0.05, but the step-down stopped at 0.02
def test_holm_decides_as_statsmodels(pvalues, alpha):
    """The package's Holm step-down (one numpy pass: statsmodels' runs a full garbage
    collection per call) rejects exactly what multipletests(method="holm") rejects,
    ties and values at the thresholds included."""
    from statsmodels.stats.multitest import multipletests

    from negdro_stats._stats import holm

    p = np.array(pvalues)
    expected = multipletests(p, alpha=alpha, method="holm")[0] if len(p) else p > 2
    assert holm(p, alpha).tolist() == expected.tolist()


def _own_tests(sem, ns, rng, S, cols):
    """:meth:`InvarianceGMM.own_tests_at_ols` at pooled OLS on ``S`` from one sample."""
    df = sem.sample(ns, rng=rng)
    X, y = df.drop(columns=["Y", "env"]).to_numpy(), df["Y"].to_numpy()
    mom = Moments.from_arrays(X, y, df["env"].to_numpy())
    b_S = pooled_ols(mom, S)[0]
    b = np.zeros(mom.p)
    b[S] = b_S
    gmm = InvarianceGMM(mom, instruments=np.arange(mom.p), cumulant=Cumulant.zero(mom.n_envs),
                        b_ref=b, own_weight=False)
    return gmm.own_tests_at_ols(S, b_S, cols)[2]


def test_own_tests_at_ols_have_their_level_and_power_on_one_covariate():
    """Each covariate's own invariance condition at pooled OLS (|E| - 1 df, the
    estimation of b accounted for by the delta method): at the causes (no hidden
    confounding, Lemma 1) it rejects about 5% at level 0.05 for every covariate,
    children of Y included, also with one environment of 120 rows beside 1,500 (the
    environments weighted by their own precision); with a shifted child of Y in the
    support, that child's own condition rejects in nearly every sample.  Tolerance:
    240 samples x 8 covariates (correlated), binomial s.e. of a 0.05 rate over 240
    samples 0.014; the pooled rate within [0.025, 0.085]."""
    sem = simulate.random_sem(8, n_envs=4, n_parents=2, n_children=2, rng=5)
    parents = np.flatnonzero(sem.beta_star)
    child = int(sorted(sem.D)[0])
    every = np.arange(8)
    rejected = [_own_tests(sem, ns, rng, parents, every) < 0.05
                for ns in (1500, [1500, 1500, 1500, 120]) for rng in range(120)]
    assert 0.025 <= np.mean(rejected) <= 0.085
    with_child = np.sort(np.append(parents, child))
    power = [_own_tests(sem, 1500, rng, with_child, [child])[0] < 0.05 for rng in range(20)]
    assert np.mean(power) >= 0.9
