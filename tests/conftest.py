"""Hypothesis profiles (scipy style): ``dev`` by default, ``ci`` when
NEGDRO_HYPOTHESIS_PROFILE=ci (derandomised, no example database, no deadline)."""

import os

from hypothesis import settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=50, derandomize=True, database=None, deadline=None)
settings.load_profile(os.environ.get("NEGDRO_HYPOTHESIS_PROFILE", "dev"))
