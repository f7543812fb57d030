"""Figure 8/10 table at full size: error and time per method and p (issue: peers).

Usage: python benchmarks/figure8.py  -> benchmarks/results/figure8.json and
vignettes/figures/figure8.png.  The study itself lives in vignettes/figure8.py (the
vignette's --quick size runs in the test suite).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "vignettes"))

import figure8  # noqa: E402

if __name__ == "__main__":
    figure8.main(quick=False, json_out=ROOT / "benchmarks" / "results" / "figure8.json")
