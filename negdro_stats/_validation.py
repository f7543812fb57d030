"""Argument checks with one message template (docs/design.rst, "Messages").

"The 'gamma' parameter of NegDRO must be a float in the range [0, inf). Got -1 instead."
"""

from __future__ import annotations

import difflib
import logging
import numbers
import sys
import time
import warnings
from collections.abc import Iterable

import numpy as np

__all__ = ["check_scalar", "check_option", "check_int", "warn_user", "listed"]


def listed(names: Iterable[str], at_most: int = 8) -> str:
    """``names`` joined by commas in messages, the first ``at_most`` of them and then
    "and k more"."""
    names = list(names)
    more = len(names) - at_most
    return ", ".join(names[:at_most]) + (f" and {more} more" if more > 0 else "")


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside this package: the user's
    line, however deep in the package the warning arises (no hard-coded stacklevel)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == (
            __name__.split(".")[0]):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


PROGRESS_DELAY = 2.0     # seconds of work before a default progress bar appears


def in_notebook() -> bool:
    """Running in a Jupyter (IPython) kernel, where stderr is not a terminal."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    return shell is not None and hasattr(shell, "kernel")


def progress(items, verbose: bool | None, desc: str, total: int | None = None,
             what: str | None = None):
    """``items`` wrapped in a tqdm bar (``tqdm.auto``: a widget in notebooks): at once
    when asked for (``verbose=True``); by default (None) in a terminal or a notebook,
    once the work has taken ``PROGRESS_DELAY`` seconds.  By default elsewhere (a
    script, a CI log: no terminal) one INFO line through :mod:`logging` (logger
    ``negdro_stats``) once the work has taken ``PROGRESS_DELAY`` seconds: ``what``
    runs (default ``desc``), how many steps are done and how long it should take in
    all.  ``items`` unchanged with ``verbose=False`` (or without tqdm where a bar is
    asked for)."""
    if verbose is not None and not isinstance(verbose, (bool, int, np.bool_, np.integer)):
        raise TypeError(f"verbose must be True, False or None (a progress bar in a terminal "
                        f"or notebook, for work over {PROGRESS_DELAY:g} s); got {verbose!r}.")
    shown = (sys.stderr.isatty() or in_notebook()) if verbose is None else bool(verbose)
    if total == 0 or verbose is False:
        return items
    if not shown:
        return items if total is None else _logged(items, total, what or desc)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return items

    class Bar(tqdm):
        monitor_interval = 0     # no monitor thread: it outlives the bar, and while a
        #                          thread runs the resampling's workers cannot be forked

    return Bar(items, total=total, desc=desc, delay=PROGRESS_DELAY if verbose is None else 0)


def _logged(items, total: int, what: str):
    """``items``, with one INFO line once ``PROGRESS_DELAY`` seconds have passed and
    steps remain (:func:`progress`)."""
    start, said = time.perf_counter(), False
    for k, item in enumerate(items, 1):
        yield item
        elapsed = time.perf_counter() - start
        if not said and elapsed >= PROGRESS_DELAY and k < total:
            logging.getLogger("negdro_stats").info(
                "%s: %d of %d done in %.0f s; about %.0f s in all.", what, k, total,
                elapsed, elapsed * total / k)
            said = True


def _range_text(min_val: float | None, max_val: float | None, closed: str) -> str:
    lo = "-inf" if min_val is None else f"{min_val:g}"
    hi = "inf" if max_val is None else f"{max_val:g}"
    left = "[" if closed in ("both", "left") and min_val is not None else "("
    right = "]" if closed in ("both", "right") and max_val is not None else ")"
    return f"{left}{lo}, {hi}{right}"


def check_scalar(
    value: object,
    name: str,
    owner: str,
    *,
    min_val: float | None = None,
    max_val: float | None = None,
    closed: str = "both",
) -> float:
    """Return ``value`` as a float after checking that it is a finite real in range.

    ``closed`` is one of ``"both"``, ``"left"``, ``"right"``, ``"neither"`` and says
    which ends of ``[min_val, max_val]`` are allowed.
    """
    rng = _range_text(min_val, max_val, closed)
    message = f"The '{name}' parameter of {owner} must be a float in the range {rng}. "
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(message + f"Got {value!r} of type {type(value).__name__} instead.")
    x = float(value)
    ok = np.isfinite(x)
    if ok and min_val is not None:
        ok = x >= min_val if closed in ("both", "left") else x > min_val
    if ok and max_val is not None:
        ok = x <= max_val if closed in ("both", "right") else x < max_val
    if not ok:
        raise ValueError(message + f"Got {value!r} instead.")
    return x


def check_int(value: object, name: str, owner: str, *, min_val: int = 0,
              max_val: int | None = None) -> int:
    """Return ``value`` as an int after checking that it is an integer in ``[min_val,
    max_val]``."""
    message = (f"The '{name}' parameter of {owner} must be an int in the range [{min_val}, "
               f"{'inf)' if max_val is None else f'{max_val:.0e}]'.replace('+0', '')}. ")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(message + f"Got {value!r} of type {type(value).__name__} instead.")
    if int(value) < min_val or max_val is not None and int(value) > max_val:
        raise ValueError(message + f"Got {value!r} instead.")
    return int(value)


def check_bool(value: object, name: str, owner: str) -> bool:
    """Return ``value`` if it is a bool (numpy's included); strings such as "no" are refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"The '{name}' parameter of {owner} must be True or False. Got {value!r} "
                    f"of type {type(value).__name__} instead.")


def check_rng(value: object, name: str, owner: str) -> np.random.Generator:
    """A numpy Generator from ``value``: None, a seed (int >= 0) or a Generator."""
    if value is None or isinstance(value, np.random.Generator) or (
            isinstance(value, numbers.Integral) and not isinstance(value, bool)
            and int(value) >= 0):
        return np.random.default_rng(value)
    raise TypeError(f"The '{name}' parameter of {owner} must be None, a seed (an int >= 0) "
                    f"or a numpy Generator. Got {value!r} instead.")


def generator_state(rng: np.random.Generator) -> dict:
    """``rng`` as plain data (it pickles where a Generator needs numpy's constructors):
    its bit generator's state and its seed sequence, from which ``spawn`` draws."""
    seq = rng.bit_generator.seed_seq
    return {"state": rng.bit_generator.state, "entropy": seq.entropy,
            "spawn_key": tuple(seq.spawn_key), "pool_size": seq.pool_size,
            "n_children_spawned": seq.n_children_spawned}


def generator_from_state(saved: dict) -> np.random.Generator:
    """The Generator that :func:`generator_state` saved, as it was then."""
    seq = np.random.SeedSequence(saved["entropy"], spawn_key=saved["spawn_key"],
                                 pool_size=saved["pool_size"],
                                 n_children_spawned=saved["n_children_spawned"])
    bit_generator = getattr(np.random, saved["state"]["bit_generator"])(seq)
    bit_generator.state = saved["state"]
    return np.random.Generator(bit_generator)


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """\" Did you mean 'X1'?\" for the closest of ``known`` to ``name``, or ""."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def check_option(value: object, name: str, owner: str, options: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``options``; otherwise suggest the nearest one."""
    options = list(options)
    if isinstance(value, str) and value in options:
        return value
    listed = ", ".join(repr(o) for o in options)
    hint = did_you_mean(value, options) if isinstance(value, str) else ""
    raise ValueError(
        f"The '{name}' parameter of {owner} must be one of {listed}. Got {value!r} instead.{hint}"
    )


def few(items: list, k: int = 5) -> str:
    """A list for a message: at most ``k`` items, then how many there are in all."""
    shown = ", ".join(repr(x) for x in items[:k])
    return shown if len(items) <= k else f"{shown}, ... ({len(items)} in all)"
