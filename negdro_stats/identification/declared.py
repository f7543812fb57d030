"""What the experimenter knows and the data cannot show: covariates that are not
descendants of the outcome, and the targets of each environment's intervention.

Theorem 6 needs every child of ``Y`` intervened on (Condition 4: ``D`` inside ``S_L``).
The data determine the coefficients along the directions the environments shift; the
rest (the directions left open) the least pooled risk sets, and there the data cannot
tell a cause that no environment shifts from a child of ``Y`` that none shifts.  A
declaration settles it where every open direction lies among covariates declared not to
be descendants of ``Y`` (:meth:`SelectionReport.open_among
<negdro_stats.estimation.SelectionReport.open_among>`, read by
:func:`negdro_stats.results.verdicts.declared`); a declared target that the data leave
open contradicts the declaration in this sample (its intervention is not
seen: too few rows, or too weak a shift), and then nothing is settled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .._validation import did_you_mean, listed
from ..exceptions import DataError

__all__ = ["Declarations"]


def _names(value: object, what: str, owner: str, known: Sequence[str]) -> tuple[str, ...]:
    """``value`` as a tuple of known covariate names (one name, or a list of them)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Iterable) or isinstance(items, Mapping):
        raise DataError(f"The {what!r} argument of {owner} must be a list of covariate "
                        f"names; got {type(value).__name__}.")
    names = []
    for name in items:
        if name not in known:
            raise DataError(f"{what} names {name!r}, which is not a covariate of the data "
                            f"(the covariates are {listed(known)})."
                            f"{did_you_mean(name, known)}")
        if name not in names:
            names.append(str(name))
    return tuple(names)


@dataclass(frozen=True, slots=True)
class Declarations:
    """The experimenter's declarations (``NegDRO(..., not_descendants=, targets=)``).

    Attributes
    ----------
    not_descendants : tuple of str
        Covariates that are not descendants of the outcome (measured before it, or
        assigned by design): none of them is a child of ``Y``.
    targets : dict of environment label to tuple of str
        The covariates each environment intervenes on (``S_L`` of eq. (29) is their
        union); an environment not named intervenes on none that is declared.
    """

    not_descendants: tuple[str, ...] = ()
    targets: dict = field(default_factory=dict)

    @classmethod
    def from_user(cls, not_descendants: object, targets: object, *, names: Sequence[str],
                  envs: Sequence[object], owner: str) -> Declarations | None:
        """Checked declarations, or None where nothing is declared."""
        if not_descendants is None and targets is None:
            return None
        known = list(names)
        nd = () if not_descendants is None else _names(
            not_descendants, "not_descendants", owner, known)
        if targets is None:
            return cls(nd, {})
        if not isinstance(targets, Mapping):
            raise DataError(f"The 'targets' argument of {owner} must be a dict from an "
                            "environment label to the covariates that environment "
                            f"intervenes on, e.g. {{{envs[-1]!r}: [{known[0]!r}]}}; got "
                            f"{type(targets).__name__}.")
        labels = {str(e): e for e in envs}
        declared = {}
        for env, covariates in targets.items():
            label = env if env in list(envs) else labels.get(str(env), None)
            if label is None:
                raise DataError(f"targets names the environment {env!r}, which is not in "
                                f"the data; the environments are {listed(map(str, envs))}.")
            declared[label] = _names(covariates, f"targets[{env!r}]", owner, known)
        return cls(nd, declared)

    @property
    def intervened(self) -> tuple[str, ...]:
        """The declared targets of every environment (``S_L`` as declared)."""
        return tuple(dict.fromkeys(k for ks in self.targets.values() for k in ks))

    def contradicted(self, left_open: Sequence[str]) -> tuple[str, ...]:
        """Declared targets whose coefficient the environments leave open: the data do
        not show their intervention (a target's shift determines its coefficient)."""
        return tuple(name for name in self.intervened if name in left_open)

    def to_dict(self) -> dict:
        """Plain JSON values (environment labels as strings)."""
        return {"not_descendants": list(self.not_descendants),
                "targets": {str(e): list(ks) for e, ks in self.targets.items()}}

    def describe(self) -> str:
        """The declarations in a few words (the summary's RESTS ON line)."""
        said = []
        if self.not_descendants:
            one = len(self.not_descendants) == 1
            said.append(f"{listed(self.not_descendants, 5)} "
                        f"{'is not a descendant' if one else 'are not descendants'} of the "
                        "outcome")
        if self.targets:
            said.append("the environments intervene on "
                        + "; ".join(f"{listed(ks, 5)} ({e})" for e, ks in self.targets.items()))
        return " and ".join(said)
