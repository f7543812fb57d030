"""Sphinx configuration for negdro_stats."""

import os
import sys
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

sys.path.insert(0, os.path.abspath(".."))
sys.path.insert(0, os.path.abspath("_ext"))

from negdro_stats._version import __version__  # noqa: E402  (the one home of the version)

project = "negdro_stats"
author = "negdro_stats developers"
release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"members": True, "undoc-members": False}
html_theme = "pydata_sphinx_theme"
html_title = "negdro_stats"
include_patterns = ["*.rst", "vignettes/*.py"]
exclude_patterns = ["_build"]
suppress_warnings = ["autosummary.import_cycle"]
nitpicky = False

# Docstrings write set sizes as |E|, |F|, |S| (the paper's notation); keep them literal.
rst_prolog = "\n".join(f".. |{x}| replace:: \\|{x}\\|" for x in "EFS")

# The vignettes (docs/vignettes is a link to ../vignettes): jupytext percent scripts,
# read as notebooks and executed at their quick sizes on every build.  A vignette that
# stops (sys.exit, e.g. without its data) renders up to the stop, with its message; any
# other error is a warning (an error under -W) from _check_vignette_outputs, which
# replaces myst-nb's warning for both.
nb_custom_formats = {".py": "vignette_reader.read_vignette"}
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_merge_streams = True
suppress_warnings.append("mystnb.exec")


def _vignette_environment(app):
    """Quick sizes (unless NEGDRO_QUICK is set), figures saved into the build folder
    (never the repository) and shown inline by the kernels."""
    os.environ.setdefault("NEGDRO_QUICK", "1")
    os.environ["NEGDRO_FIGURES"] = str(Path(app.doctreedir) / "vignette-figures")
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"


def _check_vignette_outputs(app, doctree):
    """Warn for every error a vignette raised, except a deliberate stop (SystemExit)."""
    for block in doctree.findall(nodes.literal_block):
        if "traceback" in block["classes"] and "SystemExit: " not in block.astext():
            error = block.astext().strip().splitlines()
            logging.getLogger(__name__).warning(
                "vignette raised an error: %s", error[-1] if error else "?",
                location=app.env.docname, type="negdro", subtype="vignette")


def setup(app):
    app.connect("builder-inited", _vignette_environment)
    app.connect("doctree-read", _check_vignette_outputs)
