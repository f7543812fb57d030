"""Issue 41 item 6: with an intercept, a fit is the same whatever constants are added to
the covariates and the outcome, up to what float64 carries of their variation.

The fits work on moments about the pooled means (``MultiEnvData.origin``), formed from
covariances accumulated about each environment's mean (``Moments.cov``); only the
intercept is reported back in the data's frame."""

import warnings

import numpy as np
import pandas as pd
import pytest

from negdro_stats import DataError, NegDRO, simulate


def _flat(value, key="") -> dict:
    """A nested to_dict() as {dotted key: leaf}."""
    if isinstance(value, dict):
        return {k: v for name, sub in value.items() for k, v in _flat(sub, f"{key}.{name}").items()}
    if isinstance(value, (list, tuple)):
        return {k: v for i, sub in enumerate(value) for k, v in _flat(sub, f"{key}[{i}]").items()}
    return {key: value}


def _fit(frame: pd.DataFrame, blocks: int | None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(frame, env="env", outcome="Y", fit_intercept=True, blocks=blocks).fit(
            n_boot=12, rng=1)
        res.robust_set()
        return res, _flat(res.to_dict())


def _designs():
    yield "eq33", simulate.eq33(p=8).sample(400, rng=0), None
    limited = simulate.random_sem(10, intervened=0.5, confounding=True, rng=4)
    yield "limited", limited.sample(500, rng=2), None
    t_noise = simulate.random_sem(6, n_envs=4, rng=7).sample(600, rng=3)
    yield "blocks", t_noise, 20


@pytest.mark.parametrize("name, frame, blocks", list(_designs()), ids=lambda v: str(v)[:8])
def test_offsets_leave_every_view_unchanged(name, frame, blocks):
    """Offsets of 1e7 and 1e9 (covariates up and down, the outcome too) change no slope,
    interval, p-value, test or verdict of to_dict() beyond the data's own rounding, and
    move the intercept by exactly what they imply.  Before issue 41 item 6: the slopes
    moved at 1e7 (raw moments lose 1e-2 of the variance there), the standard errors of
    an offset covariate were off by 1e6 already at 1e6 (a sandwich on raw moments), and
    at 1e9 the covariates were called constant."""
    base, flat = _fit(frame, blocks)
    covariates = [c for c in frame.columns if c not in ("Y", "env")]
    for offset in (1e7, 1e9):
        moved = frame.copy()
        up, down = covariates[0], covariates[len(covariates) // 2]
        moved[up] += offset
        moved[down] -= offset / 3
        moved["Y"] += offset / 10
        res, other = _fit(moved, blocks)
        np.testing.assert_allclose(res.params.drop("const"), base.params.drop("const"),
                                   atol=1e-6)
        if blocks is None:          # the intercept: the same residuals, row by row
            np.testing.assert_allclose(res.resid, base.resid, atol=1e-5)
        compared = 0
        for key, want in flat.items():
            if "const" in key or key.startswith((".params", ".timing")):
                continue
            got = other[key]
            if isinstance(want, float) and np.isfinite(want):
                assert got == pytest.approx(want, rel=1e-4, abs=1e-5), (offset, key)
                compared += 1
            elif not isinstance(want, float):
                assert got == want, (offset, key)
        assert compared > 50


def test_an_offset_is_not_a_constant():
    """A covariate 1e9 + N(0, 2.8^2) is fitted like any other with an intercept (it was
    'constant' before); without an intercept its variation is below the rounding of the
    raw moments, and the error says so (and how to fix it)."""
    frame = simulate.eq33(p=5).sample(300, rng=1)
    rng = np.random.default_rng(0)
    frame["X6"] = 1e9 + 2.8 * rng.normal(size=len(frame))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(frame, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
        near = NegDRO(frame.assign(X6=frame["X6"] - 1e9), env="env", outcome="Y",
                      fit_intercept=True).fit(n_boot=0)
    np.testing.assert_allclose(res.params.drop("const"), near.params.drop("const"),
                               atol=1e-6)
    with pytest.raises(DataError, match=r"\['X6'\] .*fit_intercept=True"):
        NegDRO(frame, env="env", outcome="Y")
    frame["X7"] = 1e9 + 1e-9 * rng.normal(size=len(frame))     # below the values' ulps
    with pytest.raises(DataError, match=r"\['X7'\] .*constant"):
        NegDRO(frame, env="env", outcome="Y", fit_intercept=True)


def test_the_models_moments_are_in_the_datas_frame():
    """model.moments are the data's (the fits' working moments, about the pooled means,
    are model.data.moments), and a model rebuilt from them fits the same intercept."""
    frame = simulate.eq33(p=5).sample(300, rng=2)
    frame["X2"] += 1e6
    model = NegDRO(frame, env="env", outcome="Y", fit_intercept=True)
    means = frame.groupby("env")["X2"].mean().to_numpy()
    np.testing.assert_allclose(model.moments.mean_x[:, 1], means, rtol=1e-12)
    working = model.data.moments
    assert abs(working.pooled_weights() @ working.mean_x[:, 1]) < 1e-8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = model.fit(n_boot=0).params
        b = NegDRO.from_moments(model.moments).fit(n_boot=0).params
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("method", ["erm", "anchor", "drig", "causal_dantzig", "eills"])
def test_peers_on_the_models_moments_ignore_offsets(method):
    """fit_baseline(method, model.moments) with an intercept: the same slopes and the
    intercept moved by what the offsets imply (peers fitted raw moments with the
    constant: at offsets of 1e6 causal Dantzig's intercept was -1.93e6 for -4.15e5, erm's
    slopes moved by 1e-4)."""
    from negdro_stats import fit_baseline

    frame = simulate.eq33(p=5).sample(500, rng=4)
    moved = frame.assign(X1=frame["X1"] + 1e6, Y=frame["Y"] + 1e5)
    options = {"gamma": 0.5} if method == "drig" else {}
    fits = [fit_baseline(method, NegDRO(f, env="env", outcome="Y", fit_intercept=True)
                         .moments, **options).params for f in (frame, moved)]
    np.testing.assert_allclose(fits[1].drop("const"), fits[0].drop("const"),
                               rtol=1e-7, atol=1e-8)
    want = fits[0]["const"] + 1e5 - fits[1]["X1"] * 1e6
    np.testing.assert_allclose(fits[1]["const"], want, rtol=1e-8)
