"""Sphinx configuration for negdro_stats."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "negdro_stats"
author = "negdro_stats developers"
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"members": True, "undoc-members": False}
html_theme = "pydata_sphinx_theme"
html_title = "negdro_stats"
exclude_patterns = ["_build"]
suppress_warnings = ["autosummary.import_cycle"]
nitpicky = False

# Docstrings write set sizes as |E|, |F|, |S| (the paper's notation); keep them literal.
rst_prolog = "\n".join(f".. |{x}| replace:: \\|{x}\\|" for x in "EFS")
