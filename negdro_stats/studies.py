"""Monte Carlo studies: NegDRO and its peers on simulated designs (Figures 8 and 10).

The harness sits above the estimator and the peers (it fits both), so it lives here and
not in :mod:`negdro_stats.simulate`, which only builds designs.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from .baselines import fit_baseline
from .design import LinearSEM
from .exceptions import DataError
from .model import NegDRO

__all__ = ["compare_methods", "METHODS"]

#: The methods :func:`compare_methods` fits by default (``negdro_paper``: Algorithm 3 verbatim).
METHODS = ("negdro", "negdro_paper", "erm", "anchor", "icp", "eills", "drig", "causal_dantzig")


def compare_methods(
    design: LinearSEM,
    *,
    n_per_env: int,
    reps: int,
    methods: tuple[str, ...] = METHODS,
    max_subsets: int | None = None,
    rng: int = 0,
    options: dict | None = None,
) -> pd.DataFrame:
    """Monte Carlo comparison of NegDRO and its peers on one design (Figures 8 and 10).

    For each repetition, sample ``n_per_env`` rows per environment, build the moments once,
    and fit every method on them.  ICP and EILLS enumerate subsets; where they stop at
    ``max_subsets`` (default :data:`negdro_stats.baselines.MAX_SUBSETS`) they are recorded
    as ``"capped"`` and skipped for the remaining repetitions (the paper stops them with a
    30-minute limit; a count does not depend on the machine).
    ``options`` maps a method to keyword arguments (defaults: anchor gamma = 5, DRIG
    gamma = 10 with the first environment as reference, EILLS gamma = 20).

    Returns a DataFrame with one row per (repetition, method): ``error`` =
    ``||b - beta*||_2`` (NaN if capped or failed), ``seconds``, ``status``.
    """
    options = {"anchor": {"gamma": 5.0}, "drig": {"gamma": 10.0}, "eills": {"gamma": 20.0},
               **(options or {})}
    rows, dead = [], set()
    for r in range(reps):
        df = design.sample(n_per_env, rng=np.random.default_rng([rng, r]))
        start = time.perf_counter()
        model = NegDRO(df, env="env", outcome=design.names[0])
        read_s = time.perf_counter() - start
        for method in methods:
            if method in dead:
                rows.append(dict(rep=r, method=method, error=np.nan, seconds=np.nan,
                                 status="capped"))
                continue
            start = time.perf_counter()
            status = "ok"
            try:
                if method in ("negdro", "negdro_paper"):
                    paper = {"refit": "negdro"} if method == "negdro_paper" else {}
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        b = model.fit(n_boot=0, check_identification=False, **paper,
                                      **options.get(method, {})).params.to_numpy()
                else:
                    extra = ({"max_subsets": max_subsets} if max_subsets is not None
                             and method in ("icp", "eills") else {})
                    res = fit_baseline(method, model.moments, **extra,
                                       **options.get(method, {}))
                    b = res.params.to_numpy()
                    if res.details.get("capped"):
                        status = "capped"
            except (DataError, np.linalg.LinAlgError) as exc:
                b, status = None, f"failed: {exc}"[:80]
            seconds = time.perf_counter() - start + read_s
            if status == "capped":
                dead.add(method)
            ok = status == "ok" and b is not None
            rows.append(dict(rep=r, method=method, seconds=seconds, status=status,
                             error=float(np.linalg.norm(b - design.beta_star)) if ok
                             else np.nan))
    return pd.DataFrame(rows)
