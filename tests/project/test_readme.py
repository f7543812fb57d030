"""The README runs as written: each of its Python blocks alone in a fresh interpreter, and
every ``negdro`` line of its command-line block on files of the shape that line names.
The two set-up blocks are what CI itself runs."""

import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from negdro_stats import cli, simulate

README = (Path(__file__).parents[2] / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_the_readme_has_the_blocks_this_test_runs():
    """Two set-up commands, the Python examples, one command-line block and the layout
    (``text``, nothing to run; a block added in another language would escape this
    test)."""
    assert len(_blocks("bash")) == 3 and len(_blocks("python")) >= 3
    assert len(_blocks("text")) == 1
    assert set(re.findall(r"```(\w*)\n.*?```", README, flags=re.S)) == {"bash", "python",
                                                                          "text"}
    setup = [block.strip() for block in _blocks("bash")[:2]]
    assert setup[0] == "pip install -e . && python -m negdro_stats demo"
    assert setup[1].endswith('python -m pytest -m "not slow"')


# The warnings a README block may give, by block: Sachs (the invariance model is
# rejected: what that block shows); the scikit-learn example's leave-one-environment-out
# folds fit on three of eq. (33)'s four environments, where Condition 1b fails;
# third-party deprecations are not ours.
README_WARNS = {2: ("negdro_stats.exceptions.IdentificationWarning",),
                3: ("negdro_stats.exceptions.IdentificationWarning", "builtins.FutureWarning",
                    "builtins.DeprecationWarning")}

# What a block's comments claim, checked in its namespace after it ran.
README_CLAIMS = {
    1: "import numpy as np, pathlib\n"
       "assert np.linalg.norm(res.params.to_numpy() - simulate.eq33(p=10).beta_star) < 0.05\n"
       "assert pathlib.Path('fit.pkl').exists() and res.bootstrap is not None",
    3: "assert len(cv['test_score']) == 4                  # one fold per environment",
    4: "assert not plan.check_identification().identified",
}

# Runs a block file alone: warnings are errors but for the block's own; then its claims.
RUNNER = """import importlib, runpy, sys, warnings
warnings.simplefilter("error")
for name in sys.argv[3:]:
    module, _, cls = name.rpartition(".")
    warnings.simplefilter("ignore", getattr(importlib.import_module(module), cls))
namespace = runpy.run_path(sys.argv[1], run_name="__main__")
exec(sys.argv[2], namespace)
"""


@pytest.mark.parametrize("k", range(1, len(_blocks("python")) + 1))
def test_each_python_block_runs_alone(k, tmp_path):
    """Each block in a fresh interpreter, as a reader pastes it into a new session: its
    own imports, save() into a scratch folder, figures to no screen; then a few of the
    claims its comments make."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    block = tmp_path / f"readme_block_{k}.py"
    block.write_text(_blocks("python")[k - 1])
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(block), README_CLAIMS.get(k, ""),
                           *README_WARNS.get(k, ())], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, f"README.md, Python block {k}:\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"README.md, Python block {k} prints nothing"


def _cli_lines() -> list[list[str]]:
    lines = [shlex.split(line, comments=True) for line in _blocks("bash")[2].splitlines()]
    return [words[1:] for words in lines if words and words[0] == "negdro"]


PLAN = """equations = {Y = {X1 = 1.0}, X2 = {Y = 1.0}}
interventions = [{}, {X1 = 1.0}]
"""


def test_every_command_line_runs(tmp_path, monkeypatch, capsys):
    """Every ``negdro`` line exits 0 on a CSV with the columns it names (written with the
    separator it passes), Parquet files under cells/ and a plan file."""
    pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)
    df = simulate.eq33(p=5).sample(300, rng=0)
    frame = pd.DataFrame({"site": df["env"], "y": df["Y"], "a": df["X1"], "b": df["X2"],
                          "c": df["X3"], "d": df["X4"]})
    Path("cells").mkdir()
    for k, part in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[part].rename(columns={"site": "plate"}).to_parquet(f"cells/{k}.parquet")
    Path("plan.toml").write_text(PLAN)
    lines = _cli_lines()
    assert len(lines) >= 6
    for argv in lines:
        sep = argv[argv.index("--sep") + 1] if "--sep" in argv else ","
        frame.to_csv("data.csv", index=False, sep=sep)
        frame.to_csv("data.csv.gz", index=False, sep=sep)      # (compression by suffix)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = cli.main(argv)
        out, err = capsys.readouterr()
        assert code == 0, (argv, err)
        assert out.strip(), argv
