"""Parquet and Dask sources, and resampling from block moments (no rows needed)."""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from negdro_stats import NegDRO, simulate
from negdro_stats.data.container import MultiEnvData

pytest.importorskip("pyarrow")

FIELDS = ("n", "mean_x", "mean_y", "Sigma", "sxy", "syy")


@pytest.fixture(scope="module")
def frame():
    df = simulate.eq33(p=6).sample(3000, rng=11)
    return df.sample(frac=1.0, random_state=0).reset_index(drop=True)   # envs interleaved


@pytest.fixture(scope="module")
def parquet_dir(frame, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pq")
    bounds = np.linspace(0, len(frame), 4).astype(int)
    for k in range(3):                                           # three files
        frame.iloc[bounds[k]:bounds[k + 1]].to_parquet(folder / f"part{k}.parquet",
                                                       row_group_size=1000)
    return folder


def _same_moments(a, b, rtol=1e-10):
    assert a.envs == b.envs and a.names == b.names
    for f in FIELDS:
        assert_allclose(getattr(a, f), getattr(b, f), rtol=rtol, atol=1e-12)


def test_parquet_moments_equal_in_memory(frame, parquet_dir):
    memory = MultiEnvData.from_frame(frame, "env", outcome="Y", blocks=50)
    for source in (str(parquet_dir), str(parquet_dir / "*.parquet")):
        pq = MultiEnvData.from_parquet(source, "env", outcome="Y", batch_rows=700)
        _same_moments(pq.moments, memory.moments)
        assert_allclose(pq.blocks.n, memory.blocks.n)                # the same blocks
        assert_allclose(pq.blocks.m2, memory.blocks.m2, rtol=1e-8, atol=1e-8)


def test_fits_intervals_and_diagnostics_agree_across_sources(frame, parquet_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = NegDRO(frame, env="env", outcome="Y", blocks=50)
        b = NegDRO.from_parquet(str(parquet_dir), "env", outcome="Y")
        ra, rb = (m.fit(n_boot=30, rng=1, n_jobs=1) for m in (a, b))
    assert_allclose(rb.params, ra.params, rtol=1e-8, atol=1e-10)
    # replicates refit by CUE (L-BFGS-B, default gtol 1e-5): inputs that differ by merge
    # rounding (1e-14) end within the optimiser's precision of each other
    assert_allclose(rb.conf_int(), ra.conf_int(), rtol=0, atol=1e-5)
    da, db = (m.diagnose(n_boot=9, n_perm=9, rng=2, results=r)
              for m, r in ((a, ra), (b, rb)))
    assert_allclose(db.margin_lcb, da.margin_lcb, rtol=1e-6)
    assert db.perm_pvalue == da.perm_pvalue
    assert_allclose(db.invariance.statistic, da.invariance.statistic, rtol=1e-6)


def test_block_bootstrap_is_a_bootstrap(frame):
    """Block intervals cover beta* on eq. (33) and have the width of row intervals."""
    sem = simulate.eq33(p=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = NegDRO(frame, env="env", outcome="Y").fit(n_boot=100, rng=0, n_jobs=1)
        blocks = NegDRO(frame, env="env", outcome="Y", blocks=50).fit(n_boot=100, rng=0,
                                                                      n_jobs=1)
    ci = blocks.conf_int()
    causes = sem.beta_star != 0
    assert ((ci["lower"] <= sem.beta_star + 1e-9) & (sem.beta_star - 1e-9 <= ci["upper"]))[
        causes].all()
    ratio = blocks.bse[causes] / rows.bse[causes]
    assert ((0.6 < ratio) & (ratio < 1.6)).all()


def test_dask_on_a_local_cluster_equals_in_memory(frame):
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    memory = MultiEnvData.from_frame(frame, "env", outcome="Y", blocks=50)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        ddf = dd.from_pandas(frame, npartitions=5)
        data = MultiEnvData.from_dask(ddf, "env", outcome="Y")
        model = NegDRO.from_dask(ddf, "env", outcome="Y")
    _same_moments(data.moments, memory.moments)
    assert_allclose(data.blocks.m2, memory.blocks.m2, rtol=1e-8, atol=1e-8)
    assert model.data.can_resample and not model.data.has_rows


def test_offsets_of_1e9_keep_moments_accurate(tmp_path):
    """Raw moments of a column 1e9 + N(0, 1) to 1e-8 relative, accumulated in chunks and
    blocks; such a column cannot be fitted on raw moments (its variation is below the
    rounding of E[X^2]), and a Parquet fit says so instead of calling it anything else."""
    from negdro_stats import DataError
    from negdro_stats.data.blocks import BlockAccumulator

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"Y": rng.normal(size=4000), "X1": 1e9 + rng.normal(size=4000),
                       "X2": rng.normal(size=4000), "env": np.repeat([0, 1], 2000)})
    acc = BlockAccumulator(p=2, n_blocks=20)
    for start in range(0, 4000, 333):
        part = df.iloc[start:start + 333]
        acc.add(part[["X1", "X2"]], part["Y"], part["env"])
    mom = acc.finish(names=["X1", "X2"]).moments()
    x = df.X1.to_numpy()
    for e in (0, 1):
        xe = x[df.env.to_numpy() == e]
        exact = 1e18 + 2e9 * (xe - 1e9).mean() + ((xe - 1e9) ** 2).mean()
        assert_allclose(mom.Sigma[e, 0, 0], exact, rtol=1e-8)
        assert_allclose(mom.mean_x[e, 0] - 1e9, (xe - 1e9).mean(), atol=1e-6)
    df.to_parquet(tmp_path / "d.parquet", row_group_size=333)
    with pytest.raises(DataError, match="subtract a large offset"):
        MultiEnvData.from_parquet(str(tmp_path / "d.parquet"), "env", batch_rows=250)


def test_parquet_errors(tmp_path, frame):
    from negdro_stats import DataError

    with pytest.raises(DataError, match="No Parquet files"):
        MultiEnvData.from_parquet(str(tmp_path / "none*.parquet"), "env")
    frame.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(DataError, match="env='site' is not a column"):
        NegDRO.from_parquet(str(tmp_path / "d.parquet"), "site")
    bad = frame.copy()
    bad.loc[5, "X2"] = np.nan
    bad.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(DataError, match="NaN"):
        NegDRO.from_parquet(str(tmp_path / "bad.parquet"), "env")
    with pytest.warns(match="Dropped 1 of 12000 rows"):
        NegDRO.from_parquet(str(tmp_path / "bad.parquet"), "env", missing="drop")


def test_small_environments_resample_their_non_empty_blocks(frame):
    """An environment with fewer rows than blocks leaves blocks empty: replicates draw
    among the non-empty ones (no 0/0 moments); fewer than two non-empty blocks is refused."""
    small = pd.concat([frame[frame.env != 4], frame[frame.env == 4].head(6)])
    data = MultiEnvData.from_frame(small, "env", outcome="Y", blocks=50)
    assert (data.blocks.n[-1] > 0).sum() <= 6
    rng = np.random.default_rng(0)
    for _ in range(20):
        for mom in (data.resample(rng), data.permute(rng)):
            assert np.isfinite(mom.Sigma).all() and (mom.n > 0).all()
    from negdro_stats import DataError
    from negdro_stats.data.moments import block_of

    rest, two = frame[frame.env != 4], frame[frame.env == 4].head(2)
    drawn = block_of(np.arange(len(rest), len(rest) + 200), 50)   # the tail's blocks
    k = 1 + int(np.flatnonzero(drawn[1:] == drawn[0])[0])          # a position sharing it
    filler = rest.head(k - 1)                                      # (other environments)
    one_block = pd.concat([rest, two.iloc[:1], filler, two.iloc[1:]])
    with pytest.raises(DataError, match="fewer than 2 non-empty blocks"):
        MultiEnvData.from_frame(one_block, "env", outcome="Y", blocks=50)


def test_point_estimates_do_not_depend_on_the_source(tmp_path):
    """Rows, in-memory blocks (even few) and Parquet give the same fit to rounding: every
    source carries the rows' fourth moments, which is all the selection takes from the
    rows (found by a newcomer's review: from_parquet chose 4 covariates and 8 blocks the
    Phi_mu route when the score covariance came from blocks; then, with the Gaussian form
    without rows, the estimates agreed only to 1e-3)."""
    df = simulate.eq33(p=10).sample(2000, rng=0)
    df.iloc[:4000].to_parquet(tmp_path / "a.parquet")
    df.iloc[4000:].to_parquet(tmp_path / "b.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
        fits = [NegDRO(df, env="env", outcome="Y", blocks=8).fit(n_boot=0),
                NegDRO.from_parquet(str(tmp_path / "*.parquet"), "env", outcome="Y").fit(
                    n_boot=0)]
    for res in fits:
        assert (res.support == rows.support).all() and res.solver.refit == rows.solver.refit
        assert_allclose(res.params, rows.params, rtol=1e-8, atol=1e-10)


def test_blocks_do_not_depend_on_how_rows_are_split():
    """One call with 60,000 rows (sliced inside for the cache) and 7 uneven calls give the
    same blocks; blocks drawn from the rows' positions are uniform, and identical rows
    spread over them like any others (a hash of the values put them in one block)."""
    from scipy import stats

    from negdro_stats.data.blocks import BlockAccumulator
    from negdro_stats.data.moments import block_of

    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(60_000, 3)), rng.normal(size=60_000)
    labels = rng.choice(["a", "b", "c"], size=60_000)
    whole, parts = BlockAccumulator(p=3, n_blocks=40), BlockAccumulator(p=3, n_blocks=40)
    whole.add(X, y, labels)
    for rows in np.array_split(np.arange(60_000), [5, 9_000, 9_001, 30_000, 41_234, 59_999]):
        parts.add(X[rows], y[rows], labels[rows])
    a, b = whole.finish(names=["x1", "x2", "x3"]), parts.finish(names=["x1", "x2", "x3"])
    assert a.envs == b.envs == ("a", "b", "c")
    assert_allclose(a.n, b.n)
    assert_allclose(a.mean, b.mean, rtol=1e-10, atol=1e-12)
    assert_allclose(a.m2, b.m2, rtol=1e-10, atol=1e-10)
    n = 100_000
    for seed in (0, 1, 7):
        counts = np.bincount(block_of(np.arange(n), 50, seed), minlength=50)
        assert stats.chisquare(counts).pvalue > 1e-3
    same = BlockAccumulator(p=1, n_blocks=40)
    same.add(np.ones((4000, 1)), np.zeros(4000), np.zeros(4000, dtype=int))
    counts = same.finish(names=["x"]).n[0]
    assert (counts > 0).all() and stats.chisquare(counts).pvalue > 1e-3


def test_parquet_schemas_are_unified_and_checked_up_front(tmp_path):
    """Every file is checked before the pass: a covariate missing from any file, labels of
    different types, a CSV among the files and batch_rows=0 are one DataError naming the
    file and column; an int64 column that is float64 in another file is read as float64
    (ArrowInvalid before); pandas' index columns are not covariates."""
    from negdro_stats import DataError

    df = simulate.eq33(p=5).sample(300, rng=0)
    ints = df.iloc[:600].copy()
    ints["X1"] = ints["X1"].round().astype("int64")
    whole = pd.concat([ints, df.iloc[600:]])
    folder = tmp_path / "mixed"
    folder.mkdir()
    ints.to_parquet(folder / "a.parquet")
    df.iloc[600:].sample(frac=1.0, random_state=0).to_parquet(folder / "b.parquet")  # index
    data = MultiEnvData.from_parquet(str(folder), "env", outcome="Y")
    memory = MultiEnvData.from_frame(whole, "env", outcome="Y")
    assert data.moments.names == memory.moments.names == ("X1", "X2", "X3", "X4", "X5")
    _same_moments(data.moments, memory.moments, rtol=1e-9)

    (folder / "notes.csv").write_text("env,Y\n1,2\n")
    with pytest.raises(DataError, match="notes.csv' is not a Parquet file"):
        MultiEnvData.from_parquet(str(folder), "env", outcome="Y")
    (folder / "notes.csv").unlink()
    with pytest.raises(ValueError, match="'batch_rows' parameter"):
        MultiEnvData.from_parquet(str(folder), "env", outcome="Y", batch_rows=0)

    short = tmp_path / "short"
    short.mkdir()
    df.iloc[:600].drop(columns="X3").to_parquet(short / "a.parquet")
    df.iloc[600:].to_parquet(short / "b.parquet")
    with pytest.raises(DataError, match=r"a.parquet' has no column\(s\) \['X3'\]"):
        MultiEnvData.from_parquet(str(short), "env", outcome="Y")
    labels = tmp_path / "labels"
    labels.mkdir()
    df.iloc[:600].to_parquet(labels / "a.parquet")
    df.iloc[600:].astype({"env": str}).to_parquet(labels / "b.parquet")
    with pytest.raises(DataError, match="different types across the Parquet files"):
        MultiEnvData.from_parquet(str(labels), "env", outcome="Y")


def test_dropped_rows_leave_the_same_blocks_in_memory_and_in_parquet(frame, tmp_path):
    """With missing='drop' the blocks are drawn from the positions among all rows, in
    memory as in Parquet, so both give the same blocks."""
    holes = frame.copy()
    holes.loc[holes.index[::97], "X2"] = np.nan
    holes.iloc[:1500].to_parquet(tmp_path / "a.parquet")
    holes.iloc[1500:].to_parquet(tmp_path / "b.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = MultiEnvData.from_frame(holes, "env", outcome="Y", blocks=50,
                                         missing="drop")
        pq = MultiEnvData.from_parquet(str(tmp_path), "env", outcome="Y", missing="drop",
                                       batch_rows=700)
    assert_allclose(pq.blocks.n, memory.blocks.n)
    assert_allclose(pq.blocks.m2, memory.blocks.m2, rtol=1e-8, atol=1e-8)


def test_resampling_runs_on_the_cluster_with_the_local_draws(frame, monkeypatch):
    """With a dask.distributed client active, the bootstrap's and diagnose()'s replicates
    are the cluster's tasks (by default, and with n_jobs='dask'; the task stream shows one
    per replicate), from block moments only, and their draws are bit-identical to one
    local worker's; n_jobs='dask' with no client is a DataError that says what to do, a
    malformed n_jobs an error that names the argument."""
    from negdro_stats import DataError

    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    monkeypatch.delenv("NEGDRO_N_JOBS", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            model = NegDRO.from_dask(dd.from_pandas(frame, npartitions=3), "env",
                                     outcome="Y")
            res = model.fit(n_boot=0)
            with distributed.get_task_stream(client) as stream:
                boot = res.run_bootstrap(12, rng=4)
                report = model.diagnose(n_boot=5, n_perm=5, rng=2, results=res,
                                        n_jobs="dask")
            ran = [task for task in stream.data if "cluster_job" in str(task["key"])]
        local = model.fit(n_boot=0).run_bootstrap(12, rng=4, n_jobs=1)
        local_report = model.diagnose(n_boot=5, n_perm=5, rng=2, results=res, n_jobs=1)
        assert len(ran) == 12 + 10
        np.testing.assert_array_equal(boot.draws, local.draws)
        assert str(report) == str(local_report)
        with pytest.raises(DataError, match="needs an active dask.distributed client"):
            model.fit(n_boot=0).run_bootstrap(3, n_jobs="dask")
        with pytest.raises(ValueError, match="'n_jobs' parameter of NegDRO.fit must be an "
                           "int in the range"):
            model.fit(n_boot=2, n_jobs="many")
