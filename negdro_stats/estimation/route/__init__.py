"""The default estimator on moments: standardise, profile an intercept, run the method,
choose the support by invariance, and say whether the environments decide.

:func:`solve` is the one entry point for samples, population moments and resamples.

1. An intercept (``options.fixed``, set by ``fit_intercept``) is profiled by the pooled
   level condition ``c = ybar - b^T xbar``: the slopes are fitted on pooled-centred
   moments (:meth:`Moments.centred`), so that no threshold, test or gate depends on the
   origin of a covariate.
2. The moments are rescaled to unit root mean square and the method runs
   (:func:`negdro_stats.estimation.algorithms.run_method`).
3. With ``refit="auto"`` the support is chosen by over-identified gradient invariance
   (:func:`select_by_invariance`; the tests are in :mod:`negdro_stats.estimation.gmm`).

What the selection's consistency rests on (``refit="auto"``)
-------------------------------------------------------------
Lemma 1 makes ``E_e[X (Y - beta*^T X)]`` the same in every environment for all ``p``
covariates.  The *pilot* is the invariance GMM on every covariate with every residual
moment as an instrument: where the environment differences determine ``b``
(the stacked ``Sigma_e - Sigma_bar`` have no common null direction; implied by
Condition 1b), it is consistent at the ``n^{-1/2}`` rate, so ordering the covariates by
its ``|t|`` puts every cause ahead of every non-cause with probability tending to one --
at a cost of ``O(|E| p^3)``, with no screening by association with ``Y`` (which favours
descendants of ``Y``).  The nested supports in that order are then scored by J tests
(GMM-BIC, grown until the J test accepts, pruned by t statistics at a ``sqrt(log n)``
rate; :func:`~negdro_stats.estimation.walk.select_support`), causes that only the pooled
regression sees are added, and pooled OLS or the invariance GMM is reported.

The J tests use ``q`` instruments with ``(|E| - 1) q^2 <= 2 n`` and
``m = (|E| - 1) q <= 3 sqrt(n)`` moment conditions (``n`` the smallest environment;
:func:`instrument_budget`): the estimated weights of ``q``-dimensional score
covariances distort J by about ``m q / n``, and the many-moment bias of GMM is of order
``m / n``, so the Hausman contrast, scaled by the information (order ``n``), is
distorted by about ``m^2 / n``; with ~100+ conditions at small ``n`` the J test
over-rejects and the continuously updated estimator drifts (its objective flattens as
``|b|`` grows).  All covariates when
``p`` is within the budget; beyond it, the first half of the pilot's order and then the
covariates whose second moments vary most across environments (a rule that does not
look at ``Y``).

Whether the environments decide
-------------------------------
A J test that accepts is not an identified answer: with mean shifts only, every small
support satisfies the few rank-one constraints.  So the invariance conditions on every
covariate, at the chosen fit, get a rank test (:func:`rank_test`): a direction of ``b``
whose information does not stand out of the sampling noise of the equations is *not
determined* by the environment differences (materially different coefficients along it
are accepted as well), and the covariates that load on it are named.  Then:

- if Condition 1b holds on the directions that the differences do determine (the data's
  form of Condition 4: a weighting dominates the average there, nothing varies
  elsewhere), NegDRO's own fit (Algorithm 3) identifies ``beta*`` provided every child
  of ``Y`` is among the intervened covariates (Theorem 6) -- an assumption the data
  cannot check, stated in the report (route ``"negdro"``);
- otherwise the fit is reported as *not identified*, with the covariates named.

In both cases the estimate is pooled OLS on the invariant support of least pooled risk
(:func:`~.least_risk.invariant_ols`: invariance tested at the OLS fit itself, which needs no
estimation from the weak differences) when one passes -- without Condition 4 on the
data only where that test is reliable (``m q <= n``).  Otherwise, with Condition 4 on
the data, Algorithm 3's fit; without it, the invariance fit when the J test accepts it
and its coefficients are sharply determined on its (non-empty) support (worst
standardised s.e. at most ``GATE_SE``), else Algorithm 3's: the minimiser of the DRO
objective (9), whose worst-case risk guarantee holds whether or not beta* is identified.
(Measured: Example 3 limited at n = 2,000 / 20,000, error 0.040 / 0.022 against
Algorithm 3's 0.21 / 0.056; mean shifts only at n = 2,000, 0.71 against 1.54; leaving
out one environment of eq. (33), worst held-out risk 2.28, Algorithm 3's 2.17, a weakly
determined invariance fit's 3.33.)

The stages, each a module: :mod:`.standardise` (the problem on standardised moments),
:mod:`.search` (the pilot, the instruments, the walk), :mod:`.rank` (which
directions the differences determine), :mod:`.least_risk` (Theorem 6's least-risk
invariant fit), :mod:`.choose` (the verdict) and :mod:`.pipeline` (:func:`solve`).
"""

from ..gmm import GATE_SE
from .choose import select_by_invariance
from .pipeline import solve
from .rank import RankTest, rank_test
from .search import instrument_budget, most_heterogeneous
from .standardise import centred_problem, exact_fit, standardised_cov

__all__ = ["solve", "select_by_invariance", "instrument_budget", "most_heterogeneous",
           "rank_test", "RankTest", "GATE_SE", "centred_problem", "standardised_cov",
           "exact_fit"]
