"""Where the classes of results saved by earlier versions live now.

A saved result names each class by its module path at the time it was saved: 0.1's flat
layout (``negdro_stats.solvers``, ``negdro_stats.selection``, ...), whose modules were
removed in 0.3, and 0.2's selection modules (``estimation.walk``,
``estimation.route``) and pre-experiment modules (``design``, ``simulate``,
``planning``), which 0.3 gathered in ``estimation.selection`` and ``planning``.
:func:`~negdro_stats.load` reads such a file through :func:`new_path`, which finds each
class's module today.  (A table of names, not of imports: the modules
are imported when a saved file asks for one, so the foundations do not import the
stages.)
"""

from __future__ import annotations

import importlib

_SELECTION = tuple(f"estimation.selection.{m}" for m in ("verdict", "least_risk", "walk",
                                                          "exogeneity", "rank", "standardise"))
MOVED = {                       # old module -> the modules that may hold its classes now
    "fourth": ("data.fourth",),
    "moments": ("data.moments",),
    "sources": ("data.readers",),
    "data": ("data.container",),
    "diagnostics": ("identification.conditions",),
    "report": ("identification.report",),
    "objective": ("estimation.objective",),
    "selection": ("estimation.gmm", "estimation.options", *_SELECTION),
    "solvers": ("estimation.options", "estimation.algorithms", "results.labels"),
    "route": (*_SELECTION, "identification.determined"),
    "inference": ("inference.stratified",),
    "robust": ("inference.robust",),
    "sandwich": ("inference.sandwich",),
    "results": ("results.results",),
    "summary": ("results.summary",),
    "plotting": ("results.plotting",),
    "baselines": ("peers.baselines",),
    "holdout": ("peers.holdout",),
    "estimator": ("regressor",),
    # 0.2's layout
    "estimation.walk": _SELECTION,
    **{f"estimation.route.{m}": _SELECTION for m in ("choose", "least_risk", "search", "rank",
                                                      "standardise")},
    "estimation.route.pipeline": ("estimation.pipeline",),
    "design": ("planning.design",),
    "simulate": ("planning.simulate",),
    "planning": ("planning.sample_size",),
}


def new_path(module: str, name: str) -> str:
    """The module that holds ``module.name`` now (``module`` itself if it did not
    move, or if none of its new modules has the name)."""
    old = module.removeprefix("negdro_stats.")
    if not module.startswith("negdro_stats.") or old not in MOVED:
        return module
    for new in MOVED[old]:
        if name in vars(importlib.import_module(f"negdro_stats.{new}")):
            return f"negdro_stats.{new}"
    return module
