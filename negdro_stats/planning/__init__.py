"""The stage before an experiment: a planned linear SEM and its interventions
(:mod:`.design`: :class:`LinearSEM`, Conditions 1b, 4 and 6 on its population moments,
intervention advice), the paper's named designs and random ones (:mod:`.simulate`), and
how many rows the experiment needs (:mod:`.sample_size`: :func:`plan_sample_size`).

Imports the foundations and every stage of a fit (a plan simulates fits); nothing but
the model's users and the top level imports it.
"""

from . import simulate
from .design import DesignReport, Intervention, InterventionAdvice, LinearSEM
from .sample_size import SamplePlan, cumulant_noise, plan_sample_size, sample_moments

__all__ = ["LinearSEM", "Intervention", "InterventionAdvice", "DesignReport", "simulate",
           "plan_sample_size", "SamplePlan", "cumulant_noise", "sample_moments"]
