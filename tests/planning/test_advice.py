"""LinearSEM.suggest_interventions: the smallest set, 'none needed', every condition of the
design check, stable under a small change of the design, and the search's guarantees on
random plans (negdro_stats/planning/advice.py)."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from negdro_stats import DataError, Intervention, LinearSEM
from negdro_stats import testing as nt
from negdro_stats.identification.conditions import CONDITIONS
from negdro_stats.planning.advice import screens

COVARIATES = [f"X{j}" for j in range(1, 11)]
PARTIAL_SHIFTS = [{}, {"X1": (1.0, 1.0), "X3": 1.5}, {"X2": (0.5, 1.0), "X4": 1.0, "X6": 1.0},
                  {"X1": 2.0, "X4": (1.0, 0.5), "X3": (0.5, 0.5)}]


def partial_shift(rho=0.5, child_shifted=True):
    """docs/getting_started.rst's experiment (p = 10, X1 and Y confounded with correlation
    ``rho``; Condition 6 identifies it); without ``child_shifted`` the child X4 of Y is
    never shifted."""
    shifts = [{k: v for k, v in env.items() if child_shifted or k != "X4"}
              for env in PARTIAL_SHIFTS]
    return LinearSEM.from_equations(
        {"X2": {"X1": 0.8}, "Y": {"X1": 1.0, "X2": -0.5, "X3": 0.3}, "X4": {"Y": 0.7},
         "X5": {"X4": 0.6}},
        covariates=COVARIATES, noise_var={"Y": 2.0, "X1": 2.0},
        confounders={("X1", "Y"): rho}, interventions=shifts)


def child_unshifted(coef=1.0):
    """Eq. (33)'s graph at p = 10: every covariate but the child X4 of Y is shifted."""
    return LinearSEM.from_equations(
        {"X2": {"X1": 1.0}, "X3": {"X2": 1.0}, "Y": {"X1": 0.5, "X3": -0.5},
         "X4": {"Y": coef}, "X5": {"Y": -1.0}},
        covariates=COVARIATES, interventions=[{}, {c: 1.0 for c in COVARIATES if c != "X4"}])


def shifted(sem, covariates, variance):
    """``sem`` with one environment shifting ``covariates`` (indices), as the advice does."""
    if not covariates:
        return sem
    var = np.zeros(sem.p)
    var[list(covariates)] = variance
    return sem.with_environment(Intervention(np.zeros(sem.p), np.diag(var)))


def met(sem, condition):
    report = sem.check_identification()
    return report.identified if condition == "any" else report.conditions[condition].holds


def test_an_identified_plan_needs_nothing():
    sem = partial_shift()
    assert sem.check_identification().identified           # by Condition 6 only
    assert not sem.check_identification().condition_1b.holds
    advice = sem.suggest_interventions()
    assert advice.covariates == () and advice.condition == "6" and advice.design is sem
    assert str(advice).startswith("None needed")


@pytest.mark.parametrize("condition", ["any", "1b", "4", "6"])
def test_the_child_never_shifted_is_the_whole_advice(condition):
    sem = child_unshifted()
    assert not sem.check_identification().identified
    advice = sem.suggest_interventions(condition=condition)
    assert advice.covariates == ("X4",) and advice.exhaustive
    assert met(advice.design, condition)
    assert "intervenes on ['X4']" in str(advice) and "no smaller set works" in str(advice)


def test_with_confounding_condition_6_is_aimed_at_and_accepted():
    sem = partial_shift(child_shifted=False)
    report = sem.check_identification()
    assert report.confounded and not report.identified and report.conditions["4"].holds is False
    for condition in ("any", "6"):
        advice = sem.suggest_interventions(condition=condition)
        assert advice.covariates == ("X4",) and advice.condition == "6"
        assert advice.design.check_identification().routes == ("6",)


@pytest.mark.parametrize("make, change", [(partial_shift, 0.5), (child_unshifted, 1.0)])
def test_a_change_of_1e_6_leaves_the_advice_unchanged(make, change):
    """A correlation (or the child's coefficient) moved by 1e-6: the same sets."""
    for condition in ("any", "1b", "4", "6"):
        before = make(change).suggest_interventions(condition=condition)
        after = make(change + 1e-6).suggest_interventions(condition=condition)
        assert before.covariates == after.covariates, condition
        assert before.condition == after.condition


def test_the_unshifted_covariates_are_required_and_suffice_for_condition_1b():
    """Condition 1b needs every never-shifted covariate (X5, X7..X10) in the new
    environment, and here they suffice: no SDP is spent on smaller sets."""
    sem = partial_shift()
    advice = sem.suggest_interventions(condition="1b")
    assert advice.covariates == ("X5", "X7", "X8", "X9", "X10")
    assert advice.design.check_identification().condition_1b.holds
    one_b = screens(sem.Delta, sem.h, sem.S_L, sem.D, advice.variance)["1b"]
    assert one_b((4, 6, 7, 8, 9)) and not one_b((4, 6, 7, 8))


def test_the_greedy_search_keeps_one_covariate_fixes_and_cannot_drop_any():
    """Beyond ``max_exhaustive`` free covariates: exact up to one covariate more than the
    required ones, then a set from which no covariate can be dropped.  One mean shift
    along m leaves m's orthogonal complement (3 dimensions) to the new environment: no
    covariate is required, three are needed."""
    advice = child_unshifted().suggest_interventions(condition="4", max_exhaustive=0)
    assert advice.covariates == ("X4",) and advice.exhaustive       # found by size
    sem = LinearSEM.from_equations(
        {"Y": {"X1": 1.0}, "X3": {"Y": 0.5}}, covariates=["X1", "X2", "X3", "X4"],
        interventions=[{}, {"X1": (1.0, 0.0), "X2": (2.0, 0.0), "X3": (-1.0, 0.0),
                            "X4": (1.5, 0.0)}])
    greedy = sem.suggest_interventions(condition="1b", max_exhaustive=0)
    assert not greedy.exhaustive and "no covariate of it can be dropped" in str(greedy)
    T = [sem.names.index(c) - 1 for c in greedy.covariates]
    assert met(greedy.design, "1b") and len(T) == 3
    for j in T:
        assert not met(shifted(sem, [i for i in T if i != j], greedy.variance), "1b")
    exact = sem.suggest_interventions(condition="1b")
    assert exact.exhaustive and len(exact.covariates) == 3


def test_bad_arguments_are_named():
    sem = child_unshifted()
    with pytest.raises(ValueError, match="'condition'.*'any', '1b', '4', '6'"):
        sem.suggest_interventions(condition="1a")
    with pytest.raises(ValueError, match="'variance'"):
        sem.suggest_interventions(variance=0.0)
    with pytest.raises(ValueError, match="'max_exhaustive'"):
        sem.suggest_interventions(max_exhaustive=-1)
    # a mean shift of 10 against new shifts of variance 1: every Delta(w) is indefinite
    shift = LinearSEM.from_equations({"Y": {"X1": 1.0}, "X2": {"Y": 1.0}},
                                     interventions=[{"X1": (10.0, 0.0)}])
    with pytest.raises(DataError, match="add more environments"):
        shift.suggest_interventions(variance=1.0)


@st.composite
def plans(draw):
    """Random designs (p = 2..4) with a random part of the covariates never shifted."""
    sem = draw(nt.designs(p=(2, 4), n_envs=(2, 3), interventions="full"))
    keep = np.array(draw(st.lists(st.booleans(), min_size=sem.p, max_size=sem.p)))
    return LinearSEM(sem.B, sem.Omega, [Intervention(iv.mean * keep, iv.cov * np.outer(
        keep, keep)) for iv in sem.interventions], names=sem.names)


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow])
@given(sem=plans(), condition=st.sampled_from(["any", *CONDITIONS]))
def test_random_plans_the_advice_works_and_no_smaller_set_does(sem, condition):
    """The advice, applied as its own ``design`` and rebuilt by hand, meets the target;
    no set of fewer covariates does (its strict subsets among them)."""
    try:
        advice = sem.suggest_interventions(condition=condition)
    except DataError:
        assume(False)
    assert advice.exhaustive and met(advice.design, condition)
    names = sem.names[1:]
    assert met(shifted(sem, [names.index(c) for c in advice.covariates], advice.variance),
               condition)
    for k in range(len(advice.covariates)):
        for T in itertools.combinations(range(sem.p), k):
            assert not met(shifted(sem, T, advice.variance), condition), T
