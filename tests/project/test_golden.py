"""The estimator's outputs on 12 designs equal those recorded before the layout change
of issue 39 (``tests/golden/golden.py`` records and documents them), and results saved
by that code still load.

Here floats agree to 1e-9 (relative; the SDP margins to the solver's accuracy,
``golden.SDP_RTOL``) and supports and routes exactly, so that another CPU's BLAS
kernels cannot fail the test; ``NEGDRO_GOLDEN_EXACT=1`` (or ``python
tests/golden/golden.py check``) asks for equality to the last bit, which a refactor on
the recording machine must keep.
"""

import json
import os
import sys
import warnings

import numpy as np
import pytest

from negdro_stats import DataError, NegDROResults, load

from ..golden import golden
from ..helpers import needs

RESULTS = golden.PATH.parent


def test_outputs_equal_the_recorded_ones():
    rtol = 0.0 if os.environ.get("NEGDRO_GOLDEN_EXACT") == "1" else 1e-9
    diffs = golden.compare(golden.outputs(), json.loads(golden.PATH.read_text()), rtol=rtol)
    assert not diffs, "\n".join(diffs)


def test_the_comparison_sees_a_changed_bit():
    recorded = json.loads(golden.PATH.read_text())
    changed = json.loads(golden.PATH.read_text())
    changed["eq33"]["params"][0] = np.nextafter(changed["eq33"]["params"][0], 1.0)
    changed["eq33"]["ident_margin"] = np.nextafter(changed["eq33"]["ident_margin"], 1.0)
    changed["sachs"]["support"] = changed["sachs"]["support"][1:]
    changed["appendix_f2"]["ident_margin"] *= 1.0 + 1e-2      # beyond the SDP's tolerance
    assert len(golden.compare(changed, recorded)) == 4
    assert golden.compare(changed, recorded, rtol=1e-9) == [
        f"sachs.support: {changed['sachs']['support']} != {recorded['sachs']['support']}",
        f"appendix_f2.ident_margin: {changed['appendix_f2']['ident_margin']} != "
        f"{recorded['appendix_f2']['ident_margin']}"]


@needs("pyarrow")                  # (the files hold pandas' Arrow-backed text)
@pytest.mark.parametrize("name, record, key", [
    ("saved_before_issue39.pkl", "saved_before_issue39.json", ""),
    ("saved_before_issue39_deferred.pkl", "saved_before_issue39.json", "deferred_"),
    ("saved_by_0_2.pkl", "saved_by_0_2.json", "")])
def test_results_saved_by_earlier_versions_load(name, record, key):
    """Files saved by 0.1 (the flat layout: class paths such as ``negdro_stats.solvers``)
    and by 0.2 (``negdro_stats.estimation.options`` and the stage packages) load, and
    give the same estimate and bootstrap intervals (the deferred one runs now)."""
    want = json.loads((RESULTS / record).read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)      # no old path is used
        warnings.filterwarnings("ignore", "was saved by negdro_stats")
        res = load(RESULTS / name)
        assert isinstance(res, NegDROResults)
        np.testing.assert_allclose(res.params.to_numpy(), want[key + "params"], rtol=1e-12)
        np.testing.assert_allclose(res.conf_int(kind="bootstrap").to_numpy().ravel(),
                                   want[key + "boot"], rtol=1e-9)
        # the equal-risk test saved before its tolerance was kept: unknown, not 0
        assert "Risks within: n/a" in " ".join(str(res.summary()).split())
        assert res.to_dict()["invariance"]["delta"] is None


def test_without_an_optional_package_a_saved_file_says_what_to_install(monkeypatch):
    """A file whose text columns pandas stored with pyarrow, loaded where pyarrow is
    missing: not "not a file saved by negdro_stats", but which package to install."""
    for name in ("pyarrow", "pyarrow.lib"):
        monkeypatch.setitem(sys.modules, name, None)           # (import raises)
    with pytest.raises(DataError, match="holds values stored by pyarrow, which is not "
                                        "installed here: pip install pyarrow"):
        load(RESULTS / "saved_by_0_2.pkl")
