"""The Sphinx docs build with warnings treated as errors, with every public name in the API
reference and every vignette executed with its figures, without writing into the
repository; the snippets of the "coming from" page run."""

import doctest
import html as html_module
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import negdro_stats
from negdro_stats import NegDRO, fit_baseline, simulate

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
VIGNETTES = sorted((ROOT / "vignettes").glob("*.py"))


def _git_status():
    """Untracked and modified files of the checkout (None outside a git checkout)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    return subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"],
                          capture_output=True, text=True).stdout


def html_text(page):
    """The text of an HTML page (highlighted code is split into spans)."""
    return html_module.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    for module in ("sphinx", "numpydoc", "pydata_sphinx_theme", "myst_nb", "jupytext",
                   "ipykernel", "matplotlib"):
        pytest.importorskip(module)
    out = tmp_path_factory.mktemp("docs") / "html"
    before = _git_status()
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
                          "-q", str(DOCS), str(out)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _git_status() == before, "the docs build wrote into the repository"
    return out


@pytest.mark.smoke
def test_api_reference_documents_every_public_name(html):
    """A name is documented under its own path, or a module under the path it lives at
    (``negdro_stats.simulate`` is ``negdro_stats.planning.simulate``)."""
    ids = set(re.findall(r'id="([^"]+)"', (html / "api.html").read_text()))
    missing = [name for name in negdro_stats.__all__
               if f"negdro_stats.{name}" not in ids and f"module-negdro_stats.{name}" not in ids
               and f"module-{getattr(getattr(negdro_stats, name), '__name__', '')}" not in ids]
    assert not missing, f"add to docs/api.rst: {missing}"


@pytest.mark.smoke
@pytest.mark.parametrize("path", VIGNETTES, ids=lambda p: p.stem)
def test_vignette_page_shows_its_figures_or_why_it_stopped(html, path):
    page = (html / "vignettes" / f"{path.stem}.html").read_text()
    images = re.findall(r'<img[^>]*src="([^"]+)"', page)
    stopped = "SystemExit: " in html_text(page)
    assert images or stopped, f"{path.name}: no figure on its page"
    for src in images:
        assert (html / "vignettes" / src).resolve().is_file(), src


@pytest.mark.parametrize("page", sorted(page.name for page in DOCS.glob("*.rst")
                                         if ">>>" in page.read_text()))
def test_doc_page_snippets_run(page):
    """Every page with ``>>>`` examples runs them as doctests (the other Python blocks:
    ``test_doc_examples.py``)."""
    failed, attempted = doctest.testfile(
        str(DOCS / page), module_relative=False, report=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert attempted > 0 and failed == 0, f"{page}: {failed} of {attempted} examples failed"


def test_anchor_regression_is_ivmodels_kclass():
    """What the "coming from" page says: ivmodels' k-class estimator with
    kappa = (gamma - 1) / gamma, the environment indicators as instruments and no
    intercept is ``fit_baseline("anchor", gamma=gamma)``."""
    kclass = pytest.importorskip("ivmodels.models.kclass")
    df = simulate.eq33(p=5).sample(300, rng=1)
    X, y = df.drop(columns=["Y", "env"]), df["Y"]
    Z = pd.get_dummies(df["env"], dtype=float)
    for gamma in (2.0, 5.0):
        theirs = kclass.KClass(kappa=(gamma - 1) / gamma, fit_intercept=False).fit(X, y, Z=Z)
        ours = fit_baseline("anchor", NegDRO(df, env="env", outcome="Y").moments, gamma=gamma)
        np.testing.assert_allclose(ours.params, theirs.coef_, rtol=1e-8, atol=1e-10)
