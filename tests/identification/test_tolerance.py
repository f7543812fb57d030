"""How far from invariant: the equivalence test of risks equal up to a relative tolerance
(:attr:`RiskInvarianceTest.delta`, :meth:`~RiskInvarianceTest.equivalence_pvalue`), on
simulated designs whose tolerance is known."""

import warnings

import numpy as np
import pandas as pd
import pytest

from negdro_stats import MultiEnvData, NegDRO, simulate
from negdro_stats.data import risk_variances
from negdro_stats.identification.report import (
    RISK_TEST_LEVEL,
    detectable_departure,
    risk_invariance_test,
)
from negdro_stats.planning import plan_sample_size

BETA = np.array([1.0, -0.5, 0.3])


def _rows(rng, n, scales, noise):
    """Y = X beta + s_e eps: at beta the risks are s_e^2 Var(eps), so their tolerance is
    known; covariates with unequal spreads, noise normal or t(9) (scaled to variance 1)."""
    parts = []
    for e, (n_e, s) in enumerate(zip(n, scales, strict=True)):
        X = rng.standard_normal((n_e, 3)) * (1.0 + 0.5 * e)
        eps = (rng.standard_normal(n_e) if noise == "normal"
               else rng.standard_t(9, n_e) / np.sqrt(9 / 7))
        part = pd.DataFrame(X, columns=["X1", "X2", "X3"])
        part["Y"], part["env"] = X @ BETA + s * eps, e
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _known_delta(n, scales):
    share = np.asarray(n) / np.sum(n)
    risks = np.asarray(scales, dtype=float) ** 2
    return float(np.max(np.abs(risks / (share @ risks) - 1.0)))


@pytest.mark.parametrize("noise", ["normal", "t9"])
@pytest.mark.parametrize("n, scales", [((2000, 2000, 2000), (1.0, 1.0, 1.1)),
                                       ((400, 900, 1500), (1.2, 1.0, 1.0))])
def test_the_equivalence_test_has_its_size_at_a_known_tolerance(noise, n, scales):
    """At the true tolerance the test of "invariant up to delta" rejects at most at its
    level (it is the boundary of its null), and its upper bound covers the tolerance as
    often; at twice the tolerance it rejects nearly always, at half of it hardly ever.
    With t(9) noise the rows' fourth moments carry it (the Gaussian form of Var(r^2)
    would be 0.6 of the right one, and the test oversized)."""
    delta, reps = _known_delta(n, scales), 300
    rng = np.random.default_rng(2024)
    rejects, covers, twice, half = [], [], [], []
    for _ in range(reps):
        data = MultiEnvData.from_frame(_rows(rng, n, scales, noise), "env", outcome="Y")
        test = risk_invariance_test(*data.risk_variances(BETA), data.moments)
        rejects.append(test.equivalence_pvalue(delta) < RISK_TEST_LEVEL)
        covers.append(test.delta_upper >= delta)
        twice.append(test.equivalence_pvalue(2 * delta) < RISK_TEST_LEVEL)
        half.append(test.equivalence_pvalue(delta / 2) < RISK_TEST_LEVEL)
    band = 3 * np.sqrt(RISK_TEST_LEVEL * (1 - RISK_TEST_LEVEL) / reps)
    assert np.mean(rejects) <= RISK_TEST_LEVEL + band
    assert np.mean(covers) >= 1 - RISK_TEST_LEVEL - band
    assert np.array_equal(rejects, ~np.array(covers))    # the bound inverts the test
    assert np.mean(twice) >= 0.9 and np.mean(half) <= RISK_TEST_LEVEL


def test_the_tolerance_is_exact_in_the_population_and_zero_at_an_exact_fit():
    """Population moments (every variance 0): the bound is the tolerance itself; risks
    that are all 0 (an exact fit) are invariant to any tolerance."""
    sem = simulate.example3("limited")
    data = MultiEnvData.from_moments(sem.moments())
    risks = risk_variances(data.moments, np.ones(data.moments.p))[0]
    test = risk_invariance_test(risks, np.zeros_like(risks), data.moments)
    assert test.delta_upper == pytest.approx(test.delta) and test.delta > 0
    exact = risk_invariance_test(np.zeros(2), np.zeros(2), data.moments)
    assert exact.delta == exact.delta_upper == 0.0 and exact.equivalence_pvalue(0.01) == 0.0


def test_the_fit_reports_how_far_from_invariant_in_its_summary_and_dict():
    """The fit's equal-risk test carries the tolerance; the summary's header and
    ``to_dict()`` read that one number.  On an exactly invariant design (eq. (33)) the
    bound shrinks with n; scaling the outcome's noise in one environment moves it."""
    invariant = {n: NegDRO(simulate.eq33(p=5).sample(n, rng=3), env="env", outcome="Y")
                 .fit(n_boot=0).invariance for n in (500, 20_000)}
    assert invariant[20_000].delta_upper < invariant[500].delta_upper < 0.5
    df = simulate.eq33(p=5).sample(20_000, rng=3)
    noisy = df["env"] == df["env"].iloc[-1]
    df.loc[noisy, "Y"] += 1.5 * np.random.default_rng(0).standard_normal(noisy.sum())
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert res.invariance.delta > invariant[20_000].delta_upper
    assert res.to_dict()["invariance"]["delta_upper"] == pytest.approx(
        res.invariance.delta_upper)
    assert f"{100 * res.invariance.delta:.2g}%" in str(res.summary())


def test_the_detectable_departure_is_detected_with_its_power():
    """``detectable``: one environment's risk that much above the others' is detected by
    the equal-risk test with 80% power, whichever environment departs (here the
    smallest, the hardest); half of it far less often.  The plan quotes it per n, and it
    shrinks like 1 / sqrt(n)."""
    n, reps = (400, 900, 1500), 300
    rng = np.random.default_rng(7)
    first = MultiEnvData.from_frame(_rows(rng, n, (1.0, 1.0, 1.0), "normal"), "env",
                                    outcome="Y")
    d = risk_invariance_test(*first.risk_variances(BETA), first.moments).detectable
    # Gaussian residuals: Var(r^2) / R^2 = 2 per row (the sample's estimate of it, from
    # 400-1,500 rows, has a relative s.d. of about 0.2, so d's about 0.1)
    assert d == pytest.approx(detectable_departure(2.0 / np.array(n)), rel=0.3)
    power = {}
    for share in (1.0, 0.5):
        scales = (np.sqrt(1.0 + share * d), 1.0, 1.0)
        hits = []
        for _ in range(reps):
            data = MultiEnvData.from_frame(_rows(rng, n, scales, "normal"), "env", outcome="Y")
            hits.append(risk_invariance_test(*data.risk_variances(BETA), data.moments).rejects)
        power[share] = np.mean(hits)
    assert power[1.0] >= 0.8 - 3 * np.sqrt(0.16 / reps) and power[0.5] < 0.6
    plan = plan_sample_size(simulate.example3("strong"), [2000, 8000], reps=2, rng=0,
                            verbose=False).to_frame()["detectable"]
    assert plan.iloc[1] == pytest.approx(plan.iloc[0] / 2, rel=0.1)


def _outcome_noise_moves(n, rng):
    """Y = X1 + noise whose scale the environments move (an intervention on Y: no linear
    model is invariant), X2 a shifted child of Y, X3 noise."""
    parts = []
    for e, (sx, sy, shift) in enumerate([(1, 1.0, 0), (2, 1.25, 0), (1, 1.0, 2.0),
                                         (1.5, 0.9, -1.0)]):
        x1 = sx * rng.standard_normal(n)
        y = x1 + sy * rng.standard_normal(n)
        x2 = y + 0.5 * rng.standard_normal(n) + shift * (1 + rng.standard_normal(n))
        parts.append(pd.DataFrame({"Y": y, "X1": x1, "X2": x2,
                                   "X3": rng.standard_normal(n), "env": e}))
    return pd.concat(parts, ignore_index=True)


def test_where_invariance_is_rejected_the_fit_closest_to_it_is_reported_not_claimed():
    """The verdict "rejected" comes with the fit closest to invariance: the least pooled
    risk among the fits compared (the reported one and pooled OLS along a backward path)
    that are invariant up to the smallest tolerance they certify; the summary and
    ``to_dict()`` read that one object.  It is no causal claim: here the outcome's noise
    moves, so the causal model's risks differ (by 43% of the pooled risk in the
    population), and the reported fit, which leans on the shifted child X2 to even them
    out, is closer."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(_outcome_noise_moves(3000, np.random.default_rng(5)), env="env",
                     outcome="Y").fit(n_boot=0)
    closest = res.closest_to_invariance
    assert res.verdict == "rejected" and closest.compared == 5    # 3 covariates: 4 + 1
    assert closest.test.delta <= closest.tolerance <= res.invariance.delta_upper
    parents = risk_invariance_test(*res.model.data.risk_variances(np.array([1.0, 0, 0])),
                                   res.model.data.moments)
    assert parents.delta == pytest.approx(0.43, abs=0.05)
    assert parents.delta > closest.test.delta
    text = " ".join(str(res.summary()).split())
    assert (f"Closest to invariance of 5 fits compared: the reported fit, risks within "
            f"{100 * closest.test.delta:.2g}%") in text and "not a causal claim" in text
    said = res.to_dict()["closest_to_invariance"]
    assert said["support"] == ["X1", "X2"] and said["compared"] == 5
    assert said["params"]["X2"] == pytest.approx(res.params["X2"])


def test_a_saved_fit_keeps_its_tolerance(tmp_path):
    """save / load gives the equal-risk test back with its variances and shares, so the
    tolerance, its bound and the detectable departure are the same numbers."""
    res = NegDRO(simulate.eq33(p=5).sample(500, rng=3), env="env", outcome="Y").fit(n_boot=0)
    res.save(tmp_path / "fit.pkl")
    back = type(res).load(tmp_path / "fit.pkl").invariance
    assert (back.delta, back.delta_upper, back.detectable) == (
        res.invariance.delta, res.invariance.delta_upper, res.invariance.detectable)
    assert np.isfinite(back.delta) and "Risks within: n/a" not in str(res.summary())
