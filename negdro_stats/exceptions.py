"""Exceptions and warnings raised by negdro_stats.

Every error raised on bad input subclasses :class:`ValueError` (or :class:`TypeError`
for wrong types), so ``except ValueError`` catches them all; each message names the
offending argument and says how to fix it.  Warnings are named classes so that they can
be filtered one by one with :func:`warnings.filterwarnings`.
"""

from __future__ import annotations

__all__ = [
    "BootstrapFailureWarning",
    "BootstrapPendingError",
    "DataError",
    "ConvergenceWarning",
    "DataWarning",
    "IdentificationWarning",
    "SelectionWarning",
    "SolverError",
    "SubsetCapError",
]


class DataError(ValueError):
    """The data cannot be used as given (NaN, too few environments, bad columns, ...).

    The message names the problem and the fix, e.g. ``missing="drop"`` for NaN rows.
    """


class SubsetCapError(DataError):
    """A peer that enumerates supports (ICP, EILLS) stopped at its cap
    (``baselines.MAX_SUBSETS``) before it saw every support: use it with fewer
    covariates, or raise ``max_subsets``."""


class SolverError(RuntimeError):
    """A numerical solver failed in a way that no result can be reported."""


class BootstrapPendingError(RuntimeError):
    """A bootstrap quantity (``boot_se``, ``support_freq``, ``bootstrap_draws``) was read
    while the default bootstrap has not run: ``fit()`` defers it, and no property starts
    the refits.  The message says how long :meth:`NegDROResults.run_bootstrap` takes."""


class ConvergenceWarning(UserWarning):
    """Fires when a solver stops at ``max_iter`` before its stopping rule is met.

    The results are still returned, with ``converged=False``.  Raise ``max_iter``,
    or choose another ``method``; silence with
    ``warnings.filterwarnings("ignore", category=ConvergenceWarning)``.
    """


class DataWarning(UserWarning):
    """Fires when the data are usable but weak: an environment with fewer rows than
    covariates, rows dropped for missing values, a near-collinear design.
    """


class IdentificationWarning(UserWarning):
    """Fires when the environments look too similar for the causal model to be identified
    (identifiability margin at or below the tolerance)."""


class SelectionWarning(UserWarning):
    """Fires when the fit selected no covariate (every coefficient 0), e.g. after a hard
    threshold above the standardised effects; silence with ``warnings.simplefilter``."""


class BootstrapFailureWarning(UserWarning):
    """Fires when some bootstrap refits failed or did not converge; the results count
    them (``results.bootstrap.failed``, ``.converged``) and use the successful ones."""
