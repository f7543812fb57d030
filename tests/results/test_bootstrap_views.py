"""The bootstrap's intervals in every view: conf_int() and to_dict() (the CLI's JSON)
report the refits' distribution, the point mass at 0 of a covariate no refit selects
included."""

import warnings

import numpy as np
from numpy.testing import assert_allclose

from negdro_stats import NegDRO, simulate


def test_the_bootstrap_interval_of_an_unselected_covariate_in_every_view():
    """With fit(n_boot=B) a covariate no refit selects has the bootstrap's point mass at
    0: [0, 0] and boot_se 0, the same in conf_int() and to_dict() (the JSON); the
    intercept's bootstrap interval is the refits' too."""
    df = simulate.eq33(5).sample(400, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(n_boot=20, rng=0)
    assert res.interval_kind == "bootstrap"
    never = res.support_freq[res.support_freq == 0].index
    assert len(never)
    ci = res.conf_int()
    assert (ci.loc[never] == 0.0).all().all() and (res.boot_se[never] == 0.0).all()
    record = res.to_dict()
    for side in ("lower", "upper"):
        assert_allclose([record["conf_int"][side][k] for k in ci.index], ci[side])
    assert_allclose([record["boot_se"][k] for k in ci.index], res.boot_se)
    draws = res.bootstrap_draws["const"]
    assert_allclose(ci.loc["const"], np.quantile(draws, [0.025, 0.975]))
