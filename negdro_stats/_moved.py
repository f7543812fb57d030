"""The module paths of the flat layout (0.1) and where their names live now.

Each old path is a small module that forwards its names here with a DeprecationWarning
(kept for one release), and :func:`~negdro_stats.load` reads results saved under the old
paths through the same table, without a warning.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

MOVED = {                       # old module -> the modules that hold its names now
    "fourth": ("data.fourth",),
    "moments": ("data.moments",),
    "sources": ("data.readers",),
    "data": ("data.container",),
    "diagnostics": ("identification.conditions",),
    "report": ("identification.report",),
    "objective": ("estimation.objective",),
    "selection": ("estimation.gmm", "estimation.walk", "estimation.options", "_stats"),
    "solvers": ("estimation.options", "estimation.algorithms", "results.labels"),
    "route": ("estimation.route",),
    "inference": ("inference.bootstrap",),
    "robust": ("inference.robust",),
    "sandwich": ("inference.sandwich",),
    "results": ("results.results",),
    "summary": ("results.summary",),
    "plotting": ("results.plotting",),
    "baselines": ("peers.baselines",),
    "holdout": ("peers.holdout",),
    "estimator": ("regressor",),
}


def resolve(old: str, name: str) -> tuple[str, Any]:
    """``(new module, object)`` for ``name`` of the old module ``old`` (without the
    package prefix); AttributeError where none of its new modules has it."""
    for new in MOVED[old]:
        module = importlib.import_module(f"negdro_stats.{new}")
        if hasattr(module, name):
            return module.__name__, getattr(module, name)
    raise AttributeError(f"module 'negdro_stats.{old}' has no attribute {name!r}")


def new_path(module: str, name: str) -> str:
    """The module that holds ``module.name`` now (``module`` itself if it did not move)."""
    old = module.removeprefix("negdro_stats.")
    if module.startswith("negdro_stats.") and old in MOVED:
        try:
            return resolve(old, name)[0]
        except AttributeError:
            return module
    return module


def forward(module: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of an old path: the name from its new module, with a
    DeprecationWarning that names the new import."""
    old = module.removeprefix("negdro_stats.")

    def __getattr__(name: str) -> Any:  # noqa: N807  (a module's __getattr__)
        if name.startswith("__"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, obj = resolve(old, name)
        warnings.warn(f"{module} is deprecated since 0.2 (removed in 0.3): import {name} "
                      f"from {new.removesuffix('.__init__')}.", DeprecationWarning,
                      stacklevel=2)
        return obj

    return __getattr__
