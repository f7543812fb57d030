"""Plain JSON values from the package's results (``to_dict()`` of the result objects)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN and infinities become None, labels become strings, Series
    and mappings dicts, arrays lists."""
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
        return x if math.isfinite(x) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)
