"""Golden outputs of the estimator on 12 designs, recorded before the layout change of
issue 39 and compared after every commit (``tests/project/test_golden.py``).

Run ``python tests/golden/golden.py record`` to write ``golden.json`` (only when the
estimator is meant to change, with the reason in the commit), ``python
tests/golden/golden.py check`` to compare bit for bit on this machine.  Each design
records params, support, route, the J statistics of the selection, robust intervals,
bootstrap intervals (B = 20, rng = 0), the Condition 1b margin and diagnose()'s bound and
p-value (19 resamples, 19 permutations).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

from negdro_stats import NegDRO, simulate
from negdro_stats.datasets import load_sachs
from negdro_stats.exceptions import DataError

PATH = Path(__file__).with_name("golden.json")


def _frames():
    """(name, model factory, whether to resample) for each design."""
    def sample(sem, n, seed, **kw):
        return lambda: NegDRO(sem.sample(n, rng=seed), env="env", outcome="Y", **kw)

    def offsets():
        df = simulate.eq33(p=6).sample(800, rng=5)
        df["Y"] += 3.0
        df["X2"] += 1e4
        return NegDRO(df, env="env", outcome="Y", fit_intercept=True)

    def sachs():
        cells = load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True)
        cells = cells.drop(columns="condition").groupby("env").head(300)
        return NegDRO(cells, env="env", outcome="Erk", fit_intercept=True)

    def heavy_tails():
        sem = simulate.random_sem(12, n_envs=4, rng=11)
        df = sem.sample(500, rng=12)
        noise = np.random.default_rng(13).standard_t(5, size=len(df))
        df["Y"] += 0.3 * noise
        return NegDRO(df, env="env", outcome="Y")

    return [
        ("eq33", sample(simulate.eq33(p=10), 1000, 0), True),
        ("random_confounded_p30",
         sample(simulate.random_sem(30, confounding=True, rng=1), 1000, 2), True),
        ("example3_limited", sample(simulate.example3("limited"), 1000, 3), True),
        ("intercept_offsets", offsets, True),
        ("mean_shift_not_identified",
         sample(simulate.random_sem(8, n_envs=3, shift="mean", rng=4), 600, 4), True),
        ("sachs", sachs, True),
        ("appendix_f2", sample(simulate.appendix_f2(p=10), 800, 6), True),
        ("example3_weak", sample(simulate.example3("weak"), 800, 7), True),
        ("half_intervened_p20",
         sample(simulate.random_sem(20, n_envs=4, intervened=0.5, rng=8), 1000, 8), True),
        ("heavy_tails_p12", heavy_tails, True),
        ("eq33_p60_small_n", sample(simulate.eq33(p=60), 300, 9), False),
        ("population_example3",
         lambda: NegDRO.from_moments(simulate.example3("limited").moments()), False),
    ]


def _floats(x) -> list:
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


def outputs() -> dict:
    """The golden outputs of every design (warnings silenced: they are not recorded)."""
    found = {}
    for name, make, resample in _frames():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make()
            res = model.fit(n_boot=20 if resample else 0, rng=0)
            sel = res.selection
            rec = {
                "params": _floats(res.params),
                "names": list(res.params.index),
                "support": [str(s) for s in res.support[res.support].index],
                "route": None if sel is None else sel.route,
                "J": None if sel is None else _floats([sel.J, sel.df, sel.pvalue]),
                "walk": None if sel is None else [_floats(w) for w in sel.walk],
                "ident_margin": float(res.ident_margin),
                "interval_kind": res.interval_kind,
                "wald": _floats(res.conf_int(kind="wald").to_numpy()),
            }
            try:
                rec["robust"] = _floats(res.conf_int(kind="robust").to_numpy())
            except DataError as refused:          # too few moment conditions for p
                rec["robust"] = str(refused)
            if resample:
                rec["bootstrap"] = _floats(res.conf_int(kind="bootstrap").to_numpy())
                report = model.diagnose(n_boot=19, n_perm=19, rng=0, results=res)
                rec["diagnose"] = _floats([report.margin, report.margin_lcb, report.perm_pvalue,
                                            report.n_solved])
        found[name] = rec
    return found


SDP_KEYS = ("ident_margin", "diagnose")   # read off an interior-point SDP solution
SDP_RTOL, SDP_ATOL = 1e-3, 1e-8


def compare(found: dict, golden: dict, *, rtol: float = 0.0) -> list[str]:
    """Every difference between two records, in words; exact where ``rtol`` is 0.
    Otherwise the SDP margins (``SDP_KEYS``) to ``SDP_RTOL`` and ``SDP_ATOL``: the
    solver's weights are accurate to its tolerance, and ``lambda_min`` at them moves at
    first order where the maximum is a kink (another machine's BLAS: 6e-4 relative on
    eq33_p60_small_n's margin, 1.6e-9 absolute on sachs' margin bound of -1e-9)."""
    diffs = []
    for name in golden:
        for key, want in golden[name].items():
            got = found[name].get(key)
            if isinstance(want, float) or (                   # numbers: to rtol
                    isinstance(want, list) and want and isinstance(want[0], (float, list))):
                a = np.array(got, dtype=float)
                b = np.array(want, dtype=float)
                tol = (SDP_RTOL, SDP_ATOL) if key in SDP_KEYS else (rtol, rtol)
                same = a.shape == b.shape and (
                    np.array_equal(a, b, equal_nan=True) if rtol == 0
                    else np.allclose(a, b, rtol=tol[0], atol=tol[1], equal_nan=True))
            else:
                same = got == want
            if not same:
                diffs.append(f"{name}.{key}: {got} != {want}")
    return diffs


if __name__ == "__main__":
    if sys.argv[1:] == ["record"]:
        PATH.write_text(json.dumps(outputs(), indent=1) + "\n")
    elif sys.argv[1:] == ["check"]:
        diffs = compare(outputs(), json.loads(PATH.read_text()))
        print("\n".join(diffs) or "equal to the last bit")
        sys.exit(bool(diffs))
    else:
        sys.exit("usage: golden.py record|check")
