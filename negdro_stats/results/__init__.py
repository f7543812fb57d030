"""The results stage: :class:`NegDROResults` and :class:`PathResult` (:mod:`.results`),
their summaries as text, HTML and LaTeX (:mod:`.summary`, statsmodels' tables on first
use) and figures (:mod:`.plotting`, matplotlib on first use).

Imports the foundations and the public names of identification and inference; never
:mod:`negdro_stats.data` or :mod:`negdro_stats.estimation`'s private names, and never the
model: a result reads the fit behind it only through :class:`~.source.FitSource`, which it
is handed at construction.
"""

from .results import NegDROResults, PathResult, load

__all__ = ["NegDROResults", "PathResult", "load"]

