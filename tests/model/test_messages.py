"""Issue 41 item 3: inputs a newcomer gives get used or a message that names the cause
and the fix -- never a silently different model.  Each test failed on the code before."""

import warnings

import numpy as np
import pytest

from negdro_stats import DataError, DataWarning, IdentificationWarning, NegDRO, simulate
from negdro_stats.cli import main


@pytest.fixture(scope="module")
def arrays():
    df = simulate.eq33(p=5).sample(300, rng=0)
    X = df[[f"X{j}" for j in range(1, 6)]].to_numpy()
    return df, X, df["Y"].to_numpy(), df["env"].to_numpy()


def test_an_outcome_array_is_used(arrays):
    """NegDRO(X, env=..., outcome=y) regressed X's first column on the rest, dropping y
    without a word; now y is the outcome (the same fit as the frame's), and with a frame
    an array outcome is refused."""
    df, X, y, env = arrays
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # nothing to warn about
        res = NegDRO(X, env=env, outcome=y).fit(n_boot=0)
    frame = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    np.testing.assert_allclose(res.params.to_numpy(), frame.params.to_numpy(), rtol=1e-10)
    assert res.model.moments.names == ("x1", "x2", "x3", "x4", "x5")
    named = NegDRO(X, env=env, outcome=y, covariates=list("abcde"))
    assert named.moments.names == tuple("abcde")
    with pytest.raises(DataError, match=r"outcome is an array of shape \(299,\), data has 300"):
        NegDRO(X[:300], env=env[:300], outcome=y[:299])
    with pytest.raises(DataError, match="outcome= names a column of data"):
        NegDRO(df, env="env", outcome=y)


def test_an_array_without_outcome_says_which_column_is_the_outcome(arrays):
    """Column 0 is the outcome, as before, but it is said (a frame said it; an array did
    not), and outcome='name' names it."""
    _, X, y, env = arrays
    with pytest.warns(DataWarning, match="column 0 of the array is the outcome"):
        NegDRO(np.column_stack([y, X]), env=env)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = NegDRO(np.column_stack([y, X]), env=env, outcome="Yield")
    assert model.moments.outcome == "Yield"


def test_from_arrays_in_scikit_learns_order_is_told_the_order(arrays):
    _, X, y, env = arrays
    with pytest.raises(DataError, match=r"takes \(y, X, env\).*Swap them"):
        NegDRO.from_arrays(X, y, env)


def test_p_above_n_says_p_above_n():
    """60 covariates and 40 rows was reported as "collinear ... drop one" with 58 names."""
    rng = np.random.default_rng(0)
    with pytest.warns(DataWarning, match="no more rows"), pytest.raises(
            DataError, match=r"60 covariates but 40 rows \(p >= n\).*at most 39"):
        NegDRO(rng.normal(size=(40, 60)), env=np.repeat([0, 1], 20),
               outcome=rng.normal(size=40))


def test_alpha_given_to_fit_points_to_the_right_level(arrays):
    """fit(alpha=0.95) suggested test_level=0.95 (a level of 95%)."""
    df = arrays[0]
    model = NegDRO(df, env="env", outcome="Y")
    with pytest.raises(DataError, match=r"reads as a coverage: test_level=0.05\)") as info:
        model.fit(alpha=0.95)
    assert "test_level=0.95" not in str(info.value)


def test_a_formula_names_the_outcome_without_a_warning(arrays):
    """from_formula("Y ~ ...") warned that outcome= was not given."""
    df = arrays[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = NegDRO.from_formula("Y ~ 0 + X1 + X2 + X3", df, env="env")
    assert model.moments.outcome == "Y"


def test_the_help_ends_with_the_exit_codes(capsys):
    """negdro --help ended with a note on the module's size, meant for developers."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("interrupted (Ctrl-C)") and "module" not in out


def test_file_inputs_get_one_line_errors_or_the_right_answer(arrays, tmp_path, capsys):
    """From issue 41's list: a 20-digit env label (OverflowError), a gzipped CSV in the
    CLI (UnicodeDecodeError), --n-boot 1e10 (OverflowError), a comment line above the
    header ("header has 1"), --decimal ',' with ',' separator (exit 4 'not numeric'),
    repeated column names in a pyarrow Table (narwhals' DuplicateError) or a Parquet file
    (KeyError, a CLI traceback)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    df = arrays[0]
    big = df.assign(env=df["env"].map({e: str(10**19 + k) for k, e in
                                       enumerate(sorted(df["env"].unique()))}))
    big.to_csv(tmp_path / "big.csv", index=False)
    assert NegDRO.from_csv(tmp_path / "big.csv", "env", outcome="Y").moments.envs[0] == \
        "10000000000000000000"
    df.to_csv(tmp_path / "d.csv.gz", index=False)
    args = ["--env", "env", "--outcome", "Y", "--n-boot", "0"]
    assert main(["fit", str(tmp_path / "d.csv.gz"), *args]) == 0
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "d.csv.gz"), *args, "--n-boot", "10000000000"]) == 4
    assert "--n-boot must be an int in the range [0, 1e6]" in capsys.readouterr().err
    (tmp_path / "c.csv").write_text("# measured 2026\n" + df.to_csv(index=False))
    with pytest.raises(DataError, match="starts with a comment line"):
        NegDRO.from_csv(tmp_path / "c.csv", "env", outcome="Y")
    assert main(["fit", str(tmp_path / "c.csv"), *args]) == 3
    assert "starts with a comment line" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "d.csv.gz"), *args, "--decimal", ","]) == 2
    assert "is also the separator" in capsys.readouterr().err
    table = pa.table([df["Y"], df["X1"], df["X1"], df["env"]], names=["Y", "X1", "X1", "env"])
    with pytest.raises(DataError, match=r"duplicate column names \['X1'\]"):
        NegDRO(table, env="env", outcome="Y")
    pq.write_table(table, tmp_path / "dup.parquet")
    assert main(["fit", str(tmp_path / "dup.parquet"), *args]) == 4
    assert "duplicate column names ['X1']" in capsys.readouterr().err


def test_result_methods_refuse_what_does_not_apply(arrays):
    """conf_int(kind='robust', method='bca') was accepted without effect; RobustSet's
    contains/profile answered for a wrong-length vector or a NaN grid; a column name
    '<script>' stayed raw in summary().tables[1].as_html(); interventions=None was a
    bare TypeError."""
    from negdro_stats import LinearSEM

    df = arrays[0].rename(columns={"X2": "<script>x</script>"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    for kind in ("robust", "wald"):
        with pytest.raises(DataError, match="applies to kind='bootstrap' only"):
            res.conf_int(kind=kind, method="basic")
    rs = res.robust_set()
    with pytest.raises(DataError, match="b must hold 5 finite coefficients"):
        rs.contains([0.5, 0.0])
    with pytest.raises(DataError, match="values must be finite"):
        rs.profile("X1", [np.nan, np.inf])
    for table in res.summary().tables:
        assert "<script>" not in table.as_html() and "&lt;script&gt;" in table.as_html() \
            or "script" not in str(table)
    assert "<script>" in str(res.summary())                     # the text is as it is
    with pytest.raises(DataError, match="interventions must be a list"):
        LinearSEM.from_equations({"Y": {"X1": 1.0}}, covariates=["X1"], interventions=None)


def test_dask_parquet_designs_and_confounders(arrays, tmp_path):
    """NegDRO(dd.read_parquet(folder)) failed with "zip() argument 2 is shorter" (dask's
    planner fused the partitions of the labels alone differently); a design whose
    coefficients overflow exited 0 (then a 'Singular matrix' failure); confounders
    were a dict in Python but a list in plan files -- both forms are taken."""
    from negdro_stats import LinearSEM

    dd = pytest.importorskip("dask.dataframe")
    df = arrays[0]
    (tmp_path / "pq").mkdir()
    df.iloc[:600].to_parquet(tmp_path / "pq" / "a.parquet")
    df.iloc[600:].to_parquet(tmp_path / "pq" / "b.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lazy = NegDRO(dd.read_parquet(tmp_path / "pq"), env="env", outcome="Y").fit(n_boot=0)
        frame = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    np.testing.assert_allclose(lazy.params, frame.params, rtol=1e-6, atol=1e-9)
    with pytest.raises(DataError, match=r"total effects .* overflow"):
        LinearSEM.from_equations({"Y": {"X1": 1e200}, "X2": {"Y": 1e200}},
                                 covariates=["X1", "X2"], interventions=[{}, {"X1": 1.0}])
    plans = [LinearSEM.from_equations({"Y": {"X1": 1.0}}, covariates=["X1"],
                                      interventions=[{}, {"X1": 1.0}], confounders=c)
             for c in ({("X1", "Y"): 0.5}, [["X1", "Y", 0.5]])]
    np.testing.assert_array_equal(plans[0].moments().Sigma, plans[1].moments().Sigma)


def test_warnings_are_one_line_each_once_per_fit(arrays):
    """Issue 41 item 4: every README example emitted 2-5 warnings of 300-600 characters.
    On fits that warn for each reason (invariance rejected on Sachs, not identified with
    mean shifts only, an intercept left out, no convergence), each warning is one line
    of at most 250 characters, with the cause and what to do, and none repeats; the
    causes of doubt are one IdentificationWarning (Sachs gave two: the J test and
    Condition 1b)."""
    from negdro_stats.datasets import load_sachs

    df = arrays[0]
    sem = simulate.random_sem(8, n_envs=3, n_parents=2, n_children=2, shift="mean", rng=3)
    cells = load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True).drop(columns="condition")
    fits = [lambda: NegDRO(cells, env="env", outcome="Erk", fit_intercept=True).fit(n_boot=0),
            lambda: NegDRO(sem.sample(1000, rng=1), env="env", outcome="Y").fit(n_boot=0),
            lambda: NegDRO(df.assign(Y=df["Y"] + 3.0), env="env", outcome="Y").fit(n_boot=0),
            lambda: NegDRO(df, env="env", outcome="Y").fit(n_boot=0, refit="negdro",
                                                          max_iter=2)]
    seen = set()
    for fit in fits:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit()
        messages = [str(w.message) for w in caught]
        assert messages and len(set(messages)) == len(messages), messages
        assert sum(isinstance(w.message, IdentificationWarning) for w in caught) <= 1
        for message in messages:
            assert "\n" not in message and len(message) <= 250, message
        seen |= {type(w.message).__name__ for w in caught}
    assert {"IdentificationWarning", "DataWarning", "ConvergenceWarning"} <= seen


@pytest.mark.parametrize("blas_threads", [1, 2])
def test_an_exact_fit_is_reported_as_such(arrays, blas_threads):
    """Issue 41 item 7: where the covariates give the outcome exactly, every risk is 0 up
    to rounding; the equal-risk test rejected on that rounding (p = 0), so the verdict
    was "rejected" beside an exact fit.  Now: identified, the test at p = 1, and the
    robust intervals bounded around the estimate, their p-values agreeing (b = 0 is
    outside X1's interval and has a tiny p).  The invariance statistic is 0 where every
    risk is 0 (it was rounding over rounding there: X3's interval was NaN).  With one
    and with two BLAS threads (their rounding differs): the intervals' searches stepped
    by the rounding-level s.e. of an exact fit, and X1's was (-inf, 0.500009] with two
    threads at 1eeeec4."""
    from threadpoolctl import threadpool_limits

    df = arrays[0].assign(Y=lambda d: 0.5 * d["X1"] - 0.5 * d["X3"])
    with warnings.catch_warnings(), threadpool_limits(blas_threads, user_api="blas"):
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
        res.conf_int(kind="robust")                      # (computed under the limit)
    assert res.verdict == "identified" and res.invariance.pvalue == 1.0
    assert "WARNING" not in str(res.summary())
    ci = res.conf_int(kind="robust")
    assert ci.loc["X1", "lower"] <= 0.5 <= ci.loc["X1", "upper"] and ci.loc["X1", "lower"] > 0
    assert np.isfinite(ci.to_numpy()).all()            # every end (X3's was NaN until
    assert ((ci["lower"] <= res.params) & (res.params <= ci["upper"])).all()   # issue 42)
    assert res.robust_pvalues["X1"] < 1e-6 and res.robust_pvalues["X2"] > 0.05


@pytest.mark.parametrize("seed", [1, 3, 6])
def test_an_exact_fits_robust_intervals_are_bounded_on_other_samples(seed):
    """The same on other samples, under one and two BLAS threads: on these three an
    interval end of some coefficient was infinite at 40cdc8c.  Near an exact fit the
    profile statistic is 0 where a start puts every risk below ``EXACT_FIT`` and at its
    limit elsewhere; the near start missed points that the verification's every start
    found inside, and each of the endpoint search's rounds stopped short again (four
    rounds: infinite).  The rounds after the first now search from every start."""
    from threadpoolctl import threadpool_limits

    df = simulate.eq33(p=5).sample(300, rng=seed).assign(
        Y=lambda d: 0.5 * d["X1"] - 0.5 * d["X3"])
    for blas_threads in (1, 2):
        with warnings.catch_warnings(), threadpool_limits(blas_threads, user_api="blas"):
            warnings.simplefilter("ignore")
            res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
            ci = res.conf_int(kind="robust")
        assert np.isfinite(ci.to_numpy()).all(), (blas_threads, ci)
        assert ((ci["lower"] <= res.params) & (res.params <= ci["upper"])).all()
        assert ci.loc["X1", "lower"] <= 0.5 <= ci.loc["X1", "upper"]
        assert (ci["upper"] - ci["lower"]).max() < 1e-3
