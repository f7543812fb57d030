"""Bundled data: the 9 main conditions of Sachs et al. (2005)."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from negdro_stats import DataError, NegDRO
from negdro_stats.datasets import load_sachs

PROTEINS = ["Raf", "Mek", "Plcg", "PIP2", "PIP3", "Erk", "Akt", "PKA", "PKC", "P38", "Jnk"]
SIZES = [853, 902, 911, 723, 810, 799, 848, 913, 707]      # the original files' cell counts
SHARED = Path(__file__).resolve().parents[3] / "shared/data/sachs2005/sachs_14conditions.csv"


@pytest.fixture(scope="module")
def sachs():
    return load_sachs()


def test_shape_columns_and_sizes(sachs):
    assert sachs.shape == (7466, 13)
    assert list(sachs.columns) == ["env", "condition", *PROTEINS]
    assert sachs.groupby("env").size().tolist() == SIZES
    assert sachs["env"].is_monotonic_increasing
    assert sachs.groupby("env")["condition"].nunique().eq(1).all()
    assert sachs.loc[sachs["env"] == 6, "condition"].iloc[0] == "cd3cd28+u0126"
    assert (sachs[PROTEINS] > 0).all().all()                    # raw intensities


@pytest.mark.skipif(not SHARED.exists(), reason="the shared 14-condition file is absent")
def test_values_equal_the_shared_file(sachs):
    """Cut from cdt's unlabelled file, the 9 conditions equal env 1-9 of the SEMgraph copy,
    value for value and label for label."""
    shared = pd.read_csv(SHARED)
    main = shared[shared["env"] <= 9].reset_index(drop=True)
    pd.testing.assert_frame_equal(sachs, main, check_dtype=False)


def test_conditions_by_number_or_name_and_log(sachs):
    sub = load_sachs(conditions=[9, "pma", 8], log=True)
    assert sub["env"].tolist() == [8] * 913 + [9] * 707        # file order, no duplicates
    raw = sachs[sachs["env"].isin([8, 9])]
    assert_allclose(np.exp(sub[PROTEINS].to_numpy()), raw[PROTEINS].to_numpy(), rtol=1e-12)
    assert load_sachs(6)["condition"].unique().tolist() == ["cd3cd28+u0126"]
    assert len(load_sachs(np.int64(2))) == 902


def test_each_call_returns_a_fresh_frame():
    df = load_sachs(1)
    df.loc[0, "Erk"] = -1.0
    assert load_sachs(1).loc[0, "Erk"] > 0


@pytest.mark.parametrize(("conditions", "match"), [
    (13, "10-14 of the original study"),
    ("cd3cd28+u126", "Did you mean 'cd3cd28\\+u0126'"),
    ([1, 0], "0 is not a bundled"),
    ([True], "True is not a bundled"),
    ([], "empty"),
])
def test_bad_conditions(conditions, match):
    with pytest.raises(DataError, match=match):
        load_sachs(conditions)


def test_bad_log():
    with pytest.raises(TypeError, match="'log' parameter of load_sachs"):
        load_sachs(log="yes")


def test_sachs_permutation_test_says_when_it_is_uninformative():
    """On the Sachs data the margin is ~0 (Condition 1b fails): the permutation p-value
    is printed with the reason it carries no evidence, beside the equal-risk test that
    does (the review read 'p = 0.82' as 'no heterogeneity' next to chi2 = 154)."""
    import warnings

    from negdro_stats import NegDRO

    cells = load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True).drop(
        columns="condition")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = NegDRO(cells, env="env", outcome="Erk", fit_intercept=True).diagnose(
            n_boot=0, n_perm=9, rng=0)
    assert not report.condition_1b.holds
    assert "uninformative here" in str(report) and "Equal environment risks" in str(report)


def test_the_sachs_fit_says_invariance_is_rejected():
    """Log Erk on the other proteins without the MEK inhibitor: the J test rejects on
    every support and the risks differ decisively at the estimate -- the invariance model
    is rejected, and the answer says so (verdict, header, warning line), not
    "identified" beside it (as it did: the rank test had found every direction
    determined)."""
    cells = load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True).drop(
        columns="condition")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(cells, env="env", outcome="Erk", fit_intercept=True).fit(n_boot=0)
    assert res.verdict == "rejected" and res.to_dict()["verdict"] == "rejected"
    text = " ".join(str(res.summary(detail=True)).split())
    assert text.startswith("WARNING:") and "Verdict: REJECTED" in text
    # how far from invariant, and the fit closest to invariance, beside the verdict
    delta = res.invariance
    assert 0 < delta.delta < delta.delta_upper < 1
    assert (f"Risks within: {100 * delta.delta:.2g}% (bound {100 * delta.delta_upper:.2g}%)"
            in text and "Closest to invariance of" in text)
    assert res.to_dict()["closest_to_invariance"]["tolerance"] <= delta.delta_upper


def test_where_invariance_is_rejected_gamma_moves_the_answer():
    """Issue 40 item 4: where no invariant linear model fits (the J test rejects every
    support, p < 1e-4), the answer is NegDRO's own fit of objective (9) at the model's
    gamma -- the paper's trade-off between the worst risk and the spread of the risks --
    so gamma moves it (gamma = 20 / 100 / 1000 gave identical answers: the rejected
    invariance fit), the header does not call gamma unused, and the bootstrap resamples
    that estimator."""
    cells = load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True).drop(
        columns="condition")
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for gamma in (1.0, 20.0):
            model = NegDRO(cells, env="env", outcome="Erk", fit_intercept=True, gamma=gamma)
            fits[gamma] = model.fit(n_boot=0)
            paper = model.fit(n_boot=0, refit="negdro")
            assert fits[gamma].selection.invariance_rejected
            assert fits[gamma].verdict == "rejected"
            assert_allclose(fits[gamma].params, paper.params, atol=1e-10)
        boot = fits[20.0].model.fit(n_boot=5, rng=0)
    assert np.abs(fits[1.0].params - fits[20.0].params).max() > 0.05
    text = " ".join(str(fits[20.0].summary(detail=True)).split())
    assert "gamma: 20 " in text and "(not used)" not in text
    assert "Algorithm 3's fit of NegDRO's objective (9) at gamma = 20" in text
    assert boot.fit_bootstrap.draws.shape == (5, len(boot.params))
