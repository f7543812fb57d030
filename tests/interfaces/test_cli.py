"""The command line ``negdro``: output of each command, JSON, and one-line errors with
distinct exit codes (see the module docstring of negdro_stats.cli)."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from negdro_stats import MultiEnvData, NegDRO, cli, simulate
from negdro_stats.cli import main
from negdro_stats.data.csv_file import HEADER_CHARS
from negdro_stats.exceptions import DataError, SolverError

COVARIATES = ["X1", "X2", "X3", "X4", "X5"]

# Condition 4 fails: X3, a child of Y, is never intervened on.
PLAN = {"equations": {"X2": {"X1": 1.0}, "Y": {"X2": 2.0}, "X3": {"X1": 0.5, "Y": -1.0}},
        "interventions": [{}, {"X1": 1.0, "X2": 1.0}], "covariates": ["X1", "X2", "X3"]}
PLAN_TOML = """\
covariates = ["X1", "X2", "X3"]
interventions = [{}, {X1 = 1.0, X2 = [0.5, 1.0]}]
envs = ["observational", "shifted"]

[equations]
X2 = {X1 = 1.0}
Y = {X2 = 2.0}
X3 = {X1 = 0.5, Y = -1.0}
"""


@pytest.fixture(scope="module")
def frame():
    return simulate.eq33(p=5).sample(500, rng=0)


@pytest.fixture(scope="module")
def csv(frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "data.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def nan_csv(frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "nan.csv"
    data = frame.copy()
    data.loc[[3, 700], "X2"] = np.nan
    data.to_csv(path, index=False)
    return str(path)


def run(capsys, *argv):
    """(exit code, stdout, stderr) of ``negdro argv`` run in-process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # DataWarning etc.; their format is tested below
        code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err, out=""):
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("negdro: error: "), err
    assert "Traceback" not in err and out == ""


# ------------------------------------------------------------------------ fit
def test_fit_text_has_the_coefficient_table(capsys, csv):
    code, out, err = run(capsys, "fit", csv, "--env", "env", "--outcome", "Y", "--n-boot", 0)
    assert code == 0 and err == ""
    assert "Dep. Variable:" in out and "coef" in out and "Verdict:" in out
    assert "\nX1 " in out and "Direct causes at FWER 0.05" in out


def test_fit_saves_what_it_prints(capsys, csv, tmp_path):
    """Issue 41 item 2, the CLI's part: fit --save writes the results, which load()
    reads back as the JSON printed beside them; an existing file is not replaced."""
    from negdro_stats import load

    path = tmp_path / "fit.pkl"
    args = ("fit", csv, "--env", "env", "--outcome", "Y", "--n-boot", 3, "--json", "--save")
    code, out, _ = run(capsys, *args, path)
    assert code == 0 and load(path).to_dict() == json.loads(out)
    code, out, err = run(capsys, *args, path)
    assert code == 4 and "exists; remove it or give --save another path" in err


@pytest.mark.parametrize("n_boot", [0, 5])
def test_fit_json(capsys, csv, frame, n_boot):
    code, out, _ = run(capsys, "fit", csv, "--env", "env", "--outcome", "Y", "--n-boot",
                       n_boot, "--seed", 1, "--json")
    assert code == 0
    assert "NaN" not in out and "Infinity" not in out
    res = json.loads(out)
    assert res["outcome"] == "Y" and res["covariates"] == COVARIATES
    assert list(res["params"]) == COVARIATES
    assert res["support"]["X1"] is True and res["support"]["X2"] is False
    assert set(res["conf_int"]) >= {"lower", "upper"}
    assert res["nobs"] == {"1": 500, "2": 500, "3": 500, "4": 500}
    assert set(res["weights"]) == set(res["risks"]) == {"1", "2", "3", "4"}
    api = NegDRO(frame, env="env", outcome="Y").fit(n_boot=0)   # the same fit in Python
    assert res["route"] == api.solver.refit
    np.testing.assert_allclose(list(res["params"].values()), api.params, rtol=1e-6)
    assert res["identification"]["condition"] == "1b"
    assert res["identification"]["holds"] is True
    assert res["settings"]["gamma"] == 20.0 and res["settings"]["refit"] == "auto"
    np.testing.assert_allclose(res["bse"]["X1"], api.bse["X1"], rtol=1e-6)   # analytic
    if n_boot == 0:
        assert all(v is None for v in res["boot_se"].values())
        assert all(v is None for v in res["support_freq"].values())
        assert res["conf_int"]["kind"] == "robust"
    else:
        assert res["boot_se"]["X1"] > 0 and res["support_freq"]["X1"] == 1.0
        assert res["conf_int"]["kind"] == "bootstrap"
        assert res["conf_int"]["lower"]["X1"] <= res["params"]["X1"]


@pytest.mark.parametrize("fmt, marker", [("latex", r"\begin{tabular}"),
                                         ("html", "<table")])
def test_fit_formats(capsys, csv, fmt, marker):
    code, out, _ = run(capsys, "fit", csv, "--env", "env", "--n-boot", 0, "--format", fmt)
    assert code == 0 and marker in out


def test_fit_options_reach_the_model(capsys, csv):
    code, out, _ = run(capsys, "fit", csv, "--env", "env", "--n-boot", 0, "--json",
                       "--covariates", "X1, X3", "--intercept", "--gamma", 5,
                       "--refit", "negdro", "--test-level", 0.1, "--alpha", 0.1)
    assert code == 0
    res = json.loads(out)
    assert list(res["params"]) == ["X1", "X3", "const"]
    assert res["route"] == "negdro"
    assert res["settings"]["gamma"] == 5.0 and res["settings"]["test_level"] == 0.1
    assert res["conf_int"]["alpha"] == 0.1


def test_fit_takes_rows_that_are_not_independent(capsys, tmp_path):
    """--cov-type HAC (with --maxlags) and cluster (with --groups, a column of labels that
    is never a covariate) reach fit(cov_type=, cov_kwds=); the flags are checked against
    each other before the data are read."""
    sem = simulate.random_sem(6, n_envs=3, rng=3)
    df = sem.sample(1000, rng=1, cluster_size=20, icc=0.5)
    df["cluster"] = "c" + df["cluster"].astype(str)
    path = tmp_path / "clusters.csv"
    df.to_csv(path, index=False)
    code, out, _ = run(capsys, "fit", path, "--env", "env", "--outcome", "Y", "--json",
                       "--cov-type", "cluster", "--groups", "cluster")
    res = json.loads(out)
    assert code == 0 and res["cov_type"] == "cluster" and "cluster" not in res["params"]
    assert list(res["params"]) == [f"X{j}" for j in range(1, 7)]
    code, out, _ = run(capsys, "fit", path, "--env", "env", "--outcome", "Y", "--json",
                       "--covariates", ",".join(f"X{j}" for j in range(1, 7)),
                       "--cov-type", "HAC", "--maxlags", 3)
    assert code == 0 and json.loads(out)["cov_type"] == "HAC"
    for flags, said in ((["--cov-type", "cluster"], "needs --groups"),
                        (["--groups", "cluster"], "--groups applies to --cov-type cluster"),
                        (["--maxlags", 2], "--maxlags applies to --cov-type HAC"),
                        (["--cov-type", "cluster", "--groups", "clustr"], "Did you mean")):
        code, out, err = run(capsys, "fit", path, "--env", "env", *flags)
        assert code == cli.EXIT_USAGE and said in err
        assert_one_line_error(err, out)


def test_fit_takes_the_experimenters_declarations(capsys, csv, frame):
    """``--not-descendants`` and each ``--targets ENV=A,B`` reach ``NegDRO``'s
    declarations (JSON ``declarations``); bad ones are one-line errors naming the flag."""
    env = str(frame["env"].unique()[1])
    code, out, _ = run(capsys, "fit", csv, "--env", "env", "--json", "--not-descendants",
                       "X1, X3", "--targets", f"{env}=X1", "--targets", f"{env}=X2")
    assert code == 0
    assert json.loads(out)["declarations"] == {"not_descendants": ["X1", "X3"],
                                               "targets": {env: ["X1", "X2"]}}
    for flags, needle in ((["--not-descendants", "X9"], "--not-descendants names 'X9'"),
                          (["--targets", "X1"], "--targets 'X1': give an environment"),
                          (["--targets", "nowhere=X1"], "--targets names the environment"),
                          (["--targets", f"{env}=X1,Z"], f"--targets {env}= names 'Z'")):
        code, out, err = run(capsys, "fit", csv, "--env", "env", *flags)
        assert code != 0 and needle in err, err
        assert_one_line_error(err, out)


def test_fit_missing_drop(capsys, nan_csv):
    code, out, _ = run(capsys, "fit", nan_csv, "--env", "env", "--n-boot", 0, "--json",
                       "--missing", "drop")
    assert code == 0
    assert sum(json.loads(out)["nobs"].values()) == 1998


# ------------------------------------------------------------------------ diagnose
def test_diagnose_text(capsys, csv):
    code, out, _ = run(capsys, "diagnose", csv, "--env", "env", "--n-boot", 9, "--n-perm", 9,
                       "--seed", 0)
    assert code == 0
    assert "Identification report" in out and "Verdict:" in out
    assert "9 label permutations" in out


def test_diagnose_json(capsys, csv):
    code, out, _ = run(capsys, "diagnose", csv, "--env", "env", "--n-boot", 9, "--n-perm", 9,
                       "--seed", 0, "--json")
    assert code == 0 and "NaN" not in out
    rep = json.loads(out)
    assert rep["condition_1b"]["holds"] is True and rep["condition_1b"]["margin"] > 0
    assert rep["margin_lcb"] > 0 and 0 < rep["perm_pvalue"] <= 1
    assert rep["invariance"]["df"] == 3 and rep["alpha"] == 0.05


def test_diagnose_json_without_resampling_has_nulls(capsys, csv):
    code, out, _ = run(capsys, "diagnose", csv, "--env", "env", "--n-boot", 0, "--n-perm", 0,
                       "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["margin_lcb"] is None and rep["perm_pvalue"] is None


# ------------------------------------------------------------------------ design
def test_design_json_plan_names_the_child_to_intervene_on(capsys, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(PLAN))
    code, out, err = run(capsys, "design", path)
    assert code == 0
    assert "Design check" in out and "Condition 4 (limited interventions) fails" in out
    assert "Advice: Add one environment that intervenes on ['X3']" in out
    assert "searching" in err


def test_design_toml_plan_as_json(capsys, tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(PLAN_TOML)
    code, out, _ = run(capsys, "design", path, "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["identified"] is False and rep["D"] == ["X3"] and rep["S_L"] == ["X1", "X2"]
    assert rep["conditions"]["4"]["holds"] is False
    assert set(rep["conditions"]["4"]["weights"]) == {"observational", "shifted"}
    assert rep["advice"]["covariates"] == ["X3"]


def test_design_identified_needs_no_advice(capsys, tmp_path):
    plan = dict(PLAN, interventions=[{}, {"X1": 1.0, "X2": 1.0, "X3": 1.0}])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    code, out, err = run(capsys, "design", path)
    assert code == 0 and "Verdict: beta* is identified" in out
    assert "Advice: None needed" in out and err == ""


def test_design_reads_the_declarations_against_the_plan(capsys, tmp_path):
    """``negdro design`` takes ``fit``'s declaration flags: X3, a child of Y, declared a
    non-descendant and a target of the environment that does not touch it, is named."""
    path = tmp_path / "plan.toml"
    path.write_text(PLAN_TOML)
    code, out, _ = run(capsys, "design", path, "--json", "--not-descendants", "X3",
                       "--targets", "shifted=X1,X3")
    assert code == 0
    said = json.loads(out)["on_declarations"]
    assert "Declared not descendants of Y, but descendants in this plan: X3." in said
    assert "Declared targets that this plan does not intervene on: X3 (shifted)." in said
    code, out, err = run(capsys, "design", path, "--targets", "nowhere=X1")
    assert code != 0 and "--targets names the environment" in err
    assert_one_line_error(err, out)


# ------------------------------------------------------------------------ errors
def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("case, code, needle", [
    ("missing file", 3, "no such file"),
    ("empty file", 3, "is empty"),
    ("header only", 3, "no data rows"),
    ("ragged row", 3, "line 4: 8 fields, but the header has 7"),
    ("ragged first row", 3, "line 2: 8 fields, but the header has 7"),
    ("wrong --env", 4, "--env 'site' is not a column"),
    ("wrong --outcome", 4, "--outcome 'y' is not a column"),
    ("unknown --covariates", 4, "unknown column(s) X9"),
    ("NaN rows", 4, "NaN"),                    # (the package's wording of these may change)
    ("blank env cells", 4, "missing"),
    ("env with a label per row", 4, "rows"),
    ("text covariate", 4, "site"),
    ("negative gamma", 4, "gamma"),
    ("gamma auto", 2, "give a number such as 20"),
    ("missing --env", 2, "--env"),
    ("bad --refit", 2, "--refit"),
    ("--json with --format", 2, "alternatives"),
])
def test_errors_are_one_line_with_distinct_codes(capsys, tmp_path, csv, nan_csv, frame,
                                                 case, code, needle):
    lines = open(csv).read().splitlines()
    blank_env = frame.copy().astype({"env": float})
    blank_env.loc[[5, 9], "env"] = np.nan
    blank_env.to_csv(tmp_path / "blank.csv", index=False)
    argv = {
        "missing file": ["fit", tmp_path / "nope.csv", "--env", "env"],
        "empty file": ["fit", _write(tmp_path, "e.csv", ""), "--env", "env"],
        "header only": ["fit", _write(tmp_path, "h.csv", lines[0] + "\n"), "--env", "env"],
        "ragged row": ["fit", _write(tmp_path, "r.csv", "\n".join(
            lines[:3] + [lines[3] + ",7"] + lines[4:])), "--env", "env"],
        "ragged first row": ["fit", _write(tmp_path, "r1.csv", "\n".join(
            lines[:1] + [lines[1] + ",7"] + lines[2:])), "--env", "env"],
        "wrong --env": ["fit", csv, "--env", "site"],
        "wrong --outcome": ["diagnose", csv, "--env", "env", "--outcome", "y"],
        "unknown --covariates": ["fit", csv, "--env", "env", "--covariates", "X1,X9"],
        "NaN rows": ["fit", nan_csv, "--env", "env", "--n-boot", 0],
        "blank env cells": ["fit", tmp_path / "blank.csv", "--env", "env"],
        "env with a label per row": ["fit", csv, "--env", "X1"],
        "text covariate": ["fit", _write(tmp_path, "t.csv", "\n".join(
            [lines[0] + ",site"] + [row + ",a" for row in lines[1:]])), "--env", "env"],
        "negative gamma": ["fit", csv, "--env", "env", "--gamma", -1],
        "gamma auto": ["fit", csv, "--env", "env", "--gamma", "auto"],
        "missing --env": ["fit", csv],
        "bad --refit": ["fit", csv, "--env", "env", "--refit", "ols"],
        "--json with --format": ["fit", csv, "--env", "env", "--json", "--format", "latex"],
    }[case]
    got, out, err = run(capsys, *argv)
    assert got == code
    assert_one_line_error(err, out)
    assert needle in err
    assert len(err) < 600                      # long lists (2000 env labels) are shortened


@pytest.mark.parametrize("name, text, code, needle", [
    ("typo.json", json.dumps({**PLAN, "intervention": []}), 4,
     "unknown key 'intervention'. Did you mean 'interventions'?"),
    ("short.json", json.dumps({"equations": PLAN["equations"]}), 4, "needs 'interventions'"),
    ("value.json", json.dumps({**PLAN, "interventions": [{}, {"X1": "big"}]}), 4,
     "interventions[1]['X1'] must be a variance or [mean, variance]"),
    ("outcome.json", json.dumps({**PLAN, "interventions": [{}, {"Y": 1.0}]}), 4,
     "'Y'"),
    ("cycle.json", json.dumps({**PLAN, "equations": {"Y": {"X1": 1}, "X1": {"Y": 1}},
                               "covariates": ["X1"], "interventions": [{}]}), 4, "cycle"),
    ("broken.json", '{"equations": {}, }', 3, "not valid JSON"),
    ("broken.toml", "equations = {X2 = {X1 = 1.0}\n", 3, "not valid TOML"),
    ("typo.toml", PLAN_TOML.replace("envs", "env_labels"), 4, "unknown key 'env_labels'"),
    ("plan.yaml", "equations: {}", 3, "a plan must be a .json or .toml file"),
])
def test_plan_errors(capsys, tmp_path, name, text, code, needle):
    got, out, err = run(capsys, "design", _write(tmp_path, name, text))
    assert got == code
    assert_one_line_error(err, out)
    assert needle in err


def test_numerical_failure_exits_5(capsys, csv, monkeypatch):
    def fail(self, **kwargs):
        raise SolverError("The identification SDP failed with CLARABEL and SCS.")

    monkeypatch.setattr(NegDRO, "fit", fail)
    code, out, err = run(capsys, "fit", csv, "--env", "env", "--outcome", "Y")
    assert code == 5
    assert_one_line_error(err, out)
    assert "numerical failure" in err


def test_help_lists_the_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "Exit status:" in out and "numerical failure" in out


HEAVY = ["cvxpy", "statsmodels", "pandas", "scipy", "sklearn", "matplotlib", "pyarrow",
         "negdro_stats.estimation", "negdro_stats.model", "negdro_stats.results"]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["design", "--help"],
                                  ["fit", "--help"]])
def test_help_imports_no_stage_it_does_not_need(argv):
    """``negdro --help`` reads only the parser: none of the heavy modules; ``fit --help``
    needs the estimation stage for its option names (the check sees it), not cvxpy or
    statsmodels.  (The start-up time saved is measured, not asserted.)"""
    code = ("import sys; from negdro_stats.cli import main; status = main(sys.argv[1:]); "
            f"print(status, *(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, timeout=120)
    status, *loaded = proc.stderr.split()
    assert proc.returncode == 0 and status == "0" and proc.stdout.strip(), proc.stderr
    if argv[0] == "fit":
        assert "negdro_stats.estimation" in loaded
        assert "cvxpy" not in loaded and "statsmodels" not in loaded, loaded
    else:
        assert loaded == [], loaded


def test_main_restores_the_warning_format(capsys, csv):
    before = warnings.formatwarning
    run(capsys, "fit", csv, "--env", "env", "--n-boot", 0)
    run(capsys, "fit", csv, "--env", "site")
    assert warnings.formatwarning is before


def test_module_entry_point_prints_one_line_warnings(nan_csv):
    """``python -m negdro_stats``: a package warning is one line ``negdro: warning: ...``."""
    proc = subprocess.run(
        [sys.executable, "-m", "negdro_stats", "fit", nan_csv, "--env", "env", "--outcome", "Y",
         "--n-boot", "0",
         "--missing", "drop"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("negdro: warning: ") and "2" in lines[0]
    assert "Dep. Variable:" in proc.stdout


def test_fit_reads_parquet_globs(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    df = simulate.eq33(p=5).sample(500, rng=0)
    df.iloc[:1000].to_parquet(tmp_path / "a.parquet")
    df.iloc[1000:].to_parquet(tmp_path / "b.parquet")
    code = main(["fit", str(tmp_path / "*.parquet"), "--env", "env", "--outcome", "Y",
                 "--n-boot", "5", "--seed", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and set(out["params"]) == {f"X{j}" for j in range(1, 6)}
    assert main(["fit", str(tmp_path / "none*.parquet"), "--env", "env"]) == 3


def test_default_outcome_is_announced_and_odd_inputs_are_named(tmp_path, capsys):
    df = simulate.eq33(p=5).sample(200, rng=0)
    path = tmp_path / "ylast.csv"
    df[["X1", "X2", "X3", "Y", "env"]].to_csv(path, index=False)
    assert main(["fit", str(path), "--env", "env", "--n-boot", "0"]) == 0
    err = capsys.readouterr().err
    assert "no --outcome given" in err and "'X1'" in err
    empty = tmp_path / "notparquet"
    empty.mkdir()
    (empty / "readme.txt").write_text("hello")
    assert main(["fit", str(empty), "--env", "env"]) == 3
    assert "without .parquet files" in capsys.readouterr().err
    blank = tmp_path / "blank.csv"
    df.assign(env=df.env.astype(object).where(df.index != 3, None)).to_csv(blank, index=False)
    assert main(["fit", str(blank), "--env", "env", "--missing", "drop"]) == 4
    assert "covers the outcome and covariates only" in capsys.readouterr().err


def test_separator_hint_and_nan_columns(tmp_path, capsys):
    """A ';' file gets a --sep hint (and reads with --sep ';'); NaN cells are counted by
    column in the error."""
    semi = tmp_path / "semi.csv"
    semi.write_text("Y;X1;env\n1;2;a\n2;3;b\n3;1;a\n4;2;b\n5;3;a\n6;1;b\n")
    assert main(["fit", str(semi), "--env", "env"]) == 3
    assert "--sep ';'" in capsys.readouterr().err
    assert main(["fit", str(semi), "--env", "env", "--sep", ";", "--n-boot", "0"]) == 0
    capsys.readouterr()
    na = tmp_path / "na.csv"
    na.write_text("Y,X1,X2,env\n1,n/a,1,a\n2,3,,b\n3,1,2,a\n4,2,NA,b\n5,1,1,a\n6,2,2,b\n")
    assert main(["fit", str(na), "--env", "env"]) == 4
    assert "by column: X1: 1, X2: 2" in capsys.readouterr().err


def test_decimal_commas(tmp_path, capsys):
    """A ';' file with decimal commas gets a --decimal hint, and reads with it."""
    path = tmp_path / "dec.csv"
    simulate.eq33(p=5).sample(50, rng=0).to_csv(path, sep=";", decimal=",", index=False)
    assert main(["fit", str(path), "--env", "env", "--outcome", "Y", "--sep", ";"]) == 3
    assert "--decimal ','" in capsys.readouterr().err
    assert main(["fit", str(path), "--env", "env", "--outcome", "Y", "--sep", ";",
                 "--decimal", ",", "--n-boot", "0"]) == 0


def test_design_plan_with_confounders(tmp_path, capsys):
    """A plan file declares hidden confounding as [name, name, correlation] triples (JSON
    and TOML have no tuple keys); a malformed triple is an input error."""
    plan = tmp_path / "plan.toml"
    plan.write_text('equations = { Y = { X1 = 1.0 }, X2 = { Y = 0.5 } }\n'
                    'interventions = [ {}, { X1 = 1.0, X2 = 1.0 } ]\n'
                    'confounders = [ ["X1", "Y", 0.5] ]\n')
    assert main(["design", str(plan), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["identified"] is True
    plan.write_text('equations = { Y = { X1 = 1.0 } }\ninterventions = [ {}, { X1 = 1.0 } ]\n'
                    'confounders = [ ["X1", "Y"] ]\n')
    assert main(["design", str(plan)]) == 4
    assert "[name, name, correlation] triples" in capsys.readouterr().err


def test_cli_header_short_rows_version_and_the_note(tmp_path, capsys):
    """A repeated header name was renamed 'X1.1' and fitted; a short row was a NaN error
    with exit 4; the note about the outcome came before errors; there was no --version."""
    from negdro_stats import __version__

    (tmp_path / "dup.csv").write_text("env,Y,X1,X1\n1,2,3,4\n1,2,3,5\n2,3,4,5\n2,1,2,3\n")
    assert main(["fit", str(tmp_path / "dup.csv"), "--env", "env", "--n-boot", "0"]) == 3
    assert "duplicate column names ['X1']" in capsys.readouterr().err
    (tmp_path / "short.csv").write_text("env,Y,X1\n1,2,3\n1,2\n2,3,4\n2,3,1\n")
    assert main(["fit", str(tmp_path / "short.csv"), "--env", "env", "--n-boot", "0"]) == 3
    assert "line 3: 2 fields, but the header has 3" in capsys.readouterr().err
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"negdro {__version__}"
    data = simulate.eq33(p=5).sample(300, rng=0)
    data.to_csv(tmp_path / "ok.csv", index=False)
    assert main(["fit", str(tmp_path / "ok.csv"), "--env", "env", "--n-boot", "0"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("negdro: note: no --outcome given; the outcome was 'Y', the first "
                       "column other than --env.")
    bad = data.assign(X1=np.nan)
    bad.to_csv(tmp_path / "bad.csv", index=False)
    assert main(["fit", str(tmp_path / "bad.csv"), "--env", "env", "--n-boot", "0"]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("negdro: error:")


def _defective_csv(kind: str, lines: list[str]) -> str:
    """The text of a CSV file with one defect of ``kind``; ``lines`` are a good file's."""
    late = len(lines) - 3
    return "\n".join({
        "long row late": lines[:late] + [lines[late] + ",1"] + lines[late + 1:],
        "short row late": lines[:late] + [lines[late].rsplit(",", 1)[0]] + lines[late + 1:],
        "long first row": [lines[0], lines[1] + ",1", *lines[2:]],
        "comment": ["# measured 2026", *lines],
        "';'-separated": [line.replace(",", ";") for line in lines],
        "decimal commas": [line.replace(",", ";").replace(".", ",") for line in lines],
        "written index": ["," + lines[0]] + [f"{k},{line}" for k, line in enumerate(lines[1:])],
        "NUL bytes": ["\x00" * 50],
        "no line break": ["1" * (HEADER_CHARS + 10)],
    }[kind]) + "\n"


@pytest.mark.parametrize("kind, needle", [
    ("long row late", "line 39: 5 fields, but the header has 4"),
    ("short row late", "line 39: 3 fields, but the header has 4"),
    ("long first row", "line 2: 5 fields, but the header has 4"),
    ("comment", "starts with a comment line"),
    ("';'-separated", "it looks ';'-separated; pass sep=';'"),
    ("decimal commas", "hold numbers with decimal commas (such as '1,5'); pass decimal=','"),
    ("written index", "column without a name (read as 'Unnamed: 0')"),
    ("NUL bytes", "not a text CSV file (it holds NUL bytes)"),
    ("no line break", "has no header line"),
])
def test_the_cli_and_the_library_refuse_a_csv_alike(capsys, tmp_path, kind, needle):
    """One reader: each defect is refused by NegDRO('x.csv') (read in chunks of 7 rows,
    so the defect is past the first) and by 'negdro fit' with the same message, the CLI's
    naming its options; the CLI exits 3 (its input)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["Y", "X1", "X2"])
    good = frame.assign(env=np.repeat(["a", "b"], 20)).to_csv(index=False).splitlines()
    path = _write(tmp_path, "d.csv", _defective_csv(kind, good))
    sep = ";" if kind == "decimal commas" else ","
    with pytest.raises(DataError) as library:
        MultiEnvData.from_csv(path, "env", outcome="Y", sep=sep, chunk_rows=7)
    assert needle in str(library.value)
    code, out, err = run(capsys, "fit", path, "--env", "env", "--outcome", "Y", "--sep", sep)
    assert code == 3
    assert_one_line_error(err, out)
    assert cli._cli_spelling(str(library.value)) in err


def test_the_cli_reads_other_encodings(capsys, tmp_path):
    rows = "".join(f"{city},{k % 3},{k % 5 + k % 2}\n"
                   for k, city in enumerate(["Zürich", "Bern"] * 20))
    path = tmp_path / "latin.csv"
    path.write_bytes(f"env,Y,X1\n{rows}".encode("latin-1"))
    code, out, err = run(capsys, "fit", path, "--env", "env", "--outcome", "Y")
    assert code == 3 and "--encoding with the file's encoding" in err
    code, out, err = run(capsys, "fit", path, "--env", "env", "--outcome", "Y", "--json",
                         "--encoding", "latin-1", "--n-boot", 0)
    assert code == 0 and json.loads(out)["nobs"] == {"Bern": 20, "Zürich": 20}


def test_fit_detail_prints_the_notes(capsys, csv):
    """--detail is summary(detail=True): the numbered notes the short summary points to."""
    code, out, err = run(capsys, "fit", csv, "--env", "env", "--outcome", "Y", "--detail")
    assert code == 0 and "[1] " in out and "summary(detail=True)" not in out
    code, out, err = run(capsys, "fit", csv, "--env", "env", "--outcome", "Y")
    assert code == 0 and "[1] " not in out and "summary(detail=True)" in out
