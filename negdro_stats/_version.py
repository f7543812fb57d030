"""The package version: its one home (pyproject.toml, ``__version__``, saved results and
the docs read it here)."""

__version__ = "0.3.0"
