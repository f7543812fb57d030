"""Scale benchmark (issue: scale out): Parquet / Dask passes, and block against row resampling.

Usage:  python benchmarks/bench_scale.py [--only pass|boot|e2e|mc|se|all] [--rows 10_000_000]
        [--reps 100] [--out benchmarks/results/scale.json]

1. ``pass``: eq. (33), p = 20, 4 environments, ``--rows`` rows written to Parquet in row
   groups of 1e6; wall time and peak memory (max RSS of a fresh process) of
   ``MultiEnvData.from_parquet`` (moments + 50 blocks per environment), of
   ``from_dask`` on a 2-worker LocalCluster, and of the pure pyarrow read of the same
   columns (the I/O reference), medians of 3 runs each; imports and the cluster's start
   are not timed (they are the same at any n).
2. ``boot``: n = 20,000 per environment, p = 100: fit(n_boot=200) with row resampling
   against block resampling (blocks=50), wall time, same data and run.
3. ``e2e``: ``--e2e-rows`` rows (default 2e6; the row-level path holds three copies of
   the data), p = 100, 4 environments, in Parquet: fit(n_boot=200) + diagnose(199 + 199)
   from Parquet (block moments) against the same from the rows in memory
   (pandas.read_parquet + the row bootstrap), wall time.
4. ``mc``: ``--reps`` samples of eq. (33) (p = 6, n = 2,000 per environment): coverage of
   95% percentile intervals for the causal coordinates from rows and from blocks (B = 100),
   and the size of the permutation test of the margin (99 permutations, level 5%) and of
   the equal-risk test at beta* when the environments are identical (H0).
5. ``se``: ``--reps`` samples (n = 2,000 per environment) of eq. (33), p = 6, continuous,
   and of the same design on integers (covariates and noise rounded to -2..2, rows repeat:
   the case where hashing values put identical rows in one block): bootstrap standard
   errors of the causal coordinates from blocks (50 per environment) over those from rows
   (B = 100 each, same data), medians and quartiles, and both against the Monte Carlo
   spread of the estimate.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from negdro_stats import NegDRO, simulate

ROOT = Path(__file__).resolve().parents[1]


def _run_measured(setup: str, code: str) -> tuple[float, float]:
    """Run ``setup`` (imports, a cluster: not timed), then ``code`` in a fresh Python; the
    wall time of ``code`` and the process's max RSS in MB."""
    wrapper = (setup + "\nimport resource, time\nt0 = time.perf_counter()\n" + code +
               "\nprint(time.perf_counter() - t0, "
               "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    seconds, mb = out.stdout.strip().splitlines()[-1].split()
    return float(seconds), float(mb)


def bench_pass(rows: int, folder: Path) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    p, E = 20, 4
    sem = simulate.eq33(p=p)
    folder.mkdir(parents=True, exist_ok=True)
    files = sorted(folder.glob("*.parquet"))
    if len(files) * 1_000_000 != rows:                       # (re)write the data
        for f in files:
            f.unlink()
        for k in range(rows // 1_000_000):
            df = sem.sample(1_000_000 // E, rng=k)
            pq.write_table(pa.Table.from_pandas(df, preserve_index=False),
                           folder / f"part{k:04d}.parquet", row_group_size=250_000)
    cols = ["env", "Y", *[f"X{j}" for j in range(1, p + 1)]]
    read = ("import pyarrow.dataset as ds",
            f"d = ds.dataset('{folder}', format='parquet')\n"
            f"n = 0\nfor b in d.to_batches(columns={cols!r}, batch_size=1 << 20):\n"
            "    n += b.num_rows\n")
    ours = ("from negdro_stats.data.container import MultiEnvData",
            f"MultiEnvData.from_parquet('{folder}', 'env', outcome='Y', verbose=False)\n")
    dask = ("import dask.dataframe as dd, distributed\n"
            "from negdro_stats.data.container import MultiEnvData\n"
            "cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, "
            "dashboard_address=None)\nclient = distributed.Client(cluster)",
            f"MultiEnvData.from_dask(dd.read_parquet('{folder}'), 'env', outcome='Y')\n")
    out = {"rows": rows, "p": p, "envs": E}
    for name, (setup, code) in (("pyarrow read", read), ("from_parquet", ours),
                                ("from_dask", dask)):
        runs = [_run_measured(setup, code) for _ in range(3)]
        out[name] = {"seconds": float(np.median([r[0] for r in runs])),
                     "peak_mb": float(np.median([r[1] for r in runs]))}
        print(f"{name:>14}: {out[name]['seconds']:.2f} s, peak {out[name]['peak_mb']:.0f} MB",
              flush=True)
    out["ratio_to_read"] = out["from_parquet"]["seconds"] / out["pyarrow read"]["seconds"]
    return out


def bench_boot(n: int = 20_000, p: int = 100, B: int = 200) -> dict:
    df = simulate.eq33(p=p).sample(n, rng=1)
    out = {}
    for label, blocks in (("rows", None), ("blocks", 50)):
        model = NegDRO(df, env="env", outcome="Y", blocks=blocks)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(n_boot=B, rng=0)
        out[label] = time.perf_counter() - t0
        print(f"fit + B = {B} from {label}: {out[label]:.1f} s", flush=True)
    out["ratio_rows_to_blocks"] = out["rows"] / out["blocks"]
    return out


def bench_e2e(rows: int, folder: Path, p: int = 100) -> dict:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    sem = simulate.eq33(p=p)
    folder.mkdir(parents=True, exist_ok=True)
    if not list(folder.glob("*.parquet")):
        for k in range(max(rows // 500_000, 1)):
            df = sem.sample(min(rows, 500_000) // 4, rng=100 + k)
            pq.write_table(pa.Table.from_pandas(df, preserve_index=False),
                           folder / f"part{k:04d}.parquet", row_group_size=125_000)
    out = {"rows": rows, "p": p}

    def run(build):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = build()
            res = model.fit(n_boot=200, rng=0)
            model.diagnose(n_boot=199, n_perm=199, rng=0, results=res, verbose=False)
        return time.perf_counter() - t0, res

    out["parquet_blocks_s"], a = run(lambda: NegDRO.from_parquet(str(folder), "env",
                                                                 outcome="Y", verbose=False))
    out["memory_rows_s"], b = run(lambda: NegDRO(pd.read_parquet(folder), env="env",
                                                 outcome="Y"))
    out["ratio"] = out["memory_rows_s"] / out["parquet_blocks_s"]
    out["max_abs_coef_diff"] = float(np.abs(a.params - b.params).max())
    print(out, flush=True)
    return out


def bench_mc(reps: int) -> dict:
    sem = simulate.eq33(p=6)
    causes = np.flatnonzero(sem.beta_star)
    cover = {"rows": [], "blocks": []}
    perm = {"rows": [], "blocks": []}
    risk = {"rows": [], "blocks": []}
    for r in range(reps):
        df = sem.sample(2000, rng=10_000 + r)
        same = sem.sample(8000, rng=20_000 + r)               # environment 1's law only,
        same = same[same["env"] == 1].reset_index(drop=True)  # split at random into four:
        same["env"] = np.tile([1, 2, 3, 4], 2000)             # identical environments (H0)
        for label, blocks in (("rows", None), ("blocks", 50)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = NegDRO(df, env="env", outcome="Y", blocks=blocks).fit(
                    n_boot=100, rng=r, n_jobs=1)
                ci = res.conf_int().to_numpy()[causes]
                cover[label].extend((ci[:, 0] <= sem.beta_star[causes])
                                    & (sem.beta_star[causes] <= ci[:, 1]))
                model = NegDRO(same, env="env", outcome="Y", blocks=blocks)
                fit0 = model.fit(n_boot=0, refit="negdro")
                rep = model.diagnose(n_boot=0, n_perm=99, rng=r, results=fit0)
                perm[label].append(rep.perm_pvalue <= 0.05)
                risk[label].append(model.risk_test(sem.beta_star).pvalue <= 0.05)
        if (r + 1) % 10 == 0:
            print(r + 1, {k: round(float(np.mean(v)), 3) for k, v in cover.items()},
                  {k: round(float(np.mean(v)), 3) for k, v in perm.items()},
                  {k: round(float(np.mean(v)), 3) for k, v in risk.items()}, flush=True)
    return {"reps": reps, "B": 100, "blocks": 50,
            "coverage": {k: float(np.mean(v)) for k, v in cover.items()},
            "perm_size": {k: float(np.mean(v)) for k, v in perm.items()},
            "risk_test_size": {k: float(np.mean(v)) for k, v in risk.items()}}


def _discrete(sem, n: int, seed: int):
    """eq. (33)'s environments on integers: covariates in standard-deviation units rounded
    to -2..2, Y from them plus integer noise (-2..2); many rows repeat."""
    df = sem.sample(n, rng=seed)
    rng = np.random.default_rng(seed + 1)
    names = [c for c in df.columns if c.startswith("X")]
    df[names] = np.clip(np.round(df[names] / df[names].std()), -2, 2)
    df["Y"] = df[names].to_numpy() @ sem.beta_star + rng.integers(-2, 3, len(df))
    return df


def bench_se(reps: int, B: int = 100, designs: tuple = ("continuous", "discrete")) -> dict:
    sem = simulate.eq33(p=6)
    causes = np.flatnonzero(sem.beta_star)
    out = {}
    draws = {"continuous": lambda r: sem.sample(2000, rng=30_000 + r),
             "discrete": lambda r: _discrete(sem, 2000, 40_000 + r)}
    for design in designs:
        draw = draws[design]
        ratio, se, est = [], {"rows": [], "blocks": []}, []
        repeated = []
        for r in range(reps):
            df = draw(r)
            repeated.append(1 - len(df.drop_duplicates()) / len(df))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits = {label: NegDRO(df, env="env", outcome="Y", blocks=blocks).fit(
                    n_boot=B, rng=r, n_jobs=1) for label, blocks in (("rows", None),
                                                                    ("blocks", 50))}
            for label, res in fits.items():
                se[label].append(res.bse.to_numpy()[causes])
            est.append(fits["rows"].params.to_numpy()[causes])
            ratio.append(se["blocks"][-1] / se["rows"][-1])
            if (r + 1) % 10 == 0:
                print(design, r + 1, "median block/row s.e.",
                      np.round(np.median(ratio, axis=0), 3), flush=True)
        ratio = np.asarray(ratio)
        spread = np.asarray(est).std(axis=0, ddof=1)
        out[design] = {
            "repeated_rows_share": float(np.mean(repeated)),
            "block_over_row_se_median": np.median(ratio, axis=0).tolist(),
            "block_over_row_se_quartiles": np.quantile(ratio, [0.25, 0.75], axis=0).tolist(),
            "row_se_over_mc_spread": (np.median(se["rows"], axis=0) / spread).tolist(),
            "block_se_over_mc_spread": (np.median(se["blocks"], axis=0) / spread).tolist()}
    return {"reps": reps, "B": B, "blocks": 50, "coordinates": causes.tolist(), **out}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["pass", "boot", "e2e", "mc", "se", "all"], default="all")
    ap.add_argument("--e2e-rows", type=int, default=2_000_000)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--designs", default="continuous,discrete",
                    help="for --only se: continuous, discrete or both")
    ap.add_argument("--data", type=Path, default=Path("/tmp/negdro_scale"))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scale.json")
    args = ap.parse_args()
    result = {"date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(sys.argv),
              "machine": platform.platform()}
    if args.only in ("pass", "all"):
        result["pass"] = bench_pass(args.rows, args.data)
    if args.only in ("boot", "all"):
        result["boot"] = bench_boot()
    if args.only in ("e2e", "all"):
        result["e2e"] = bench_e2e(args.e2e_rows, args.data.with_name(args.data.name + "_e2e"))
    if args.only in ("mc", "all"):
        result["mc"] = bench_mc(args.reps)
    if args.only in ("se", "all"):
        result["se"] = bench_se(args.reps, designs=tuple(args.designs.split(",")))
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
