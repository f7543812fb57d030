"""Monte Carlo studies: NegDRO and its peers on simulated designs (Figures 8 and 10).

The harness sits above the estimator and the peers (it fits both), so it lives here and
not in :mod:`negdro_stats.planning.simulate`, which only builds designs.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .exceptions import DataError, SubsetCapError
from .model import NegDRO
from .peers.baselines import BASELINES, ENUMERATING
from .peers.holdout import fit_method
from .planning.design import LinearSEM

__all__ = ["compare_methods", "METHODS", "vignette_options"]

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


def vignette_options(argv: list[str] | None = None) -> tuple[bool, Path]:
    """A vignette's two options, read once for every vignette: ``--quick`` (or
    ``NEGDRO_QUICK=1``), the small sizes the test suite and the docs build run, and
    ``--out DIR`` (or ``NEGDRO_FIGURES``), the folder for its figures, by default
    ``./negdro_figures`` (which git ignores).  Options it does not know are left alone
    (a notebook's kernel passes its own)."""
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="the test suite's small sizes")
    parser.add_argument("--out", default=os.environ.get("NEGDRO_FIGURES", "negdro_figures"),
                        help="folder for the figures (default: ./negdro_figures)")
    args = parser.parse_known_args(argv)[0]
    return args.quick or os.environ.get("NEGDRO_QUICK") == "1", Path(args.out)
