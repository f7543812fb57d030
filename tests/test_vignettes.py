"""Every vignette runs at its --quick size and writes its figures (smoke)."""

import importlib.util
import warnings
from pathlib import Path

import pytest

VIGNETTES = sorted((Path(__file__).resolve().parents[1] / "vignettes").glob("*.py"))


@pytest.mark.smoke
@pytest.mark.parametrize("path", VIGNETTES, ids=lambda p: p.stem)
def test_vignette_quick(path, tmp_path):
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = module.main(quick=True, outdir=tmp_path)
    if path.stem == "sachs" and out is None:
        pytest.skip("Sachs data folder absent")
    assert list(tmp_path.glob("*.png")), "the vignette saved no figure"
    if path.stem == "quickstart":                  # NegDRO near beta* = (1, 0); OLS is not
        assert out["error"] < 0.15 and abs(out["erm"][1]) > 0.2
    if path.stem == "design_experiment":
        assert out["advice_4"] == ("X3",) and out["margins"]["limited"][0] <= 1e-7
