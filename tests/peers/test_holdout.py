"""Leave-one-environment-out validation (NegDRO.validate_loeo, negdro_stats.peers.holdout)."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from pandas.testing import assert_frame_equal

from negdro_stats import DataError, NegDRO, simulate
from negdro_stats.peers.holdout import LOEO_METHODS, LOEOResult

from ..helpers import child_shift_sem


@pytest.fixture(scope="module")
def eq33_frame():
    return simulate.eq33(p=6).sample(300, rng=5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_negdro_worst_held_out_risk_beats_pooled_ols(seed):
    sem = child_shift_sem()
    df = sem.sample(500, rng=seed)
    loeo = NegDRO(df, env="env", outcome="Y").validate_loeo(methods=["negdro", "erm"],
                                                            verbose=False)
    worst = loeo.summary().loc["worst"]
    assert worst["negdro"] < worst["erm"]
    assert loeo.worst_env["erm"] == 4                         # the unseen child shift
    assert not loeo.notes


def test_shapes_labels_and_copies(eq33_frame):
    before = eq33_frame.copy()
    loeo = NegDRO(eq33_frame, env="env", outcome="Y").validate_loeo(verbose=False)
    assert isinstance(loeo, LOEOResult)
    assert loeo.risks.index.tolist() == [1, 2, 3, 4]
    assert loeo.risks.index.name == "held_out"
    assert loeo.risks.columns.tolist() == list(LOEO_METHODS)
    assert loeo.nobs.tolist() == [300] * 4
    assert loeo.summary().index.tolist() == ["worst", "mean", "folds"]
    assert_allclose(loeo.summary().loc["worst"], loeo.risks.max())
    assert_allclose(loeo.summary().loc["mean"], loeo.risks.mean())
    assert all(loeo.risks.loc[e, m] == loeo.risks[m].max() for m, e in loeo.worst_env.items())
    frame = loeo.to_frame()
    frame.iloc[0, 0] = -1.0
    assert loeo.risks.iloc[0, 0] != -1.0
    assert_frame_equal(eq33_frame, before)
    text = str(loeo)
    assert "held-out mean squared error" in text and "worst" in text
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
    folds = loeo.summary().loc["folds"]                   # fewer folds, said in the table
    assert (folds == (~missing).sum()).all() and folds.min() < len(loeo.risks)
    complete = loeo.risks.max()[~missing.any()]           # repr ranks complete methods only
    assert repr(loeo).endswith(f"lowest worst-case risk: {complete.idxmin()}>")


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
    assert isinstance(loeo.risks, pd.DataFrame) and loeo.risks.shape == (4, 1)
