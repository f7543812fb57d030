"""LinearSEM: Example 2 / Table 1 (Lemma 1's sign by hand), sampling.  The property tests of
Lemma 1 are in tests/theory/test_theorems.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from numpy.testing import assert_allclose

from negdro_stats import DataError, LinearSEM, Moments, NegDRO, simulate
from negdro_stats import testing as nt
from negdro_stats.estimation.objective import env_risks


def test_lemma1_sign_example2_by_hand():
    """Example 2: X2 = Y + e2 gives E[eps_Y X] = (0, sigma_Y^2) = (0, 1), i.e. -G^T h = (0, 1);
    the proof's printed sign (+G^T h) fails the check."""
    sem = simulate.example2((1.0, 2.0))
    check = nt.lemma1(sem)
    assert check.holds
    assert_allclose(check.lhs, [[0.0, 1.0], [0.0, 1.0]], atol=1e-12)
    assert_allclose(check.rhs[0], [0.0, 1.0], atol=1e-12)


@pytest.mark.parametrize("nu", [(1.0, 2.0), (0.5, 3.0)])
def test_table1_example2(nu):
    """Table 1: pooled least squares on each subset S and its risks per environment."""
    sem = simulate.example2(nu)
    mom = sem.moments()
    nb = np.mean(nu)
    expected = {
        (): (np.zeros(2), [v + 1 for v in nu]),
        (0,): (np.array([1.0, 0.0]), [1.0, 1.0]),
        (1,): (np.array([0.0, (nb + 1) / (2 * nb + 1)]),
               [(nb**2 * (v + 1) + (nb + 1) ** 2 * v) / (2 * nb + 1) ** 2 for v in nu]),
        (0, 1): (np.array([nb / (nb + 1), 1 / (nb + 1)]),
                 [(v + nb**2) / (nb + 1) ** 2 for v in nu]),
    }
    Sbar, sbar = mom.Sigma.mean(0), mom.sxy.mean(0)       # equal-weight pooling (Sec. 2.2)
    for S, (b_exp, r_exp) in expected.items():
        b = np.zeros(2)
        if S:
            idx = list(S)
            b[idx] = np.linalg.solve(Sbar[np.ix_(idx, idx)], sbar[idx])
        assert_allclose(b, b_exp, atol=1e-12)
        assert_allclose(env_risks(b, mom.Sigma, mom.sxy, mom.syy), r_exp, atol=1e-12)


def test_sample_moments_converge_to_population():
    sem = simulate.eq33(p=6)
    df = sem.sample(200_000, rng=1)
    mom = Moments.from_arrays(df.iloc[:, 1:-1], df["Y"], df["env"])
    pop = sem.moments()
    # Entries are O(10); the standard error of a second moment at n = 2e5 is < 0.1.
    assert np.abs(mom.Sigma - pop.Sigma).max() < 0.3
    assert np.abs(mom.sxy - pop.sxy).max() < 0.3
    assert_allclose(mom.mean_x, pop.mean_x, atol=0.05)


@pytest.mark.parametrize("dependence", [dict(serial=0.8), dict(serial=-0.5),
                                        dict(cluster_size=25, icc=0.6)])
def test_dependent_rows_keep_the_population_moments(dependence):
    """AR(1) rows and clustered rows (issue 66's families) have the design's population
    moments (each standardised component keeps mean 0 and variance 1); the
    residual at beta* has lag-1 autocorrelation ``serial`` within each environment, and
    clustered residuals the intra-cluster correlation ``icc`` (the variance of cluster
    means is ``icc + (1 - icc) / m`` of theirs)."""
    sem = simulate.eq33(p=6)
    df = sem.sample(100_000, rng=3, **dependence)
    X = df[[f"X{j}" for j in range(1, 7)]]
    mom = Moments.from_arrays(X, df["Y"], df["env"])
    pop = sem.moments()
    assert np.abs(mom.Sigma - pop.Sigma).max() < 1.2      # AR(1) 0.8: n / 9 effective rows
    assert np.abs(mom.sxy - pop.sxy).max() < 1.2
    r = df["Y"] - X @ sem.beta_star
    for _, one in r.groupby(df["env"]):
        a = one.to_numpy() - one.mean()
        if "serial" in dependence:
            assert a[1:] @ a[:-1] / (a @ a) == pytest.approx(dependence["serial"], abs=0.02)
        else:
            means = one.groupby(df.loc[one.index, "cluster"]).mean()
            icc, m = dependence["icc"], dependence["cluster_size"]
            assert means.var() / one.var() == pytest.approx(icc + (1 - icc) / m, rel=0.1)
    if "cluster_size" in dependence:
        sizes = df.groupby("cluster").size()
        assert sizes.max() == 25 and len(sizes) == 4 * 100_000 // 25
        assert df.groupby("cluster")["env"].nunique().max() == 1


def test_dependent_rows_are_checked():
    sem = simulate.eq33(p=5)
    with pytest.raises(ValueError, match="'serial' parameter of LinearSEM.sample"):
        sem.sample(10, rng=0, serial=1.0)
    with pytest.raises(DataError, match="give cluster_size too"):
        sem.sample(10, rng=0, icc=0.3)
    with pytest.raises(DataError, match="cluster_column='env'"):
        sem.sample(10, rng=0, cluster_size=5, cluster_column="env")
    assert sem.sample(10, rng=0, serial=0.0).equals(sem.sample(10, rng=0))


def test_from_equations_and_facts():
    sem = LinearSEM.from_equations(
        {"Y": {"X2": 2.0}, "X3": {"X1": 0.5, "Y": -1.0}, "X2": {"X1": 1.0}},
        interventions=[{}, {"X3": 2.0}], covariates=["X1", "X2", "X3"])
    assert_allclose(sem.beta_star, [0.0, 2.0, 0.0])
    assert list(sem.D) == [2] and list(sem.S_L) == [2]
    assert sem.names == ("Y", "X1", "X2", "X3")


def test_cycle_and_bad_input_raise():
    with pytest.raises(DataError, match="cycle"):
        LinearSEM.from_equations({"Y": {"X1": 1.0}, "X1": {"Y": 1.0}}, interventions=[{}, {}])
    with pytest.raises(DataError, match="Cannot intervene"):
        LinearSEM.from_equations({"Y": {"X1": 1.0}}, interventions=[{"Y": 1.0}])


def test_appendix_f2_not_additive():
    sem = simulate.appendix_f2(p=6)
    assert not sem.is_additive
    with pytest.raises(DataError, match="additive"):
        _ = sem.h
    mom = sem.moments()
    # Risk invariance of beta* still holds: R_e(beta*) = Var(eps_Y) = 1 + 0.25.
    assert_allclose(env_risks(sem.beta_star, mom.Sigma, mom.sxy, mom.syy), 1.25)


@settings(max_examples=10)
@given(sem=nt.designs(p=(1, 3), n_envs=(2, 3)))
def test_sample_shape(sem):
    df = sem.sample([3] * sem.n_envs, rng=0)
    assert df.shape == (3 * sem.n_envs, sem.p + 2)


SIBLING = {"Y": {"X1": 1.0}, "X2": {"X1": 0.5}}       # X2: a non-cause, not a child of Y
CHILD = {"Y": {"X1": 1.0}, "X2": {"Y": 0.5}}


def _confounded(confounders, **kw):
    """Y = X1 + eta_Y (noise variance 4), X2 = Y / 2 + eta_X2: a parent and a child of Y."""
    return LinearSEM.from_equations(CHILD, noise_var={"Y": 4.0}, confounders=confounders, **kw)


def test_confounders_population_moments_by_hand():
    """corr(eta_Y, eta_X1) = 0.5 with variances 4 and 1: Cov = 1, so in the observational
    environment E[X1 Y] = E[X1^2] + Cov = 2, E[Y^2] = 1 + 4 + 2 = 7, E[X2 Y] = 7 / 2."""
    sem = _confounded({("X1", "Y"): 0.5}, interventions=[{}])
    assert_allclose(sem.Omega, [[4.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    mom = sem.moments()
    assert_allclose(mom.sxy[0], [2.0, 3.5])
    assert_allclose(mom.syy[0], 7.0)
    assert_allclose(mom.Sigma[0], [[1.0, 1.0], [1.0, 0.25 * 7.0 + 1.0]])
    assert sem.check_identification().confounded
    plain = _confounded(None, interventions=[{}])
    assert not plain.check_identification().confounded
    assert_allclose(sem.B, plain.B)
    assert_allclose(sem.beta_star, plain.beta_star)
    # The order within a pair does not matter; a pair of covariates is allowed.
    assert_allclose(_confounded({("Y", "X1"): 0.5}, interventions=[{}]).Omega, sem.Omega)
    assert _confounded({("X1", "X2"): -0.3}, interventions=[{}]).Omega[1, 2] == -0.3


@pytest.mark.parametrize(("equations", "confounders"), [
    (SIBLING, {("X1", "Y"): 0.5}),                   # a confounded parent
    (CHILD, {("X2", "Y"): 0.5}),                     # a confounded child
    (CHILD, {("X1", "Y"): 0.4, ("X2", "Y"): -0.3, ("X1", "X2"): 0.2}),
])
def test_confounding_biases_pooled_ols_not_negdro(equations, confounders):
    """With Condition 1b (both covariates shifted in environment 2) the population NegDRO fit
    is beta*, while pooled least squares on the same moments is off by more than 0.1 (and,
    without a child of Y, exact when the confounders are removed)."""
    def design(conf):
        return LinearSEM.from_equations(equations, interventions=[{}, {"X1": 1.0, "X2": 1.0}],
                                        noise_var={"Y": 4.0}, confounders=conf)

    def pooled_ols(mom):
        return np.linalg.solve(mom.Sigma.sum(axis=0), mom.sxy.sum(axis=0))

    sem = design(confounders)
    mom = sem.moments()
    assert sem.check_identification().condition_1b.holds
    assert np.linalg.norm(pooled_ols(mom) - sem.beta_star) > 0.1
    if equations is SIBLING:
        assert_allclose(pooled_ols(design(None).moments()), sem.beta_star, atol=1e-12)
    res = NegDRO.from_moments(mom).fit(n_boot=0)
    assert_allclose(res.params.to_numpy(), sem.beta_star, atol=1e-6)


@pytest.mark.parametrize(("confounders", "match"), [
    ({("X1", "Yy"): 0.5}, "unknown variable 'Yy'.*Did you mean 'Y'"),
    ({("X1",): 0.5}, "pairs of variable names"),
    ({("X1", "X1"): 0.5}, "with itself"),
    ({("X1", "Y"): 0.5, ("Y", "X1"): 0.2}, "given twice"),
    ({("X1", "Y"): 1.5}, r"\[-1, 1\]"),
    ({("X1", "Y"): "high"}, r"\[-1, 1\]"),
    ({("X1", "Y"): float("nan")}, r"\[-1, 1\]"),
    ({("X1", "Y"): 0.9, ("X2", "Y"): 0.9, ("X1", "X2"): -0.9}, "not positive semidefinite"),
    ([("X1", "Y")], "must be a dict"),          # (triples are a plan file's form)
])
def test_bad_confounders(confounders, match):
    with pytest.raises(DataError, match=match):
        _confounded(confounders, interventions=[{}])


def test_confounder_of_a_constant_noise():
    with pytest.raises(DataError, match="variance 0"):
        LinearSEM.from_equations({"Y": {"X1": 1.0}}, interventions=[{}],
                                 noise_var={"X1": 0.0}, confounders={("X1", "Y"): 0.5})


@pytest.mark.parametrize("seed", [0, 3])
def test_random_sem_shift_kinds(seed):
    """random_sem(shift=...): the same graph; "mean" shifts means only (then A(w) of
    eq. (16) has rank < |E| <= p, so Condition 1b fails), "variance" variances only."""
    both, mean, var = (simulate.random_sem(12, n_envs=4, shift=s, rng=seed)
                       for s in ("both", "mean", "variance"))
    assert_allclose(mean.B, both.B, rtol=0, atol=0)
    assert_allclose(var.Omega, both.Omega, rtol=0, atol=0)
    assert all(not iv.cov.any() for iv in mean.interventions)
    assert all(iv.mean.any() for iv in mean.interventions[1:])
    assert all(not iv.mean.any() for iv in var.interventions)
    assert all(iv.cov.any() for iv in var.interventions[1:])
    assert not mean.check_identification().condition_1b.holds


def test_random_sem_bad_shift():
    with pytest.raises(ValueError, match="'shift' parameter of random_sem.*Did you mean 'mean'"):
        simulate.random_sem(12, shift="means")


def test_constructors_refuse_bad_arguments_with_named_errors():
    """Each a raw numpy error or a 74.5 GiB allocation before; now the argument is named."""
    import pytest

    from negdro_stats import DataError, simulate
    from negdro_stats.planning.design import LinearSEM

    with pytest.raises(DataError, match="one dict per environment"):
        LinearSEM.from_equations({"Y": {"X1": 1.0}}, interventions={"X1": 1.0})
    with pytest.raises(TypeError, match="'p' parameter of eq33 must be an int"):
        simulate.eq33(p=5.0)
    with pytest.raises(DataError, match="p <= 5000 is supported"):
        simulate.eq33(p=10**5)
    sem = simulate.eq33()
    with pytest.raises(ValueError, match="'n_per_env' parameter"):
        sem.sample(-1)
    with pytest.raises(TypeError, match="'rng' parameter"):
        sem.sample(10, rng="x")
    with pytest.raises(DataError, match="has 2 entries; the SEM has 4"):
        sem.sample([10, 20])
    with pytest.raises(TypeError, match="'rng' parameter of random_sem"):
        simulate.random_sem(12, rng="x")


def test_print_shows_the_equations_confounding_and_interventions():
    """print(sem) is what a reader of the plan wants to check, not only the repr."""
    sem = LinearSEM.from_equations({"Y": {"X1": 1.0}, "X2": {"Y": -0.5, "X1": 2.0}},
                                   interventions=[{}, {"X1": (1.0, 2.0)}],
                                   confounders={("Y", "X2"): 0.3})
    lines = str(sem).splitlines()
    assert lines[0] == "LinearSEM: 2 covariates, 2 environments"
    assert "  Y = 1 X1 + noise" in lines and "  X1 = noise" in lines
    assert "  X2 = -0.5 Y + 2 X1 + noise" in lines
    assert "  hidden confounding (noise covariance): X2 ~ Y (0.3)" in lines
    assert lines[-2:] == ["  environment 1: observational",
                          "  environment 2: X1 (mean 1, var 2)"]


def test_the_design_check_reads_the_declarations_against_the_plan():
    """Issue 40's plan (p = 10): X5, a grandchild of Y, is never intervened on, so no
    true declaration settles a fit that leaves it open; declaring it a non-descendant,
    or a target of environment 2 (which does not touch it), contradicts the plan.  A
    random plan whose never-intervened covariates are all non-descendants: declaring
    them settles the children part of what such a fit rests on, not the confounding."""
    from ..helpers import issue40_design, non_descendants

    report = issue40_design(10).check_identification(not_descendants=["X5", "X7"],
                                                     targets={2: ["X1", "X5"]})
    said = report.to_dict()["on_declarations"]
    assert said[0] == "Declared not descendants of Y, but descendants in this plan: X5."
    assert said[1] == "Declared targets that this plan does not intervene on: X5 (2)."
    assert "X5 descends from Y, so no declaration settles" in said[2]
    assert report.to_dict()["declarations"]["not_descendants"] == ["X5", "X7"]
    sem = simulate.random_sem(12, n_envs=4, n_parents=2, n_children=1, intervened=0.4,
                              shift_downstream=True, rng=3)
    report = sem.check_identification(not_descendants=non_descendants(sem))
    assert report.to_dict()["on_declarations"] == [
        "Never intervened on: X1, X3, X12; none descends from Y: declaring them "
        "(NegDRO(..., not_descendants=[...])) settles the children part of what a fit "
        "that leaves only them open rests on ('if Condition 4', its RESTS ON line); hidden "
        "confounding the declarations cannot settle."]
    assert "Never intervened on: X1, X3, X12" in report.summary()
    with pytest.raises(DataError, match="not_descendants names 'X99'"):
        sem.check_identification(not_descendants=["X99"])
