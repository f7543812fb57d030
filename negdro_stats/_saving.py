"""Saving and loading results: a pickle with the package version, read back by an
unpickler that refuses everything but the package's classes and the numpy / pandas /
pyarrow types their values pickle as (so a crafted file cannot run code)."""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np
import pandas as pd

from ._moved import new_path
from ._validation import warn_user
from ._version import __version__
from .exceptions import DataError, DataWarning

__all__ = ["Saveable", "load"]


class Saveable:
    """``save(path)`` and ``load(path)`` by pickle, as statsmodels' results: the model
    and its data are saved with them (so ``predict`` works after loading).  Loading
    refuses anything but the package's own classes and the types they hold
    (:func:`load`); load only files from a source you trust."""

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Save to ``path`` (a pickle with the package version); see :meth:`load`.  An
        existing file is replaced only with ``overwrite=True``; a symbolic link is never
        followed.  The file is written beside ``path``, loaded back, and only then renamed
        to it, so a failed save leaves ``path`` as it was."""
        if not isinstance(path, str | os.PathLike):
            raise DataError(f"path must be a file name (str or os.PathLike); got "
                            f"{type(path).__name__}.")
        if not isinstance(overwrite, bool | np.bool_):
            raise DataError(f"overwrite must be True or False; got {overwrite!r}.")
        name = os.fspath(path)
        if not name or "\x00" in str(name) or str(name).endswith(("/", os.sep)) or (
                os.path.isdir(name)):
            raise DataError(f"path={str(path)!r} is not a file name: give one such as "
                            "'fit.pkl' (not empty, no NUL character, not a folder).")
        if os.path.islink(path):
            raise DataError(f"path={str(path)!r} is a symbolic link; save() does not follow "
                            "links: give the target's own path.")
        if not overwrite and os.path.lexists(path):
            raise DataError(f"path={str(path)!r} exists; pass overwrite=True to replace it.")
        # written to a new file beside it, checked by loading, then renamed over the
        # target: a save that fails never leaves a partial or unloadable file in its place
        tmp = f"{os.fspath(path)}.{os.getpid()}.{id(self):x}.saving"
        flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_BINARY", 0))
        try:
            fd = os.open(tmp, flags, 0o644)
        except OSError as exc:
            raise DataError(f"Could not save to path={str(path)!r}: {exc}") from exc
        try:
            try:
                with os.fdopen(fd, "wb") as f:
                    pickle.dump({"negdro_stats": __version__, "results": self}, f,
                                protocol=pickle.HIGHEST_PROTOCOL)
                load(tmp, type(self))
            except (DataError, pickle.PicklingError, TypeError, AttributeError) as exc:
                raise DataError(f"Could not save to path={str(path)!r}: the file written "
                                f"does not load back ({exc}); path was left as it "
                                "was.") from exc
            os.replace(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.remove(tmp)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Any:
        """Results saved by :meth:`save`; a file of another kind is a DataError, one saved
        by another version of negdro_stats a DataWarning."""
        return load(path, cls)


# What a saved result may refer to besides the package's own classes: the builtins,
# numpy, pandas and pyarrow types and reconstruction functions that its arrays, frames
# and labels pickle as (measured on fits from frames, arrays, moments and fit_path with
# integer, string, categorical and datetime environment labels).
_SAFE_GLOBALS = {
    "builtins": {"slice", "set", "frozenset", "complex", "range", "bytearray", "dict",
                 "list", "tuple", "int", "float", "str", "bool", "bytes"},
    "collections": {"OrderedDict"},
    "datetime": {"datetime", "date", "time", "timedelta", "timezone"},
    "numpy": {"dtype", "ndarray"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy.core.numeric": {"_frombuffer"},
    "pandas._libs.arrays": {"__pyx_unpickle_NDArrayBacked"},
    "pandas._libs.internals": {"_unpickle_block"},
    "pandas._libs.tslibs.timestamps": {"_unpickle_timestamp"},
    "pandas._libs.tslibs.timedeltas": {"_timedelta_unpickle"},
    "pandas.core.indexes.base": {"_new_Index"},
    "pandas.core.indexes.datetimes": {"_new_DatetimeIndex"},
    "pandas.core.indexes.period": {"_new_PeriodIndex"},
    "pyarrow.lib": {"_restore_array", "py_buffer", "type_for_alias"},
}


_PANDAS_DATA = (pd.Index, pd.Series, pd.DataFrame, pd.api.extensions.ExtensionArray,
                pd.api.extensions.ExtensionDtype, pd.Timestamp, pd.Timedelta, pd.Period,
                pd.Interval, pd.DateOffset)


def _safe_global(module: str, name: str, obj: object) -> bool:
    """The package's classes, numpy dtypes and scalars, pandas' data classes and block
    managers, and :data:`_SAFE_GLOBALS`: never a function that could run code."""
    if name in _SAFE_GLOBALS.get(module, ()):
        return True
    if not isinstance(obj, type):
        return False
    top = module.split(".")[0]
    return (obj.__module__.split(".")[0] == "negdro_stats"
            or (top == "numpy" and issubclass(obj, (np.dtype, np.generic)))
            or (top == "pandas" and (issubclass(obj, _PANDAS_DATA) or name in (
                "BlockManager", "SingleBlockManager"))))


class _ResultsUnpickler(pickle.Unpickler):
    """Refuses every global but :func:`_safe_global`'s: a crafted file cannot reach
    ``os.system`` or any other callable."""

    def find_class(self, module: str, name: str) -> Any:
        module = new_path(module, name)                   # saved under 0.1's flat layout
        obj = None
        if module.split(".")[0] in ("negdro_stats", "numpy", "pandas"):
            try:
                obj = super().find_class(module, name)
            except (AttributeError, ImportError):
                obj = None
        if not _safe_global(module, name, obj):
            raise pickle.UnpicklingError(
                f"it refers to {module}.{name}, which no result of negdro_stats holds "
                "(refused without running it)")
        return super().find_class(module, name)


def load(path: str | os.PathLike, kind: type | None = None) -> Any:
    """Results saved by ``save(path)`` (:class:`NegDROResults` or :class:`PathResult`; of
    class ``kind`` when given).  The file is read by a restricted unpickler that refuses
    any global but the package's classes and the numpy / pandas / pyarrow types its
    results hold, so a crafted file cannot run code through it; still load only files
    from a source you trust (a result is data you will act on)."""
    try:
        with open(path, "rb") as f:
            payload = _ResultsUnpickler(f).load()
    except OSError as exc:
        raise DataError(f"Could not read path={str(path)!r}: {exc}") from exc
    except ImportError as exc:         # a value of an optional package (Arrow-backed text)
        package = (exc.name or "an optional package").split(".")[0]
        raise DataError(f"path={str(path)!r} holds values stored by {package}, which is not "
                        f"installed here: pip install {package}, then load it.") from exc
    except Exception as exc:           # pickle raises many kinds on a foreign file
        raise DataError(f"path={str(path)!r} is not a file saved by negdro_stats' "
                        f"save() ({type(exc).__name__}: {exc}).") from exc
    kind = kind or Saveable
    if not (isinstance(payload, dict) and isinstance(payload.get("results"), kind)):
        raise DataError(f"path={str(path)!r} does not hold {kind.__name__.lstrip('_')} "
                        "saved by negdro_stats' save().")
    if payload.get("negdro_stats") != __version__:
        warn_user(f"{str(path)!r} was saved by negdro_stats {payload.get('negdro_stats')}; "
                  f"this is {__version__}: check the results before relying on them.",
                  DataWarning)
    return payload["results"]
