"""The Sphinx docs build with warnings treated as errors."""

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.smoke
def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("pydata_sphinx_theme")
    docs = Path(__file__).resolve().parents[1] / "docs"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
                          "-q", str(docs), str(tmp_path / "html")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "html" / "api.html").exists()
