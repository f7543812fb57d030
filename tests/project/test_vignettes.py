"""Every vignette runs top to bottom at its quick size (``--quick``) and writes its figures
outside the repository: into ./negdro_figures of the folder it runs in (which git
ignores), or where ``--out`` says; ``git status`` is the same after as before."""

import runpy
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
VIGNETTES = sorted((ROOT / "vignettes").glob("*.py"))


def _git_status() -> str | None:
    """Untracked and modified files of the checkout (None outside a git checkout)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    return subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"],
                          capture_output=True, text=True).stdout


@pytest.mark.smoke
@pytest.mark.parametrize("path", VIGNETTES, ids=lambda p: p.stem)
def test_vignette_quick(path, tmp_path, monkeypatch):
    """Run as ``python vignettes/NAME.py --quick`` from a scratch folder (quickstart with
    ``--out``)."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for variable in ("NEGDRO_QUICK", "NEGDRO_FIGURES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    out = ["--out", str(tmp_path / "chosen")] if path.stem == "quickstart" else []
    monkeypatch.setattr(sys, "argv", [str(path), "--quick", *out])
    before = _git_status()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ns = runpy.run_path(str(path), run_name="__main__")
    assert ns["QUICK"]
    figures = tmp_path / ("chosen" if out else "negdro_figures")
    assert list(figures.glob("*.png")), f"the vignette saved no figure in {figures}"
    assert _git_status() == before, "the vignette wrote into the repository"
    if path.stem == "quickstart":                  # NegDRO near beta* = (1, 0); OLS is not
        error = np.linalg.norm(ns["res"].params.to_numpy() - ns["sem"].beta_star)
        assert error < 0.15 and abs(ns["erm"].params.iloc[1]) > 0.2
    if path.stem == "sachs":                       # the bundled data, without env 6 (U0126)
        assert ns["data"].shape == (6667, 12) and 6 not in set(ns["data"]["env"])
    if path.stem == "design_experiment":
        assert ns["advice_4"].covariates == ("X3",) and ns["margins"]["limited"][0] <= 1e-7
    if path.stem == "robust_inference":            # bounded / whole line / empty
        sets = {name: res.robust_set() for name, res in ns["fits"].items()}
        assert sets["identified"].bounded.all() and not sets["identified"].empty
        assert not sets["not identified"].bounded.any()
        assert sets["invariance violated"].empty
