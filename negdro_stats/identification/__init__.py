"""The identification stage: Conditions 1a/1b, 4 and 6 as semidefinite programmes on
moments (:mod:`.conditions`, the only place a margin is computed) and the report on data
with its bootstrap bound and permutation test (:mod:`.report`).

Imports the foundations and :mod:`negdro_stats.data`.
"""

from .conditions import (
    CONDITIONS,
    Certificate1a,
    Condition,
    IdentificationResult,
    check_condition_1b,
    check_condition_4,
    check_condition_6,
    max_min_eigenvalue,
)
from .report import (
    RISK_WARN_LEVEL,
    IdentificationReport,
    RiskInvarianceTest,
    identification_report,
    risk_invariance_test,
    risk_test_at,
)

__all__ = ["CONDITIONS", "Certificate1a", "Condition", "IdentificationResult",
           "check_condition_1b", "check_condition_4", "check_condition_6", "max_min_eigenvalue",
           "IdentificationReport", "RiskInvarianceTest", "identification_report",
           "risk_invariance_test", "risk_test_at", "RISK_WARN_LEVEL"]
