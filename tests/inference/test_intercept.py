"""Inference for the profiled intercept (negdro_stats.inference.intercept): Wald by the
delta method, robust by Bonferroni, the bootstrap's refits; on samples and population
moments."""

import sys
import warnings
from pathlib import Path

import numpy as np
from numpy.testing import assert_allclose

from negdro_stats import NegDRO, simulate

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from bench_intercept import _sample  # noqa: E402


def _fit(model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(**({"n_boot": 0} | kw))


def test_wald_intervals_of_the_intercept_cover():
    """Hidden confounding of X1 and Y, mean shifts, covariates at offsets 1, 2, 3 (so the
    slopes' errors reach the intercept through ``xbar``), the invariance GMM reported:
    over 100 samples the delta method's 95% intervals cover the intercept in at least
    88% (measured 0.93; binomial s.d. 0.022 at 0.95, so 3 s.d.) and its z scores have
    a standard deviation within 0.8-1.25 (measured 1.03; s.d. ~0.07)."""
    cover, z = [], []
    for k in range(100):
        df, c, _ = _sample("confounded", 500, 300 + k)
        res = _fit(NegDRO(df, env="env", outcome="Y", fit_intercept=True))
        assert res.solver.refit == "gmm"
        lo, hi = res.conf_int(kind="wald").loc["const"]
        cover.append(lo <= c <= hi)
        z.append((res.params["const"] - c) / res.bse["const"])
    assert np.mean(cover) >= 0.88
    assert 0.8 < np.std(z, ddof=1) < 1.25


def test_every_kind_gives_the_intercept_an_interval():
    """Wald, robust and bootstrap intervals of the intercept are finite and cover it on
    one sample; the robust one, which does not condition on the support and pays
    Bonferroni's split, is the widest; the JSON writes the reported kind's."""
    df, c, _ = _sample("confounded", 1000, 7)
    res = _fit(NegDRO(df, env="env", outcome="Y", fit_intercept=True), n_boot=30, rng=0)
    width = {}
    for kind in ("wald", "robust", "bootstrap"):
        lo, hi = res.conf_int(kind=kind).loc["const"]
        assert np.isfinite([lo, hi]).all() and lo < c < hi, kind
        width[kind] = hi - lo
    assert width["robust"] > max(width["wald"], width["bootstrap"])
    assert np.isfinite(res.bse["const"]) and np.isfinite(res.boot_se["const"])
    record = res.to_dict()["conf_int"]
    ci = res.conf_int(kind=record["kind"])
    assert_allclose([record["lower"]["const"], record["upper"]["const"]], ci.loc["const"])


def test_population_moments_give_the_intercept_as_a_point():
    """From population moments (treated as 1e12 rows per environment) every interval of
    the intercept, as the slopes', is the true intercept to within ~1e-6; there are no
    rows to bootstrap (NaN)."""
    sem = simulate.random_sem(6, n_envs=4, n_parents=2, n_children=2, rng=3)
    res = _fit(NegDRO.from_moments(sem.moments(), fit_intercept=True))
    assert_allclose(res.params.iloc[:-1], sem.beta_star, atol=1e-8)
    mom = sem.moments()
    w = mom.pooled_weights()
    c = float(w @ mom.mean_y - sem.beta_star @ (w @ mom.mean_x))     # 0: E[eps] = 0
    for kind in ("wald", "robust"):
        lo, hi = res.conf_int(kind=kind).loc["const"]
        assert lo <= c <= hi and hi - lo < 1e-5, kind
    assert res.conf_int(kind="bootstrap").isna().all().all()
