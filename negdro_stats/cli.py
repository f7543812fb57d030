"""Command line: ``python -m negdro_stats demo`` and ``negdro fit data.csv --env site``."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from . import NegDRO, simulate


def _demo(args: argparse.Namespace) -> int:
    sem = simulate.eq33(p=args.p, variant=args.variant)
    data = sem.sample(args.n, rng=args.seed)
    print(f"Simulated eq. (33) of the paper ({args.variant} variant): p = {args.p} covariates, "
          f"4 environments, n = {args.n} rows each; true beta* = (0.5, 0, -0.5, 0, ...).\n")
    res = NegDRO(data, env="env", outcome="Y", gamma=args.gamma).fit(n_boot=args.n_boot,
                                                                      rng=args.seed)
    print(res.summary())
    err = float(np.linalg.norm(res.params.to_numpy() - sem.beta_star))
    print(f"\n||b_hat - beta*||_2 = {err:.4f}")
    return 0


def _fit(args: argparse.Namespace) -> int:
    data = pd.read_csv(args.path)
    res = NegDRO(data, env=args.env, outcome=args.outcome, gamma=args.gamma).fit(
        n_boot=args.n_boot, rng=args.seed)
    print(res.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``negdro`` and ``python -m negdro_stats``."""
    parser = argparse.ArgumentParser(prog="negdro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="simulate eq. (33), fit NegDRO, print the summary")
    demo.add_argument("--p", type=int, default=10, help="number of covariates (>= 5)")
    demo.add_argument("--n", type=int, default=20_000, help="rows per environment")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--gamma", type=float, default=20.0)
    demo.add_argument("--variant", choices=["text", "code"], default="text")
    demo.add_argument("--n-boot", type=int, default=200, help="bootstrap replicates (0: none)")
    demo.set_defaults(func=_demo)
    fit = sub.add_parser("fit", help="fit NegDRO to a CSV file")
    fit.add_argument("path")
    fit.add_argument("--env", required=True, help="column holding the environment labels")
    fit.add_argument("--outcome", default=None, help="outcome column (default: first)")
    fit.add_argument("--gamma", type=float, default=20.0)
    fit.add_argument("--n-boot", type=int, default=200, help="bootstrap replicates (0: none)")
    fit.add_argument("--seed", type=int, default=None, help="bootstrap seed")
    fit.set_defaults(func=_fit)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
