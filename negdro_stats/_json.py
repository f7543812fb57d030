"""Plain JSON values from the package's results (``to_dict()`` of the result objects)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN (undefined) becomes None and an infinity the string
    ``"Infinity"`` or ``"-Infinity"`` (an unbounded interval is not an undefined one;
    ``float()`` and JavaScript's ``Number()`` read both back), labels become strings,
    Series and mappings dicts, arrays lists."""
    if isinstance(value, pd.Series | Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isnan(x):
            return None
        return x if math.isfinite(x) else ("Infinity" if x > 0 else "-Infinity")
    if value is None or isinstance(value, str):
        return value
    return str(value)
