"""Data sets bundled with the package.

- :func:`load_sachs`: the protein-signalling data of Sachs et al. (2005), 9 experimental
  conditions (the environments), 7,466 single cells, 11 proteins.

Simulated data need no loader: every design in :mod:`negdro_stats.planning.simulate` samples a
frame of the same shape (outcome first, then the covariates and ``env``), e.g.
``simulate.eq33(p=10).sample(500, rng=0)``, and gives its exact population moments with
``.moments()``.
"""

from __future__ import annotations

import gzip
import numbers
from collections.abc import Iterable, Sequence
from importlib import resources

import numpy as np
import pandas as pd

from ._validation import check_bool, did_you_mean
from .exceptions import DataError

__all__ = ["load_sachs"]

SACHS_FILE = "sachs2005_cdt.csv.gz"        # cdt 0.6.0's cyto_full_data.csv; see NOTICE
SACHS_PROTEINS = {                         # cdt's column names -> the names used here
    "praf": "Raf", "pmek": "Mek", "plcg": "Plcg", "PIP2": "PIP2", "PIP3": "PIP3",
    "p44/42": "Erk", "pakts473": "Akt", "PKA": "PKA", "PKC": "PKC", "P38": "P38",
    "pjnk": "Jnk",
}
SACHS_CONDITIONS = (                       # (env, condition, cells), in the file's order
    (1, "cd3cd28", 853), (2, "cd3cd28icam2", 902), (3, "cd3cd28+aktinhib", 911),
    (4, "cd3cd28+g0076", 723), (5, "cd3cd28+psitect", 810), (6, "cd3cd28+u0126", 799),
    (7, "cd3cd28+ly", 848), (8, "pma", 913), (9, "b2camp", 707),
)


def load_sachs(
    conditions: int | str | Sequence[int | str] | None = None, *, log: bool = False,
) -> pd.DataFrame:
    """The flow-cytometry data of Sachs et al. (2005): 9 conditions, 11 proteins.

    Single-cell measurements of 11 phosphorylated proteins and phospholipids in human
    T cells under 9 experimental conditions, the environments.  Rows are cells, in the
    order of the original data files.

    ===  ==================  =================================  ==========================
    env  condition           reagent                            acts on
    ===  ==================  =================================  ==========================
    1    cd3cd28             anti-CD3 + anti-CD28               none (reference)
    2    cd3cd28icam2        anti-CD3/CD28 + ICAM-2             none (reference-like)
    3    cd3cd28+aktinhib    AKT inhibitor                      Akt (activity inhibited)
    4    cd3cd28+g0076       G06976                             PKC (activity inhibited)
    5    cd3cd28+psitect     Psitectorigenin                    PIP2 (inhibited)
    6    cd3cd28+u0126       U0126                              Mek (activity inhibited)
    7    cd3cd28+ly          LY294002                           PIP3 (via PI3K), Akt
    8    pma                 PMA                                PKC (activated)
    9    b2camp              beta2-cAMP                         PKA (activated)
    ===  ==================  =================================  ==========================

    Parameters
    ----------
    conditions : int, str or sequence of them, optional
        The conditions to keep, by ``env`` number (1-9) or by name (``"pma"``); default
        all 9.  Rows keep the file's order.
    log : bool, default False
        Natural logarithm of the 11 measurements (all are positive raw fluorescence
        intensities with a heavy right tail; most analyses work on the log scale).

    Returns
    -------
    pandas.DataFrame
        7,466 rows (all conditions) and the columns ``env`` (int, 1-9), ``condition``
        (the name above), then ``Raf, Mek, Plcg, PIP2, PIP3, Erk, Akt, PKA, PKC, P38,
        Jnk``.  Conditions 1-9 hold 853, 902, 911, 723, 810, 799, 848, 913 and 707 cells.

    Raises
    ------
    DataError
        ``conditions`` names a condition that is not bundled, or is empty.
    TypeError
        ``log`` is not a bool.

    Notes
    -----
    Use for invariance learning: any protein against the other ten, with the conditions
    as environments, leaving out those that act on the outcome or on the mechanism that
    maps its parents to it (inhibitors block a kinase's activity, not its measured
    phosphorylation): for ``Erk`` drop env 6 (U0126, a MEK inhibitor), for ``Akt`` drop
    env 3 and 7.  The consensus network gives ``Erk <- {Mek, PKA}``,
    ``Akt <- {PIP3, PKA}``, ``P38 <- {PKC, PKA}``, ``Jnk <- {PKC, PKA}``,
    ``Raf <- {PKC, PKA}``, ``Mek <- {Raf, PKC, PKA}``.

    Caveats: the consensus graph is debated (data-driven analyses often find
    ``Erk -> Akt``); the relations are nonlinear and probably cyclic (feedback); the
    reagents change kinase activity or mechanism rather than adding a shift.  The
    additive-intervention model (12) therefore fits only roughly: these data are a
    realistic stress test, not a case with a known ``beta*``.

    Provenance: the file is ``cyto_full_data.csv`` of the MIT-licensed Causal Discovery
    Toolbox (cdt 0.6.0), cut into the 9 conditions; it equals, value for value, the same
    conditions in the R package SEMgraph.  Five further conditions (ICAM-2 plus an
    inhibitor) exist but are not bundled (their only source at hand is GPL-3).  See the
    ``NOTICE`` file beside the data for the licence.

    References
    ----------
    Sachs K., Perez O., Pe'er D., Lauffenburger D.A., Nolan G.P. (2005). Causal
    protein-signaling networks derived from multiparameter single-cell data.
    *Science* 308(5721):523-529. doi:10.1126/science.1105809

    Examples
    --------
    >>> from negdro_stats.datasets import load_sachs
    >>> df = load_sachs(conditions=[1, 2, 3, 4, 5, 7, 8, 9], log=True)   # without U0126
    >>> df.shape
    (6667, 13)
    >>> df.groupby("env").size().loc[[1, 9]].tolist()
    [853, 707]
    """
    log = check_bool(log, "log", "load_sachs")
    keep = _sachs_envs(conditions)
    with resources.files(__package__).joinpath(f"_datasets/{SACHS_FILE}").open("rb") as raw:
        with gzip.open(raw, "rt") as text:
            values = pd.read_csv(text)
    values = values.rename(columns=SACHS_PROTEINS)[list(SACHS_PROTEINS.values())]
    if log:
        values = np.log(values)
    envs, names, cells = zip(*SACHS_CONDITIONS, strict=True)
    frame = pd.concat([pd.DataFrame({"env": np.repeat(envs, cells),
                                     "condition": np.repeat(names, cells)}), values], axis=1)
    return frame[frame["env"].isin(keep)].reset_index(drop=True)


def _sachs_envs(conditions: int | str | Sequence[int | str] | None) -> set[int]:
    """The env numbers that ``conditions`` asks for (numbers 1-9 or condition names)."""
    by_name = {name: env for env, name, _ in SACHS_CONDITIONS}
    if conditions is None:
        return set(by_name.values())
    if isinstance(conditions, (str, numbers.Number)) or not isinstance(conditions, Iterable):
        conditions = [conditions]
    keep = set()
    for c in conditions:
        if isinstance(c, numbers.Integral) and not isinstance(c, bool) and 1 <= c <= 9:
            keep.add(int(c))
        elif isinstance(c, str) and c in by_name:
            keep.add(by_name[c])
        else:
            hint = did_you_mean(c, by_name) or (
                " Conditions 10-14 of the original study (ICAM-2 plus an inhibitor) are not "
                "bundled." if isinstance(c, numbers.Integral) and 10 <= c <= 14 else "")
            raise DataError(f"conditions: {c!r} is not a bundled condition; use env numbers "
                            f"1-9 or the names {list(by_name)}.{hint}")
    if not keep:
        raise DataError("conditions is empty; give at least one condition (env 1-9), or "
                        "None for all 9.")
    return keep
