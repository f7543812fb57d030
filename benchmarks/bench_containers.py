"""One answer whatever the container? The same rows as a DataFrame, Parquet, CSV and a
Dask DataFrame, fitted by NegDRO's default, on random designs of more than 30 covariates
(issue 68 item 2): within the fourth moments' row sample (p <= fourth.MAX_P = 100) and
past it, where the score covariances come from the rows (a stream reads its source
again).

    python benchmarks/bench_containers.py [--designs 30] [--ps 40 60 120] [--n 400]
        [--noise normal t5] [--jobs 2] [--out benchmarks/results/containers.json]

Each design is ``simulate.random_sem(p, n_envs=6, intervened=0.5, rng=k)`` with ``n``
rows per environment (``sample(n, rng=1000 + k, noise=...)``).  Per design: the largest
difference of the coefficients between the frame and each stream, whether the
supports and verdicts agree, and each container's error ``||b - beta*||``.  Prints a
table and writes JSON (with the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np
from _timing import run_jobs, write_result

from negdro_stats import NegDRO, simulate

CONTAINERS = ("frame", "parquet", "csv", "dask")


def one(job: tuple) -> dict:
    k, p, n, noise = job
    import dask.dataframe as dd

    sem = simulate.random_sem(p, n_envs=6, intervened=0.5, rng=k)
    df = sem.sample(n, rng=1000 + k, env_column="env",
                    noise=None if noise == "normal" else noise)
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df.to_parquet(Path(folder) / "d.parquet")
        df.to_csv(Path(folder) / "d.csv", index=False)
        models = {"frame": NegDRO(df, env="env", outcome="Y"),
                  "parquet": NegDRO.from_parquet(str(Path(folder) / "d.parquet"), "env",
                                                 outcome="Y"),
                  "csv": NegDRO.from_csv(Path(folder) / "d.csv", "env", outcome="Y"),
                  "dask": NegDRO.from_dask(dd.from_pandas(df, npartitions=3), "env",
                                           outcome="Y")}
        fits = {name: model.fit(n_boot=0) for name, model in models.items()}
    frame = fits["frame"]
    return dict(design=k, p=p, n=n, noise=noise,
                **{f"diff_{c}": float(np.max(np.abs(fits[c].params.to_numpy()
                                                    - frame.params.to_numpy())))
                   for c in CONTAINERS[1:]},
                **{f"same_support_{c}": bool((fits[c].support == frame.support).all())
                   for c in CONTAINERS[1:]},
                verdicts={c: fits[c].verdict for c in CONTAINERS},
                **{f"error_{c}": float(np.linalg.norm(fits[c].params.to_numpy()
                                                      - sem.beta_star)) for c in CONTAINERS})


def table(result: dict) -> str:
    lines = [f"# {result['command']}  ({result['date']})", "",
             "| noise | designs | differ > 1e-8 (parquet / csv / dask) | support differs | "
             "verdict differs | where they differ: frame better by >= 0.05 / stream better "
             "| mean error frame / parquet |", "|---|---|---|---|---|---|---|"]
    for noise in sorted({r["noise"] for r in result["rows"]}):
        rows = [r for r in result["rows"] if r["noise"] == noise]
        differ = [sum(r[f"diff_{c}"] > 1e-8 for r in rows) for c in CONTAINERS[1:]]
        apart = [r for r in rows if r["diff_parquet"] > 1e-8]
        better = (sum(r["error_frame"] < r["error_parquet"] - 0.05 for r in apart),
                  sum(r["error_parquet"] < r["error_frame"] - 0.05 for r in apart))
        lines.append(
            f"| {noise} | {len(rows)} | {' / '.join(map(str, differ))} | "
            f"{sum(not all(r[f'same_support_{c}'] for c in CONTAINERS[1:]) for r in rows)} | "
            f"{sum(len(set(r['verdicts'].values())) > 1 for r in rows)} | "
            f"{better[0]} / {better[1]} of {len(apart)} | "
            f"{np.mean([r['error_frame'] for r in rows]):.3f} / "
            f"{np.mean([r['error_parquet'] for r in rows]):.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", type=int, default=30)
    ap.add_argument("--ps", type=int, nargs="+", default=[40, 60, 120])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--noise", nargs="+", default=["normal", "t5"])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="benchmarks/results/containers.json")
    a = ap.parse_args()
    jobs = [(k, a.ps[k % len(a.ps)], a.n, noise) for noise in a.noise
            for k in range(a.designs)]
    write_result(a.out, table, rows=run_jobs(one, jobs, a.jobs))


if __name__ == "__main__":
    main()
