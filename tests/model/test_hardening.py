"""Regression tests of the hardening issue: labels that match their numbers, messages that
point at something that runs, silent defaults made loud."""

import warnings

import numpy as np
import pandas as pd
import pytest

from negdro_stats import (
    DataError,
    DataWarning,
    IdentificationWarning,
    LinearSEM,
    NegDRO,
    SelectionWarning,
    simulate,
)
from negdro_stats.data.container import MultiEnvData
from negdro_stats.planning import plan_sample_size
from negdro_stats.results.tables import fmt_num as _num


@pytest.fixture(scope="module")
def df():
    return simulate.eq33(p=5).sample(1000, rng=3)


def test_numbers_are_formatted_by_magnitude():
    assert _num(5e-6) == "5.0000e-06" and _num(0.0) == "0" and _num(-0.5) == "-0.5000"
    assert _num(1.234e150) == "1.2340e+150" and _num(np.nan) == "nan"


def test_summary_prints_tiny_and_huge_coefficients_readably(df):
    scaled = df.assign(X1=df.X1 * 1e-7, X3=df.X3 * 1e9)
    text = str(NegDRO(scaled, env="env", outcome="Y").fit(n_boot=10, rng=0).summary())
    assert "e+06" in text and "e-10" in text              # 0.5e7 and -0.5e-9: not 0.0000
    numbers = [tok for tok in text.split() if tok.strip("=-")]
    assert max(len(tok) for tok in numbers) < 40           # no 150-digit interval bounds


def test_verdict_line_on_top_when_identification_fails():
    """Mean shifts only: Conditions 1b, 4 and 6 fail, and the summary opens with the
    WARNING line (text and HTML); an identified fit's does not."""
    sem = simulate.random_sem(8, n_envs=4, n_parents=2, n_children=2, shift="mean", rng=3)
    data = sem.sample(2000, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentificationWarning)
        res = NegDRO(data, env="env", outcome="Y").fit(n_boot=0)
    assert not res.identification.holds and res.verdict == "not identified"
    first = str(res.summary()).splitlines()[0]
    assert first.startswith("WARNING: not identified: ")              # the verdict's reason first
    assert str(res.summary(detail=True)).startswith("WARNING: NOT IDENTIFIED: ")
    assert res.summary().as_html().startswith("<p><b>WARNING")
    ok = NegDRO(simulate.eq33(p=5).sample(2000, rng=0), env="env", outcome="Y").fit(n_boot=0)
    assert not str(ok.summary()).startswith("WARNING")


def test_an_exact_fit_has_zero_standard_errors_not_nan():
    """A covariate that copies the outcome: every residual is 0, the sandwich is 0 up to
    rounding (s.e. ~ 1e-9, the square root of 1e-18), and a rounding error's negative
    variance must not become a NaN s.e. (the fuzz test's seed 4910 found it; seeds 0..29
    here hit it twice before the mend)."""
    for seed in range(30):
        rng = np.random.default_rng(seed)
        env = np.repeat(np.arange(4), 12)
        y = rng.normal(size=48) * (1 + env)
        df = pd.DataFrame({"Y": y, "X1": rng.normal(size=48), "env": env, "Xc": 2 * y})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            se = res.bse[["Xc", "const"]]
            str(res.summary())
        assert res.params["Xc"] == pytest.approx(0.5) and (se >= 0).all() and (se < 1e-6).all()


def test_standard_errors_follow_a_covariate_rescaled_by_1e7():
    """The exact-fit mend first rebuilt every covariance from its clipped eigenvalues,
    which lost the variance of a coefficient on a small scale (a covariate times 1e7:
    its s.e. 3.8% low; the review of issue 42's session).  Now only the square root
    sees a clamped diagonal, and the standard errors follow the rescaling."""
    df = simulate.eq33(p=5).sample(2000, rng=0)
    plain = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0).bse
    scaled = NegDRO(df.assign(X3=df.X3 * 1e7), env="env", outcome="Y",
                    fit_intercept=True).fit(n_boot=0).bse
    assert scaled["X3"] * 1e7 == pytest.approx(plain["X3"], rel=1e-6)
    assert scaled["const"] == pytest.approx(plain["const"], rel=1e-6)


def test_moment_models_are_not_sent_to_diagnose():
    sem = simulate.random_sem(8, n_envs=4, n_parents=2, n_children=2, shift="mean", rng=3)
    with pytest.warns(IdentificationWarning, match="check_identification") as record:
        res = NegDRO.from_moments(sem.moments()).fit()
    assert not any("NegDRO.diagnose()" in str(w.message) for w in record)
    assert "check_identification" in str(res.summary(detail=True))


def test_empty_support_is_said(df):
    with pytest.warns(SelectionWarning, match="threshold c0 = 5"):
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0, threshold=5.0, refit="negdro")
    assert (res.params == 0).all()


def test_wrong_env_column_gives_a_short_message(df):
    with pytest.raises(DataError) as err:
        NegDRO(df.drop(columns="env"), env=np.arange(len(df)), outcome="Y")
    assert len(str(err.value)) < 300 and "Is env the column" in str(err.value)


def test_string_fit_intercept_is_refused(df):
    with pytest.raises(TypeError, match="'fit_intercept' parameter of NegDRO"):
        NegDRO(df, env="env", outcome="Y", fit_intercept="no")


def test_misspelt_intervention_is_refused():
    with pytest.raises(DataError, match="Did you mean 'PKC'"):
        LinearSEM.from_equations({"Y": {"PKC": 1.0}}, interventions=[{}, {"PKc": 2.0}])
    sem = LinearSEM.from_equations({"Y": {"X1": 1.0}}, interventions=[{}, {"X1": 2.0}])
    with pytest.raises(DataError, match="env_column='Y'"):
        sem.sample(10, rng=0, env_column="Y")


def test_complex_columns_are_refused(df):
    with pytest.raises(DataError, match="not numeric"):
        NegDRO(df.assign(X2=df.X2 + 1j), env="env", outcome="Y")


def test_csv_defects_are_errors(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("Y,X1,env\n1,2,a\n2,3,\n3,1,b\n4,2,b\n")
    with pytest.raises(DataError, match="blank 'env' cell"):
        MultiEnvData.from_csv(path, "env")
    path.write_text("Y,X1,env\n1,2,a\n2,3,a,7\n3,1,b\n4,2,b\n")
    with pytest.raises(DataError, match="line 3: 4 fields, but the header has 3"):
        MultiEnvData.from_csv(path, "env")
    path.write_text("Y,X1,env\n1,2,a\n2,3,a\n3,1,b\n4,2,b\n")
    with pytest.raises(DataError, match="include the outcome"):
        MultiEnvData.from_csv(path, "env", outcome="Y", covariates=["X1", "Y"])
    assert MultiEnvData.from_csv(path, "env", blocks=2).moments.n.tolist() == [2, 2]


def test_path_and_diagnose_arguments(df):
    model = NegDRO(df, env="env", outcome="Y")
    assert len(model.fit_path(5.0).gammas) == 1                # a scalar is a one-point grid
    with pytest.raises(DataError, match="gammas must be numbers"):
        model.fit_path("a")
    other = NegDRO(df[["Y", "X1", "X2", "env"]], env="env").fit(n_boot=0)
    with pytest.raises(DataError, match="this model's fit"):
        model.diagnose(results=other, n_boot=0, n_perm=0)
    with pytest.raises(DataError, match="env='nope' is not a column"):
        NegDRO.from_formula("Y ~ X1", df, "nope")


def test_simplex_projection_of_huge_and_infinite_risks():
    from negdro_stats.estimation.objective import project_simplex

    np.testing.assert_allclose(project_simplex(np.array([1e17, 0.0, -3.0])), [1, 0, 0])
    np.testing.assert_allclose(project_simplex(np.array([np.inf, 1.0, np.inf])), [0.5, 0, 0.5])
    assert np.isnan(project_simplex(np.array([np.nan, 1.0]))).all()


def test_permutation_test_is_named_for_the_margin(df):
    report = NegDRO(df, env="env", outcome="Y").diagnose(n_boot=0, n_perm=9, rng=0)
    text = " ".join(str(report).split())
    assert (f"Permutation test of the margin against exchangeable labels (9 label "
            f"permutations): p = {report.perm_pvalue:.3g}") in text
    k = report.perm_pvalue * (report.n_perm + 1)   # (1 + #{permuted >= observed}) / 10
    assert report.n_perm == 9 and 1 <= round(k) <= 10 and abs(k - round(k)) < 1e-9


def test_extreme_scales_are_refused_not_nan(df):
    """Found by the 20,000-input fuzz run: a column times 1e150 with an intercept gave a NaN
    intercept without an error (its second moments overflow in products)."""
    for factor in (1e150, 1e-150):
        with pytest.raises(DataError, match="rescale"):
            NegDRO(df.assign(X2=df.X2 * factor), env="env", outcome="Y", fit_intercept=True)


def test_environment_level_columns_and_one_covariate_name():
    """A covariate with one value per environment (a site's size; the env column left in
    the frame when env is given as an array) is named as environment-level, not
    'constant'; covariates='X1' means one covariate, not the characters 'X' and '1'."""
    df = simulate.eq33(p=5).sample(300, rng=0)
    sized = df.assign(site_size=df["env"].map({1: 10.0, 2: 20.0, 3: 15.0, 4: 30.0}))
    with pytest.raises(DataError, match=r"\['site_size'\] take one value per environment"):
        NegDRO(sized, env="env", outcome="Y")
    with pytest.raises(DataError, match=r"\['env'\] take one value per environment.*env="):
        NegDRO(df, env=df["env"].to_numpy(), outcome="Y")
    with pytest.raises(DataError, match=r"\['c'\] are constant"):
        NegDRO(df.assign(c=1.0), env="env", outcome="Y")
    model = NegDRO(df, env="env", outcome="Y", covariates="X1")
    assert model.exog_names == ["X1"]


def test_predict_and_plot_inputs_get_clear_errors():
    """predict takes a dict of columns; text columns, odd objects and a beta_star of the
    wrong length are DataErrors naming the problem (were raw numpy errors); an
    intercept model's plot takes the covariates' beta*."""
    pytest.importorskip("matplotlib").use("Agg")
    df = simulate.eq33(p=5).sample(300, rng=0)
    X = df.drop(columns=["Y", "env"])
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    pd.testing.assert_series_equal(res.predict({c: X[c] for c in X}), res.predict(X))
    with pytest.raises(DataError, match=r"columns \['X2'\] are not numeric"):
        res.predict(X.assign(X2="a"))
    with pytest.raises(DataError, match="exog must be a DataFrame"):
        res.predict(object())
    with pytest.raises(DataError, match="beta_star has 3 values; the model has 5"):
        res.plot_coefficients(beta_star=[0.5, 0.0, -0.5])
    with_const = NegDRO(df, env="env", outcome="Y", fit_intercept=True).fit(n_boot=0)
    with_const.plot_coefficients(beta_star=simulate.eq33(p=5).beta_star)
    with pytest.raises(DataError, match=r"is a variance >= 0 or a \(mean, variance\) pair"):
        LinearSEM.from_equations({"Y": {"X1": 1.0}}, interventions=[{}, {"X1": (1, 2, 3)}])
    pair = LinearSEM.from_equations({"Y": {"X1": 1.0}}, interventions=[{}, {"X1": [1.0, 2.0]}])
    assert pair.moments().mean_x[1, 0] == 1.0


def test_verbose_is_a_switch():
    """verbose takes True/False/None (and 0/1, as scikit-learn users write it); anything
    else is a TypeError naming it instead of a silently shown or hidden bar."""
    from negdro_stats._validation import progress

    items = [1, 2, 3]
    assert progress(items, False, "x") is items and progress(items, 0, "x") is items
    with pytest.raises(TypeError, match="verbose must be True, False or None"):
        progress(items, "yes", "x")


def test_progress_bars_show_in_notebooks_after_two_seconds(monkeypatch):
    """The default bar (verbose=None) shows in a Jupyter kernel too (stderr is not a
    terminal there), through tqdm.auto, and only once the work has taken 2 s; an asked-for
    bar shows at once; outside a terminal or notebook there is none."""
    import sys
    import types

    from negdro_stats import _validation

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    items = [1, 2, 3]
    assert _validation.progress(items, None, "x") is items
    kernel = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: kernel))
    assert _validation.in_notebook()
    bar = _validation.progress(items, None, "x")
    assert bar.delay == _validation.PROGRESS_DELAY == 2.0 and list(bar) == items
    assert _validation.progress(items, True, "x").delay == 0


LONG_CALLS = {   # call(data, verbose) on eq. (33) data -> the start of its one log line
    "plan": (lambda df, verbose: plan_sample_size(
        simulate.example3("strong"), [100, 200], reps=2, rng=0, verbose=verbose),
        "plan_sample_size: 4 fits of NegDRO (2 n x 2 replicates, 1 worker): 1 of 4 "),
    "bootstrap": (lambda df, verbose: NegDRO(df, env="env", outcome="Y").fit(
        n_boot=3, rng=0, verbose=verbose),
        "bootstrap: 3 refits of the estimator: 1 of 3 "),
    "diagnose": (lambda df, verbose: NegDRO(df, env="env", outcome="Y").diagnose(
        n_boot=2, n_perm=2, rng=0, verbose=verbose),
        "diagnose: 2 resamples and 2 permutations of the margin: 1 of 4 "),
    "loeo": (lambda df, verbose: NegDRO(df, env="env", outcome="Y").validate_loeo(
        verbose=verbose),
        "validate_loeo: 4 folds, each refitting every method: 1 of 4 "),
}


@pytest.mark.parametrize("call", sorted(LONG_CALLS))
def test_a_long_call_in_a_script_logs_what_it_runs_and_how_long_it_takes(
        call, monkeypatch, caplog):
    """Without a terminal (stderr a file) and ``verbose`` unset, each long call says in
    one INFO line (logger ``negdro_stats``) what it runs, how far it is and how long it
    should take, once the work has taken ``PROGRESS_DELAY`` (here 0 s); ``verbose=False``
    says nothing, and nothing reaches stderr."""
    import io
    import logging
    import sys

    from negdro_stats import _validation

    run, start = LONG_CALLS[call]
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.setattr(_validation, "PROGRESS_DELAY", 0.0)
    monkeypatch.setenv("NEGDRO_N_JOBS", "1")
    df = simulate.eq33(p=5).sample(300, rng=0)
    said = {}
    for verbose in (None, False):
        with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="negdro_stats"):
            warnings.simplefilter("ignore")
            run(df, verbose)
            said[verbose] = [r.getMessage() for r in caplog.records]
            caplog.clear()
    assert len(said[None]) == 1 and said[False] == [], said
    assert said[None][0].startswith(start) and said[None][0].endswith(" s in all.")
    assert sys.stderr.getvalue() == ""


def test_messages_say_what_is_wrong_in_the_users_words():
    """A scalar env, a bool column and environments no larger than p get messages that
    name the problem and the fix (env=5 was "1 labels in shape ()", a bool column got the
    dummies advice, "Environments 4 have fewer rows" read as a count, and an environment
    with exactly p rows got no warning)."""
    df = simulate.eq33(p=5).sample(50, rng=0)
    with pytest.raises(DataError, match=r"env=5 is neither a column name nor one label"):
        NegDRO(df, env=5, outcome="Y")
    with pytest.raises(DataError, match=r"\['B'\] of data are True/False.*astype\(\{'B': int"):
        NegDRO(df.assign(B=df.X1 > 0), env="env", outcome="Y")
    five = pd.concat([df[df.env != 4], df[df.env == 4].iloc[:5]])
    with pytest.warns(DataWarning, match=r"^Environment 4 \(5 rows\) has no more rows than"):
        NegDRO(five, env="env", outcome="Y")
    two = pd.concat([df[df.env < 3], df[df.env == 3].iloc[:4], df[df.env == 4].iloc[:5]])
    with pytest.warns(DataWarning, match=r"^Environments 3 \(4 rows\), 4 \(5 rows\) have"):
        NegDRO(two, env="env", outcome="Y")


def test_unsafe_or_bare_inputs_get_typed_errors_or_answers(tmp_path):
    """From the adversarial hunt: population moments' to_dict() (int(inf)), repeated
    names or labels in moments, a Series given to RobustSet.contains (read by position),
    covariates=1.0, blocks=2**70, save('') / a NUL / a folder, a coefficient [1.0]."""
    import json
    from dataclasses import replace

    from negdro_stats import LinearSEM

    sem = simulate.eq33(p=5)
    out = NegDRO.from_moments(sem.moments()).fit().to_dict()
    assert set(out["nobs"].values()) == {"Infinity"}
    assert json.loads(json.dumps(out, allow_nan=False))["params"]["X1"] == pytest.approx(0.5)
    for field, value, what in (("names", ("X1", "X1", "X3", "X4", "X5"), "covariate names"),
                               ("envs", (1, 1, 2, 3), "environment labels")):
        with pytest.raises(DataError, match=f"repeat the {what}"):
            NegDRO.from_moments(replace(sem.moments(), **{field: value}))
    df = sem.sample(300, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
        robust = res.robust_set()
        assert robust.contains(res.params) and robust.contains(res.params[::-1])
        assert not robust.contains(res.params[::-1].to_numpy())      # (by position)
        with pytest.raises(DataError, match="must name exactly the covariates"):
            robust.contains(res.params.drop("X2"))
    with pytest.raises(DataError, match="covariates must be a column name or a list"):
        NegDRO(df, env="env", outcome="Y", covariates=1.0)
    with pytest.raises(ValueError, match=r"'blocks' parameter of NegDRO must be an int in "
                                         r"the range \[2, 1e9\]"):
        NegDRO(df, env="env", outcome="Y", blocks=2**70)
    for path in ("", "a\x00b.pkl", str(tmp_path) + "/", str(tmp_path)):
        with pytest.raises(DataError, match="is not a file name"):
            res.save(path)
    for coef in ([1.0], "a", float("nan")):
        with pytest.raises(DataError, match="must be a finite number"):
            LinearSEM.from_equations({"Y": {"X1": coef}}, interventions=[{}, {"X1": 1.0}])


def test_json_keeps_unbounded_apart_from_undefined():
    from negdro_stats._json import jsonable

    assert jsonable([float("inf"), -np.inf, float("nan"), 1.5]) == [
        "Infinity", "-Infinity", None, 1.5]
    assert [float(x) for x in jsonable([np.inf, -np.inf])] == [np.inf, -np.inf]


def test_diagnose_refuses_a_level_above_one_half_and_a_single_permutation(capsys, tmp_path):
    """diagnose --alpha 0.7 and --n-perm 1 exited 0 with a bound above the estimate and a
    test that cannot reject."""
    from negdro_stats.cli import main

    df = simulate.eq33(p=5).sample(100, rng=0)
    model = NegDRO(df, env="env", outcome="Y")
    with pytest.raises(ValueError, match=r"'alpha' parameter of NegDRO.diagnose must be a "
                                         r"float in the range \(0, 0.5\]"):
        model.diagnose(alpha=0.7)
    with pytest.raises(ValueError, match="'n_perm' parameter of NegDRO.diagnose must be 0"):
        model.diagnose(n_perm=1)
    df.to_csv(tmp_path / "d.csv", index=False)
    for flags in (["--alpha", "0.7"], ["--n-perm", "1"]):
        assert main(["diagnose", str(tmp_path / "d.csv"), "--env", "env", *flags]) == 4
        assert capsys.readouterr().err.startswith("negdro: error:")


@pytest.mark.parametrize("seed", [3, 21, 50, 56])
def test_environments_with_fewer_rows_than_covariates_fit(seed):
    """4 environments x 2 rows, p = 5: numpy's bare 'Singular matrix' came out of the
    rank test's weights (a Cholesky factor existed where LU met an exact zero pivot)."""
    df = simulate.eq33(p=5).sample(2, rng=seed)
    df = df[df["env"].isin(sorted(df["env"].unique())[:4])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert np.isfinite(res.params.to_numpy()).all()
    assert res.verdict in ("not identified", "rejected")        # 8 rows cannot identify
