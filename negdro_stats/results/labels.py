"""The display labels of the estimator's methods and refits: the one place the summary,
the gamma path and the CLI take them from."""

__all__ = ["COV_SHORT", "METHOD_LABELS", "REFIT_LABELS", "REFIT_SHORT", "VERDICT_LABELS"]

METHOD_LABELS = {
    ("algorithm3", "sqp"): "NegDRO Alg. 3 (SQP)",
    ("algorithm3", "gdm"): "NegDRO Alg. 3 (GDM)",
    ("algorithm1", "algorithm1"): "NegDRO Alg. 1",
    ("algorithm2", "algorithm2"): "NegDRO Alg. 2",
}
REFIT_LABELS = {"ols": "pooled OLS", "gmm": "invariance GMM", "negdro": "Phi_mu (paper)",
                "invariant": "gradient inv., eq. (31)", "ils": "invariance-constrained LS"}
REFIT_SHORT = {"ols": "pooled OLS", "gmm": "GMM", "ils": "inv. LS", "negdro": "Phi_mu",
               "invariant": "eq. (31)"}
# the summary's "Cov. Type:", by refit (the sandwich module's cov_method says it in full)
COV_SHORT = {"ols": "HC0", "gmm": "GMM inv. info.", "ils": "constrained", "negdro": "n/a",
             "invariant": "n/a", "none": "n/a"}
# the summary's "Verdict:", by NegDROResults.verdict (results.verdicts.verdict)
VERDICT_LABELS = {"identified": "identified", "if Condition 4": "if Cond. 4 / 6",
                  "not identified": "NOT identified", "rejected": "REJECTED"}
