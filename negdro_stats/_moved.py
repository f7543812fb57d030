"""The module paths of the flat layout (0.1) and where their names live now.

Each old path is a small module whose names come from here with a DeprecationWarning
(kept for one release): reading one, setting one (the new module's value is set: a
constant changed through the old path takes effect), ``dir()`` and ``from ... import *``.
``negdro_stats.data``, ``.inference`` and ``.results`` are packages now: their public
names need no warning, and the other names of 0.1's modules come through here.
:func:`~negdro_stats.load` reads results saved under the old paths through the same
table, without a warning.  (A table of names, not of imports: the modules are imported
when a name is asked for, so the foundations do not import the stages.)
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Any

_SET_BEFORE: dict[tuple[str, str], Any] = {}   # values that a set through an old path replaced
_ROUTE = tuple(f"estimation.route.{m}" for m in ("pipeline", "choose", "search", "least_risk",
                                                 "rank", "standardise"))
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
    "route": ("estimation.route", *_ROUTE, "identification.determined"),
    "inference": ("inference.stratified", "_resampling"),
    "robust": ("inference.robust",),
    "sandwich": ("inference.sandwich",),
    "results": ("results.results",),
    "summary": ("results.summary", "data.fourth"),
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
        if name in vars(module):
            return module.__name__, vars(module)[name]
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


def _public(old: str) -> list[str]:
    """The names ``from negdro_stats.<old> import *`` gives: its new modules' ``__all__``."""
    names: set[str] = set()
    for new in MOVED[old]:
        names |= set(getattr(importlib.import_module(f"negdro_stats.{new}"), "__all__", ()))
    return sorted(names)


def _warn(module: str, name: str, new: str, stacklevel: int = 3) -> None:
    where = (f"import {name} from {new}" if not new.split(".")[-1].startswith("_") else
             f"{name} is private now ({new})")
    warnings.warn(f"{module}.{name} is deprecated since 0.2 (removed in 0.3): {where}.",
                  DeprecationWarning, stacklevel=stacklevel)


def old_name(package: str, name: str) -> Any:
    """A name that 0.1's module ``package`` (a package now) had beyond the package's
    public names, with a DeprecationWarning: the package's ``__getattr__``."""
    if name.startswith("__"):
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    new, obj = resolve(package.removeprefix("negdro_stats."), name)
    _warn(package, name, new, stacklevel=4)
    return obj


class _OldPath(types.ModuleType):
    """An old path: its names read and set in the modules that hold them now."""

    def __getattr__(self, name: str) -> Any:
        old = self.__name__.removeprefix("negdro_stats.")
        if name == "__all__":
            _warn(self.__name__, "*", ", ".join(f"negdro_stats.{m}" for m in MOVED[old]))
            return _public(old)
        if name.startswith("__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        new, obj = resolve(old, name)
        _warn(self.__name__, name, new)
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__"):
            return super().__setattr__(name, value)
        new, before = resolve(self.__name__.removeprefix("negdro_stats."), name)
        _warn(self.__name__, name, new)
        _SET_BEFORE.setdefault((new, name), before)
        setattr(sys.modules[new], name, value)

    def __delattr__(self, name: str) -> None:
        """Undo what was set through this path (pytest's monkeypatch deletes the name
        where it was not in the module's own ``__dict__``): the new module's value from
        before the first set comes back."""
        new, _ = resolve(self.__name__.removeprefix("negdro_stats."), name)
        if (new, name) not in _SET_BEFORE:
            raise AttributeError(f"{self.__name__}.{name} was not set through this path; "
                                 f"delete it from {new}")
        setattr(sys.modules[new], name, _SET_BEFORE.pop((new, name)))

    def __dir__(self) -> list[str]:
        return _public(self.__name__.removeprefix("negdro_stats."))


def forward(module: str) -> None:
    """Make the module ``module`` (an old path) forward its names (see the docstring)."""
    sys.modules[module].__class__ = _OldPath
