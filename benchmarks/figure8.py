"""Figure 8/10 at full size: error and time per method and p.

Usage: ``python benchmarks/figure8.py`` -> ``benchmarks/results/figure8.json`` (with the
date and the command) and ``vignettes/figures/figure8.png``.  The study is the vignette
``vignettes/figure8.py``, run here as a script at its full size (its quick size runs in
the test suite).  Takes hours: ICP and EILLS enumerate up to 2^15 subsets per fit.
"""

import json
import os
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    os.environ.pop("NEGDRO_QUICK", None)
    os.environ["NEGDRO_FIGURES"] = str(ROOT / "vignettes" / "figures")   # the docs' figure
    ns = runpy.run_path(str(ROOT / "vignettes" / "figure8.py"), run_name="__main__")
    agg = ns["table"].groupby(["design", "p", "method"]).agg(
        error=("error", "mean"), seconds=("seconds", "mean"),
        capped=("status", lambda s: int((s == "capped").sum()))).reset_index()
    out = {"date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(sys.argv),
           "table": agg.to_dict(orient="records")}
    path = ROOT / "benchmarks" / "results" / "figure8.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")
