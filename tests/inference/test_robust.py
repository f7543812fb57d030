"""Robust confidence sets by inverting the invariance test (negdro_stats.inference.robust)."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from negdro_stats import LinearSEM, NegDRO, simulate
from negdro_stats.exceptions import DataError
from negdro_stats.results.tables import fmt_p as _pvalue

EQUATIONS = {"Y": {"X1": 1.0, "X2": -0.5}, "X3": {"Y": 0.8}}


def _manual(n: int, seed: int, shifts, y_shift_env: int | None = None) -> pd.DataFrame:
    """Y <- X1 - X2 / 2, child X3; environment e shifts (X1, X2, X3) by ``shifts[e]``
    (mean and scale); ``y_shift_env`` moves Y's mean there (invariance violated)."""
    rng = np.random.default_rng(seed)
    parts = []
    for e, (a, b, c) in enumerate(shifts):
        X1 = rng.normal(size=n) * (1 + a) + a
        X2 = rng.normal(size=n) * (1 + b) + b
        Y = X1 - 0.5 * X2 + rng.normal(size=n) + (1.0 if e == y_shift_env else 0.0)
        X3 = 0.8 * Y + rng.normal(size=n) * (1 + c) + c
        parts.append(pd.DataFrame({"Y": Y, "X1": X1, "X2": X2, "X3": X3, "env": e}))
    return pd.concat(parts, ignore_index=True)


FOUR = ((0, 0, 0), (2, 0, 0), (0, 2, 0), (0, 0, 2))


def _statistic_with_cumulant(seed: int, size: float = 0.002):
    """The joint statistic on a standardised sample with a random non-Gaussian part
    (``size`` 0.002: one the positive-definiteness guard leaves as it is)."""
    from negdro_stats.inference.robust import _RiskAR

    mom = NegDRO(_manual(500, 9, FOUR), env="env", outcome="Y").moments
    d, s = mom.scales()
    K = np.random.default_rng(seed).normal(size=(4, 4, 4)) * size
    return _RiskAR(mom.rescale(d, s), np.arange(3), K + K.transpose(0, 2, 1))


def _fit(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(n_boot=0)


def test_population_moments_give_beta_star_exactly_with_confounding():
    sem = LinearSEM.from_equations(EQUATIONS, interventions=[{}, {"X1": 2.0}, {"X2": 3.0},
                                                             {"X3": 2.0}],
                                   confounders={("X1", "Y"): 0.4})
    rs = _fit(NegDRO.from_moments(sem.moments())).robust_set()
    assert not rs.empty and rs.bounded.all()
    assert rs.contains(sem.beta_star)
    assert_allclose(rs.lower, sem.beta_star, atol=1e-4)
    assert_allclose(rs.upper, sem.beta_star, atol=1e-4)
    assert not rs.contains(sem.beta_star + [0.01, 0.0, 0.0])


def test_identified_sample_covers_and_tests_each_effect():
    res = _fit(NegDRO(_manual(3000, 1, FOUR), env="env", outcome="Y"))
    rs = res.robust_set()
    beta = np.array([1.0, -0.5, 0.0])
    assert rs.contains(beta) and rs.bounded.all()
    ci = res.conf_int(kind="robust")
    assert ((ci["lower"] <= beta) & (beta <= ci["upper"])).all()
    assert (ci["upper"] - ci["lower"] < 0.1).all()
    p = res.robust_pvalues
    assert p["X1"] < 1e-10 and p["X2"] < 1e-10 and p["X3"] > 0.01
    assert rs.causes().tolist() == [True, True, False]     # Holm at the set's level
    assert (rs.causes(0.001) <= rs.causes(0.2)).all()     # a lower level declares fewer
    assert res.robust_set(0.01).conf_int()["upper"]["X1"] > ci["upper"]["X1"]   # wider


def test_a_violated_invariance_gives_an_empty_set():
    """Y's mean moves in one environment: no b makes the residual moments invariant."""
    rs = _fit(NegDRO(_manual(5000, 0, FOUR, y_shift_env=1), env="env",
                     outcome="Y")).robust_set()
    assert rs.empty and rs.statistic > 10 * rs.critical
    assert rs.lower.isna().all()


def test_directions_the_environments_leave_open_are_unbounded():
    """Only X1 is shifted: the child X3 can stand in for Y's other cause and for part of
    X1, so X2's and X3's coefficients are not determined (Condition 1b fails)."""
    rs = _fit(NegDRO(_manual(4000, 1, FOUR[:2]), env="env", outcome="Y")).robust_set()
    assert not rs.empty and rs.contains([1.0, -0.5, 0.0])
    assert not rs.bounded["X2"] and not rs.bounded["X3"]
    assert np.isinf(rs.lower["X2"]) and np.isinf(rs.upper["X2"])


def test_units_and_the_origin_do_not_change_the_set():
    """X1 in other units scales its interval; a shifted covariate with an intercept leaves
    the slopes' intervals as they were; the intercept's interval is bounded, covers 0 and
    moves with a constant added to the outcome, by that constant."""
    df = _manual(800, 4, FOUR)
    base = _fit(NegDRO(df, env="env", outcome="Y", fit_intercept=True)).conf_int(
        kind="robust")
    moved = _fit(NegDRO(df.assign(X2=df.X2 + 50.0, X1=df.X1 * 10), env="env", outcome="Y",
                        fit_intercept=True)).conf_int(kind="robust")
    slopes = base.iloc[:-1]
    assert np.isfinite(slopes.to_numpy()).all()             # bounded: not inf against inf
    assert ((slopes["lower"] < [1.0, -0.5, 0.0]) & ([1.0, -0.5, 0.0] < slopes["upper"])).all()
    scale = pd.Series(1.0, index=base.index)
    scale["X1"] = 0.1
    for side in ("lower", "upper"):
        assert_allclose(moved[side].iloc[:-1], (base[side] * scale).iloc[:-1], rtol=1e-4)
    lo, hi = base.loc["const"]
    assert lo < 0.0 < hi and hi - lo < 0.5
    raised = _fit(NegDRO(df.assign(Y=df.Y + 3.0), env="env", outcome="Y",
                         fit_intercept=True)).conf_int(kind="robust")
    assert_allclose(raised.loc["const"], base.loc["const"] + 3.0, rtol=1e-6)
    assert_allclose(raised.iloc[:-1], slopes, rtol=1e-6)


def test_levels_are_checked():
    res = _fit(NegDRO(simulate.eq33(p=5).sample(300, rng=0), env="env", outcome="Y"))
    with pytest.raises(ValueError, match="alpha"):
        res.robust_set(0.95)
    with pytest.raises(ValueError, match="kind"):
        res.conf_int(kind="normal")


@pytest.mark.parametrize("test", ["kj", "ar"])
def test_interval_ends_are_where_the_profile_crosses_the_quantile(test):
    """Just inside each end the subvector test's statistic (fitted from every start) is
    below its critical value, just outside above it: the secant search stops at the
    crossing; the p-value of b_j = 0 is below alpha exactly where 0 is outside."""
    res = _fit(NegDRO(_manual(600, 7, FOUR), env="env", outcome="Y"))
    rs = res.robust_set(test=test)
    assert rs.test == test
    for name in rs.lower.index:
        lo, hi = rs.lower[name], rs.upper[name]
        assert np.isfinite(lo) and np.isfinite(hi)
        eps = 0.002 * (hi - lo)
        t = rs.profile(name, [lo - eps, lo + eps, hi - eps, hi + eps])["T_j"].to_numpy()
        assert (t[[1, 2]] < rs.critical_sub).all() and (t[[0, 3]] > rs.critical_sub).all()
        assert (rs.pvalues[name] > rs.alpha) == (lo <= 0.0 <= hi)
    assert rs.pvalues["X3"] > rs.alpha and rs.pvalues["X1"] < rs.alpha
    with pytest.raises(DataError, match="not a coefficient"):
        rs.profile("const", [0.0])
    with pytest.raises(ValueError, match="test"):
        res.robust_set(test="clr")


@pytest.mark.parametrize("design", ["mean_shifts", "confounded"])
def test_shortcuts_of_the_profile_fits_leave_the_intervals_as_they_were(design, monkeypatch):
    """The profile's fits start on the line through the two nearest fits, stop after
    RUN_OFF Gauss-Newton steps while above the limit, and beyond an end converge to
    FAR_FTOL only (issue 42): every bound and p-value is what the nearest fit's start, 30
    steps and full convergence give, to the root search's tolerance.  These designs are
    the sensitive ones of seven measured: stopping after 0 steps makes an end of the
    second infinite and moves a p-value of the first by 0.37; 2 to 30 steps agree."""
    import negdro_stats.inference.robust as robust

    if design == "mean_shifts":
        sem = simulate.random_sem(8, n_envs=4, n_parents=2, n_children=2, shift="mean", rng=3)
        data = sem.sample(2000, rng=0)
    else:
        data = simulate.random_sem(15, n_envs=4, confounding=True, rng=8).sample(1000, rng=0)
    fast = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()
    fast = (fast.lower, fast.upper, fast.pvalues)            # (intervals are computed lazily)
    monkeypatch.setattr(robust, "RUN_OFF", 30)
    monkeypatch.setattr(robust, "FAR_FTOL", robust.CUE_FTOL)
    monkeypatch.setattr(robust, "_along", lambda seen, beta0, limit: None if not seen else
                        seen[min(seen, key=lambda x: abs(x - beta0))][1])
    slow = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()      # (sets are cached)
    # the ends to the root search's precision (T_j within ROOT_TOL = 0.01 of c_K ~ 4.2:
    # ~0.0012 of the width where T_j is a parabola), p-values (no search) to 1e-4
    width = (slow.upper - slow.lower).to_numpy()
    for a, b, tol in zip(fast, (slow.lower, slow.upper, slow.pvalues),
                         (0.002 * width, 0.002 * width, np.full(len(width), 1e-4)),
                         strict=True):
        a, b = a.to_numpy(), b.to_numpy()
        assert np.array_equal(np.isfinite(a), np.isfinite(b))
        ok = np.isfinite(b)
        assert (np.abs(a[ok] - b[ok]) <= tol[ok]).all(), (a, b)


def test_boundedness_of_some_coefficients_computes_only_theirs():
    """The summary asks whether the selected coefficients' intervals are bounded; at p =
    100 it computed every coefficient's interval for that (8.4 s of an 8.5 s summary,
    issue 42).  bounded_of computes the named ones only, with the values the full
    computation gives."""
    data = simulate.random_sem(12, n_envs=4, confounding=True, rng=5).sample(1500, rng=0)
    some = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()
    names = ["X2", "X7"]
    part = some.bounded_of(names)
    assert len(some.__dict__["_projected"]) == 2 and "_intervals" not in some.__dict__
    every = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()
    assert part.tolist() == every.bounded[names].tolist()
    assert_allclose([some._projection(j) for j in (1, 6)],
                    [every._projection(j) for j in (1, 6)], rtol=0, atol=0)
    assert_allclose(every.lower.to_numpy(), some.lower.to_numpy(), rtol=0, atol=0)


def test_p_values_and_intervals_do_not_depend_on_which_came_first():
    """The summary computes every robust p-value and the shown rows' intervals only, in
    jobs of their own; each p-value and each interval is computed on its own profile,
    so a set asked in another order (intervals first, a profile() grid before) gives
    the same numbers to the last bit."""
    data = simulate.eq33(p=6).sample(800, rng=1)        # (3.8e-7 apart in p, shared)
    first = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()
    p_first, ci_first = first.pvalues.copy(), first.conf_int()
    other = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()
    other.profile("X2", [-1.0, 0.0, 0.3, 2.0])
    ci_other = other.conf_int(["X2", "X5"])
    assert ci_other.loc[["X1", "X3"]].isna().all().all()
    assert_allclose(ci_other.loc[["X2", "X5"]], ci_first.loc[["X2", "X5"]], rtol=0, atol=0)
    assert_allclose(other.conf_int(), ci_first, rtol=0, atol=0)
    assert_allclose(other.pvalues, p_first, rtol=0, atol=0)
    assert ci_first.notna().all().all() and p_first.notna().all()


def test_intervals_computed_in_processes_are_those_of_one(monkeypatch, forking):
    """Every coefficient's interval is a job of its own (forked processes where they
    can be, issue 42): the same numbers, to the last bit, as computed one after another
    in this process."""
    from negdro_stats import _resampling

    data = simulate.random_sem(8, n_envs=4, confounding=True, rng=3).sample(1000, rng=0)
    jobs = []
    forked = _resampling.map_jobs
    monkeypatch.setattr(_resampling, "map_jobs",
                        lambda run, n, **k: jobs.append(k["n_jobs"]) or forked(run, n, **k))
    monkeypatch.setattr("negdro_stats.inference.robust.map_jobs", _resampling.map_jobs)
    parallel = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()
    assert parallel.lower.notna().all() and jobs == [os.cpu_count()]
    monkeypatch.setattr(_resampling, "can_fork", lambda: False)
    one = _fit(NegDRO(data, env="env", outcome="Y")).robust_set()
    for part in ("lower", "upper", "pvalues"):
        assert_allclose(getattr(parallel, part), getattr(one, part), rtol=0, atol=0)


def test_the_profile_start_lies_on_the_line_through_the_nearest_fits():
    from negdro_stats.inference.robust import _along

    seen = {0.0: (1.0, np.array([1.0, 2.0]), True), 1.0: (2.0, np.array([2.0, 4.0]), True),
            5.0: (9.0, np.array([0.0, 0.0]), True)}
    assert_allclose(_along(seen, 1.5, limit=10.0), [2.5, 5.0])     # extrapolated
    assert_allclose(_along(seen, 0.25, limit=10.0), [1.25, 2.5])   # interpolated
    assert_allclose(_along(seen, 30.0, limit=10.0), [0.0, 0.0])    # too far: the nearest
    assert_allclose(_along(seen, 4.0, limit=8.0), [5.0, 10.0])     # a run-off fit skipped
    assert _along({}, 1.0, limit=10.0) is None


def test_kj_intervals_are_the_efficient_wald_intervals_where_identified():
    """Strongly identified: K_j is the Wald statistic of the efficient GMM, so the KJ
    interval is 2 sqrt(c_K) of its standard errors wide (c_K the chi2(1) quantile at
    0.8 alpha), narrower than the Anderson-Rubin one (chi2(df_sub) less J), and both
    cover beta*."""
    res = _fit(NegDRO(_manual(20_000, 11, FOUR), env="env", outcome="Y"))
    kj, ar = res.robust_set(test="kj"), res.robust_set(test="ar")
    beta = np.array([1.0, -0.5, 0.0])
    every = np.arange(3)
    fit = kj._gmm.fit_cue(every, start=kj._starts[0])
    _, _, info = kj._gmm.evaluate(fit.b, every, information=True)
    se = np.sqrt(np.diag(np.linalg.inv(info))) / kj._to_std
    width = (kj.upper - kj.lower).to_numpy()
    assert_allclose(width, 2 * np.sqrt(kj.critical_sub) * se, rtol=0.05)
    assert (width < 0.8 * (ar.upper - ar.lower).to_numpy()).all()
    for rs in (kj, ar):
        assert ((rs.lower <= beta) & (beta <= rs.upper)).all()


def test_the_score_statistic_uses_the_gradient_of_the_statistic():
    """K's score s = 2 sum_e D~_e^T a_e (the Jacobian made uncorrelated with the moments)
    is the statistic's exact gradient, with a non-Gaussian part; the derivative of the
    score covariance in it equals the complex step's (the Gaussian form is a polynomial
    in b, so the step is exact), with and without the risk; K is 0 at the CUE and at
    most AR (the profiled mean)."""
    from negdro_stats.data.fourth import (
        gaussian_score_cov,
        isserlis_parts,
        score_cov_derivative,
        score_cov_form,
    )
    from negdro_stats.inference.robust import _RiskAR

    ar = _statistic_with_cumulant(seed=1)
    every = np.arange(3)
    b = np.array([0.7, -0.2, 0.3])
    a = np.random.default_rng(2).normal(size=(4, 4))
    for stat in (ar, _RiskAR(ar.mom, np.array([0, 2]), ar.K[:, :3, :3], risk=False)):
        a_s = a[:, :len(stat.cols)]
        step = [np.einsum("eij,ej->ei", gaussian_score_cov(
            stat.mom, b + 1e-30j * e, stat.cols).imag / 1e-30, a_s) for e in np.eye(3)]
        parts = isserlis_parts(stat.mom, b, stat.cols)
        assert_allclose(score_cov_derivative(stat.mom, parts, stat.cols, a_s),
                        np.stack(step, axis=-1), atol=1e-12)
        for S in (every, np.array([2, 0])):       # the gradients' form a^T dV a
            assert_allclose(score_cov_form(stat.mom, parts, stat.cols, a_s, S),
                            np.einsum("eqk,eq->ek", np.stack(step, axis=-1)[:, :, S], a_s),
                            atol=1e-12)
    score, _ = ar._score(b)
    J, grad = ar.objective(b, every)
    assert_allclose(score, grad, rtol=1e-8)
    assert 0 < ar.score_statistic(b) <= J
    cue = ar.fit_cue(every, start=b)
    assert ar.score_statistic(cue.b) < 1e-6 * cue.J


def test_summary_says_no_invariant_model_fits_the_sachs_data():
    """The bundled Sachs data reject invariance: the summary opens by saying so and prints
    no interval (not the bootstrap's confidence where the data reject the model)."""
    from negdro_stats.datasets import load_sachs

    res = _fit(NegDRO(load_sachs().drop(columns="condition"), env="env", outcome="Akt"))
    rs = res.robust_set()
    assert rs.empty and rs.statistic > rs.critical
    text = str(res.summary())
    assert text.startswith("WARNING: NO INVARIANT LINEAR MODEL is consistent with these data")
    assert f"least AR = {rs.statistic:.4g} > {rs.critical:.4g}" in " ".join(text.split())
    mek = next(line for line in text.splitlines() if line.startswith("Mek"))
    assert mek.split()[-2:] == ["empty", "empty"]
    assert res.robust_pvalues.isna().all()
    # on the raw scale a few rows dominate the scores' fourth moments: the bootstrap's
    # Bartlett factor (17.9) says the chi2 reference does not hold, and the summary
    # says so beside its verdict; on the log scale it holds and the set is empty too
    assert not rs.reliable and rs.bartlett > 10 and rs.scale == 1.5
    assert "The chi2 reference is unreliable on these data" in " ".join(text.split())
    logged = _fit(NegDRO(load_sachs(log=True).drop(columns="condition"), env="env",
                         outcome="Akt")).robust_set()
    assert logged.reliable and logged.empty and logged.statistic > 5 * logged.critical


def test_summary_shows_conditional_intervals_beside_robust_p_where_identification_fails():
    """Only X1 is shifted and the child X3 is not (Condition 4 fails, which the data
    cannot tell): the verdict is "if Condition 4", stated in the header and the first
    note, not as an alarm (issue 40 item 6); the table shows that fit's bootstrap
    intervals, labelled as valid under that condition, beside the robust p-values (1:
    the robust set assumes nothing); the robust intervals (+-inf for what the
    environments leave open) on request."""
    df = _manual(1500, 2, FOUR[:2]).rename(columns={"X2": "X2_long"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=20, rng=0)
    text = str(res.summary(detail=True))
    assert "WARNING" not in text and res.verdict == "if Condition 4"
    flat = " ".join(text.split())            # the note cites the margin of the header
    margin = res.identification.relative_margin
    assert f"Condition 1b fails (relative margin {margin:.3g})" in flat
    assert f"Cond. 1b margin: {margin:.3g} fails" in flat
    assert "Verdict: if Cond. 4 / 6" in flat
    assert flat.count("Identified if every child of Y is intervened on") == 1
    assert res.selection.least_risk and res.interval_kind == "bootstrap"
    assert "boot se  robust p    [0.025" in text
    assert "valid if every child of Y is intervened on (Condition 4" in flat
    boot = res.conf_int()
    row = next(line for line in text.splitlines() if line.startswith("X2_long")).split()
    assert row[-3:-1] == [f"{boot.iloc[1, 0]:.4f}", f"{boot.iloc[1, 1]:.4f}"]
    assert row[-4] == _pvalue(res.robust_pvalues['X2_long'])
    assert max(len(line) for line in text.splitlines()) <= 78
    robust = res.conf_int(kind="robust")
    text = str(res.summary(intervals="robust", detail=True))
    row = next(line for line in text.splitlines() if line.startswith("X2_long"))
    assert row.split()[-3:-1] == ["-inf", "inf"] == [f"{robust.iloc[1, 0]:.4f}",
                                                     f"{robust.iloc[1, 1]:.4f}"]
    assert "(asked for)" in text


def test_summary_keeps_the_bootstrap_where_identified_unless_asked():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(_manual(1500, 3, FOUR), env="env", outcome="Y").fit(n_boot=20, rng=0)
    assert "robust" not in str(res.summary(detail=True))
    text = str(res.summary(intervals="robust", detail=True))
    ci = res.conf_int(kind="robust")
    row = next(line for line in text.splitlines() if line.startswith("X1")).split()
    assert row[-4:-1] == [_pvalue(res.robust_pvalues['X1']), f"{ci.loc['X1', 'lower']:.4f}",
                          f"{ci.loc['X1', 'upper']:.4f}"]
    assert "(asked for)" in text
    assert "(Holm on robust p): X1, X2." in " ".join(text.split())   # X3 is not a cause
    with pytest.raises(ValueError, match="intervals"):
        res.summary(intervals="normal", detail=True)


def test_a_change_of_the_outcome_noise_scale_empties_the_set():
    """Y's noise variance doubles in one environment: the residual moments stay
    invariant at beta*, the risks do not; the set tests both, so it is empty."""
    df = _manual(3000, 5, FOUR)
    moved = df["env"] == 2
    noise = df["Y"] - df["X1"] + 0.5 * df["X2"]
    df.loc[moved, "Y"] += (np.sqrt(2.0) - 1.0) * noise[moved]
    df.loc[moved, "X3"] += 0.8 * (np.sqrt(2.0) - 1.0) * noise[moved]   # X3 follows Y
    rs = _fit(NegDRO(df, env="env", outcome="Y")).robust_set()
    assert rs.empty and rs.statistic > 3 * rs.critical
    assert rs.df == 3 * (3 + 1)                       # residual moments and the risk


@pytest.mark.parametrize("size", [0.002, 3.0])
def test_the_statistic_gradient_is_exact(size):
    """The joint statistic's analytic gradient (score covariances moving with b, the
    risk's Jacobian) equals central differences, with a non-Gaussian part the
    positive-definiteness guard leaves as it is (0.002) and one it scales down in every
    environment (3.0; the scale moves with b: until issue 42 the gradient held it
    fixed)."""
    from negdro_stats.data.fourth import gaussian_score_cov
    from negdro_stats.estimation import cumulant_scaling

    ar = _statistic_with_cumulant(seed=0, size=size)
    S, b = np.array([0, 2]), np.array([0.7, 0.3])
    b_full = np.zeros(ar.mom.p)
    b_full[S] = b
    t, _ = cumulant_scaling(gaussian_score_cov(ar.mom, b_full, ar.cols), ar.K)
    assert (t == 1).all() if size < 1 else (t < 1).all()
    _, grad = ar.objective(b, S)
    h = 1e-6
    numeric = [(ar.objective(b + e, S)[0] - ar.objective(b - e, S)[0]) / (2 * h)
               for e in np.eye(2) * h]
    assert_allclose(grad, numeric, rtol=1e-5)


def test_score_covariance_with_the_residual_from_rows_and_fourth_moments():
    """The residual as an instrument (``Z r = r^2``): the fourth moments and the rows
    give the covariance of the rows' own (X r, r^2) (with an intercept in the frame of
    the fits, about the pooled means ``data.origin``)."""
    import copy
    from dataclasses import replace

    from negdro_stats.data.fourth import RESIDUAL

    df = _manual(400, 3, FOUR)
    data = NegDRO(df, env="env", outcome="Y", fit_intercept=True).data
    b = np.array([0.9, -0.4, 0.1, 0.2])
    cols = np.array([2, RESIDUAL, 0])
    df = df.copy()
    df[["X1", "X2", "X3", "Y"]] -= data.origin
    r = df.Y - df.X1 * 0.9 + df.X2 * 0.4 - df.X3 * 0.1 - 0.2
    rows = df[df.env == 1]
    Z = np.column_stack([rows.X3, r[rows.index], rows.X1]) * r[rows.index].to_numpy()[:, None]
    direct = np.cov(Z.T, bias=True)
    assert_allclose(data.score_cov(b, cols)[1], direct, rtol=1e-9)
    without = copy.copy(data)                         # the rows' pass, no fourth moments
    without.moments = replace(data.moments, fourth=None)
    assert_allclose(without.score_cov(b, cols)[1], direct, rtol=1e-9)


@pytest.mark.parametrize("law, seed", [("normal", 10_015), ("exponential", 10_080)])
def test_a_set_that_is_not_empty_bounds_every_coefficient(law, seed):
    """Issue 41 item 7: a non-empty set gave NaN bounds.  Gaussian seed: min AR 58.97 <=
    60.48, the joint quantile, but above the KJ test's J quantile chi2_0.99(34) = 56.06,
    so every value of every coefficient was rejected (20 NaN bounds of 20); J's
    quantile is then the joint one (K_j <= c_K still applies).  Skewed seed: X9's
    search started from the worst of its candidates (b = 0, on the plateau far out) and
    stepped over the interval, [1.20, 1.40] (NaN); the joint CUE is now the first."""
    sem = simulate.random_sem(10, n_parents=2, n_children=2, strong_env=True, rng=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(sem.sample(2000, rng=seed, noise=law), env="env", outcome="Y").fit(
            n_boot=0)
    rs = res.robust_set()
    assert not rs.empty
    ci = res.conf_int(kind="robust")
    assert ci.notna().all().all(), ci
    joint = rs._gmm.fit_cue(np.arange(10), start=rs._starts[-1]).b / rs._to_std
    assert ((ci["lower"] <= joint) & (joint <= ci["upper"])).all()
    assert "bounded" in repr(rs)


class _EvenRows:
    """A generator whose every resample is the even rows of the sample, twice each."""

    def integers(self, low, high, size):
        draws, n = size
        return np.tile(np.arange(n) // 2 * 2, (draws, 1))     # 0, 0, 2, 2, 4, 4, ...


def test_the_bartlett_resamples_compute_the_statistic_as_the_set_does():
    """The Bartlett factor's resampled statistic at the fit, on one resample (the even
    rows), equals the invariance statistic computed by hand from the rows' (X r, r^2):
    per environment the resample's mean less the sample's, weighted by the resample's
    own covariance, with the common mean profiled out; and on the sample itself
    (every row once) the deviations are 0 and the covariance is score_cov's."""
    from negdro_stats.data.fourth import RESIDUAL
    from negdro_stats.inference.robust import BARTLETT_DRAWS

    df = _manual(300, 5, FOUR)
    res = _fit(NegDRO(df, env="env", outcome="Y"))
    rs = res.robust_set()
    std = rs._gmm.mom
    b0 = rs._starts[1]
    cols = np.array([0, 1, 2, RESIDUAL])
    dev, V = std.fourth.score_draws(b0, cols, 3, _EvenRows())
    assert dev.shape == (3, 4, 4) and V.shape == (3, 4, 4, 4)
    Wsum, Wd, dWd = np.zeros((4, 4)), np.zeros(4), 0.0
    for e, v in enumerate(std.fourth.rows):      # the rows (standardised, in hash order)
        xy = v[:, :4] + std.fourth.shift[e]
        assert len(v) == (df.env == e).sum()
        r = xy[:, 3] - xy[:, :3] @ b0
        u = np.column_stack([xy[:, :3] * r[:, None], r**2])
        even = u[::2]
        d = even.mean(axis=0) - u.mean(axis=0)
        W = len(u) * np.linalg.inv(np.cov(even.T, bias=True))
        Wsum, Wd, dWd = Wsum + W, Wd + W @ d, dWd + d @ W @ d
    by_hand = dWd - Wd @ np.linalg.solve(Wsum, Wd)
    from negdro_stats.estimation import score_weights
    n = np.array([len(v) for v in std.fourth.rows], dtype=float)
    W = score_weights(V[0], n)
    Wd0 = np.einsum("eij,ej->ei", W, dev[0])
    total = Wd0.sum(axis=0)
    ours = np.einsum("ei,ei->", dev[0], Wd0) - total @ np.linalg.solve(W.sum(axis=0), total)
    assert_allclose(ours, by_hand, rtol=1e-8)

    class _Itself:
        def integers(self, low, high, size):
            return np.tile(np.arange(size[1]), (size[0], 1))

    dev, V = std.fourth.score_draws(b0, cols, 2, _Itself())
    assert_allclose(dev, 0.0, atol=1e-12)
    assert_allclose(V[1], std.fourth.score_cov(b0, cols), rtol=1e-10)
    assert BARTLETT_DRAWS >= 199


def test_skewed_noise_raises_the_quantiles_by_the_bartlett_factor():
    """Issue 41 item 7: on Exp(1) - 1 noise at p = 30 the fourth moments' noise inflates
    AR at beta* (mean 1.064 df over 40 samples); the factor estimated from the rows is
    of that size there, ~1 on Gaussian rows of the same design, exactly 1 without rows
    (population moments), and every quantile and p-value uses it."""
    from negdro_stats._stats import chi2_ppf, chi2_sf

    sem = simulate.random_sem(30, n_parents=3, n_children=3, strong_env=True, rng=7)
    factors = {}
    for law in ("normal", "exponential"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = NegDRO(sem.sample(2000, rng=3, noise=law), env="env", outcome="Y").fit(
                n_boot=0)
        rs = res.robust_set()
        factors[law] = rs.bartlett
        assert rs.critical == pytest.approx(rs.bartlett * chi2_ppf(0.95, rs.df))
        assert f"{rs.bartlett:.3f} x chi2({rs.df})" in repr(rs)
    assert 1.0 <= factors["normal"] < 1.04 < factors["exponential"] < 1.12, factors
    sub = rs._subvector
    ar, k = sub.parts(0, 0.0, "all")
    assert sub.pvalue(0) == pytest.approx(min(1.0, chi2_sf(k / rs.bartlett, 1) / 0.8, chi2_sf(
        (ar - k) / rs.bartlett, rs.df_sub - 1) / 0.2))
    population = NegDRO.from_moments(sem.moments()).fit().robust_set()
    assert np.isnan(population.bartlett) and population.scale == 1.0
    assert population.critical == pytest.approx(chi2_ppf(0.95, population.df))


def test_no_bartlett_factor_from_few_rows_per_condition():
    """With few rows per moment condition, resamples of tied rows inflate the statistic
    more than the data do (a review: factor 1.74 on Gaussian rows, p = 4, 30 rows x 3
    environments, where AR at beta* averages 1.08 df), and the summary blamed heavy
    tails: there the factor is not measured (NaN), the quantiles are chi2's and nothing
    is called unreliable."""
    from negdro_stats._stats import chi2_ppf

    sem = simulate.random_sem(4, n_envs=3, n_parents=2, n_children=1, strong_env=True,
                              rng=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(sem.sample(30, rng=0), env="env", outcome="Y").fit(n_boot=0)
    rs = res.robust_set()
    assert np.isnan(rs.bartlett) and rs.reliable and rs.scale == 1.0
    assert rs.critical == pytest.approx(chi2_ppf(0.95, rs.df))
    assert "unreliable" not in str(res.summary(intervals="robust"))
