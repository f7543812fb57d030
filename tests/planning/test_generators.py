"""The simulated families keep their promises.  The misspecified ones of issue 67: the
training environments shift the named parents, the held-out ones leave every parent as
in the first environment, and there OLS on the parents keeps its accuracy where OLS on
every covariate loses it.  random_sem's sparse shifts (issue 68): every child of Y
shifted, few others."""

import numpy as np
import pytest

from negdro_stats import simulate


def _ols(train, names):
    X = np.column_stack([train[names].to_numpy(), np.ones(len(train))])
    return np.linalg.lstsq(X, train["Y"].to_numpy(), rcond=None)[0]


def _worst_r2(b, frame, names):
    r2 = []
    for _, env in frame.groupby("env"):
        X = np.column_stack([env[names].to_numpy(), np.ones(len(env))])
        r2.append(1 - np.mean((env["Y"].to_numpy() - X @ b) ** 2) / np.var(env["Y"]))
    return min(r2)


@pytest.mark.parametrize("family", [simulate.shifted_parents_sensors, simulate.light_tunnel])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_held_out_environments_shift_only_non_parents(family, seed):
    train, held_out, facts = family(5000, seed=seed)
    parents = facts["parents"]
    names = [c for c in train.columns if c.startswith("X")]
    first = train[train["env"] == 0]
    spread = first[parents].std()
    for _, env in held_out.groupby("env"):          # parents as in the first environment
        assert (np.abs(env[parents].mean() - first[parents].mean()) < 0.1 * spread).all()
    shifted = facts["shifted"]                  # each moved in some training environment
    by_env = train.groupby("env")[shifted]
    mean_moves = (by_env.mean() - first[shifted].mean()).abs() / first[shifted].std()
    spread_moves = np.abs(np.log(by_env.std() / first[shifted].std()))
    assert ((mean_moves > 0.5) | (spread_moves > 0.3)).any().all()
    causal, everything = _ols(train, parents), _ols(train, names)
    assert _worst_r2(causal, held_out, parents) > 0.3
    assert _worst_r2(everything, held_out, names) < _worst_r2(causal, held_out, parents) - 0.2


def test_sparse_shifts_shift_every_child_of_y_and_few_others():
    """``shift_children=True`` adds Y's children to the share ``intervened`` of shifted
    covariates and changes no other draw; Condition 4's children part then holds."""
    plain = simulate.random_sem(300, n_envs=4, n_parents=6, n_children=5, intervened=0.05,
                                rng=1)
    sparse = simulate.random_sem(300, n_envs=4, n_parents=6, n_children=5, intervened=0.05,
                                 shift_children=True, rng=1)
    assert np.array_equal(plain.B, sparse.B)
    report = sparse.check_identification()
    assert set(report.D) <= set(report.S_L) and not set(plain.check_identification().D) <= set(
        plain.check_identification().S_L)
    assert len(report.S_L) <= 0.1 * 300 and "4" in report.routes
