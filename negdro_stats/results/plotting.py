"""Figures for NegDRO results (matplotlib, imported only when a plot is made).

Every function returns the matplotlib ``Figure``; save it with ``fig.savefig(...)``.
Install the extra with ``pip install negdro-stats[plot]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._typing import ArrayLike
from .._validation import check_scalar
from ..exceptions import DataError
from ..inference.stratified import SHOWN_FREQ

__all__ = ["plot_coefficients", "plot_selection", "plot_path", "plot_plan", "plot_risks"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:                   # optional dependency
        raise ImportError("Plots need matplotlib: pip install 'negdro-stats[plot]'.") from exc
    return plt


def _beta_star(beta_star: ArrayLike, names: pd.Index) -> np.ndarray:
    """beta* as floats in the order of ``names``; without a value for an appended
    intercept (``const``), NaN there (not plotted, left out of distances)."""
    try:
        values = np.asarray(beta_star, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise DataError(f"beta_star must be numbers, one per coefficient; got "
                        f"{beta_star!r}.") from None
    if len(values) == len(names) - 1 and names[-1] == "const":
        values = np.append(values, np.nan)
    if len(values) != len(names):
        raise DataError(f"beta_star has {len(values)} values; the model has {len(names)} "
                        f"coefficients ({', '.join(map(str, names[:8]))}"
                        f"{', ...' if len(names) > 8 else ''}).")
    return values


def plot_coefficients(res: Any, *, alpha: float = 0.05, beta_star: ArrayLike | None = None,
                      show: str = "selected", ci_method: str = "percentile"):
    """Forest plot: estimates with the summary's intervals (``res.interval_kind``; the
    bootstrap's ``ci_method``), beta* overlaid when known.

    ``show="selected"`` plots covariates selected by the estimate or in >= 10% of the
    bootstrap refits (all of them if there is no bootstrap); ``"all"`` plots every one.
    """
    plt = _pyplot()
    params = res.params
    kind = res.interval_kind
    ci = res.conf_int(alpha, ci_method if kind == "bootstrap" else None, kind=kind)
    keep = np.ones(len(params), dtype=bool)
    if show == "selected" and res.bootstrap is not None:
        keep = res.support.to_numpy() | (res.support_freq.to_numpy() >= SHOWN_FREQ)
    if beta_star is not None:
        beta_star = _beta_star(beta_star, params.index)
        keep |= np.nan_to_num(beta_star) != 0
    idx = np.flatnonzero(keep)[::-1]
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * len(idx) + 1.6))
    y = np.arange(len(idx))
    lo, hi = ci["lower"].to_numpy()[idx], ci["upper"].to_numpy()[idx]
    est = params.to_numpy()[idx]
    has_ci = np.isfinite(lo) & np.isfinite(hi)
    ax.errorbar(est[has_ci], y[has_ci], xerr=[est[has_ci] - lo[has_ci], hi[has_ci] - est[has_ci]],
                fmt="o", color="C0", ecolor="C0", capsize=3,
                label=f"NegDRO, {100 * (1 - alpha):g}% " + {
                    "wald": "Wald", "robust": "robust (test inversion)",
                    "bootstrap": f"bootstrap {ci_method}"}[kind] + " interval")
    ax.plot(est[~has_ci], y[~has_ci], "o", color="C0")
    if beta_star is not None:
        ax.plot(beta_star[idx], y, "x", color="C3", markersize=9, mew=2, label="beta*")
    ax.axvline(0, color="0.6", lw=0.8)
    ax.set_yticks(y, [str(params.index[j]) for j in idx])
    ax.set_xlabel(f"coefficient on {res.endog_name}")
    ax.set_title(f"NegDRO estimates (gamma = {res.gamma:g})")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def plot_selection(res: Any, *, top: int = 30):
    """Selection frequency across bootstrap refits, highest first (at most ``top`` bars)."""
    plt = _pyplot()
    if res.bootstrap is None:
        raise ValueError("Selection frequencies need the bootstrap: " + (
            "res.run_bootstrap() runs it" if res.bootstrap_pending else "fit with n_boot > 0")
            + ".")
    freq = res.support_freq.sort_values(ascending=False).iloc[:top]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.35 * len(freq) + 1.5), 3.6))
    colors = ["C0" if s else "0.6" for s in res.support[freq.index]]
    ax.bar(np.arange(len(freq)), freq.to_numpy(), color=colors)
    ax.set_xticks(np.arange(len(freq)), [str(i) for i in freq.index], rotation=60, ha="right")
    ax.axhline(0.9, color="C2", ls="--", lw=1, label="0.9")
    ax.axhline(0.5, color="C1", ls=":", lw=1, label="0.5")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("selection frequency")
    ax.set_title(f"Selection frequency, {res.bootstrap.n_boot} bootstrap refits\n"
                 "(blue: selected by the estimate)", fontsize=9)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def plot_path(path: Any, *, beta_star: ArrayLike | None = None, max_lines: int = 12):
    """Coefficients (and their distance to beta*, if given) and environment risks along
    gamma, like the paper's Figures 5 and 7."""
    plt = _pyplot()
    n_panels = 3 if beta_star is not None else 2
    fig, axes = plt.subplots(1, n_panels, figsize=(4.2 * n_panels, 4.4),
                             layout="constrained")
    g = path.gammas
    coefs = path.params
    shown = coefs.abs().max().sort_values(ascending=False).index[:max_lines]
    for k, name in enumerate(shown):
        axes[0].plot(g, coefs[name], label=str(name), **_line_style(k, len(shown)))
    axes[0].set_ylabel("coefficient")
    for k, e in enumerate(path.risks.columns):
        axes[1].plot(g, path.risks[e], label=f"env {e}",
                     **_line_style(k, len(path.risks.columns)))
    axes[1].set_ylabel("risk R_e(b)")
    for ax in axes[:2]:                        # below the panel: never over the curves
        longest = max(len(label) for label in ax.get_legend_handles_labels()[1])
        ax.legend(fontsize=7, ncol=3 if longest <= 12 else 2, loc="upper center",
                  bbox_to_anchor=(0.5, -0.18), frameon=False)
    if beta_star is not None:
        diff = coefs.to_numpy() - _beta_star(beta_star, coefs.columns)
        err = np.linalg.norm(np.nan_to_num(diff), axis=1)
        axes[2].plot(g, err, marker=".", color="k")
        axes[2].set_ylabel("||b - beta*||_2")
    for ax in axes:
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlabel("gamma")
    fig.suptitle("NegDRO along gamma", fontsize=10)
    return fig


def _line_style(k: int, n: int) -> dict:
    """Distinct colours for up to 20 lines (tab10, then tab20), then markers tell apart
    the lines that share a colour."""
    plt = _pyplot()
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return {"color": cmap(k % cmap.N), "marker": ".os^vD"[(k // cmap.N) % 6],
            "markersize": 3 if k < cmap.N else 4}


def plot_risks(res: Any):
    """Environment risks at the estimate, with the worst-case weights w_e annotated."""
    plt = _pyplot()
    risks, w = res.risks, res.weights
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(risks) + 2), 3.8))
    x = np.arange(len(risks))
    ax.bar(x, risks.to_numpy(), color="C0")
    for xi, (r, wi) in enumerate(zip(risks, w, strict=True)):
        ax.annotate(f"w={wi:.2f}", (xi, r), ha="center", va="bottom", fontsize=8)
    labels = [str(e) for e in risks.index]
    crowded = sum(map(len, labels)) > 6 * len(labels) or len(labels) > 12
    ax.set_xticks(x, labels, rotation=40 if crowded else 0, ha="right" if crowded else "center",
                  fontsize=8)
    ax.set_xlabel("environment")
    ax.set_ylabel("risk R_e(b) (mean sq. error)")
    ax.set_ylim(0, risks.max() * 1.15)
    title = "Environment risks at the estimate"
    if res.invariance is not None:
        title += f" (equal-risk test p = {res.invariance.pvalue:.2g})"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_plan(plan: Any, *, target_error: float | None = None):
    """A :class:`~negdro_stats.planning.sample_size.SamplePlan`: error quantiles (left) and the
    probabilities (right) against ``n``, log axes; with ``target_error``, the target on
    the left and ``P(error <= target)`` on the right."""
    if target_error is not None:
        target_error = check_scalar(target_error, "target_error", "plot_plan",
                                    min_val=0, closed="neither")
    plt = _pyplot()
    frame = plan.to_frame()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    left.fill_between(plan.n, np.quantile(plan.errors, 0.1, axis=1),
                      np.quantile(plan.errors, 0.9, axis=1), alpha=0.25,
                      label="10%-90%")
    left.plot(plan.n, frame["median_error"], "o-", label="median")
    if target_error is not None:
        left.axhline(target_error, color="C3", lw=0.8, label="target")
    left.set(xscale="log", yscale="log", xlabel="n per environment",
             ylabel="||b - beta*||_2")
    left.legend(fontsize=8)
    if target_error is not None:
        right.plot(plan.n, plan._probability("error", target_error), "^-",
                   label=f"error <= {target_error:g}")
    right.plot(plan.n, frame["p_support"], "o-", label="right support")
    right.plot(plan.n, frame["p_margin"], "s-", label="margin shown")
    right.set(xscale="log", ylim=(-0.02, 1.02), xlabel="n per environment",
              ylabel="probability")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig
