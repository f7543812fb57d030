"""Moments: one pass in chunks equals the direct computation; transforms."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from negdro_stats import MomentAccumulator, Moments, NegDRO, simulate


@pytest.fixture
def rows():
    rng = np.random.default_rng(3)
    n, p = 1000, 4
    X = rng.normal(size=(n, p)) + rng.integers(0, 3, size=(n, 1))
    y = X @ np.arange(1.0, p + 1) + rng.normal(size=n)
    env = rng.choice(["b", "a", "c"], size=n)
    return X, y, env


def test_from_arrays_matches_direct(rows):
    X, y, env = rows
    mom = Moments.from_arrays(X, y, env, chunk_rows=97)
    assert mom.envs == ("a", "b", "c")
    for k, lab in enumerate(mom.envs):
        Xe, ye = X[env == lab], y[env == lab]
        assert mom.n[k] == len(ye)
        assert_allclose(mom.Sigma[k], Xe.T @ Xe / len(ye), rtol=1e-12)
        assert_allclose(mom.sxy[k], Xe.T @ ye / len(ye), rtol=1e-12)
        assert_allclose(mom.syy[k], ye @ ye / len(ye), rtol=1e-12)
        assert_allclose(mom.mean_x[k], Xe.mean(0), rtol=1e-12)


def test_chunk_size_does_not_matter(rows):
    X, y, env = rows
    a = Moments.from_arrays(X, y, env, chunk_rows=1000)
    b = Moments.from_arrays(X, y, env, chunk_rows=13)
    assert_allclose(a.Sigma, b.Sigma, rtol=1e-12)


def test_accumulator_streams(rows):
    X, y, env = rows
    codes = np.searchsorted(["a", "b", "c"], env)
    acc = MomentAccumulator(p=X.shape[1], n_envs=3)
    for s in range(0, len(y), 250):
        acc.add(X[s:s + 250], y[s:s + 250], codes[s:s + 250])
    mom = acc.finish(envs=("a", "b", "c"), names=list("abcd"))
    assert_allclose(mom.Sigma, Moments.from_arrays(X, y, env).Sigma, rtol=1e-12)


def test_add_constant_and_rescale(rows):
    X, y, env = rows
    mom = Moments.from_arrays(X, y, env)
    one = Moments.from_arrays(np.column_stack([X, np.ones(len(y))]), y, env)
    assert_allclose(mom.add_constant().Sigma, one.Sigma, rtol=1e-12)
    d, s = mom.scales()
    std = mom.rescale(d, s)
    assert_allclose(np.einsum("ejj->j", std.Sigma) / 3, 1.0)
    assert_allclose(std.syy.mean(), 1.0)


def test_a_subset_of_environments_is_their_own_moments(rows):
    """Moments.environments(keep) equals the moments of those environments' rows, their
    fourth moments (score covariances) included."""
    X, y, env = rows
    mom = Moments.from_arrays(X, y, env)
    part = mom.environments([2, 0])
    rows_of = np.isin(env, ["c", "a"])
    direct = Moments.from_arrays(X[rows_of], y[rows_of], env[rows_of])
    order = [1, 0]                                   # direct's envs are ("a", "c")
    assert part.envs == ("c", "a")
    for field in ("n", "mean_x", "mean_y", "Sigma", "sxy", "syy", "cov"):
        assert_allclose(getattr(part, field), getattr(direct, field)[order], rtol=1e-12)
    b = np.array([0.5, -1.0, 0.2, 0.0])
    assert_allclose(part.fourth.score_cov(b, np.arange(4)),
                    direct.fourth.score_cov(b, np.arange(4))[order], rtol=1e-10)


def test_offsets_keep_their_variance():
    """Centred accumulation merged exactly (Chan et al.): a covariate 1e5 + N(0, 1) keeps
    its variance to 1e-5 relative through raw moments (rounding of E[X^2] ~ 1e10 only),
    whatever the chunking (raw sums of squares lost ~1e-4); a fit on ``x + 1e7`` does not
    call it constant."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 2)) + [1e5, 0.0]
    y = X[:, 1] + rng.normal(size=5000)
    env = np.repeat([0, 1], 2500)
    for chunk in (97, 5000):
        mom = Moments.from_arrays(X, y, env, chunk_rows=chunk)
        var = mom.Sigma[:, 0, 0] - mom.mean_x[:, 0] ** 2
        truth = [X[env == e, 0].var() for e in (0, 1)]
        np.testing.assert_allclose(var, truth, rtol=1e-5)
    df = simulate.eq33(p=5).sample(500, rng=1)
    res = NegDRO(df.assign(X2=df.X2 + 1e7), env="env", outcome="Y").fit(n_boot=0)
    assert np.isfinite(res.params).all()


def test_with_outcome_and_blocks_are_the_matrix_forms(rows):
    """``with_outcome`` changes only the outcome's row and column (the O(p^2) form against
    ``T E[Z Z^T] T^T``); ``block`` is the fancy index, C-ordered."""
    from dataclasses import replace

    from negdro_stats.data.fourth import block

    X, y, env = rows
    mom = Moments.from_arrays(X, y, env)
    u = np.array([0.5, -1.0, 0.0, 2.0, 0.3])
    T = np.eye(5)
    T[4] = u
    moved = mom.with_outcome(u)
    raw = T @ mom._raw_z() @ T.T
    assert_allclose(moved.sxy, raw[:, :4, 4], rtol=1e-12)
    assert_allclose(moved.syy, raw[:, 4, 4], rtol=1e-12)
    assert_allclose(moved.cov, T @ mom.cov @ T.T, rtol=1e-12, atol=1e-12)
    S = np.array([3, 0, 2])
    sub = block(mom.Sigma, S, S)
    assert sub.flags["C_CONTIGUOUS"] and np.array_equal(sub, mom.Sigma[:, S][:, :, S])
    assert block(mom.Sigma, np.arange(4), slice(None)).flags["C_CONTIGUOUS"]
    # a transform that forgets the covariances is caught; rounding is not
    with pytest.raises(ValueError, match="does not match the raw moments"):
        replace(mom, mean_x=mom.mean_x + 1.0)
    bent = mom.Sigma.copy()
    bent[1, 0, 2] = bent[1, 2, 0] = bent[1, 0, 2] + 1e-4
    with pytest.raises(ValueError, match="does not match the raw moments"):
        replace(mom, Sigma=bent)
    replace(mom, Sigma=mom.Sigma * (1.0 + 1e-13))


def test_inverse_of_positive_definite_and_semidefinite_stacks():
    """``inv_psd``: the inverse from LAPACK's Cholesky factor at any size, the
    pseudo-inverse of a semidefinite member only, and empty stacks."""
    from negdro_stats.estimation import inv_psd

    rng = np.random.default_rng(0)
    for q in (3, 80):
        A = rng.normal(size=(3, q, 2 * q))
        A = A @ A.transpose(0, 2, 1)
        A[2] = A[2] - np.outer(A[2][0], A[2][0]) / A[2][0, 0]   # rank q - 1
        inv = inv_psd(A)
        assert_allclose(inv[:2] @ A[:2], np.broadcast_to(np.eye(q), (2, q, q)), atol=1e-8)
        assert_allclose(inv[2], np.linalg.pinv(A[2], hermitian=True), rtol=1e-6, atol=1e-8)
        assert_allclose(inv, inv.transpose(0, 2, 1), rtol=0, atol=1e-12 * np.abs(inv).max())
    assert inv_psd(np.zeros((2, 0, 0))).shape == (2, 0, 0)


def test_rows_by_environment_are_slices_where_sorted_and_masks_otherwise():
    """The chunk passes' split (data.moments.by_environment): the environments present,
    in order, as slices of a chunk sorted by code (no copy of its rows), as masks of
    one that is not; nothing for an empty chunk."""
    from negdro_stats.data.moments import by_environment

    assert list(by_environment(np.array([0, 0, 1, 1, 3]))) == [
        (0, slice(0, 2)), (1, slice(2, 4)), (3, slice(4, 5))]
    assert list(by_environment(np.array([2], dtype=np.uint8))) == [(2, slice(0, 1))]
    assert list(by_environment(np.array([], dtype=int))) == []
    split = [(e, rows.tolist()) for e, rows in by_environment(np.array([1, 0, 1]))]
    assert split == [(0, [False, True, False]), (1, [True, False, True])]
