"""The property-testing kit itself: every knob of the strategies does what it says, the
statements fail when they should (so the theorem tests can fail), errors are typed,
hypothesis stays optional."""

import runpy
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from numpy.testing import assert_allclose

from negdro_stats import DataError, check_condition_1b, simulate
from negdro_stats import testing as nt

FEW = settings(max_examples=15, deadline=None)


def _intervened(sem):
    return np.einsum("ejj->j", sem.Delta) > 0


@FEW
@given(sem=nt.designs(p=3, n_envs=4, confounding=True, confounding_strength=(0.5, 0.5)))
def test_sizes_and_confounding(sem):
    assert sem.p == 3 and sem.n_envs == 4
    assert np.any(sem.Omega[0, 1:] != 0)
    assert np.all(sem.Delta[0] == 0)                        # environment 1 is observational


@FEW
@given(sem=nt.designs(confounding=False))
def test_no_confounding(sem):
    assert np.all(sem.Omega[0, 1:] == 0) and np.all(sem.Omega == np.diag(np.diag(sem.Omega)))


@FEW
@given(sem=nt.designs(interventions="full", intervention_mean=(1.0, 2.0),
                      intervention_variance=(0.5, 0.7)))
def test_full_interventions_and_their_ranges(sem):
    assert _intervened(sem).all()
    var = np.stack([np.diag(iv.cov) for iv in sem.interventions])
    mean = np.stack([iv.mean for iv in sem.interventions])
    on = var > 0
    assert np.all((var[on] >= 0.5) & (var[on] <= 0.7))
    assert np.all((mean[on] >= 1.0) & (mean[on] <= 2.0)) and np.all(mean[~on] == 0)


@FEW
@given(sem=nt.designs(interventions="limited"))
def test_limited_interventions_as_in_condition4(sem):
    """S_L is a non-empty proper subset containing the children of Y."""
    S_L = _intervened(sem)
    assert S_L.any() and not S_L.all()
    assert set(sem.D) <= set(np.flatnonzero(S_L))


@FEW
@given(sem=nt.designs(interventions="none"))
def test_no_interventions_fail_condition_1b(sem):
    assert not _intervened(sem).any()
    assert not check_condition_1b(sem.moments()).holds


@FEW
@given(sem=nt.designs(p=(2, 5), intervene_children=False))
def test_children_never_intervened(sem):
    assert not _intervened(sem)[sem.D].any()


@FEW
@given(sem=nt.designs(interventions="none", intervene_children=True))
def test_children_intervened(sem):
    assert set(np.flatnonzero(_intervened(sem))) == set(sem.D)


@FEW
@given(sem=nt.designs(weak_parents=True, weak_effects=(0.02, 0.05)))
def test_weak_parent(sem):
    beta = np.abs(sem.beta_star)
    assert np.any((beta >= 0.02) & (beta <= 0.05))


@FEW
@given(sem=nt.designs(condition_1b=True, min_margin=0.05))
def test_condition_1b_with_margin(sem):
    assert check_condition_1b(sem.moments()).relative_margin >= 0.05


@FEW
@given(sem=nt.designs(condition_1b=False, interventions="limited"))
def test_condition_1b_fails(sem):
    assert not check_condition_1b(sem.moments()).holds


@FEW
@given(w=nt.simplex_weights(4), df=nt.samples(nt.designs(p=2, n_envs=3), n_per_env=(5, 9)))
def test_weights_and_samples(w, df):
    assert w.shape == (4,) and np.all(w >= 0) and abs(w.sum() - 1) < 1e-12
    assert list(df.columns) == ["Y", "X1", "X2", "env"]
    counts = df["env"].value_counts()
    assert len(counts) == 3 and counts.nunique() == 1 and 5 <= counts.iloc[0] <= 9


def test_knobs_are_validated_at_the_call():
    with pytest.raises(DataError, match="'p' must be an integer >= 2"):
        nt.designs(p=1, interventions="limited")
    with pytest.raises(DataError, match="'n_envs'"):
        nt.designs(n_envs=(3, 2))
    with pytest.raises(DataError, match="'interventions' must be one of"):
        nt.designs(interventions="some")
    with pytest.raises(DataError, match="'intervention_variance'"):
        nt.designs(intervention_variance=(-1.0, 1.0))
    with pytest.raises(DataError, match="'min_margin'"):
        nt.designs(min_margin=float("nan"))
    for bad in (-1, True, 1.5):
        with pytest.raises(DataError, match="'min_parents'"):
            nt.designs(min_parents=bad)
    with pytest.raises(DataError, match="'p' must be an integer >= 3"):
        nt.designs(p=2, min_parents=3)
    with pytest.raises(DataError, match="'parent_effects'"):
        nt.designs(parent_effects=(1.0, 0.5))


@settings(max_examples=30, deadline=None)
@given(sem=nt.designs(confounding=False, min_parents=2, parent_effects=(0.8, 1.5)))
def test_designs_give_y_the_parents_asked_for(sem):
    parents = np.abs(sem.B[0, 1:])
    assert np.count_nonzero(parents) >= 2
    assert np.all((parents == 0) | ((parents >= 0.8) & (parents <= 1.5)))


# ------------------------------------------------------------------- the statements
def test_statements_can_fail():
    """The checks report a failure when a side is wrong: a margin claimed 100 times too
    large breaks Theorems 3 and 4 at a b away from beta*."""
    sem = simulate.eq33(p=5)
    b = sem.beta_star + 0.3
    c1b = check_condition_1b(sem.moments())
    inflated = replace(c1b, margin=100 * c1b.margin)
    for statement in (lambda **kw: nt.theorem3(sem, b, **kw),
                      lambda **kw: nt.theorem4(sem, b, gamma=20.0, mu=1e-3, **kw)):
        right, wrong = statement(condition_1b=c1b), statement(condition_1b=inflated)
        assert right.premise and right.holds and right.worst_gap <= right.slack
        assert wrong.counterexample and wrong.worst_gap > wrong.slack
        assert "FAILS" in str(wrong)
    assert nt.risk_form(sem, b).holds and nt.lemma1(sem).holds


def test_eq33_printed_beta_is_not_invariant():
    """The sentence after eq. (33) prints beta* = (1/2, 0, 1/2, ...): at that b the risks
    differ (Theorem 3's left side is above 0.1); the equation's -1/2 is recovered."""
    sem = simulate.eq33(p=5)
    typo = sem.beta_star.copy()
    typo[2] = 0.5
    check = nt.theorem3(sem, typo)
    assert check.holds and check.lhs > 0.1
    exact = nt.default_exactness(sem)
    assert exact.premise and exact.holds
    # Example 3's limited regime: Condition 1b fails, so the statement says nothing
    limited = nt.default_exactness(simulate.example3("limited"))
    assert not limited.premise and not limited.counterexample
    text = str(limited)
    assert "premise not met" in text and "lhs = the default estimate" in text


def test_lemma1_second_moments_with_section32_form_fails():
    """Section 3.2 writes G (H + ...) G; with a non-symmetric G that is not E[X X^T]."""
    sem = simulate.example3("strong")
    check = nt.lemma1_second_moments(sem)
    assert check.holds
    G = sem.G
    assert not np.allclose(G, G.T)
    section32 = np.einsum("ij,ejk,kl->eil", G, sem.H + sem.Delta, G)
    assert not np.allclose(section32, check.lhs, atol=1e-6)


def test_proposition1_from_a_hand_certificate():
    """Sigma = [I, 3I]: E1 = {1}, E2 = {0} dominates; C = min(0.5/1, 0.5/1) = 0.5 and
    w0 = (0, 1) with A(w0) = I = 0.5 (3I - I)."""
    Sigma = np.stack([np.eye(2), 3 * np.eye(2)])
    cert = check_condition_1b(Sigma).certificate
    check = nt.proposition1(Sigma, cert)
    assert check.premise and check.holds
    assert_allclose(check.details["w0"], [0.0, 1.0], atol=1e-6)
    assert_allclose(check.lhs, 1.0, atol=1e-6)


def test_statement_input_errors():
    sem = simulate.eq33(p=5)
    with pytest.raises(DataError, match="'b' must be 5 finite coefficients"):
        nt.theorem3(sem, np.zeros(3))
    with pytest.raises(DataError, match="gamma >= 0"):
        nt.theorem4(sem, sem.beta_star, gamma=-1.0, mu=0.1)
    with pytest.raises(DataError, match="additive-intervention designs"):
        nt.lemma1(simulate.appendix_f2(p=6))
    with pytest.raises(DataError, match="needs a LinearSEM"):
        nt.lemma1(sem.moments())
    with pytest.raises(DataError, match="which is None when Condition 1b fails"):
        nt.proposition1(sem, None)


def test_package_imports_without_hypothesis():
    """The package and the statements import without hypothesis; the kit says which
    extra to install."""
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "import negdro_stats, negdro_stats.theory\n"
            "try:\n    import negdro_stats.testing\n"
            "except ImportError as err:\n    print(err)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "pip install 'negdro_stats[test]'" in run.stdout


# ------------------------------------------------------ the docs page's examples run
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def test_docs_example_own_claim_holds():
    runpy.run_path(str(EXAMPLES / "theory_own_claim.py"))[
        "test_weighted_risk_gap_is_a_quadratic_form"]()


@pytest.mark.parametrize("name", ["test_theorem3_with_twice_the_constant",
                                  "test_lemma1_with_the_printed_sign"])
def test_docs_counterexamples_are_found_and_shrunk(name):
    """docs/testing_theory.rst says both false variants fail on a design with one
    covariate and two environments."""
    test = runpy.run_path(str(EXAMPLES / "theory_counterexample.py"))[name]
    with pytest.raises(AssertionError) as failure:
        test()
    report = "\n".join(getattr(failure.value, "__notes__", []))
    assert "sem=<LinearSEM: p=1, envs=2," in report, report


def test_designs_refuse_knobs_no_draw_can_meet():
    """condition_1b=True with limited or no interventions would filter out every draw
    (the README once advertised it); non-boolean switches are refused at the call."""
    with pytest.raises(DataError, match="needs interventions='full'"):
        nt.designs(interventions="limited", condition_1b=True)
    with pytest.raises(DataError, match="'confounding' must be True, False or None"):
        nt.designs(confounding="yes")
