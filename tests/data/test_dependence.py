"""Rows that are not independent (issue 66): the long-run covariance, its lags, the
moving blocks, and ``fit(cov_type="HAC")`` on AR(1) rows."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import signal

from negdro_stats import (
    DataError,
    DataWarning,
    IdentificationWarning,
    NegDRO,
    NegDROResults,
    simulate,
)
from negdro_stats.data.dependence import (
    RHO_MAX,
    WISHART_MAX,
    Clusters,
    Dependence,
    LongRun,
    long_run_share,
    serial_correlation,
)
from negdro_stats.data.fourth import RESIDUAL
from negdro_stats.datasets import load_sachs
from negdro_stats.results.verdicts import rows_look_dependent


def _ar1(n, rho, rng, q=1):
    return simulate.eq33(p=5).sample(n, rng=rng, serial=rho)[["X1", "X2", "X3"][:q]].to_numpy()


def test_the_long_run_variance_of_an_ar1_series_is_its_spectrum_at_zero():
    """For an AR(1) series with coefficient rho, n Var(mean) -> (1 + rho) / (1 - rho);
    the plug-in lags grow with rho and are about 1 for independent rows, where the
    estimate is the sample variance."""
    hac = Dependence("HAC")
    x = _ar1(50_000, 0.7, 0)
    x = x[: len(x) // 4]                                   # one environment's rows
    x = (x - x.mean()) / x.std()
    assert hac.long_run_cov(x)[0, 0] == pytest.approx(1.7 / 0.3, rel=0.2)
    assert 60 <= hac.lags(x) <= 110      # Andrews: 1.1447 (7.54 n)^(1/3) = 83 at n = 50,000
    iid = np.random.default_rng(1).standard_normal((5000, 3))
    assert hac.lags(iid) <= 3
    assert np.abs(hac.long_run_cov(iid) - np.cov(iid.T, bias=True)).max() < 0.1
    fixed = Dependence("HAC", maxlags=0)
    assert np.allclose(fixed.long_run_cov(iid), np.cov(iid.T, bias=True))
    assert serial_correlation(x[:, 0]) == pytest.approx(0.7, abs=0.03)


@pytest.mark.parametrize(("n", "maxlags", "q"), [(50, 3, 2), (400, 40, 4), (8, 7, 1),
                                                  (30, 0, 3)])
def test_the_long_run_covariance_is_newey_wests_sum_of_autocovariances(n, maxlags, q):
    """Each component prewhitened by its own AR(1) coefficient, ``Gamma_0 + sum_l (1 - l
    / (L + 1)) (Gamma_l + Gamma_l^T)`` of what is left, recoloured, written out against
    the moving sums that compute it; lags up to ``n - 1``, none without prewhitening."""
    W = np.random.default_rng(n).standard_normal((n, q)).cumsum(axis=0)
    Wc = W - W.mean(axis=0)
    rho = np.zeros(q)
    if maxlags:
        rho = np.array([np.clip(Wc[1:, a] @ Wc[:-1, a] / (Wc[:-1, a] @ Wc[:-1, a]),
                                -RHO_MAX, RHO_MAX) for a in range(q)])
        Wc = Wc[1:] - Wc[:-1] * rho
        Wc -= Wc.mean(axis=0)
    m, L = len(Wc), min(maxlags, len(Wc) - 1)
    S = Wc.T @ Wc / m
    for lag in range(1, L + 1):
        G = Wc[lag:].T @ Wc[:-lag] / m
        S += (1 - lag / (L + 1)) * (G + G.T)
    S /= np.outer(1 - rho, 1 - rho)
    assert np.allclose(Dependence("HAC", maxlags).long_run_cov(W), S, rtol=1e-12, atol=1e-12)


def test_prewhitening_takes_the_kernels_bias_out_of_strong_dependence():
    """AR(1) rows with coefficient 0.8, 2,000 of them, the plug-in lags (about 40): the
    Bartlett kernel alone recovers about 0.88 of the long-run variance 1 / (1 - 0.8)^2 on
    average; prewhitened by the component's own AR(1) coefficient, about all of it (0.98:
    the coefficient's own small-sample bias, about -(1 + 3 rho) / n, is 10 times that in
    the log of 1 / (1 - rho)^2).  Two components, 200 series: s.e. of the mean 0.009."""
    rng = np.random.default_rng(3)
    hac = Dependence("HAC")
    estimates = [np.diag(hac.long_run_cov(signal.lfilter(
        [1.0], [1.0, -0.8], rng.standard_normal((2000, 2)), axis=0))) for _ in range(200)]
    assert np.mean(estimates) * 0.2**2 == pytest.approx(1.0, abs=0.04)


def test_moving_blocks_draw_n_rows_in_runs_of_consecutive_ones():
    c = Dependence("HAC").counts(1000, np.random.default_rng(0), 24)    # blocks of 25
    assert c.sum() == 1000 and len(c) == 1000
    drawn = np.flatnonzero(c)
    assert np.diff(drawn).max() > 1 and (np.diff(drawn) == 1).mean() > 0.9


def _fit(df, outcome="Y", fit_intercept=False, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NegDRO(df, env="env", outcome=outcome, fit_intercept=fit_intercept).fit(
            **({"n_boot": 0} | kwargs))


def test_hac_fits_ar1_rows_that_the_default_rejects():
    """AR(1) rows (rho = 0.8) of an identified design with hidden confounding: the
    default's tests take them for independent and reject invariance; with
    cov_type="HAC" the fit is identified and close to beta*, and says so."""
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=4)
    df = sem.sample(20_000, rng=1, serial=0.8)
    default, hac = _fit(df), _fit(df, cov_type="HAC")
    assert default.verdict == "rejected"
    assert hac.verdict == "identified" and hac.cov_type == "HAC"
    assert np.linalg.norm(hac.params.to_numpy() - sem.beta_star) < 0.1
    assert "Cov. Type:" in (text := str(hac.summary())) and "HAC" in text
    assert hac.to_dict()["cov_type"] == "HAC" and default.to_dict()["cov_type"] == "nonrobust"
    assert "long-run covariance (HAC)" in hac.cov_method
    assert hac.model.data is not default.model.data and default.model.data.dependence is None


def test_the_selections_equal_risk_test_reads_the_long_run_variance():
    """A design whose HAC fit the selection took for one without an invariant model
    while its equal-risk test used i.i.d. variances ("the environments' risks differ at
    the invariance route's fit, p = 1.5e-9", error 1.46): with the long-run variance of
    r^2 it is identified and at beta*, and the results' own equal-risk test agrees."""
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=2)
    df = sem.sample(20_000, rng=102, serial=0.8)
    hac = _fit(df, cov_type="HAC")
    assert hac.verdict == "identified" and not hac.solver.selection.no_invariant_fit
    assert np.linalg.norm(hac.params.to_numpy() - sem.beta_star) < 0.1
    assert hac.invariance.pvalue > 0.01


def test_a_hac_fit_does_not_read_what_an_earlier_default_fit_cached():
    """A model's default fit with a bootstrap in this process (its data cache lags of 0),
    then its HAC fit: the same standard errors, sandwich and bootstrap, as the HAC fit of
    a fresh model, and the moving blocks' standard errors agree with the long-run
    sandwich (blocks of one row give about half at rho = 0.8)."""
    df = simulate.eq33(p=5).sample(2000, rng=3, serial=0.8)
    model = NegDRO(df, env="env", outcome="Y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(n_boot=40, rng=0, n_jobs=1)
        hac = model.fit(n_boot=40, rng=0, n_jobs=1, cov_type="HAC")
        fresh = NegDRO(df, env="env", outcome="Y").fit(n_boot=40, rng=0, n_jobs=1,
                                                       cov_type="HAC")
    S = hac.bse.notna().to_numpy()
    assert S.sum() >= 2
    assert np.array_equal(hac.bse[S], fresh.bse[S])
    assert np.array_equal(hac.boot_se, fresh.boot_se)
    assert np.allclose(hac.boot_se[S], hac.bse[S], rtol=0.4)


def test_hac_on_independent_rows_is_close_to_the_default(tmp_path):
    """Where rows are independent the plug-in takes about one lag: the same support,
    standard errors within 15%, and a moving-block bootstrap that runs; a saved result
    keeps its covariance type."""
    df = simulate.eq33(p=6).sample(3000, rng=2)
    default, hac = _fit(df), _fit(df, cov_type="HAC", n_boot=20, rng=0)
    assert hac.support.equals(default.support)
    S = default.support.to_numpy()
    assert np.allclose(hac.bse[S], default.bse[S], rtol=0.15)
    assert hac.boot_se[S].notna().all()
    hac.save(tmp_path / "hac.pkl")
    assert NegDROResults.load(tmp_path / "hac.pkl").cov_type == "HAC"


def test_cov_type_is_checked():
    df = simulate.eq33(p=5).sample(300, rng=0)
    model = NegDRO(df, env="env", outcome="Y")
    with pytest.raises(ValueError, match="cov_type"):
        model.fit(cov_type="hac")
    with pytest.raises(DataError, match=r"cov_kwds \['groups'\] do not apply"):
        model.fit(cov_type="HAC", cov_kwds={"groups": "g"})
    with pytest.raises(DataError, match="needs the rows in their order"):
        NegDRO.from_moments(simulate.eq33(p=5).moments()).fit(cov_type="HAC")


def test_the_cluster_robust_covariance_sums_each_clusters_scores():
    """``G / (G - 1) sum_g s_g s_g^T / n`` with ``s_g`` the sum of the centred scores of
    cluster g, written out, whatever the clusters' order in the rows; the bootstrap
    draws whole clusters, as many as there are."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 7, size=60)
    W = rng.standard_normal((60, 3))
    Wc = W - W.mean(axis=0)
    sums = np.stack([Wc[labels == g].sum(axis=0) for g in np.unique(labels)])
    G = len(sums)
    clusters = Clusters.of(labels)
    assert clusters.G == G
    assert np.allclose(Dependence("cluster").long_run_cov(W, clusters),
                       G / (G - 1) * sums.T @ sums / 60, rtol=1e-12)
    c = Dependence("cluster").counts(60, np.random.default_rng(1), clusters)
    for g in np.unique(labels):                      # a cluster's rows drawn together
        assert len(set(c[labels == g])) == 1
    times = np.array([c[labels == g][0] for g in np.unique(labels)])
    assert times.sum() == G and c.sum() == (times * np.bincount(labels)).sum()


def _clustered(n=20_000, design=0, icc=0.5, size=20):
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=design)
    return sem, sem.sample(n, rng=100 + design, cluster_size=size, icc=icc)


def _model(sem, df):
    return NegDRO(df, env="env", outcome="Y", covariates=list(sem.names[1:]))


def test_cluster_fits_clustered_rows_that_the_default_rejects():
    """Clusters of 20 rows with intra-cluster correlation 0.5 (1,000 per environment):
    the default rejects invariance; cov_type="cluster" is identified, at beta*, says so
    in the summary, and its cluster bootstrap's intervals have the sandwich's width (the
    estimate's standard deviation over 40 fresh samples is 0.004-0.011, the sandwich's
    0.008-0.012)."""
    sem, df = _clustered()
    model = _model(sem, df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = model.fit(n_boot=0)
        res = model.fit(cov_type="cluster", cov_kwds={"groups": "cluster"}, n_boot=60,
                        rng=0)
    assert default.verdict == "rejected"
    assert res.verdict == "identified" and res.cov_type == "cluster"
    assert np.linalg.norm(res.params.to_numpy() - sem.beta_star) < 0.05
    assert "cluster" in str(res.summary()) and "cluster-robust" in res.cov_method
    S = res.bse.notna().to_numpy()
    boot = res.conf_int(kind="bootstrap").to_numpy()[S]
    wald = res.conf_int().to_numpy()[S]
    assert np.allclose(np.diff(boot, axis=1), np.diff(wald, axis=1), rtol=0.4)
    by_array = model.fit(cov_type="cluster", cov_kwds={"groups": df["cluster"].to_numpy()},
                         n_boot=0)
    assert np.array_equal(by_array.bse, res.bse, equal_nan=True)


def test_the_header_names_the_covariance_beside_gamma():
    """Where Algorithm 3's fit is reported (here by ``refit="negdro"``), the header shows
    gamma; a dependence-robust fit's header must still name its covariance (gamma took
    its place)."""
    df = simulate.eq33(p=5).sample(1000, rng=3, serial=0.5)
    res = _fit(df, cov_type="HAC", refit="negdro")
    header = str(res.summary()).split("=" * 78)[1]
    assert "gamma:" in header and "Cov. Type:" in header and "HAC" in header


def test_a_permutation_of_dependent_rows_moves_whole_units():
    """diagnose()'s permutation of the environment labels, with dependent rows, moves
    whole clusters (or runs of consecutive rows), each environment keeping its number of
    units: 40 clusters of 5 rows and 20 of 15 give environments of 5 a + 15 (40 - a)
    and 15 b + 5 (20 - b) rows.  (Permuting single rows took the clusters' effects for
    differences between identical environments: on 4 environments of 10 clusters of 20
    at icc 0.5, the margin's permutation p-value was below 0.05 in 30% of 10 samples, in
    none by clusters.)"""
    rng = np.random.default_rng(0)
    sizes = np.r_[np.full(40, 5), np.full(20, 15)]
    cluster = np.repeat(np.arange(60), sizes)
    X = rng.standard_normal((500, 2)) + rng.standard_normal((60, 2))[cluster]
    df = pd.DataFrame({"env": np.where(cluster < 40, 1, 2), "cluster": cluster,
                       "X1": X[:, 0], "X2": X[:, 1],
                       "Y": X @ [1.0, 0.5] + rng.standard_normal(500)})
    data = NegDRO(df, env="env", outcome="Y").data
    clustered = data.with_dependence(Dependence("cluster", groups=cluster))
    n = np.array([clustered.permute(np.random.default_rng(k)).n for k in range(20)])
    assert (n.sum(axis=1) == 500).all() and (n % 5 == 0).all() and len(set(n[:, 0])) > 3
    assert (data.permute(np.random.default_rng(0)).n == [200, 300]).all()
    hac = data.with_dependence(Dependence("HAC", maxlags=9))
    units, per_env = hac._units
    assert per_env.tolist() == [20, 30] and {len(u) for u in units} == {10}


def test_leave_one_environment_out_keeps_the_dependence():
    """validate_loeo(cov_type=...) fits each fold on its training rows with their
    clusters, and so does the model of a cluster fit: on clustered rows (icc 0.6) the
    default's folds reject invariance in 3 of 4; with the clusters, in none."""
    sem = simulate.random_sem(6, n_envs=4, rng=1)
    df = sem.sample(1500, rng=2, cluster_size=20, icc=0.6)
    model = _model(sem, df)
    cluster = {"cov_type": "cluster", "cov_kwds": {"groups": "cluster"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = model.validate_loeo(methods=["negdro"]).verdicts
        by_clusters = model.validate_loeo(methods=["negdro"], **cluster).verdicts
        of_the_fit = model.fit(n_boot=0, **cluster).model.validate_loeo(methods=["negdro"])
    assert (default == "rejected").sum() >= 2 and not (by_clusters == "rejected").any()
    assert of_the_fit.verdicts.tolist() == by_clusters.tolist()


def test_a_fit_rejected_beside_a_robust_set_that_is_not_empty_is_not_identified():
    """Clusters of 20 at icc 0.6, 2,000 rows per environment (weakly identified at this
    n): no support the selection tries is invariant, yet the joint robust set holds
    beta*.  The invariance model holds, so "rejected" was a confident wrong answer (and
    contradicted the robust p-values printed beside it): the fit is not beta*, and the
    environments cannot tell which b is, so "not identified", saying why."""
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=0)
    df = sem.sample(2000, rng=80_000, cluster_size=20, icc=0.6)
    with pytest.warns(IdentificationWarning, match="(?i)not identified: no fit the selection"):
        res = _model(sem, df).fit(cov_type="cluster", cov_kwds={"groups": "cluster"},
                                  n_boot=0)
    assert res.selection.invariance_rejected and not res.robust_set().empty
    assert res.verdict == "not identified" and res.robust_set().contains(sem.beta_star)
    said = " ".join(str(res.summary()).split())
    assert "some linear model may be (joint test p" in said and "NO INVARIANT" not in said


def test_cluster_labels_are_checked():
    sem, df = _clustered(n=400)
    model = _model(sem, df)

    def fit(groups):
        return model.fit(cov_type="cluster", cov_kwds={"groups": groups}, n_boot=0)

    with pytest.raises(DataError, match="needs cov_kwds"):
        model.fit(cov_type="cluster")
    with pytest.raises(DataError, match="'X1' is the outcome or a covariate"):
        fit("X1")
    with pytest.raises(DataError, match="'nope' is not a column"):
        fit("nope")
    with pytest.raises(DataError, match="more than one environment"):
        fit(np.arange(len(df)) % 7)
    with pytest.raises(DataError, match="single cluster"):
        fit(df["env"].to_numpy())
    with pytest.raises(DataError, match="missing labels"):
        fit(np.where(np.arange(len(df)) == 3, np.nan, df["cluster"]))
    with pytest.raises(DataError, match="groups has 3 labels"):
        fit([1, 2, 3])
    with pytest.warns(DataWarning, match="fewer than 10 clusters"), warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentificationWarning)
        fit(df["cluster"] // 5)
    arrays = NegDRO.from_arrays(df["Y"], df[list(sem.names[1:])], df["env"])
    with pytest.raises(DataError, match="built from arrays"):
        arrays.fit(cov_type="cluster", cov_kwds={"groups": "cluster"})


def test_a_rejection_on_dependent_rows_names_the_dependence():
    """The default fit of AR(1) rows rejects invariance: its warning and the summary say
    the rows look dependent and how to refit, not "an intervened outcome?"; the HAC fit
    has no such problem.  Where invariance fails on independent rows (Sachs' cells, in no
    time order: residual autocorrelations within 0.08) the rejection is not blamed on
    dependence."""
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=0)
    df = sem.sample(2000, rng=100, serial=0.8)
    model = NegDRO(df, env="env", outcome="Y")
    with pytest.warns(IdentificationWarning) as caught:
        default = model.fit(n_boot=0)
    said = " ".join(str(w.message) for w in caught)
    assert default.verdict == "rejected"
    assert "Rows look dependent (lag-1 autocorrelation 0.8" in said and "cov_type='HAC'" in said
    assert "intervened outcome" not in said
    assert "rows look dependent" in str(default.summary())
    assert default.serial_correlation.min() > 0.7
    assert not rows_look_dependent(_fit(df, cov_type="HAC"))
    cells = load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True).drop(columns="condition")
    sachs = _fit(cells, outcome="Erk", fit_intercept=True)
    assert sachs.verdict == "rejected" and not rows_look_dependent(sachs)
    assert np.abs(sachs.serial_correlation).max() < 0.1


def test_any_doubt_on_dependent_rows_names_the_dependence_first():
    """Limited interventions and AR(1) rows (rho 0.5): the default fit says "not
    identified" without rejecting invariance; its tests take the rows as independent all
    the same, so its warning says first that the rows look dependent."""
    sem = simulate.random_sem(10, n_envs=5, intervened=0.5, rng=1)
    with pytest.warns(IdentificationWarning) as caught:
        res = NegDRO(sem.sample(2000, rng=101, serial=0.5), env="env", outcome="Y").fit(
            n_boot=0)
    said = " ".join(str(w.message) for w in caught)
    assert res.verdict == "not identified" and not res.selection.rejected
    assert said.startswith("Rows look dependent (lag-1 autocorrelation 0.5")


@pytest.mark.parametrize("rows", [dict(serial=0.8), dict(cluster_size=20, icc=0.6)])
def test_the_rank_test_reads_the_long_run_covariance(rows):
    """Half the covariates shifted (random_sem(10, intervened=0.5, rng=1)): on independent
    rows the environments leave seven coefficients open.  On dependent rows the rank
    test with the Gaussian form of the scores' covariance found every direction
    determined (statistic 88 on 31 df) and the fit was "identified" 1.7 from beta*; with
    the long-run covariance it is not."""
    sem = simulate.random_sem(10, n_envs=5, intervened=0.5, rng=1)
    df = sem.sample(2000, rng=101, **rows)
    cov = ({"cov_type": "HAC"} if "serial" in rows else
           {"cov_type": "cluster", "cov_kwds": {"groups": "cluster"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y", covariates=list(sem.names[1:])).fit(
            n_boot=0, **cov)
    assert res.verdict != "identified" and res.selection.undetermined


def test_the_rank_test_keeps_its_level_on_dependent_rows():
    """An unintervened child of Y (``X6 = 2 Y + AR(1) noise``) leaves one direction
    undetermined; on AR(1) rows (rho 0.8, 2,000 rows per environment, HAC) the rank test
    should not find it determined.  Its calibration, the weight at the weakest direction,
    was the i.i.d. Gaussian form and so skipped under dependence, and the first form
    rejected the null direction at 1% in 12% of 200 samples (at 5%: 22.5%), the fit
    "identified"; weighted by the long-run share as every covariance away from the fit,
    3% (10%).  80 samples here: 2.4 expected at 1%, 9.6 before."""
    sem = simulate.eq33(p=5)
    pvalues = []
    for k in range(80):
        df = sem.sample(2000, rng=1000 + k, serial=0.8)
        shocks = np.random.default_rng(5000 + k).standard_normal((4, 2000))
        noise = signal.lfilter([0.6], [1.0, -0.8], shocks, axis=1).ravel()  # (env order)
        df["X6"] = 2 * df["Y"] + 0.5 * noise
        pvalues.append(_fit(df, cov_type="HAC").selection.rank_test[2])
    assert np.sum(np.array(pvalues) < 0.01) <= 5


def test_a_fit_computes_each_long_run_covariance_once_per_b(monkeypatch):
    """A fit's score covariances (``score_cov_of_fit``) keep the last b's, on the
    columns asked for, ``r`` and b's support: asking again at b, for ``r^2`` or for a
    support's columns, is a block of the covariance kept, equal to a pass of its own."""
    df = simulate.random_sem(6, n_envs=3, rng=1).sample(3000, rng=2, serial=0.5)
    data = NegDRO(df, env="env", outcome="Y").data.with_dependence(Dependence("HAC"))
    passes, scores = [], type(data)._environment_scores

    def counted(self, b, cols, what):
        if what == "The long-run score covariance":     # (not the lags' pass)
            passes.append(cols)
        return scores(self, b, cols, what)

    monkeypatch.setattr(type(data), "_environment_scores", counted)
    score_cov = data.score_cov_of_fit()
    b = np.array([0.5, 0.0, -0.3, 0.0, 0.0, 0.2])
    asks = [np.arange(6), np.array([RESIDUAL]), np.array([0, 2, 5]), np.array([2, RESIDUAL])]
    for cols in asks:
        np.testing.assert_allclose(score_cov(b, cols), data.score_cov(b, cols), rtol=1e-10)
    # one pass for the fit's four asks, then one for each of data.score_cov's
    assert len(passes) == 1 + len(asks) and passes[0].tolist() == [RESIDUAL, *range(6)]
    score_cov(2 * b, np.arange(3))
    score_cov(b, np.array([1]))                      # still kept
    assert len(passes) == 2 + len(asks)
    assert data.with_dependence(Dependence("HAC")) is data.with_dependence(Dependence("HAC"))


def test_the_fits_equal_risk_test_is_the_selections_at_its_fit(monkeypatch):
    """The equal-risk test a fit reports (``res.invariance``, read by the verdict) is the
    one the selection computes at the same ``b``: the long-run variance of ``r^2`` over
    the rows a test counts (the Wishart count), from the fit's kept covariances."""
    from negdro_stats.estimation.selection.walk import Walked
    seen, risk_test = [], Walked.risk_test

    def spied(self, mom, b):
        test = risk_test(self, mom, b)
        seen.append((mom is self.std, test.pvalue))
        return test

    monkeypatch.setattr(Walked, "risk_test", spied)
    for seed in range(3):
        sem = simulate.random_sem(6, n_envs=3, rng=seed)
        res = _fit(sem.sample(1500, rng=seed, serial=0.6), cov_type="HAC")
        at_fit = [p for on_sample, p in seen if on_sample]
        assert res.invariance.pvalue == pytest.approx(at_fit[-1], rel=1e-8)
        seen.clear()


def test_the_long_run_share_is_the_mean_inflation_of_the_scores_variance():
    """``tr(iid^{-1} S) / q``: c where the long-run covariance is c times the i.i.d. one,
    the rank's share where that is singular; for AR(1) rows with rho = 0.7 between
    (1 + rho^2) / (1 - rho^2) = 2.1 (a product of two centred components) and (1 + rho) /
    (1 - rho) = 5.7 (a component times another's mean), and near 1 for independent rows;
    None for the default."""
    A = np.random.default_rng(0).standard_normal((4, 3))
    iid = A.T @ A
    assert long_run_share(iid, 2.5 * iid) == pytest.approx(2.5)
    flat = np.diag([1.0, 2.0, 0.0])
    assert long_run_share(flat, np.diag([3.0, 6.0, 0.0])) == pytest.approx(3.0)
    df = simulate.random_sem(6, n_envs=3, rng=1).sample(20_000, rng=2, serial=0.7)
    shares = NegDRO(df, env="env", outcome="Y").data.with_dependence(
        Dependence("HAC")).long_run.share
    assert np.all((1.9 < shares) & (shares < 5.7))
    iid_rows = simulate.random_sem(6, n_envs=3, rng=1).sample(20_000, rng=2)
    model = NegDRO(iid_rows, env="env", outcome="Y")
    assert np.all(np.abs(model.data.with_dependence(Dependence("HAC")).long_run.share
                         - 1.0) < 0.1)
    assert model.data.long_run is None


def test_the_robust_set_holds_beta_star_on_ar1_rows():
    """The joint robust statistic at beta* on AR(1) rows (rho 0.8, 2,000 rows per
    environment, HAC): its Gaussian part moves with b as the long-run covariance does
    (times the long-run share).  Held at the i.i.d. form it averaged 1.63 of its degrees
    of freedom over 30 samples and held beta* in 47% of them; 1.15 with the share, 1.045
    with the rows counted by the long-run covariance's degrees of freedom.  Here 12
    samples (the mean's s.e. ~0.09)."""
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=2)
    names = list(sem.names[1:])
    ratios = []
    for k in range(12):
        res = _fit(sem.sample(2000, rng=80_000 + k, serial=0.8)[["env", "Y", *names]],
                   cov_type="HAC")
        rs = res.robust_set()
        ratios.append(rs._gmm.test_at(sem.beta_star * rs._to_std) / rs.df)
    assert np.mean(ratios) < 1.35


def test_a_test_counts_dependent_rows_by_the_long_run_covariances_degrees_of_freedom():
    """The inverse of a Wishart estimate with nu degrees of freedom of a k x k covariance
    is nu / (nu - k - 1) too large on average, so a test on k conditions per environment
    counts n (nu - k - 1) / nu rows (at least n / WISHART_MAX; every row for i.i.d.
    rows).  nu is G - 1 for clusters and n / sum_l w_l^2 for the Bartlett weights: n
    without lags, about 1.5 n / (L + 1) with many."""
    long_run = LongRun(np.ones(3), np.array([100.0, 10.0, np.inf]))
    assert long_run.wishart(9) == pytest.approx([100 / 90, WISHART_MAX, 1.0])
    assert long_run.rows(np.full(3, 500.0), 9) == pytest.approx([450, 500 / WISHART_MAX, 500])
    assert long_run.environments(np.array([2])).dof.tolist() == [np.inf]
    hac = Dependence("HAC")
    assert hac.dof(1000, 0) == 1000
    assert hac.dof(100_000, 99) == pytest.approx(1.5 * 100_000 / 100, rel=0.01)
    assert Dependence("cluster").dof(200, Clusters.of(np.repeat(np.arange(40), 5))) == 39


def test_the_robust_statistic_at_beta_star_has_its_mean_with_few_clusters():
    """30 clusters of 10 nearly independent rows per environment (icc 0.05), 5
    conditions per environment: the joint robust statistic at beta* averages its
    degrees of freedom (counting every row it averaged 1.23 of them over 100 samples,
    the Wishart factor 29 / 23 = 1.26).  60 samples, the mean's s.e. ~0.065."""
    sem = simulate.random_sem(4, n_envs=3, n_parents=2, n_children=2, rng=1)
    ratios = []
    for k in range(60):
        df = sem.sample(300, rng=1000 + k, cluster_size=10, icc=0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rs = _model(sem, df).fit(cov_type="cluster", cov_kwds={"groups": "cluster"},
                                     n_boot=0, check_identification=False).robust_set()
        ratios.append(rs._gmm.test_at(sem.beta_star * rs._to_std) / rs.df)
    assert abs(np.mean(ratios) - 1.0) < 0.15


def test_a_rejection_under_a_dependence_robust_fit_names_dependence_it_may_miss():
    """The J test's rejection names the usual suspects; a fit that already takes the rows
    as dependent adds the dependence its covariance may miss, and where the residuals of
    a default fit look dependent the warning says that instead."""
    from types import SimpleNamespace

    from negdro_stats.results.verdicts import _rejection_hint
    assert _rejection_hint(SimpleNamespace(cov_type="nonrobust"), "") == (
        " (an intervened outcome? a missing cause?)")
    assert "maxlags" in _rejection_hint(SimpleNamespace(cov_type="HAC"), "")
    assert "clusters wider" in _rejection_hint(SimpleNamespace(cov_type="cluster"), "")
    assert _rejection_hint(SimpleNamespace(cov_type="nonrobust"), "rows look dependent") == ""
