"""Every vignette runs top to bottom at its quick size (NEGDRO_QUICK=1) and writes its
figures into a temporary folder (NEGDRO_FIGURES), never over the committed ones."""

import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest

VIGNETTES = sorted((Path(__file__).resolve().parents[2] / "vignettes").glob("*.py"))


@pytest.mark.smoke
@pytest.mark.parametrize("path", VIGNETTES, ids=lambda p: p.stem)
def test_vignette_quick(path, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("NEGDRO_QUICK", "1")
    monkeypatch.setenv("NEGDRO_FIGURES", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ns = runpy.run_path(str(path), run_name="__main__")
    assert list(tmp_path.glob("*.png")), "the vignette saved no figure"
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
