"""NegDRO model: input handling, validation messages, results and printing."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from negdro_stats import (
    ConvergenceWarning,
    DataError,
    DataWarning,
    IdentificationWarning,
    NegDRO,
    simulate,
)
from negdro_stats.cli import main
from negdro_stats.identification.conditions import check_condition_1b


@pytest.fixture(scope="module")
def df():
    return simulate.eq33(p=6).sample(3000, rng=7)


def test_dataframe_not_mutated_and_formats_agree(df):
    before = df.copy()
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    pd.testing.assert_frame_equal(df, before)
    X = df[[f"X{j}" for j in range(1, 7)]].to_numpy()
    res2 = NegDRO.from_arrays(df["Y"].to_numpy(), X, df["env"].to_numpy(),
                              names=[f"X{j}" for j in range(1, 7)], outcome="Y").fit(n_boot=0)
    assert_allclose(res.params, res2.params)
    assert_allclose(res2.predict(), res.predict().to_numpy())
    arr = NegDRO(df[['Y', *res.params.index]].to_numpy(), env=df['env'].to_numpy()).fit(n_boot=0)
    assert_allclose(arr.params.to_numpy(), res.params.to_numpy())
    assert arr.predict().shape == (len(df),)
    res3 = NegDRO.from_formula("Y ~ 0 + X1 + X2 + X3 + X4 + X5 + X6", df, env="env").fit(n_boot=0)
    assert_allclose(res.params.to_numpy(), res3.params.to_numpy())
    with_const = NegDRO.from_formula("Y ~ X1 + X2 + X3 + X4 + X5 + X6", df, env="env")
    assert with_const.fit_intercept and "const" in with_const.exog_names
    env_first = df[["env", "Y", *[f"X{j}" for j in range(1, 7)]]]
    assert_allclose(NegDRO(env_first, env="env").fit(n_boot=0).params, res.params)


def test_results_contents(df):
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert list(res.params.index) == [f"X{j}" for j in range(1, 7)]
    assert list(res.weights.index) == [1, 2, 3, 4] and abs(res.weights.sum() - 1) < 1e-12
    assert (res.risks > 0).all() and res.nobs == 12000 and res.n_envs == 4
    pred = res.predict()
    assert_allclose(pred.to_numpy(), df[res.params.index].to_numpy() @ res.params.to_numpy())
    assert res.converged and res.settings["gamma"] == 20.0
    text = str(res.summary())
    for word in ("Dep. Variable:", "Y", "Verdict:", "Selected:", "risk R_e(b)", "X3"):
        assert word in text
    for word in ("gamma:", "weight w_e", "Solver:", "[1] "):
        assert word in str(res.summary(detail=True)) and word not in text
    assert "<table" in res._repr_html_()
    lines = text.splitlines()
    rules = {len(line) for line in lines if set(line) <= set("=-") and line}
    assert rules == {78} and max(map(len, lines)) == 78      # one width for tables and notes
    assert any(line.startswith("risk R_e(b)") for line in lines)   # one column per environment
    latex = res.summary(detail=True).as_latex()
    assert r"\begin{tabular}" in latex and "Phi\\_mu" in latex
    assert repr(res).startswith("<NegDROResults: outcome='Y', p=6")


def test_fit_intercept(df):
    """Y shifted by 3: the slopes do not move, the intercept moves by 3, and predictions
    are X b + const (the constant last)."""
    fit = dict(threshold=0.0, n_boot=0)
    base = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(**fit)
    shifted = df.assign(Y=df["Y"] + 3.0)
    res = NegDRO(shifted, env="env", outcome="Y", fit_intercept=True).fit(**fit)
    assert list(res.params.index) == [f"X{j}" for j in range(1, 7)] + ["const"]
    assert_allclose(res.params.iloc[:-1], base.params.iloc[:-1], atol=1e-8)
    assert res.params["const"] == pytest.approx(base.params["const"] + 3.0, abs=1e-8)
    X = shifted[[f"X{j}" for j in range(1, 7)]].to_numpy()
    assert_allclose(res.predict(shifted), X @ res.params.iloc[:-1] + res.params["const"])


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(env="nope"), DataError, "not a column"),
        (dict(env="env", outcome="nope"), DataError, "not a column"),
        (dict(env=np.zeros(5)), DataError, "one label per row"),
        (dict(env="env", gamma=-1), ValueError, r"'gamma' parameter of NegDRO .* \[0, inf\)"),
        (dict(env="env", missing="dorp"), ValueError, "Did you mean 'drop'"),
    ],
)
def test_bad_arguments(df, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        NegDRO(df, outcome=kwargs.pop("outcome", "Y"), **kwargs)


def test_a_left_out_intercept_is_named():
    """Y = 20 + beta*'X + noise fitted without an intercept (the default): the residuals'
    mean is not 0, which the model's noise assumes, and the estimate dropped a cause
    (found by an adversarial review: error 1.06, no warning).  A DataWarning and the
    summary's first line say so; with fit_intercept=True the fit is exact and quiet."""
    sem = simulate.random_sem(8, n_envs=4, strong_env=True, shift="variance", rng=2005)
    df = sem.sample(2000, rng=5)
    df["Y"] += 20.0
    with pytest.warns(DataWarning, match="residuals have mean"):
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert res.mean_left_out and res.residual_mean == pytest.approx(20.0, rel=0.2)
    assert str(res.summary()).startswith("WARNING: the residuals have mean")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        fixed = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
    assert not fixed.mean_left_out
    assert_allclose(fixed.params.iloc[:-1], sem.beta_star, atol=0.05)


def test_risks_that_differ_decisively_at_the_estimate_warn():
    """An intervention on the outcome (its noise x3 in one environment) leaves no
    risk-invariant model: the equal-risk test at the estimate is decisive (p < 1e-4), and
    the fit warns; on eq. (33) it does not."""
    df = simulate.eq33(p=5).sample(2000, rng=1)
    shifted = df["env"] == df["env"].max()
    df.loc[shifted, "Y"] += 2.0 * np.random.default_rng(0).normal(size=int(shifted.sum()))
    with pytest.warns(IdentificationWarning, match="risks differ decisively"):
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert res.invariance.decisive
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clean = NegDRO(simulate.eq33(p=5).sample(2000, rng=1), env="env", outcome="Y").fit(
            n_boot=0)
    assert not clean.invariance.decisive
    assert not any("decisively" in str(w.message) for w in caught)


def test_bad_data(df):
    nan = df.copy()
    nan.loc[5, "X2"] = np.nan
    with pytest.raises(DataError, match="missing='drop'"):
        NegDRO(nan, env="env", outcome="Y")
    with pytest.warns(DataWarning, match="Dropped 1") as caught:
        NegDRO(nan, env="env", outcome="Y", missing="drop")
    assert caught[0].filename == __file__           # attributed to the user's line
    with pytest.raises(DataError, match="at least 2 environments"):
        NegDRO(df.assign(env=1), env="env", outcome="Y")
    with pytest.raises(DataError, match="not numeric"):
        NegDRO(df.assign(X2="a"), env="env", outcome="Y")
    with pytest.raises(DataError, match="constant"):
        NegDRO(df.assign(Y=1.0), env="env", outcome="Y")
    with pytest.raises(DataError, match="constant"):
        NegDRO(df.assign(X2=2.0), env="env", outcome="Y")
    with pytest.raises(DataError, match="collinear"):
        NegDRO(df.assign(X2=2 * df["X1"] - df["X3"]), env="env", outcome="Y")
    leak = df.assign(X4=3 - 2 * df["Y"] + df["X1"])     # a covariate that gives the outcome
    for intercept in (False, True):                     # (an offset is exact only with one)
        frame = leak if intercept else leak.assign(X4=leak["X4"] - 3)
        with pytest.warns(DataWarning, match=r"exact linear .* covariates \['X1', 'X4'\]"):
            model = NegDRO(frame, env="env", outcome="Y", fit_intercept=intercept)
        res = model.fit(n_boot=0)                       # that exact function, said so
        slopes = res.params.drop("const", errors="ignore")
        np.testing.assert_allclose(slopes, np.where(slopes.index == "X4", -0.5, 0.0) +
                                   np.where(slopes.index == "X1", 0.5, 0.0), atol=1e-9)
        assert "exact linear function of X1, X4" in res.selection.reason
    dup = pd.concat([df, df[["X1"]]], axis=1)
    with pytest.raises(DataError, match="duplicate"):
        NegDRO(dup, env="env", outcome="Y")
    with pytest.raises(DataError, match="fewer than 2 rows"):
        NegDRO(df.assign(env=np.r_[np.zeros(len(df) - 1), 1]), env="env", outcome="Y")
    with pytest.warns(DataWarning, match="no more rows than the"):
        NegDRO(df.iloc[np.r_[0:3, 3000:len(df)]], env="env", outcome="Y")


def test_bad_fit_options(df):
    model = NegDRO(df, env="env", outcome="Y")
    with pytest.raises(ValueError, match="Did you mean 'algorithm1'"):
        model.fit(method="algorithm_1")
    with pytest.raises(ValueError, match="'threshold'"):
        model.fit(threshold=-0.1)
    with pytest.raises(TypeError, match="'max_iter'"):
        model.fit(max_iter=2.5)


def test_nonconvergence_warns(df):
    model = NegDRO(df, env="env", outcome="Y")
    with pytest.warns(ConvergenceWarning, match="did not reach"):
        res = model.fit(method="algorithm1", max_iter=3, n_boot=0)
    assert not res.converged and "did not reach" in str(res.summary())


def test_population_model_from_moments():
    sem = simulate.example3("strong")
    res = NegDRO.from_moments(sem.moments()).fit(n_boot=0)
    assert_allclose(res.params.to_numpy(), sem.beta_star, atol=1e-6)
    assert "population" in str(res.summary())
    with pytest.raises(DataError, match="pass exog"):
        res.predict()


@pytest.mark.smoke
def test_cli_demo(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["demo", "--p", "6", "--n", "2000"]) == 0
    out = capsys.readouterr().out
    assert "Verdict:" in out and "||b_hat - beta*||_2" in out


def test_identification_and_invariance_in_results(df):
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert res.identification.condition == "1b" and res.ident_margin > 0
    assert res.invariance.df == 3 and 0 <= res.invariance.pvalue <= 1
    text = str(res.summary())
    assert "Cond. 1b margin" in text and "Equal risks p:" in text
    assert "Equal environment risks" in str(res.summary(detail=True))
    off = NegDRO(df, env="env", outcome="Y").fit(check_identification=False, n_boot=0)
    assert off.identification is None and np.isnan(off.ident_margin)
    # With an intercept the margin is that of the pooled-centred covariates (the constant,
    # never intervened on, is profiled out as in the fit), so a shifted origin leaves it.
    res_c = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
    centred = check_condition_1b(res.model.moments.centred()[0])
    assert_allclose(res_c.ident_margin, centred.margin, rtol=1e-6)
    moved = df.assign(X1=df["X1"] + 100.0)
    res_m = NegDRO(moved, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
    assert_allclose(res_m.ident_margin, res_c.ident_margin, rtol=1e-6)


def test_diagnose_function_form(df):
    from negdro_stats import diagnose

    rep = diagnose(df, "env", outcome="Y", n_boot=9, n_perm=9, rng=0, verbose=False)
    assert rep.boot_bounds.shape == (9, 2) and rep.n_perm == 9
    assert rep.invariance is not None
    model = NegDRO.from_moments(simulate.eq33(p=5).moments())
    with pytest.raises(DataError, match="resamples rows"):
        model.diagnose()


@pytest.mark.smoke
def test_cli_fit_csv(df, tmp_path, capsys):
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    assert main(["fit", str(path), "--env", "env", "--outcome", "Y", "--n-boot", "10",
                 "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "Dep. Variable:" in out and "sel. freq" in out


def test_models_and_results_pickle(df):
    """Models from a DataFrame, arrays and moments, and their results (bootstrap included),
    survive a pickle round trip: same estimates, intervals and summary."""
    import pickle

    covs = [c for c in df.columns if c not in ("Y", "env")]
    models = [NegDRO(df, env="env", outcome="Y"),
              NegDRO.from_arrays(df["Y"].to_numpy(), df[covs].to_numpy(), df["env"].to_numpy()),
              NegDRO.from_moments(simulate.eq33(p=6).moments())]
    for model in models:
        again = pickle.loads(pickle.dumps(model))
        boot = 10 if model.moments.source == "sample" else 0
        res = model.fit(n_boot=boot, rng=0)
        res2 = pickle.loads(pickle.dumps(res))
        assert_allclose(again.fit(n_boot=boot, rng=0).params, res.params)
        assert_allclose(res2.params, res.params)
        assert_allclose(res2.conf_int(), res.conf_int())
        assert str(res2.summary()) == str(res.summary())


def test_env_series_is_aligned_by_index(df):
    """An env Series in another row order is matched by index, as pandas does; one whose
    index does not cover the data's is refused."""
    env = df["env"]
    shuffled = env.sample(frac=1.0, random_state=0)
    data = df.drop(columns="env")
    a = NegDRO(data, env=env, outcome="Y").fit(n_boot=0)
    b = NegDRO(data, env=shuffled, outcome="Y").fit(n_boot=0)
    assert_allclose(b.params, a.params)
    with pytest.raises(DataError, match="does not cover"):
        NegDRO(data, env=env.iloc[:-5], outcome="Y")


@pytest.mark.parametrize("design", ["eq33_p40", "not_identified", "population"])
def test_every_result_round_trips_through_save(design, tmp_path):
    """Issue 41: a fit with more than 30 covariates (identification deferred), a
    least-risk fit on the "not identified" route, and a population fit save and load,
    before and after their pending work ran, with the same numbers in every view."""
    from negdro_stats import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if design == "population":
            model = NegDRO.from_moments(simulate.example3("limited").moments())
        elif design == "eq33_p40":
            model = NegDRO(simulate.eq33(p=40).sample(400, rng=0), env="env", outcome="Y")
        else:
            sem = simulate.random_sem(8, n_envs=4, n_parents=2, n_children=2, shift="mean",
                                      rng=3)
            model = NegDRO(sem.sample(1000, rng=1), env="env", outcome="Y")
        res = model.fit(rng=0)
        for k, when in enumerate(("pending", "computed")):
            if when == "computed":
                res.identification, res.conf_int(kind="wald")
            res.save(tmp_path / f"{k}.pkl")
            back = load(tmp_path / f"{k}.pkl")
            assert_allclose(back.params, res.params)
            assert back.interval_kind == res.interval_kind
            pd.testing.assert_frame_equal(back.conf_int(kind="wald"), res.conf_int(kind="wald"))
            assert back.ident_margin == res.ident_margin or np.isnan(res.ident_margin)


def test_a_failed_save_leaves_the_file_as_it_was(df, tmp_path, monkeypatch):
    """save() writes beside the target and renames only a file that loads back: a save
    that fails (here: the pickle cannot be written) leaves the good file, and no
    temporary file."""
    import pickle

    import negdro_stats._saving
    from negdro_stats import load

    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    target = tmp_path / "fit.pkl"
    res.save(target)
    good = target.read_bytes()

    def broken(*args, **kwargs):
        raise pickle.PicklingError("cannot pickle a bound method")

    monkeypatch.setattr(negdro_stats._saving._ResultsPickler, "dump", broken)
    with pytest.raises(DataError, match="path was left as it was"):
        res.save(target, overwrite=True)
    monkeypatch.undo()
    assert target.read_bytes() == good and sorted(os.listdir(tmp_path)) == ["fit.pkl"]
    assert_allclose(load(target).params, res.params)
    with pytest.raises(DataError, match="path must be a file name"):
        res.save(None)


def test_save_and_load(df, tmp_path):
    """Results and paths survive save/load (predict, summary, intervals); a foreign or
    wrong-kind file is a DataError, a file from another version a DataWarning."""
    import pickle

    from negdro_stats import NegDROResults, PathResult, load

    model = NegDRO(df, env="env", outcome="Y")
    res = model.fit(n_boot=5, rng=0)
    res.save(tmp_path / "fit.pkl")
    back = NegDROResults.load(tmp_path / "fit.pkl")
    assert back is not res and str(back.summary()) == str(res.summary())
    pd.testing.assert_series_equal(back.predict(df.head(7)), res.predict(df.head(7)))
    pd.testing.assert_frame_equal(back.conf_int(), res.conf_int())
    path = model.fit_path([0.0, 5.0])
    path.save(str(tmp_path / "path.pkl"))
    pd.testing.assert_frame_equal(load(tmp_path / "path.pkl").params, path.params)
    with pytest.raises(DataError, match="does not hold NegDROResults"):
        NegDROResults.load(tmp_path / "path.pkl")
    (tmp_path / "junk.pkl").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="not a file saved by negdro_stats"):
        load(tmp_path / "junk.pkl")
    with pytest.raises(DataError, match="Could not read"):
        PathResult.load(tmp_path / "missing.pkl")
    with open(tmp_path / "old.pkl", "wb") as f:
        pickle.dump({"negdro_stats": "0.0.1", "results": res}, f)
    with pytest.warns(DataWarning, match="saved by negdro_stats 0.0.1"):
        load(tmp_path / "old.pkl")


def test_summary_stays_78_wide_with_long_names_and_warnings(df):
    """A long outcome name is shortened in the header, and the WARNING line is wrapped:
    no line of the summary exceeds 78 characters."""
    long = df.rename(columns={"Y": "a_very_long_outcome_name_from_a_real_dataset"})
    long = long.assign(X1=long["X1"] + 3.0 * (long["env"] == 4))      # risks then differ
    res = NegDRO(long, env="env", outcome="a_very_long_outcome_name_from_a_real_dataset"
                 ).fit(n_boot=0)
    text = str(res.summary())
    assert max(map(len, text.splitlines())) == 78
    assert "a_very_long_outc..." in text


def test_summary_counts_bootstrap_refits_that_stopped_early(df):
    """'Converged: yes' is the fit's own; refits that stopped before tol are counted in
    the bootstrap note (the review found 52 of 200 unmentioned beside 'Converged: yes')."""
    from dataclasses import replace

    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=6, rng=0)
    assert "stopped before tol" not in str(res.summary(detail=True))
    converged = np.array([False, True, False, True, True, True])
    res._bootstrap = replace(res.bootstrap, converged=converged)
    assert "2 refits stopped before tol" in " ".join(str(res.summary(detail=True)).split())


def test_unconverged_fit_reports_the_stage_that_stalled(df):
    """'Converged: NO' stands next to the stationarity of the stage that stalled, not of
    a later stage that converged (the review found 'NO' beside 2.8e-13)."""
    with pytest.warns(ConvergenceWarning, match=r"in stage 1 of \d+ \(on 6 covariates\)"):
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0, max_iter=2)
    assert not res.converged and not res.solver.stages[0]["converged"]
    assert res.grad_norm > res.settings["tol"]


def test_load_refuses_code_and_save_refuses_to_clobber(df, tmp_path):
    """A crafted pickle cannot run code through load (the restricted unpickler refuses
    os.system before calling it); save() neither overwrites without overwrite=True nor
    follows a symbolic link."""
    import pickle

    from negdro_stats import NegDROResults, load

    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (tmp_path / "evil.pkl").write_bytes(pickle.dumps({"negdro_stats": "x", "results": Evil()}))
    with pytest.raises(DataError, match="refers to posix.system|refers to nt.system"):
        load(tmp_path / "evil.pkl")
    assert not marker.exists()
    (tmp_path / "eval.pkl").write_bytes(pickle.dumps(eval))
    with pytest.raises(DataError, match="builtins.eval"):
        NegDROResults.load(tmp_path / "eval.pkl")

    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    res.save(tmp_path / "fit.pkl")
    with pytest.raises(DataError, match="exists; pass overwrite=True"):
        res.save(tmp_path / "fit.pkl")
    res.save(tmp_path / "fit.pkl", overwrite=True)
    (tmp_path / "link.pkl").symlink_to(tmp_path / "elsewhere.pkl")
    with pytest.raises(DataError, match="symbolic link"):
        res.save(tmp_path / "link.pkl", overwrite=True)
    assert not (tmp_path / "elsewhere.pkl").exists()
    assert str(load(tmp_path / "fit.pkl").summary()) == str(res.summary())


def test_html_and_latex_escape_names_and_labels():
    """Column names and environment labels are text, never markup: a ``<script>`` name
    does not reach the notebook's page, and LaTeX specials are escaped once."""
    data = simulate.eq33(p=5).sample(300, rng=0).rename(
        columns={"X1": "<script>alert(1)</script>", "X2": "a{b}\\c^~", "X3": "x_3 50%"})
    data["env"] = data["env"].map(lambda e: f"<b>e{e}</b>")
    summary = NegDRO(data, env="env", outcome="Y").fit(n_boot=0).summary()
    page = summary.as_html()
    assert "<script>" not in page and "<b>e" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    latex = summary.as_latex()
    assert r"a\{b\}\textbackslash{}c\textasciicircum{}\textasciitilde{}" in latex
    assert r"x\_3 50\%" in latex and r"x\\_3" not in latex
    assert "<script>" in str(summary)                 # the text form shows names as they are


def test_predict_matches_a_series_by_its_labels(df):
    """A Series of coefficients is matched by name (reversed, it once changed the
    predictions by up to 7.6); wrong labels or a wrong length are a DataError."""
    model = NegDRO(df, env="env", outcome="Y", fit_intercept=True)
    res = model.fit(n_boot=0)
    forward = model.predict(res.params)
    pd.testing.assert_series_equal(model.predict(res.params[::-1]), forward)
    assert_allclose(model.predict(res.params.to_numpy()), forward)
    with pytest.raises(DataError, match="labels are not the model's coefficients"):
        model.predict(res.params.rename({"X1": "Z1"}))
    with pytest.raises(DataError, match="must hold"):
        model.predict(res.params.to_numpy()[:-1])


def test_results_and_reports_give_plain_json(df):
    """to_dict(): JSON without NaN (None instead), the same numbers as the objects; the
    CLI's --json prints exactly these."""
    import json

    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    out = res.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["params"] == {k: float(v) for k, v in res.params.items()}
    assert out["bse"] == {k: None if np.isnan(v) else float(v)    # analytic: None off
                          for k, v in res.bse.items()}            # the support
    assert out["bse"]["X1"] > 0 and out["boot_se"] == dict.fromkeys(res.params.index)
    assert out["identification"]["relative_margin"] == res.identification.relative_margin
    assert out["n_boot"] == 0 and out["route"] == res.solver.refit
    report = NegDRO(df, env="env", outcome="Y").diagnose(n_boot=0, n_perm=9, rng=0)
    rep = report.to_dict()
    json.dumps(rep, allow_nan=False)
    assert rep["margin_lcb"] is None and rep["perm_pvalue"] == report.perm_pvalue
    assert rep["condition_1b"] == report.condition_1b.to_dict()
