"""Sample-size planning: Wishart moments, the error curve, required_n, argument errors."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from negdro_stats import DataError, LinearSEM, NegDRO, simulate
from negdro_stats.data.fourth import gaussian_score_cov
from negdro_stats.exceptions import DataWarning
from negdro_stats.planning import (
    SamplePlan,
    cumulant_noise,
    plan_sample_size,
    sample_moments,
    sample_size,
)

from ..helpers import issue40_design


def _shifted_sem() -> LinearSEM:
    """A Gaussian design with a mean shift (so that the raw moments differ from the
    covariances) and a child of Y."""
    return LinearSEM.from_equations(
        {"Y": {"X1": 1.0}, "X2": {"Y": 0.5}},
        interventions=[{}, {"X1": (1.5, 2.0), "X2": 1.0}])


def test_wishart_moments_have_the_population_expectation_and_variance():
    """E[mean] = mu and E[raw second moment] = population (the scatter of n rows is
    Wishart(n - 1, C), the mean N(mu, C / n)); Var(Sigma_jj) = (2 C^2 + 4 mu^2 C) / n, the
    variance of a mean of n squared Gaussians."""
    sem, n, draws = _shifted_sem(), 20, 4000
    pop = sem.moments()
    rng = np.random.default_rng(0)
    moms = [sample_moments(pop, n, rng) for _ in range(draws)]
    Sigma = np.stack([m.Sigma for m in moms])
    # 5 standard errors of the Monte Carlo mean, entrywise
    for got, want in [(Sigma, pop.Sigma), (np.stack([m.sxy for m in moms]), pop.sxy),
                      (np.stack([m.syy for m in moms]), pop.syy),
                      (np.stack([m.mean_x for m in moms]), pop.mean_x)]:
        se = got.std(axis=0) / np.sqrt(draws)
        assert np.all(np.abs(got.mean(axis=0) - want) <= 5 * se + 1e-12)
    assert_allclose([m.n for m in moms[:3]], np.full((3, 2), n))
    e, j = 1, 0                                   # the shifted covariate, shifted env
    mu = pop.mean_x[e, j]
    C = pop.Sigma[e, j, j] - mu**2
    # the variance of a variance estimate from 4000 draws: relative s.e. about 3-5%
    assert Sigma[:, e, j, j].var() == pytest.approx((2 * C**2 + 4 * mu**2 * C) / n, rel=0.15)


def test_cumulant_noise_has_mean_zero_and_shrinks_like_root_n():
    """The fourth-cumulant term of Gaussian rows is noise around 0 whose size falls like
    n^-1/2: with the same auxiliary draw, n = 20,000 gives exactly 0.1 times the
    deviation of n = 200."""
    sem = _shifted_sem()
    pop = sem.moments()
    b, cols = np.array([0.8, 0.1]), np.array([0, 1])
    base = gaussian_score_cov(pop, b, cols)

    def deviation(n, seed):
        return cumulant_noise(pop, n, np.random.default_rng(seed))(pop)(b, cols) - base

    assert_allclose(deviation(20_000, 7), 0.1 * deviation(200, 7), rtol=1e-10, atol=1e-12)
    draws = np.stack([deviation(200, seed) for seed in range(300)])
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0)) <= 5 * se)
    assert np.all(draws.std(axis=0)[:, [0, 1], [0, 1]] > 0)


def test_a_replicate_of_few_rows_has_their_moments_and_their_score_covariance():
    """Up to AUX_ROWS rows per environment a replicate draws its Gaussian rows: its score
    covariance is theirs, positive semidefinite in every draw, as on rows (the Wishart
    moments beside independent cumulant noise give an indefinite one in about a third of
    the draws here); beyond, the moments are Wishart draws for n rows."""
    pop = _shifted_sem().moments()
    rng = np.random.default_rng(0)
    b, cols = np.array([0.8, 0.1]), np.array([0, 1])
    smallest = []
    for _ in range(300):
        mom, score_cov = sample_size._replicate_moments(pop, 20, rng)
        smallest.append(np.linalg.eigvalsh(score_cov(b, cols))[:, 0].min())
        assert_allclose(mom.n, [20, 20])
    assert min(smallest) >= -1e-12
    apart = [np.linalg.eigvalsh(cumulant_noise(pop, 20, rng)(m)(b, cols))[:, 0].min()
             for m in (sample_moments(pop, 20, rng) for _ in range(300))]
    assert np.mean(np.array(apart) < 0) > 0.1
    mom, _ = sample_size._replicate_moments(pop, sample_size.AUX_ROWS + 1, rng)
    assert_allclose(mom.n, [sample_size.AUX_ROWS + 1] * 2)


def test_error_falls_with_n_and_plan_is_reproducible():
    sem = simulate.eq33(p=5)
    plan = plan_sample_size(sem, [40, 4000], reps=12, rng=1, verbose=False)
    frame = plan.to_frame()
    assert frame["median_error"].iloc[1] < frame["median_error"].iloc[0] / 3
    assert frame["p_support"].iloc[1] >= frame["p_support"].iloc[0]
    assert plan.errors.shape == (2, 12) and plan.failed == 0
    assert plan.gaussian_approximation                      # eq. (33) has uniform noise
    again = plan_sample_size(sem, [40, 4000], reps=12, rng=1, verbose=False)
    assert_allclose(again.errors, plan.errors)
    assert "Sample-size plan" in str(plan) and "non-Gaussian noise" in plan.summary()


def test_a_plan_in_workers_is_the_plan_of_one(forking, monkeypatch):
    """The replicates run in forked workers (NEGDRO_N_JOBS=1: in this process), with
    the same plan to the last bit."""
    sem = simulate.eq33(p=5)
    two = plan_sample_size(sem, [40, 400], reps=6, rng=1, verbose=True)
    monkeypatch.setenv("NEGDRO_N_JOBS", "1")
    one = plan_sample_size(sem, [40, 400], reps=6, rng=1, verbose=False)
    for part in ("errors", "support_ok", "margins", "verdicts"):
        np.testing.assert_array_equal(getattr(two, part), getattr(one, part))


def test_rows_draw_fits_rows():
    plan = plan_sample_size(_shifted_sem(), [50], reps=2, rng=0, draw="rows", verbose=False)
    assert plan.draw == "rows" and not plan.gaussian_approximation
    assert np.isfinite(plan.errors).all()


def _synthetic(n, scale):
    """A plan whose errors are exactly scale_r / sqrt(n_k): the power-quantile is
    q(power) / sqrt(n), so required_n = (q / target)^2 exactly."""
    n = np.asarray(n)
    errors = scale[None, :] / np.sqrt(n)[:, None]
    support = np.zeros(errors.shape, bool)
    return SamplePlan(n=n, errors=errors, support_ok=support,
                      margins=np.ones(errors.shape), population_margin=1.0)


def test_required_n_interpolates_an_n_to_the_minus_half_rate_exactly():
    scale = np.arange(1, 101) / 10.0                       # quantiles 0.1 .. 10
    plan = _synthetic([100, 400, 1600, 6400], scale)
    q80 = np.quantile(scale, 0.8, method="inverted_cdf")
    for target in [0.5, 0.3, 0.15]:
        # the share is evaluated on a fine grid: 64 points per factor 4 in n, i.e. n known
        # to a factor 4^(1/64) = 1.022
        assert plan.required_n(target, power=0.8) == pytest.approx((q80 / target) ** 2,
                                                                   rel=0.022)


def test_required_n_interpolates_shares_linearly_in_log_n():
    """Support: shares 0.5 at n = 100 and 1.0 at n = 400 give P = 0.8 at
    log n = log 100 + 0.6 log 4, i.e. n = 100 * 4^0.6."""
    n = np.array([100, 400])
    support = np.zeros((2, 10), bool)
    support[0, :5], support[1] = True, True
    plan = SamplePlan(n=n, errors=np.ones((2, 10)), support_ok=support,
                      margins=np.ones((2, 10)), population_margin=1.0)
    assert plan.required_n(power=0.8, criterion="support") == np.ceil(100 * 4**0.6)


def test_required_n_is_monotone_in_target_and_power():
    rng = np.random.default_rng(3)
    n = np.array([100, 200, 400, 800, 1600])
    errors = rng.lognormal(0, 1, (5, 50)) / np.sqrt(n)[:, None] + 0.2 * (n < 300)[:, None]
    plan = SamplePlan(n=n, errors=errors, support_ok=rng.random((5, 50)) < (n / 2000)[:, None],
                      margins=rng.normal(0.01, 0.01, (5, 50)) + (n / 1e5)[:, None],
                      population_margin=0.02)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        by_target = [plan.required_n(t, power=0.7) for t in [0.03, 0.05, 0.08, 0.12, 0.2, 0.4]]
        by_power = [plan.required_n(0.1, power=pw) for pw in [0.3, 0.5, 0.7, 0.8, 0.9]]
        support = [plan.required_n(power=pw, criterion="support") for pw in [0.1, 0.3, 0.5]]
    assert np.all(np.diff(by_target) <= 0) and by_target[0] > by_target[-1]
    assert np.all(np.diff(by_power) >= 0) and by_power[-1] > by_power[0]
    assert np.all(np.diff(support) > 0)
    assert 100 <= support[0] and support[-1] <= 1600


def test_required_n_warns_outside_the_grid():
    plan = _synthetic([100, 400], np.ones(10))            # error 0.1 at n = 100, 0.05 at 400
    with pytest.warns(DataWarning, match="largest candidate"):
        assert plan.required_n(0.01) == np.inf
    with pytest.warns(DataWarning, match="smallest candidate"):
        assert plan.required_n(0.2) == 100
    with pytest.warns(DataWarning, match="largest candidate"):
        assert plan.required_n(criterion="support") == np.inf     # never right


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(sem="eq33"), "'sem' parameter"),
    (dict(n=[5, 100]), "'n' parameter .* >= p \\+ 2 = 7"),
    (dict(n=[100, 100]), "distinct"),
    (dict(n=[100.5]), "'n' parameter"),
    (dict(n=[]), "'n' parameter"),
    (dict(reps=1), "'reps' parameter"),
    (dict(draw="moment"), "Did you mean 'moments'"),
    (dict(margin_alpha=1.5), "'margin_alpha' parameter"),
    (dict(threshhold=0.1), "unknown option 'threshhold'. Did you mean 'threshold'"),
    (dict(rng="seed"), "'rng' parameter"),
])
def test_plan_argument_errors(kwargs, match):
    args = dict(sem=simulate.eq33(p=5), n=[100], reps=2, verbose=False) | kwargs
    with pytest.raises((DataError, ValueError, TypeError), match=match):
        plan_sample_size(**args)


def test_required_n_argument_errors():
    plan = _synthetic([100, 400], np.ones(10))
    with pytest.raises(DataError, match="needs target_error"):
        plan.required_n()
    with pytest.raises(DataError, match="criterion='error' only"):
        plan.required_n(0.1, criterion="support")
    with pytest.raises(ValueError, match="'power' parameter"):
        plan.required_n(0.1, power=1.0)
    with pytest.raises(ValueError, match="'target_error' parameter"):
        plan.required_n(-1.0)
    with pytest.raises(ValueError, match="Did you mean 'margin'"):
        plan.required_n(criterion="margins")


def test_plot_returns_a_figure():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    fig = _synthetic([100, 400], np.ones(10)).plot(target_error=0.07)
    assert len(fig.axes) == 2


def test_required_n_blends_a_bimodal_error_linearly():
    """A selection that switches routes: at n = 100, 60% of the fits are off (error 1) and
    40% right (0.01); at n = 400 all are right.  Carried by the n^-1/2 rate, the right ones
    stay under 0.05 and the wrong ones above, so P(error <= 0.05) = 0.4 + 0.6 theta and
    power 0.8 is reached at theta = 2/3, n = 100 * 4^(2/3) (an interpolated 80% quantile,
    which jumps from 1 to 0.005, would give 100 * 4^0.565)."""
    errors = np.array([[1.0] * 6 + [0.01] * 4, [0.005] * 10])
    plan = SamplePlan(n=np.array([100, 400]), errors=errors, support_ok=errors < 0.1,
                      margins=np.ones((2, 10)), population_margin=1.0)
    assert plan.required_n(0.05, power=0.8) == np.ceil(100 * 4 ** (2 / 3))   # whole rows


def test_margin_boot_gives_parametric_bootstrap_bounds():
    sem = simulate.example3("strong")
    plan = plan_sample_size(sem, [2000], reps=3, rng=0, margin_boot=8, verbose=False)
    assert plan.boot_lcb.shape == (1, 3) and np.isfinite(plan.boot_lcb).all()
    assert np.all(plan.margin_lcb == plan.boot_lcb)
    assert np.all(plan.boot_lcb < plan.margins)          # a lower bound at 95%
    assert "parametric bootstrap" in plan.summary()
    for bad in (-1, 1):
        with pytest.raises(ValueError, match="'margin_boot' parameter"):
            plan_sample_size(sem, [2000], reps=2, margin_boot=bad)


def test_unidentified_designs_and_whole_rows():
    """Identical environments: no n shows a margin (the shift rule echoed the noise and
    said 0.7-0.8); one environment is refused as NegDRO refuses it; solver options named
    like the plan's own (method, alpha) reach the solver; required_n is whole rows."""
    same = LinearSEM.from_equations({"Y": {"X1": 1.0}, "X2": {"Y": 1.0}},
                                    interventions=[{}, {}, {}])
    plan = plan_sample_size(same, [100, 400], reps=4, rng=0, verbose=False)
    assert not plan.identified and (plan.to_frame()["p_margin"] == 0).all()
    assert "fails: no n shows a margin" in plan.summary()
    with pytest.warns(DataWarning, match="no sample size shows a margin"):
        assert plan.required_n(criterion="margin") == np.inf
    with pytest.raises(DataError, match="at least 2 environments"):
        plan_sample_size(LinearSEM.from_equations({"Y": {"X1": 1.0}},
                                                  interventions=[{"X1": 1.0}]), [50], reps=2)
    strict = plan_sample_size(_shifted_sem(), [60], reps=3, rng=1, test_level=0.3,
                              verbose=False)
    loose = plan_sample_size(_shifted_sem(), [60], reps=3, rng=1, verbose=False)
    assert strict.margin_alpha == loose.margin_alpha == 0.05      # test_level: the solver
    grid = plan_sample_size(_shifted_sem(), [40, 80, 160], reps=6, rng=2, verbose=False)
    n = grid.required_n(target_error=float(np.median(grid.errors[1])), power=0.5)
    assert n == np.ceil(n)


def test_plot_target_and_integral_float_grid():
    """n = 200.0 is 200 rows; plot(target_error) draws P(error <= target) and refuses a
    target that is not a positive number."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    plan = plan_sample_size(_shifted_sem(), [40.0, 80], reps=3, rng=0, verbose=False)
    assert plan.n.tolist() == [40, 80]
    fig = plan.plot(target_error=0.2)
    assert any(line.get_label() == "error <= 0.2" for line in fig.axes[1].get_lines())
    with pytest.raises(ValueError, match="'target_error' parameter of SamplePlan.plot"):
        plan.plot(target_error=-1)
    with pytest.raises(DataError, match="distinct integers"):
        plan_sample_size(_shifted_sem(), [40.5], reps=2)


def test_a_plan_identified_by_condition_6_says_so_and_what_its_fits_report():
    """Issue 40's design (Condition 1b fails; 4 and 6 hold, with hidden confounding): the
    plan calls it identified, by Condition 6, not "Condition 1b fails: no n shows a
    margin"; each replicate fit carries the verdict NegDROResults.verdict would give
    (the one rule), here mostly "if Condition 4", as a fit on rows of the design says;
    required_n(criterion="margin") points to criterion="verdict", which answers."""
    sem = issue40_design(8)
    plan = plan_sample_size(sem, [500, 2000], reps=6, rng=0, verbose=False)
    assert plan.identified and plan.design.routes == ("6",)
    assert set(np.unique(plan.verdicts)) <= {"identified", "if Condition 4", "not identified",
                                             "rejected"}
    frame = plan.to_frame()
    assert frame.loc[2000, "p_if_condition_4"] >= 0.5
    assert_allclose(frame["p_identified"] + frame["p_if_condition_4"],
                    plan._probability("verdict", None))
    text = " ".join(plan.summary().split())
    assert "identified by Condition 6" in text and "not by Condition 1b" in text
    assert "(fails: no n shows a margin)" in text
    assert "here every child of Y is (D = ['X4'] within S_L)" in text
    with pytest.warns(DataWarning, match="use criterion='verdict'"):
        assert plan.required_n(criterion="margin") == np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert plan.required_n(criterion="verdict", power=0.5) <= 2000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(sem.sample(2000, rng=0), env="env", outcome="Y").fit(n_boot=0)
    assert res.verdict == "if Condition 4"
    design = " ".join(sem.check_identification().summary().split())
    assert "its verdict is 'if Condition 4'" in design and "as here." in design


def test_a_hand_built_plan_has_no_verdict_criterion():
    plan = _synthetic([100, 400], np.ones(10))
    assert plan.verdicts is None and "p_identified" not in plan.to_frame()
    with pytest.raises(DataError, match="no fits' verdicts"):
        plan.required_n(criterion="verdict")


def test_a_plan_whose_fits_assume_a_condition_the_design_breaks_says_so():
    """Issue 40's design with the child X4 of Y never intervened on: no condition
    identifies beta*, yet the fits say 'if Condition 4' (the data cannot see the
    unshifted child).  The plan's summary said only "fits should say 'not identified'"
    beside a table of p_if_condition_4 = 1; now it says those verdicts are wrong here,
    and why."""
    sem = LinearSEM.from_equations(
        {"X2": {"X1": 0.8}, "Y": {"X1": 1.0, "X2": -0.5, "X3": 0.3}, "X4": {"Y": 0.7}},
        covariates=[f"X{j}" for j in range(1, 7)], noise_var={"Y": 2.0, "X1": 2.0},
        interventions=[{}, {"X1": (1.0, 1.0), "X3": 1.5}, {"X2": (0.5, 1.0), "X6": 1.0},
                       {"X1": 2.0, "X3": (0.5, 0.5)}])
    plan = plan_sample_size(sem, [2000], reps=4, rng=0, verbose=False)
    assert not plan.identified
    assert plan.to_frame().loc[2000, "p_if_condition_4"] > 0
    text = " ".join(plan.summary().split())
    assert "it is wrong for this design" in text
    assert "(['X4'], children of Y, are never intervened on)" in text


def test_a_plan_reads_the_declarations_its_fits_will_be_given():
    """plan_sample_size takes NegDRO's declarations: its summary says where the planned
    design contradicts them (issue 40's design: X5, a grandchild of Y, declared a
    non-descendant; X5 declared a target of environment 2, which does not touch it)
    and that no declaration settles the grandchild left open; a declaration naming an
    unknown covariate is refused."""
    sem = issue40_design(8)
    plan = plan_sample_size(sem, [500], reps=2, rng=0, verbose=False,
                            not_descendants=["X5", "X7"], targets={2: ["X1", "X5"]})
    assert plan.design.declarations.not_descendants == ("X5", "X7")
    text = " ".join(plan.summary().split())
    assert "Declared not descendants of Y, but descendants in this plan: X5." in text
    assert "Declared targets that this plan does not intervene on: X5 (2)." in text
    assert "X5 descends from Y, so no declaration settles" in text
    assert "Declared" not in plan_sample_size(sem, [500], reps=2, rng=0,
                                              verbose=False).summary()
    with pytest.raises(DataError, match="not_descendants names 'X99'"):
        plan_sample_size(sem, [500], reps=2, not_descendants=["X99"])
