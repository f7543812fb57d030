"""The data stage: every source of multi-environment data ends in per-environment moments.

- :mod:`.moments`: the one currency (:class:`Moments`, block moments, the exact merge);
- :mod:`.fourth`: the fourth moments carried with them (a sample of rows);
- :mod:`.readers`: every reader (frames, arrays, formulas, CSV, Parquet, Dask) and the
  one NaN policy; the CLI reads files through them too;
- :mod:`.csv_file`: a CSV file's header, chunks and defects, read one way for
  ``from_csv`` and the CLI;
- :mod:`.container`: :class:`MultiEnvData`, the container a model holds (labels, the
  intercept's one home, resampling).

Imports only the foundations (``_typing``, ``_validation``, ``exceptions``).
"""

from .container import MISSING, MultiEnvData, intercept_index, risk_variances, split_intercept
from .moments import N_POPULATION, MomentAccumulator, Moments

__all__ = ["MultiEnvData", "MISSING", "intercept_index", "split_intercept", "Moments",
           "MomentAccumulator", "N_POPULATION", "risk_variances"]

