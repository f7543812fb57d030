"""Monte Carlo studies: NegDRO and its peers on simulated designs (Figures 8 and 10).

The harness sits above the estimator and the peers (it fits both), so it lives here and
not in :mod:`negdro_stats.planning.simulate`, which only builds designs.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from .exceptions import DataError, SubsetCapError
from .model import NegDRO
from .peers.baselines import BASELINES, ENUMERATING
from .peers.holdout import fit_method
from .planning.design import LinearSEM

__all__ = ["compare_methods", "METHODS"]

#: The methods :func:`compare_methods` fits by default (``negdro_paper``: Algorithm 3 verbatim).
METHODS = ("negdro", "negdro_paper", *BASELINES)


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
    ``max_subsets`` (default :data:`negdro_stats.peers.baselines.MAX_SUBSETS`) they are recorded
    as ``"capped"`` and skipped for the remaining repetitions (the paper stops them with a
    30-minute limit; a count does not depend on the machine).
    ``options`` maps a method to keyword arguments (default: each method's own, e.g.
    anchor gamma = 5, DRIG gamma = 10 with the first environment as reference, EILLS
    gamma = 20; :mod:`negdro_stats.peers.baselines`).

    Returns a DataFrame with one row per (repetition, method): ``error`` =
    ``||b - beta*||_2`` (NaN if capped or failed), ``seconds``, ``status``.
    """
    options = dict(options or {})
    rows, dead = [], set()
    for r in range(reps):
        df = design.sample(n_per_env, rng=np.random.default_rng([rng, r]))
        start = time.perf_counter()
        model = NegDRO(df, env="env", outcome=design.names[0])
        read_s = time.perf_counter() - start
        negdro = {name: _negdro_fit(model, refit, options.get(name, {}))
                  for name, refit in (("negdro", {}), ("negdro_paper", {"refit": "negdro"}))}
        for method in methods:
            if method in dead:
                rows.append(dict(rep=r, method=method, error=np.nan, seconds=np.nan,
                                 status="capped"))
                continue
            extra = ({"max_subsets": max_subsets} if max_subsets is not None
                     and method in ENUMERATING else {})
            start = time.perf_counter()
            try:
                b = fit_method(method, model.data, negdro, **extra,
                               **options.get(method, {}))
                status = "ok"
            except SubsetCapError:
                b, status = None, "capped"
                dead.add(method)
            except (DataError, np.linalg.LinAlgError) as exc:
                b, status = None, f"failed: {exc}"[:80]
            rows.append(dict(rep=r, method=method,
                             seconds=time.perf_counter() - start + read_s, status=status,
                             error=np.nan if b is None
                             else float(np.linalg.norm(b - design.beta_star))))
    return pd.DataFrame(rows)


def _negdro_fit(model: NegDRO, route: dict, options: dict):
    """``fit(data) -> params`` of the model's own fit (``data`` is the model's)."""
    def fit(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.fit(n_boot=0, check_identification=False, **route,
                             **options).params.to_numpy()
    return fit
