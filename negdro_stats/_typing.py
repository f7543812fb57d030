"""Type aliases shared by the package."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

__all__ = ["ArrayLike", "FloatArray", "IntArray"]
