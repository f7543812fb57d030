"""Identification diagnostics benchmark (issue: diagnostics).

Usage:  python benchmarks/bench_conditions.py [--quick] [--reps 200]
        [--only timing|design|permutation|blocks] [--out benchmarks/results/conditions.json]

1. Condition 1b on population moments of eq. (33) (text variant), p in {10, 100, 200, 1000}
   and on random dense designs (p in {50, 100, 200}): wall time of the SDP path (cvxpy +
   CLARABEL; p <= 200 for eq. (33), p <= 100 dense) and of the cutting-plane path,
   median of 3, and their agreement.
2. Design checks (``--only design``): ``LinearSEM.check_identification()``'s three
   conditions on population moments of random designs up to p = 300 (half the
   covariates intervened, hidden confounding; eight environments at p = 30 / 120, where
   the cutting planes stall and SDPs on a subspace finish): wall time, path, status and
   gap per condition, and Condition 4 by the full SDP (``path="sdp"``) as the reference
   where it fits in memory (p <= 60).
3. The permutation test of "no heterogeneity" (NegDRO.diagnose, 99 permutations):
   size -- all four environments drawn from environment 1 of eq. (33), p = 5,
   n = 500 per environment -- and power on eq. (33) itself at n = 2,000 per environment,
   over ``--reps`` repetitions each.
4. ``--only blocks`` (only when asked): diagnose()'s draws from block moments against
   draws of rows at 20,000 rows per environment (:func:`blocks`).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from _timing import timed

from negdro_stats import NegDRO, check_condition_1b, check_condition_4, simulate
from negdro_stats.identification.conditions import CONDITIONS


def timing(ps_eq33, ps_dense):
    rows = []
    cases = [("eq33", p, simulate.eq33(p).moments().Sigma) for p in ps_eq33]
    rng = np.random.default_rng(0)
    cases += [("dense", p, simulate.dense_second_moments(p, 4, rng)) for p in ps_dense]
    for name, p, S in cases:
        row = dict(design=name, p=p)
        cp, row["cutting_plane_s"] = timed(
            lambda S=S: check_condition_1b(S, path="cutting-plane"), reps=3)
        row["cp_margin"], row["cp_status"] = cp.margin, cp.status
        if p <= (200 if name == "eq33" else 100):
            sdp, row["sdp_s"] = timed(lambda S=S: check_condition_1b(S, path="sdp"), reps=3)
            row["sdp_margin"] = sdp.margin
            row["rel_diff"] = abs(sdp.margin - cp.margin) / max(abs(sdp.margin), 1e-12)
        rows.append(row)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in row.items()), flush=True)
    return rows


DESIGNS = (("half, confounded", dict(intervened=0.5, confounding=True, rng=25), (30, 60, 120, 300)),
           ("8 envs", dict(n_envs=8, rng=3), (30, 120)))


def design_checks(quick: bool):
    """Per condition of every design: seconds, path, status, gap, margin; Condition 4
    by the full SDP beside it where p <= 60."""
    rows = []
    for name, kw, ps in DESIGNS:
        for p in ps[:2] if quick else ps:
            sem = simulate.random_sem(p, **kw)
            mom = sem.moments()
            for cond in CONDITIONS.values():
                res, seconds = timed(lambda c=cond, m=mom, d=sem: c.check(m, d), reps=1)
                row = dict(design=name, p=p, condition=cond.name, seconds=round(seconds, 3),
                           holds=res.holds, margin=res.relative_margin, path=res.path,
                           status=res.status, gap=res.gap)
                if cond.name == "4" and p <= 60:
                    ref, row["sdp_seconds"] = timed(lambda m=mom, d=sem: check_condition_4(
                        m.Sigma, d.Delta, d.S_L, d.D, path="sdp"), reps=1)
                    row["sdp_margin"] = ref.relative_margin
                rows.append(row)
                print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in row.items()), flush=True)
    return rows


def permutation(reps, n_null, n_alt):
    sem = simulate.eq33(p=5)
    out = {}
    for label, n in (("size", n_null), ("power", n_alt)):
        pvals = []
        for r in range(reps):
            df = sem.sample(n * (4 if label == "size" else 1), rng=10_000 + r)
            if label == "size":
                df = df[df["env"] == 1].reset_index(drop=True)
                df["env"] = np.random.default_rng(r).permutation(np.arange(len(df)) % 4)
            rep = NegDRO(df, env="env", outcome="Y").diagnose(n_boot=0, n_perm=99, rng=r,
                                                              verbose=False)
            pvals.append(rep.perm_pvalue)
        pvals = np.array(pvals)
        rate = float(np.mean(pvals <= 0.05))
        se = float(np.sqrt(rate * (1 - rate) / reps))
        out[label] = dict(reps=reps, n_per_env=n, reject_rate_5pct=rate, se=se)
        print(label, out[label], flush=True)
    return out


def blocks(reps: int, n: int = 20_000):
    """``NegDRO.diagnose()`` with its draws from 200 blocks per environment (the default
    from 10,000 rows per environment on) against draws of rows, on the same samples:
    eq. (33) p = 10 and random_sem(8, rng=3) (identified: the bound's coverage of the
    population relative margin), and all four environments drawn from environment 1 of
    eq. (33) p = 5 (the permutation test's size; margin 0).  The rows' bound is computed twice
    (two seeds): the spread of those two is the Monte Carlo error the blocks' bound is
    compared with.  Times in fits of the model (``fit(n_boot=0)``)."""
    from negdro_stats.data.container import MultiEnvData

    def by_rows(model, seed):
        real = MultiEnvData.margin_resamplers
        MultiEnvData.margin_resamplers = lambda self: (self.resample, self.permute)
        try:
            return timed(lambda: model.diagnose(rng=seed, verbose=False), reps=1)
        finally:
            MultiEnvData.margin_resamplers = real

    designs = [("eq33_p10", simulate.eq33(p=10), False),
               ("random_p8", simulate.random_sem(8, rng=3), False),
               ("null_p5", simulate.eq33(p=5), True)]
    out = {}
    for name, sem, null in designs:
        truth = 0.0 if null else check_condition_1b(sem.moments()).relative_margin
        rows = []
        for r in range(reps):
            df = sem.sample(n * (4 if null else 1), rng=20_000 + r)
            if null:
                df = df[df["env"] == 1].reset_index(drop=True)
                df["env"] = np.random.default_rng(r).permutation(np.arange(len(df)) % 4)
            model = NegDRO(df, env="env", outcome="Y")
            fit_s = timed(lambda: model.fit(n_boot=0), reps=3)[1]  # noqa: B023
            blk, blk_s = timed(lambda: model.diagnose(rng=r, verbose=False), reps=1)  # noqa: B023
            row, row_s = by_rows(model, r)
            row2, _ = by_rows(model, r + 1_000_000)
            rows.append(dict(blocks=blk.margin_lcb, rows=row.margin_lcb, rows2=row2.margin_lcb,
                             p_blocks=blk.perm_pvalue, p_rows=row.perm_pvalue,
                             same_verdict=blk.holds_with_confidence == row.holds_with_confidence,
                             blocks_fits=blk_s / fit_s, rows_fits=row_s / fit_s))
        col = {k: np.array([x[k] for x in rows], dtype=float) for k in rows[0]}
        out[name] = dict(
            reps=reps, n_per_env=n, truth=truth,
            cover_blocks=float(np.mean(col["blocks"] <= truth)),
            cover_rows=float(np.mean(col["rows"] <= truth)),
            sd_blocks_minus_rows=float(np.std(col["blocks"] - col["rows"])),
            sd_rows_minus_rows=float(np.std(col["rows2"] - col["rows"])),
            mean_blocks_minus_rows=float(np.mean(col["blocks"] - col["rows"])),
            same_verdict=float(np.mean(col["same_verdict"])),
            perm_reject_blocks=float(np.mean(col["p_blocks"] <= 0.05)),
            perm_reject_rows=float(np.mean(col["p_rows"] <= 0.05)),
            median_fits_blocks=float(np.median(col["blocks_fits"])),
            median_fits_rows=float(np.median(col["rows_fits"])))
        print(name, out[name], flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--only", choices=["timing", "design", "permutation", "blocks"],
                    default=None, help="run one part and keep the other part of an existing "
                    "--out file (blocks: only when asked, --reps samples per design)")
    ap.add_argument("--out", default="benchmarks/results/conditions.json")
    a = ap.parse_args()
    old = json.loads(Path(a.out).read_text()) if a.only and Path(a.out).exists() else {}
    tm, dm, pm = old.get("timing"), old.get("design"), old.get("permutation")
    bm = old.get("blocks")
    if a.only in (None, "timing"):
        tm = timing([10, 100], [50]) if a.quick else timing([10, 100, 200, 1000], [50, 100, 200])
    if a.only in (None, "design"):
        dm = design_checks(a.quick)
    if a.only in (None, "permutation"):
        pm = permutation(5, 500, 2000) if a.quick else permutation(a.reps, 500, 2000)
    if a.only == "blocks":
        bm = blocks(3 if a.quick else a.reps)
    meta = dict(machine=platform.platform(), python=platform.python_version(),
                date=time.strftime("%Y-%m-%d"), command=" ".join(sys.argv))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(dict(meta=meta, timing=tm, design=dm, permutation=pm,
                                           blocks=bm), indent=1, default=str))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
