"""Peer methods on moments: known answers and agreement with reference implementations."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from pandas.testing import assert_frame_equal

from negdro_stats import DataError, NegDRO, simulate
from negdro_stats.peers.baselines import fit_baseline


@pytest.fixture(scope="module")
def sample():
    sem = simulate.eq33(p=6)
    df = sem.sample(1500, rng=4)
    return sem, df, NegDRO(df, env="env", outcome="Y").moments


def test_erm_and_anchor_match_row_computations(sample):
    _, df, mom = sample
    X = df[[f"X{j}" for j in range(1, 7)]].to_numpy()
    y = df["Y"].to_numpy()
    erm = fit_baseline("erm", mom)
    assert_allclose(erm.params, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-8)
    assert_allclose(fit_baseline("anchor", mom, gamma=1.0).params, erm.params, rtol=1e-10)
    # Anchor regression = OLS on (I + (sqrt(gamma) - 1) P_A)-transformed rows.
    gamma = 7.0
    codes = df["env"].to_numpy()
    Xt, yt = X.copy(), y.copy()
    for e in np.unique(codes):
        rows = codes == e
        Xt[rows] += (np.sqrt(gamma) - 1) * X[rows].mean(axis=0)
        yt[rows] += (np.sqrt(gamma) - 1) * y[rows].mean()
    assert_allclose(fit_baseline("anchor", mom, gamma=gamma).params,
                    np.linalg.lstsq(Xt, yt, rcond=None)[0], rtol=1e-8)


def test_icp_matches_causalicp(sample):
    """Accepted sets and confidence intervals equal those of PyPI causalicp (which follows
    R's InvariantCausalPrediction: Bonferroni 2(|E| - 1), z_{1 - alpha/4} intervals)."""
    causalicp = pytest.importorskip("causalicp")
    sem, df, mom = sample
    cols = ["Y"] + [f"X{j}" for j in range(1, 7)]
    data = [df[df["env"] == e][cols].to_numpy() for e in (1, 2, 3, 4)]
    ref = causalicp.fit(data, 0, alpha=0.05, verbose=False, color=False)
    ours = fit_baseline("icp", mom, alpha=0.05)
    assert sorted(tuple(sorted(j - 1 for j in S)) for S in ref.accepted_sets) == sorted(
        ours.details["accepted_sets"])
    assert set(ours.details["estimate"]) == {j - 1 for j in ref.estimate} == {0, 2}
    assert_allclose(ours.conf_int.T.to_numpy(), ref.conf_intervals[:, 1:], atol=1e-10)
    assert np.linalg.norm(ours.params - sem.beta_star) < 0.03


def test_every_peer_fits_population_moments():
    """Population moments (no row counts): every peer gives finite coefficients (anchor
    once divided by the infinite counts and returned NaN without a word), and anchor at
    gamma = 1 is pooled least squares, as on a sample."""
    from negdro_stats.peers.baselines import BASELINES

    mom = simulate.eq33(p=6).moments()
    for name in BASELINES:
        try:
            params = fit_baseline(name, mom).params
        except DataError:
            continue                                # a documented refusal, not a NaN
        assert np.isfinite(params).all(), name
    assert_allclose(fit_baseline("anchor", mom, gamma=1.0).params,
                    fit_baseline("erm", mom).params, rtol=1e-10)


def test_population_known_answers():
    """eq. (33) population moments: EILLS and CausalDantzig recover beta*; ERM does not."""
    sem = simulate.eq33(p=6)
    mom = sem.moments()
    assert_allclose(fit_baseline("eills", mom).params, sem.beta_star, atol=1e-10)
    assert_allclose(fit_baseline("causal_dantzig", mom).params, sem.beta_star, atol=1e-10)
    assert np.linalg.norm(fit_baseline("erm", mom).params - sem.beta_star) > 0.2
    l1 = fit_baseline("causal_dantzig", mom, lam=1e-3)
    assert np.linalg.norm(l1.params - sem.beta_star) < 0.01
    with pytest.raises(DataError, match="sample sizes"):
        fit_baseline("icp", mom)


def test_example3_limited_regime():
    """Section 5.2: CausalDantzig fails in the limited regime (the environments' second
    moments differ only in X3's direction).  DRIG with the observational environment as
    reference converges to beta* as gamma grows in all three regimes here: h lies in the
    range of Delta (Condition 6), so Figure 5's drift is not a population effect."""
    for regime in ("limited", "weak", "strong"):
        sem = simulate.example3(regime)
        mom = sem.moments()
        err = [np.linalg.norm(fit_baseline("drig", mom, gamma=g).params - sem.beta_star)
               for g in (1.0, 10.0, 100.0, 1e4)]
        assert np.all(np.diff(err) < 0) and err[-1] < 1e-3
        cd = np.linalg.norm(fit_baseline("causal_dantzig", mom).params - sem.beta_star)
        assert (cd > 1.0) if regime == "limited" else (cd < 1e-8)


def test_interface(sample):
    _, _, mom = sample
    res = fit_baseline("eills", mom, max_size=2)
    assert res.method == "eills" and res.support.dtype == bool
    assert (res.params[~res.support] == 0).all() and tuple(res.params.index) == mom.names
    assert "selected" in repr(res)
    with pytest.raises(DataError, match="Unknown baseline"):
        fit_baseline("lasso", mom)
    with pytest.raises(DataError, match="not dominated"):
        fit_baseline("drig", mom, reference=1, gamma=50.0)


@pytest.mark.parametrize("method", ["icp", "eills"])
def test_subset_cap_is_deterministic(sample, method):
    """ICP and EILLS stop after ``max_subsets`` subsets and say so; p = 6 has 64."""
    _, _, mom = sample
    capped = fit_baseline(method, mom, max_subsets=10)
    full = fit_baseline(method, mom)
    assert capped.details["capped"] and not full.details["capped"]
    again = fit_baseline(method, mom, max_subsets=10)
    assert_frame_equal(again.params.to_frame(), capped.params.to_frame())


# ---------------------------------------------------------------- studies and dispatch
def test_compare_methods_fits_each_method_on_the_same_sample():
    """Each row's error is that method's fit on the repetition's sample; ICP and EILLS at
    a cap of 10 supports are 'capped' and not run again."""
    from negdro_stats.studies import compare_methods

    sem = simulate.eq33(p=6)
    table = compare_methods(sem, n_per_env=300, reps=2, max_subsets=10, rng=3)
    assert set(table["method"]) == {"negdro", "negdro_paper", "erm", "anchor", "drig",
                                    "causal_dantzig", "icp", "eills"}
    capped = table[table["method"].isin(["icp", "eills"])]
    assert (capped["status"] == "capped").all() and capped["error"].isna().all()
    assert capped.loc[capped["rep"] == 1, "seconds"].isna().all()       # not run again
    for r in range(2):
        mom = NegDRO(sem.sample(300, rng=np.random.default_rng([3, r])), env="env",
                     outcome="Y").moments
        row = table[(table["rep"] == r)].set_index("method")
        for method in ("erm", "anchor", "drig"):
            err = np.linalg.norm(fit_baseline(method, mom).params - sem.beta_star)
            assert row.loc[method, "error"] == pytest.approx(err, rel=1e-12)
    ok = table[table["method"].str.startswith("negdro")]
    assert (ok["status"] == "ok").all() and (ok["error"] < 0.2).all()


def test_a_new_peer_is_one_registry_entry(monkeypatch):
    """A peer added to BASELINES alone is fitted by fit_baseline, the studies and the
    leave-one-environment-out validation (here: ERM shrunk by half)."""
    from negdro_stats.peers import baselines
    from negdro_stats.studies import compare_methods

    monkeypatch.setitem(baselines.BASELINES, "half_erm",
                        lambda mom: (baselines._erm(mom)[0] / 2, {}))
    sem = simulate.eq33(p=5)
    df = sem.sample(200, rng=5)
    model = NegDRO(df, env="env", outcome="Y")
    half = fit_baseline("half_erm", model.moments).params
    assert_allclose(half, fit_baseline("erm", model.moments).params / 2)
    table = compare_methods(sem, n_per_env=200, reps=1, methods=("half_erm",), rng=0)
    assert table["status"].tolist() == ["ok"]
    loeo = model.validate_loeo(methods=["erm", "half_erm"], verbose=False)
    assert (loeo.risks["half_erm"] != loeo.risks["erm"]).all()
