"""Hypothesis profiles (scipy style): ``dev`` by default, ``ci`` when
NEGDRO_HYPOTHESIS_PROFILE=ci (derandomised, no example database, no deadline)."""

import os
import sys

import pytest
from hypothesis import settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=50, derandomize=True, database=None, deadline=None)
settings.load_profile(os.environ.get("NEGDRO_HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def forking(monkeypatch):
    """Forked workers (:func:`negdro_stats._resampling.map_jobs`) whatever threads earlier
    tests left running (Dask's thread pool, tqdm's monitor), where ``can_fork()`` would
    say no: the jobs touch none of them.  Linux only."""
    if not sys.platform.startswith("linux"):
        pytest.skip("forked workers are Linux's")
    from negdro_stats import _resampling

    monkeypatch.setattr(_resampling, "can_fork", lambda: True)
