"""Leave-one-environment-out validation (NegDRO.validate_loeo, negdro_stats.peers.holdout)."""

import html

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from pandas.testing import assert_frame_equal

from negdro_stats import DataError, NegDRO, simulate
from negdro_stats.identification import check_condition_1b
from negdro_stats.peers.holdout import (
    LOEO_METHODS,
    LOEOResult,
    LOEOSummary,
    leave_one_environment_out,
)
from negdro_stats.planning.design import Intervention, LinearSEM

from ..helpers import child_shift_sem


@pytest.fixture(scope="module")
def eq33_frame():
    return simulate.eq33(p=6).sample(300, rng=5)


def shifted_sem(seed: int, *, child_shift: bool, p: int = 6) -> LinearSEM:
    """A random SEM (two parents and two children of Y) in three environments: 1
    observational, 2 shifting the covariates other than Y's children (variance 1), 3
    shifting them with variance 4 and, with ``child_shift``, the children too.  Without
    environment 3 the children are never shifted, so the training environments do not
    identify beta* (without ``child_shift``, no fold's do)."""
    base = simulate.random_sem(p, n_envs=3, n_parents=2, n_children=2, rng=seed)
    child = np.isin(np.arange(p), base.D)
    ivs = [Intervention(np.zeros(p), var * np.diag(np.where(
        child & ~(child_shift and k == 2), 0.0, 1.0))) for k, var in enumerate((0.0, 1.0, 4.0))]
    return LinearSEM(base.B, base.Omega, ivs)


def identified_in_population(sem: LinearSEM) -> list[bool]:
    """Per held-out environment, Condition 1b on the population moments of the others."""
    mom = sem.moments()
    E = mom.n_envs
    return [check_condition_1b(mom.environments([k for k in range(E) if k != e])).holds
            for e in range(E)]


def over(loeo: LOEOResult, folds: str, stat: str) -> pd.Series:
    return loeo.summary().table.loc[(folds, stat)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_negdro_worst_held_out_risk_beats_pooled_ols(seed):
    """Every three environments of child_shift_sem identify beta*: every fold can judge,
    and NegDRO's worst held-out risk is below pooled OLS's."""
    sem = child_shift_sem()
    df = sem.sample(500, rng=seed)
    loeo = NegDRO(df, env="env", outcome="Y").validate_loeo(methods=["negdro", "erm"],
                                                            verbose=False)
    assert identified_in_population(sem) == [True] * 4
    assert loeo.verdicts.tolist() == ["identified"] * 4 and loeo.identified.all()
    worst = over(loeo, "identified folds", "worst")
    assert_allclose(worst, over(loeo, "all folds", "worst"))
    assert worst["negdro"] < worst["erm"]
    assert loeo.worst_env["erm"] == 4                         # the unseen child shift
    assert not loeo.notes
    assert loeo.summary().judgement == (
        "Every fold's training environments identify beta* (NegDRO's verdict), so each can "
        "judge a causal model; worst/mean held-out MSE: "
        + ", ".join(f"{m} {r.max():.4g}/{r.mean():.4g}" for m, r in loeo.risks.items()) + ".")


@pytest.mark.parametrize("seed", [0, 1])
def test_folds_without_the_child_shift_are_marked(seed):
    """Leaving out the one environment that shifts Y's children removes identification:
    that fold is marked (as Condition 1b on the population moments says), and the
    figures over the identified folds are those of the other two."""
    sem = shifted_sem(seed, child_shift=True)
    loeo = NegDRO(sem.sample(500, rng=seed), env="env", outcome="Y").validate_loeo(
        methods=["negdro", "erm"], verbose=False)
    assert identified_in_population(sem) == [True, True, False]
    assert loeo.identified.tolist() == [True, True, False]
    assert loeo.verdicts[3] in ("if Condition 4", "not identified")
    kept = loeo.risks.loc[[1, 2]]
    assert_allclose(over(loeo, "identified folds", "worst"), kept.max())
    assert_allclose(over(loeo, "identified folds", "mean"), kept.mean())
    assert over(loeo, "identified folds", "folds").tolist() == [2, 2]
    assert_allclose(over(loeo, "all folds", "worst"), loeo.risks.max())
    line = loeo.summary().judgement
    assert line == (
        "Only folds whose training environments identify beta* can judge a causal model: "
        f"2 of 3 (held out 1, 2); worst/mean held-out MSE over them: "
        f"negdro {kept['negdro'].max():.4g}/{kept['negdro'].mean():.4g}, "
        f"erm {kept['erm'].max():.4g}/{kept['erm'].mean():.4g} (all folds: "
        f"negdro {loeo.risks['negdro'].max():.4g}/{loeo.risks['negdro'].mean():.4g}, "
        f"erm {loeo.risks['erm'].max():.4g}/{loeo.risks['erm'].mean():.4g}).")
    assert "\n" not in line and line in str(loeo) and line in str(loeo.summary())
    frame = loeo.to_frame()
    assert frame.columns.tolist() == ["negdro", "erm", "identified", "verdict"]
    assert frame["identified"].tolist() == [True, True, False]
    assert repr(loeo) == "<LOEOResult: 3 environments, 2 methods, 2 folds identify beta*>"


def test_no_fold_identifies_cannot_tell():
    """The children are shifted in no environment: no fold can judge a causal model, and
    the summary says so, with the verdicts of NegDRO on the training environments."""
    sem = shifted_sem(0, child_shift=False)
    loeo = NegDRO(sem.sample(500, rng=0), env="env", outcome="Y").validate_loeo(
        methods="erm", verbose=False)                     # NegDRO fitted to mark the folds
    assert identified_in_population(sem) == [False] * 3
    assert not loeo.identified.any()
    assert set(loeo.verdicts) <= {"if Condition 4", "not identified"}
    summary = loeo.summary()
    assert over(loeo, "identified folds", "worst").isna().all()
    assert over(loeo, "identified folds", "folds").tolist() == [0]
    assert summary.judgement.startswith(
        "Cannot tell which model is causal from these held-out risks, because no fold's "
        "training environments identify beta* (NegDRO's verdict: ")
    erm = loeo.risks["erm"]
    assert summary.judgement.endswith(
        f"the worst/mean held-out MSE over all folds (erm {erm.max():.4g}/{erm.mean():.4g}) "
        "ranks predictions, not causal models.")
    assert "can judge a causal model" not in summary._repr_html_()
    assert "Cannot tell which model is causal" in summary._repr_html_()
    assert repr(loeo) == "<LOEOResult: 3 environments, 1 methods, 0 folds identify beta*>"


def test_a_failed_negdro_fold_is_not_identified(eq33_frame):
    """fit_negdro's contract: its results mark the fold; where it fails, the fold's
    verdict is "fit failed" (not identified), NegDRO's risk is NaN and a note says why."""
    model = NegDRO(eq33_frame, env="env", outcome="Y")
    fits = {}

    def fit_negdro(train):
        if 4 not in train.moments.envs:
            raise DataError("no fit without environment 4")
        fits[train.moments.envs] = NegDRO(train).fit(n_boot=0)
        return fits[train.moments.envs]

    loeo = leave_one_environment_out(model.data, fit_negdro, methods=["negdro", "erm"],
                                     verbose=False)
    assert loeo.verdicts[4] == "fit failed" and not loeo.identified[4]
    assert [loeo.verdicts[e] for e in (1, 2, 3)] == [
        fits[tuple(k for k in (1, 2, 3, 4) if k != e)].verdict for e in (1, 2, 3)]
    assert np.isnan(loeo.risks.loc[4, "negdro"]) and loeo.risks["erm"].notna().all()
    assert "negdro failed with environment 4 held out: no fit without environment 4" in (
        loeo.notes)


def test_shapes_labels_and_copies(eq33_frame):
    before = eq33_frame.copy()
    loeo = NegDRO(eq33_frame, env="env", outcome="Y").validate_loeo(verbose=False)
    assert isinstance(loeo, LOEOResult)
    assert loeo.risks.index.tolist() == [1, 2, 3, 4]
    assert loeo.risks.index.name == "held_out"
    assert loeo.risks.columns.tolist() == list(LOEO_METHODS)
    assert loeo.nobs.tolist() == [300] * 4
    summary = loeo.summary()
    assert isinstance(summary, LOEOSummary)
    assert summary.table.index.tolist() == [(f, s) for f in ("all folds", "identified folds")
                                            for s in ("worst", "mean", "folds")]
    assert_allclose(over(loeo, "all folds", "worst"), loeo.risks.max())
    assert_allclose(over(loeo, "all folds", "mean"), loeo.risks.mean())
    assert all(loeo.risks.loc[e, m] == loeo.risks[m].max() for m, e in loeo.worst_env.items())
    frame = loeo.to_frame()
    frame.iloc[0, 0] = -1.0
    assert loeo.risks.iloc[0, 0] != -1.0
    assert_frame_equal(eq33_frame, before)
    text = str(loeo)
    assert "held-out mean squared error" in text and "worst" in text
    assert str(summary) in text and html.escape(summary.judgement) in summary._repr_html_()
    assert repr(loeo).startswith("<LOEOResult: 4 environments, 5 methods")


def test_every_missing_risk_has_a_note(eq33_frame):
    """DRIG's objective is not convex on some folds (its reference environment is not
    dominated): those risks are NaN and the notes say why, never silently."""
    loeo = NegDRO(eq33_frame, env="env", outcome="Y").validate_loeo(verbose=False)
    missing = loeo.risks.isna()
    assert missing.to_numpy().any()
    for env, method in missing.stack()[missing.stack()].index:
        assert any(note.startswith(f"{method} failed with environment")
                   and repr(env) in note.split(" held out:")[0] for note in loeo.notes)
    assert len(loeo.notes) == len(set(loeo.notes))          # one note per method and reason
    folds = over(loeo, "all folds", "folds")              # fewer folds, said in the table
    assert (folds == (~missing).sum()).all() and folds.min() < len(loeo.risks)
    assert over(loeo, "identified folds", "folds").min() < loeo.identified.sum()


def test_held_out_risk_is_the_refit_on_the_other_rows_with_intercept():
    """ERM's column equals least squares (with an intercept column) on the other
    environments' rows, scored on the held-out rows, computed here by numpy."""
    df = simulate.eq33(p=5).sample(200, rng=3)
    df["Y"] += 4.0
    loeo = NegDRO(df, env="env", outcome="Y", fit_intercept=True).validate_loeo(
        methods=["erm", "negdro"], verbose=False)
    X = np.column_stack([df[[f"X{j}" for j in range(1, 6)]], np.ones(len(df))])
    y = df["Y"].to_numpy()
    for env in loeo.risks.index:
        held = (df["env"] == env).to_numpy()
        b = np.linalg.lstsq(X[~held], y[~held], rcond=None)[0]
        assert_allclose(loeo.risks.loc[env, "erm"], np.mean((y[held] - X[held] @ b) ** 2),
                        rtol=1e-8)
    assert loeo.risks["negdro"].notna().all()


def test_negdro_fold_uses_the_models_options(eq33_frame):
    """Solver options reach the folds: the paper's estimator (refit='negdro') differs
    from the default route on at least one fold."""
    model = NegDRO(eq33_frame, env="env", outcome="Y")
    default = model.validate_loeo(methods=["negdro"], verbose=False).risks
    paper = model.validate_loeo(methods=["negdro"], verbose=False, refit="negdro").risks
    assert not np.allclose(default, paper)


def test_errors(eq33_frame):
    model = NegDRO(eq33_frame, env="env", outcome="Y")
    with pytest.raises(DataError, match="needs the rows"):
        NegDRO.from_moments(model.moments).validate_loeo()
    two = eq33_frame[eq33_frame["env"].isin([1, 2])]
    with pytest.raises(DataError, match="at least 3 environments"):
        NegDRO(two, env="env", outcome="Y").validate_loeo()
    with pytest.raises(ValueError, match="Did you mean 'erm'"):
        model.validate_loeo(methods=["negdro", "ermm"])
    with pytest.raises(DataError, match="each method once"):
        model.validate_loeo(methods=["erm", "erm"])
    with pytest.raises(DataError, match="ICP fits its own intercept"):
        NegDRO(eq33_frame, env="env", outcome="Y", fit_intercept=True).validate_loeo(
            methods=["negdro", "icp"])
    with pytest.raises(ValueError, match="'max_iter' parameter"):
        model.validate_loeo(max_iter=-1)


def test_subset_enumerating_peers_when_named():
    df = simulate.eq33(p=5).sample(200, rng=2)
    loeo = NegDRO(df, env="env", outcome="Y").validate_loeo(methods=["icp", "eills"],
                                                            verbose=False)
    assert np.isfinite(loeo.risks.to_numpy()).all()


def test_string_labels_and_one_method():
    df = simulate.eq33(p=5).sample(100, rng=1)
    df["env"] = df["env"].map({1: "a", 2: "b", 3: "c", 4: "d"})
    loeo = NegDRO(df, env="env", outcome="Y").validate_loeo(methods="erm", verbose=False)
    assert loeo.risks.index.tolist() == ["a", "b", "c", "d"]
    assert loeo.verdicts.index.tolist() == ["a", "b", "c", "d"]
    assert isinstance(loeo.risks, pd.DataFrame) and loeo.risks.shape == (4, 1)
