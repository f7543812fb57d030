"""Degenerate data through the inference stage: an outcome that is an exact combination
of covariates (the robust set's exact-fit rule) and a covariate whose squares underflow
(the moments' consistency check)."""

import warnings

import pytest

from negdro_stats import DataError, NegDRO, simulate


@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("outcome", ["2 X3", "2 X3 - X1"])
def test_an_exact_fit_has_point_intervals(intercept, outcome):
    """Y a combination of covariates: the fit is exact, the robust set's intervals are the
    coefficients themselves to the statistic's resolution (robust.RESOLUTION; the
    profiles off the fit are at their limit, above the quantile; the intercept's to the
    rounding of the residual's variance), they hold the estimates, and every view runs:
    summary, to_dict, robust p-values."""
    df = simulate.eq33(10).sample(500, rng=1)
    df["Y"] = 2.0 * df["X3"] - (df["X1"] if "X1" in outcome else 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")               # (the data warn of the exact fit)
        res = NegDRO(df, env="env", outcome="Y",
                     fit_intercept=intercept).fit(n_boot=0)
    rs = res.robust_set()
    assert rs.exact and not rs.empty
    ci = res.conf_int(kind="robust")
    assert ((ci["lower"] <= res.params) & (res.params <= ci["upper"])).all()
    # the statistic's resolution: +- sqrt(EXACT_FIT) = 1e-5 in standardised units
    assert (ci["upper"] - ci["lower"] <= 2e-5 * 5).all()
    assert res.params["X3"] == pytest.approx(2.0)
    assert res.robust_pvalues["X3"] < 1e-6 and res.robust_pvalues["X2"] == 1.0
    assert rs.profile("X3", [2.0])["AR_j"].iloc[0] == 0.0
    said = res.to_dict()["conf_int"]
    assert said["lower"]["X3"] <= 2.0 <= said["upper"]["X3"]
    assert said["lower"]["X3"] == ci.loc["X3", "lower"]
    str(res.summary())


@pytest.mark.parametrize("source", ["frame", "arrays"])
def test_a_covariate_below_the_float_range_is_refused_with_the_fix(source):
    """X2 times 1e-200: its squares underflow; the data checks say so and how to fix it,
    whichever constructor reads it (the moments' own consistency check lets them)."""
    df = simulate.eq33(5).sample(200, rng=0)
    df["X2"] *= 1e-200
    with pytest.raises(DataError, match="rescale them"):
        if source == "frame":
            NegDRO(df, env="env", outcome="Y")
        else:
            NegDRO.from_arrays(df["Y"].to_numpy(), df.drop(columns=["Y", "env"]).to_numpy(),
                               df["env"].to_numpy())
