"""The data layer (MultiEnvData) and the solver options: one validation, one resampler."""

import pickle
import warnings
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from negdro_stats import DataError, DataWarning, Moments, NegDRO, SelectionWarning, simulate
from negdro_stats.data.container import MultiEnvData
from negdro_stats.estimation.options import SolverOptions


@pytest.fixture(scope="module")
def frame():
    df = simulate.eq33(p=5).sample(300, rng=3)
    return df.sample(frac=1.0, random_state=1)              # environments interleaved


def _rows(df):
    names = ["X1", "X2", "X3", "X4", "X5"]
    return df[names].to_numpy(), df["Y"].to_numpy(), df["env"].to_numpy()


def test_resample_is_the_stratified_bootstrap(frame):
    """The moments of a resample are those of n_e rows drawn with replacement within each
    environment, with the generator's draws (environments in sorted label order)."""
    data = MultiEnvData.from_frame(frame, "env", outcome="Y")
    X, y, env = _rows(frame)
    rows = []
    rng = np.random.default_rng(5)
    for e in data.moments.envs:
        idx = np.flatnonzero(env == e)
        rows.append(idx[rng.integers(0, len(idx), size=len(idx))])
    rows = np.concatenate(rows)
    expected = Moments.from_arrays(X[rows], y[rows], env[rows])
    got = data.resample(np.random.default_rng(5))
    assert_allclose(got.n, data.moments.n)
    for field in ("mean_x", "mean_y", "Sigma", "sxy", "syy"):
        assert_allclose(getattr(got, field), getattr(expected, field), rtol=1e-12)


def test_permute_reassigns_labels_and_keeps_sizes(frame):
    data = MultiEnvData.from_frame(frame, "env", outcome="Y")
    mom, perm = data.moments, data.permute(np.random.default_rng(0))
    assert_allclose(perm.n, mom.n)
    pooled = lambda m: np.tensordot(m.n, m.Sigma, axes=1)  # noqa: E731 -- same rows in all
    assert_allclose(pooled(perm), pooled(mom), rtol=1e-12)
    assert not np.allclose(perm.Sigma, mom.Sigma)           # but regrouped


def test_intercept_resamples_carry_the_constant(frame):
    data = MultiEnvData.from_frame(frame, "env", outcome="Y", fit_intercept=True)
    mom = data.resample(np.random.default_rng(1))
    assert mom.names[-1] == "const" and mom.names == data.moments.names
    assert_allclose(mom.Sigma[:, -1, :-1], mom.mean_x[:, :-1])
    assert data.without_constant(mom).names == ("X1", "X2", "X3", "X4", "X5")


def test_sources_agree(frame):
    """DataFrame, arrays and formula give the same moments; a shuffled env Series is
    aligned by index."""
    X, y, env = _rows(frame)
    a = MultiEnvData.from_frame(frame, "env", outcome="Y").moments
    b = MultiEnvData.from_arrays(y, X, env, names=["X1", "X2", "X3", "X4", "X5"],
                                 outcome="Y").moments
    c = MultiEnvData.from_formula("Y ~ 0 + X1 + X2 + X3 + X4 + X5", frame, "env").moments
    d = MultiEnvData.from_frame(frame.drop(columns="env"),
                                frame["env"].sample(frac=1.0, random_state=2),
                                outcome="Y").moments
    for other in (b, c, d):
        assert other.names == a.names
        assert_allclose(other.Sigma, a.Sigma, rtol=1e-12)
        assert_allclose(other.sxy, a.sxy, rtol=1e-12)


def test_missing_policy_in_one_place(frame):
    bad = frame.copy()
    bad.iloc[3, bad.columns.get_loc("X2")] = np.nan
    with pytest.raises(DataError, match=r"1 row\(s\) with NaN"):
        MultiEnvData.from_frame(bad, "env", outcome="Y")
    with pytest.warns(match="Dropped 1 of"):
        data = MultiEnvData.from_frame(bad, "env", outcome="Y", missing="drop")
    assert data.moments.nobs == len(frame) - 1
    assert data.resample(np.random.default_rng(0)).nobs == len(frame) - 1
    with pytest.raises(ValueError, match="'missing' parameter"):
        MultiEnvData.from_frame(frame, "env", outcome="Y", missing="ignore")


def test_moments_only_data_refuse_row_work():
    data = MultiEnvData.from_moments(simulate.eq33(p=5).moments())
    assert not data.has_rows and data.exog() is None
    with pytest.raises(DataError, match="needs the rows"):
        data.resample(np.random.default_rng(0))
    with pytest.raises(DataError, match="Moments"):
        MultiEnvData.from_moments(np.eye(3))


def test_data_pickles(frame):
    data = MultiEnvData.from_frame(frame, "env", outcome="Y", fit_intercept=True)
    back = pickle.loads(pickle.dumps(data))
    assert_allclose(back.resample(np.random.default_rng(4)).Sigma,
                    data.resample(np.random.default_rng(4)).Sigma)


def test_model_accepts_built_data(frame):
    data = MultiEnvData.from_frame(frame, "env", outcome="Y")
    a = NegDRO(data).fit(n_boot=0)
    b = NegDRO(frame, env="env", outcome="Y").fit(n_boot=0)
    assert a.model.data is data                               # held, not rebuilt
    pd.testing.assert_series_equal(a.params, b.params, check_exact=True)
    assert a.verdict == b.verdict
    beta_star = simulate.eq33(p=5).beta_star
    assert np.abs(a.params.to_numpy() - beta_star).max() < 0.2
    with pytest.raises(DataError, match="already a MultiEnvData"):
        NegDRO(data, env="env")
    with pytest.raises(DataError, match="needs env"):
        NegDRO(frame)


# ------------------------------------------------------------------ options
def test_options_are_validated_once_and_frozen():
    opts = SolverOptions(threshold=0, max_iter=np.int64(5))
    assert opts.threshold == 0.0 and opts.max_iter == 5 and isinstance(opts.max_iter, int)
    with pytest.raises(FrozenInstanceError):
        opts.mu = 1.0
    with pytest.raises(ValueError, match="'mu' parameter of NegDRO.fit"):
        SolverOptions(method="algorithm1", mu=0.0)
    with pytest.raises(ValueError, match="'refit' parameter"):
        SolverOptions(refit="ols")


def test_fit_names_unknown_and_misplaced_options(frame):
    model = NegDRO(frame, env="env", outcome="Y")
    with pytest.raises(DataError, match="unknown option 'treshold'. Did you mean 'threshold'"):
        model.fit(treshold=0.1, n_boot=0)
    with pytest.raises(DataError, match="does not take .gamma.: it is set on the model"):
        model.fit(gamma=5.0, n_boot=0)
    with pytest.raises(DataError, match="unknown option 'n_boot'"):
        model.fit_path([0.0, 1.0], n_boot=3)
    with pytest.raises(DataError, match=r"not take 'alpha'.*conf_int\(alpha=0.05\).*test_level="):
        model.fit(alpha=0.1, n_boot=0)                  # one meaning: the intervals' level
    assert model.fit(test_level=0.1, n_boot=0).settings["test_level"] == 0.1
    with pytest.warns(SelectionWarning, match=r"threshold=1.5\): Algorithm 3 keeps covariates"):
        model.fit(threshold=1.5, n_boot=0)


def test_results_record_the_resolved_options(frame):
    res = NegDRO(frame, env="env", outcome="Y", gamma=7.0).fit(n_boot=0, threshold=0.2)
    assert res.settings["gamma"] == 7.0 and res.settings["threshold"] == 0.2
    assert res.settings["max_iter"] == 200 and res.settings["tol"] == 1e-8   # resolved SQP
    assert res.solver.options == SolverOptions(**res.settings)


def test_predict_goes_through_the_model(frame):
    model = NegDRO(frame, env="env", outcome="Y", fit_intercept=True)
    res = model.fit(n_boot=0)
    pred = res.predict()
    assert pred.index.equals(frame.index)
    X = frame[["X1", "X2", "X3", "X4", "X5"]].to_numpy()
    assert_allclose(pred.to_numpy(), X @ res.params.to_numpy()[:-1] + res.params["const"])
    assert_allclose(model.predict(res.params, X), pred.to_numpy())
    assert isinstance(pred, pd.Series) and pred.name == "prediction"


def test_polars_and_pyarrow_frames_in_pandas_out():
    """Any eager dataframe narwhals reads gives the pandas fit; lazy frames are refused;
    predictions from a polars frame come back as pandas."""
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    df = simulate.eq33(p=5).sample(400, rng=4)
    ref = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    for frame in (pl.from_pandas(df), pa.Table.from_pandas(df, preserve_index=False)):
        res = NegDRO(frame, env="env", outcome="Y").fit(n_boot=0)
        pd.testing.assert_series_equal(res.params, ref.params)
        assert isinstance(res.predict(frame), pd.Series)
        assert_allclose(np.asarray(res.predict(frame)), ref.predict(df).to_numpy())
    formula = NegDRO.from_formula("Y ~ 0 + X1 + X2", pl.from_pandas(df), env="env")
    assert list(formula.fit(n_boot=0).params.index) == ["X1", "X2"]
    with pytest.raises(DataError, match="lazy"):
        NegDRO(pl.from_pandas(df).lazy(), env="env", outcome="Y")


def test_environment_labels_that_python_merges_are_refused():
    """1, 1.0 and True are one dict key in Python: pandas merged them into one environment
    without a word; tuple labels crashed after the whole fit."""
    data = simulate.eq33(p=5).sample(200, rng=0)
    env = data["env"].astype(object)
    env[env == 3] = True
    data["env"] = env
    with pytest.raises(DataError, match="1 and True are different labels"):
        NegDRO(data, env="env", outcome="Y")
    with pytest.raises(DataError, match="1 and True are different labels"):
        NegDRO(data.drop(columns="env"), env=env.to_numpy(), outcome="Y")
    data["env"] = [(i % 3, 0) for i in range(len(data))]
    with pytest.raises(DataError, match="must be scalars"):
        NegDRO(data, env="env", outcome="Y")
    data["env"] = env.astype(str)                    # the fix the message suggests
    assert NegDRO(data, env="env", outcome="Y").moments.envs == ("1", "2", "4", "True")


def test_from_moments_keeps_the_intercept():
    """NegDRO.from_moments(model.moments) of a model with an intercept fitted 'const' as a
    covariate (Condition 1b flipped); now the constant-1 column is the intercept, wherever
    it sits and whatever its name, and a constant cannot be a plain covariate."""
    data = simulate.eq33(p=6).sample(2000, rng=0)
    data["X1"] += 5.0
    model = NegDRO(data, env="env", outcome="Y", fit_intercept=True)
    rows = model.fit(n_boot=0)
    again = NegDRO.from_moments(model.moments).fit(n_boot=0)
    assert again.fit_intercept and list(again.params.index) == list(rows.params.index)
    assert_allclose(again.params, rows.params, atol=1e-10)
    assert again.identification.holds == rows.identification.holds
    mom = model.moments
    first = mom.subset([mom.p - 1, *range(mom.p - 1)])
    first = replace(first, names=("ones", *first.names[1:]))
    moved = NegDRO.from_moments(first).fit(n_boot=0)
    assert list(moved.params.index) == list(rows.params.index)
    assert_allclose(moved.params, rows.params, atol=1e-10)
    with pytest.raises(DataError, match="is the constant 1"):
        NegDRO.from_moments(mom, fit_intercept=False)
    plain = mom.subset(list(range(mom.p - 1)))
    assert_allclose(NegDRO.from_moments(plain, fit_intercept=True).fit(n_boot=0).params,
                    rows.params, atol=1e-10)


def test_non_string_column_names_and_drops_that_empty_an_environment():
    """Integer, None and tuple column names gave a bare KeyError (they are named by their
    str() now, in the fit and in predict); missing='drop' that empties an environment or
    the whole data set is a DataError naming it (a numpy error or a row count before); a
    vanishing upsilon made Algorithm 2 report b = 0 stationary after 0 iterations."""
    base = simulate.eq33(p=5).sample(200, rng=0)
    for names in ([0, 1, 2, 3, 4, 5], [None, "X1", "X2", "X3", "X4", "X5"],
                  [("a", 1), "X1", "X2", "X3", "X4", "X5"]):
        data = base.copy()
        data.columns = [*names, "env"]
        model = NegDRO(data, env="env")
        res = model.fit(n_boot=0)
        assert model.endog_name == str(data.columns[0])
        assert_allclose(res.predict(data.drop(columns="env")), model.predict(res.params))
    data = base.copy()
    data.loc[data["env"] == 2, "X1"] = np.nan
    with pytest.raises(DataError, match=r"drops every row of environment\(s\) 2"):
        NegDRO(data, env="env", outcome="Y", missing="drop")
    data["X2"] = np.nan
    with pytest.raises(DataError, match="drops every row: each has a NaN"):
        NegDRO(data, env="env", outcome="Y", missing="drop")
    with pytest.raises(DataError, match="upsilon=1e-300 is below 1e-8 of its natural scale"):
        NegDRO(base, env="env", outcome="Y").fit(n_boot=0, method="algorithm2",
                                                 upsilon=1e-300)


def test_messages_name_the_real_problem():
    """A 1e160 cell said "0 row(s) with NaN (by column: ;)" after leaked overflow
    warnings; an offset of 1e6 with an intercept was called collinear with const; values
    times 1e-300 were 'constant'."""
    import warnings

    base = simulate.eq33(p=5).sample(200, rng=0)
    data = base.copy()
    data.iloc[3, 1] = 1e160
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # no numpy warning leaks
        with pytest.raises(DataError, match=r"Columns 'X1' hold values whose squares "
                                            "overflow float64"):
            NegDRO(data, env="env", outcome="Y")
    data = base.copy()
    data["X1"] += 1e6
    shifted = NegDRO(data, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
    plain = NegDRO(base, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
    assert_allclose(shifted.params.drop("const"), plain.params.drop("const"), atol=1e-4)
    data = base.copy()
    data[["Y", "X1", "X2", "X3", "X4", "X5"]] *= 1e-300
    with pytest.raises(DataError, match="multiply or divide by a power of 10"):
        NegDRO(data, env="env", outcome="Y")


def test_an_unnamed_outcome_is_the_first_column_and_said():
    """Without outcome= the first column other than env is the outcome, whatever its name
    (no guessing: a column called Y later on is not preferred); a DataWarning says how to
    choose, and the model's repr, the results' repr and the summary say "(first column)"."""
    df = simulate.eq33(p=5).sample(300, rng=0)[["X1", "X2", "Y", "X3", "X4", "X5", "env"]]
    with pytest.warns(DataWarning, match="the first column, 'X1', is the outcome.*outcome="):
        model = NegDRO(df, env="env")
    assert model.endog_name == "X1" and "'X1' (first column)" in repr(model)
    res = model.fit(n_boot=0)
    text = " ".join(str(res.summary(detail=True)).split())
    assert "'X1' (first column)" in repr(res) and "Dep. Variable: X1 (first column)" in text
    assert "The outcome is the first column, 'X1'" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        named = NegDRO(df, env="env", outcome="Y")
        text = str(named.fit(n_boot=0).summary(detail=True))
    assert "first column" not in repr(named) + text
