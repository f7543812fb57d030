"""The code passes ruff with the project's settings (pyproject.toml); ruff comes with the
test extra, from the registry."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[lint]')")
    run = subprocess.run([ruff, "check", "--quiet", "negdro_stats", "tests", "benchmarks",
                          "vignettes"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-1000:]
