"""Bootstrap: reproducibility, intervals, selection frequency, edge cases."""

import os
import re
import sys
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from negdro_stats import BootstrapFailureWarning, IdentificationWarning, NegDRO, simulate


@pytest.fixture(scope="module")
def model():
    return NegDRO(simulate.eq33(p=6).sample(2000, rng=3), env="env", outcome="Y")


def test_same_seed_same_draws(model, monkeypatch, forking):
    """The same seed gives the same replicates, in one process, in forked processes
    and in threads (where processes cannot be forked)."""
    from negdro_stats import _resampling

    a = model.fit(n_boot=20, rng=7, n_jobs=1)
    b = model.fit(n_boot=20, rng=7, n_jobs=1)
    np.testing.assert_array_equal(a.bootstrap.draws, b.bootstrap.draws)
    forked = []
    fork = _resampling.ProcessPoolExecutor
    monkeypatch.setattr(_resampling, "ProcessPoolExecutor",
                        lambda *a, **k: forked.append(1) or fork(*a, **k))
    c = model.fit(n_boot=20, rng=7, n_jobs=2)          # processes: the same replicates
    assert forked
    np.testing.assert_array_equal(c.bootstrap.draws, a.bootstrap.draws)
    assert (c.bootstrap.selected == a.bootstrap.selected).all()
    monkeypatch.setattr(_resampling, "can_fork", lambda: False)
    c = model.fit(n_boot=20, rng=7, n_jobs=2)          # threads: same replicates
    assert len(forked) == 1
    assert_allclose(c.bootstrap.draws, a.bootstrap.draws, rtol=1e-10, atol=1e-12)
    d = model.fit(n_boot=20, rng=8, n_jobs=1)
    assert not np.array_equal(d.bootstrap.draws, a.bootstrap.draws)


def test_a_loop_within_a_job_runs_in_its_process(forking):
    """map_jobs forks once: a loop inside a forked job is serial (no processes of
    processes), and each job's results come back in order."""
    from negdro_stats._resampling import map_jobs

    nested = map_jobs(lambda k: (os.getpid(), map_jobs(lambda i: (os.getpid(), k * i), 3,
                                                       n_jobs=2)), 4, n_jobs=2)
    assert [[v for _, v in inner] for _, inner in nested] == [[0, k, 2 * k] for k in range(4)]
    assert all({pid for pid, _ in inner} == {outer} for outer, inner in nested)
    assert os.getpid() not in {outer for outer, _ in nested}


def test_workers_fall_back_to_one_job_where_the_system_refuses_processes(forking,
                                                                         monkeypatch):
    """No shared memory for the pool's locks (a read-only /dev/shm) or no process left
    (EAGAIN): the loop runs in this process, and the next one may fork again."""
    from negdro_stats import _resampling

    def refused(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(_resampling, "ProcessPoolExecutor", refused)
    assert _resampling.map_jobs(lambda k: k * k, 5, n_jobs=2) == [0, 1, 4, 9, 16]
    assert _resampling._TASK is None


def test_a_worker_that_dies_is_reported_with_the_way_out(forking):
    from concurrent.futures.process import BrokenProcessPool

    from negdro_stats import _resampling

    with pytest.raises(BrokenProcessPool, match="n_jobs=1"):
        _resampling.map_jobs(lambda k: os._exit(1) if k == 3 else k, 8, n_jobs=2)
    assert _resampling._TASK is None


def test_the_number_of_workers_from_the_environment(monkeypatch, model):
    """NEGDRO_N_JOBS sets every loop's workers (the bootstrap's default, diagnose(), the
    robust intervals); it must be a whole number of at least 1."""
    from negdro_stats import DataError, _resampling

    monkeypatch.setenv("NEGDRO_N_JOBS", "1")
    assert _resampling.process_jobs() == 1 and _resampling.default_jobs(model.data) == 1
    monkeypatch.setenv("NEGDRO_N_JOBS", "3")
    assert _resampling.process_jobs() == 3 and _resampling.default_jobs(model.data) == 3
    for bad in ("0", "two", "-1", "1.5"):
        monkeypatch.setenv("NEGDRO_N_JOBS", bad)
        with pytest.raises(DataError, match="NEGDRO_N_JOBS"):
            _resampling.process_jobs()


def test_the_deferred_bootstrap_chooses_its_workers_when_it_runs(model, monkeypatch):
    """fit() keeps the user's n_jobs (None: the default, chosen when the bootstrap runs,
    where the threads then running decide whether processes can be forked)."""
    from negdro_stats import model as model_module

    monkeypatch.setattr(model_module, "DEFAULT_N_BOOT", 4)
    res = model.fit(rng=1)
    assert res._deferred["n_jobs"] is None
    assert model.fit(rng=1, n_jobs=3)._deferred["n_jobs"] == 3
    chosen = []
    monkeypatch.setattr(model_module, "default_jobs", lambda data: chosen.append(1) or 1)
    res.run_bootstrap()
    assert chosen == [1]
    with pytest.raises(ValueError, match="'n_jobs' parameter of NegDRO.diagnose"):
        model.diagnose(n_jobs=0)


def test_progress_bars_leave_no_thread_behind():
    """tqdm's monitor thread outlives its bar, and with it running no worker could be
    forked for the rest of the session.  In a fresh interpreter: here earlier tests'
    bars may have started one already, and a bar finds it running."""
    import subprocess

    code = ("import threading\nfrom negdro_stats._validation import progress\n"
            "assert list(progress(range(3), True, 'test')) == [0, 1, 2]\n"
            "print(threading.active_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["1"]


def test_a_worker_of_a_pool_does_not_fork_again():
    """A process started by multiprocessing (a user's pool) runs its loops in itself:
    each of its workers forking as many again would oversubscribe the cores."""
    import multiprocessing

    from negdro_stats._resampling import can_fork

    if not sys.platform.startswith("linux"):
        pytest.skip("fork is Linux's")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.SimpleQueue()
    child = ctx.Process(target=lambda: queue.put(can_fork()))
    child.start()
    child.join()
    assert queue.get() is False


def test_no_fork_while_another_thread_runs():
    """A fork copies the locks other threads hold, not the threads: with one running,
    the workers are threads."""
    from negdro_stats._resampling import can_fork

    seen, stop = [], threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        seen.append(can_fork())
    finally:
        stop.set()
        other.join()
    assert seen == [False]


def test_threads_only_where_a_replicate_pass_is_large(model, monkeypatch):
    """The default n_jobs (issue 42): the cores where processes can be forked; else
    one where a replicate's pass over the rows is small (its numpy calls hold the GIL:
    two threads were ~1.3x slower at p = 10), the cores from rows x p^2 = 1e8 on; a
    model without rows resamples nothing."""
    from types import SimpleNamespace

    from negdro_stats import _resampling
    from negdro_stats._resampling import THREADS_MIN_WORK, default_jobs

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(_resampling, "can_fork", lambda: True)
    assert default_jobs(model.data) == 8                       # 8,000 rows, p = 6
    monkeypatch.setattr(_resampling, "can_fork", lambda: False)
    assert default_jobs(model.data) == 1

    def data(nobs, p, blocks=None, rows=True):
        return SimpleNamespace(moments=SimpleNamespace(nobs=nobs, p=p), blocks=blocks,
                               has_rows=rows)

    assert default_jobs(data(THREADS_MIN_WORK / 100**2, 100)) == 8
    assert default_jobs(data(THREADS_MIN_WORK / 100**2 - 1, 100)) == 1
    assert default_jobs(data(1e9, 100, blocks=object())) == 1   # blocks: no row pass
    assert default_jobs(data(np.inf, 100, rows=False)) == 1


def test_the_default_bootstrap_runs_on_request(model, monkeypatch, tmp_path):
    """fit() runs no refit; no view and no property starts the bootstrap (a bootstrap
    quantity says how to run it); run_bootstrap() or conf_int(kind="bootstrap") runs
    DEFAULT_N_BOOT replicates with the fit's rng, the same draws as fit(n_boot=B, rng)
    gives at once, also after saving and loading; the summary, to_dict and the default
    conf_int are the same before and after (issue 41: one truth per result)."""
    from negdro_stats import BootstrapPendingError
    from negdro_stats import model as model_module
    from negdro_stats.results.results import load

    monkeypatch.setattr(model_module, "DEFAULT_N_BOOT", 8)
    runs = []
    bootstrap = model_module.NegDRO.run_bootstrap
    monkeypatch.setattr(model_module.NegDRO, "run_bootstrap",
                        lambda self, *a, **k: runs.append(1) or bootstrap(self, *a, **k))
    res = model.fit(rng=3, n_jobs=1)
    before = (str(res.summary(detail=True)), res.to_dict(), res.conf_int())
    text = " ".join(before[0].split())
    assert before[1]["conf_int"]["kind"] == "robust" and not runs
    assert res.bootstrap_pending and res.bootstrap is None and "Boot reps: on request" in text
    assert "runs on request: res.run_bootstrap()" in text and "robust p" in text
    for name in ("boot_se", "support_freq", "bootstrap_draws"):
        with pytest.raises(BootstrapPendingError, match=r"res\.run_bootstrap\(\) \(about"):
            getattr(res, name)
    assert not runs
    res.save(tmp_path / "pending.pkl")
    ci = res.conf_int(kind="bootstrap")
    assert runs == [1] and not res.bootstrap_pending and res.bootstrap.n_boot == 8
    assert res.fit_bootstrap is None and res.run_bootstrap() is res.bootstrap
    eager = model.fit(n_boot=8, rng=3, n_jobs=1)
    assert_allclose(res.bootstrap_draws, eager.bootstrap_draws, rtol=1e-12)
    assert_allclose(ci, eager.conf_int(kind="bootstrap"), rtol=1e-12)
    assert_allclose(res.boot_se, eager.boot_se, rtol=1e-12)
    assert str(res.summary(detail=True)) == before[0] and res.to_dict() == before[1]
    pd.testing.assert_frame_equal(res.conf_int(), before[2])
    shown = str(res.summary(intervals="bootstrap", detail=True))
    assert "boot se" in shown and runs == [1, 1]  # (eager)
    loaded = load(tmp_path / "pending.pkl")
    assert loaded.bootstrap_pending
    assert_allclose(loaded.run_bootstrap().draws, eager.bootstrap_draws, rtol=1e-12)


def test_intervals_match_their_definitions(model):
    """Each interval is what its name says, computed here independently from the draws:
    percentile = the 2.5% and 97.5% quantiles of the successful refits, basic = that
    interval reflected about the estimate, normal = estimate +- z_0.975 x the refits'
    standard deviation (ddof 1), which is also ``bse``."""
    res = model.fit(n_boot=100, rng=1)
    draws = res.bootstrap_draws.to_numpy()
    ok = draws[~np.isnan(draws).any(axis=1)]
    b = res.params.to_numpy()
    lo, hi = np.quantile(ok, [0.025, 0.975], axis=0)
    sd = ok.std(axis=0, ddof=1)
    z = 1.959963984540054
    expected = {"percentile": (lo, hi), "basic": (2 * b - hi, 2 * b - lo),
                "normal": (b - z * sd, b + z * sd)}
    for method, (lower, upper) in expected.items():
        ci = res.conf_int(0.05, method=method)
        assert list(ci.columns) == ["lower", "upper"]
        assert_allclose(ci["lower"], lower, rtol=1e-12, atol=1e-14)
        assert_allclose(ci["upper"], upper, rtol=1e-12, atol=1e-14)
    assert_allclose(res.boot_se, sd, rtol=1e-12)
    assert_allclose(res.support_freq, (ok != 0).mean(axis=0), rtol=1e-12)
    assert draws.shape == (100, 6)


def test_widths_shrink_with_n():
    sem = simulate.eq33(p=5)
    widths = []
    for n in (1000, 8000):
        res = NegDRO(sem.sample(n, rng=5), env="env", outcome="Y").fit(n_boot=100, rng=0)
        ci = res.conf_int(kind="bootstrap")
        widths.append((ci["upper"] - ci["lower"])[["X1", "X3"]].to_numpy())
    assert np.all(widths[1] < widths[0])


def test_selection_frequency_eq33_n20000():
    sem = simulate.eq33(p=10)
    res = NegDRO(sem.sample(20_000, rng=9), env="env", outcome="Y").fit(n_boot=50, rng=0)
    assert res.support_freq["X1"] == 1.0 and res.support_freq["X3"] == 1.0
    others = res.support_freq.drop(["X1", "X3"])
    assert (others <= 0.1).all()
    text = str(res.summary())
    assert "sel. freq" in text and "boot se" in text and "[0.025" in text


def test_one_replicate_is_refused_and_none_is_explicit(model):
    """One replicate has no spread: refused (it used to give NaN errors and a degenerate
    interval without a word)."""
    with pytest.raises(ValueError, match="'n_boot' parameter of NegDRO.fit must be 0"):
        model.fit(n_boot=1, rng=0)
    with pytest.raises(ValueError, match="'n_boot' parameter of NegDRO.diagnose"):
        model.diagnose(n_boot=1, n_perm=0)
    none = model.fit(n_boot=0)
    assert none.bootstrap is None and none.boot_se.isna().all()
    assert none.conf_int(kind="bootstrap").isna().all().all()
    assert "No bootstrap" in str(none.summary(detail=True))


def test_nonconverging_replicates_are_counted(model):
    """Replicates whose reported fit is Algorithm 3's (``refit="negdro"``) and stalls
    are counted; on the default route every coefficient is determined, the replicates'
    fits are closed-form GMM or OLS, and Algorithm 3 does not run in them."""
    with pytest.warns(BootstrapFailureWarning, match="did not converge"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)   # the main fit's own warning
            warnings.simplefilter("always", BootstrapFailureWarning)
            res = model.fit(n_boot=5, rng=0, max_iter=1, refit="negdro")
    assert (~res.bootstrap.converged).sum() == 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", BootstrapFailureWarning)
        res = model.fit(n_boot=5, rng=0, max_iter=1)
    assert res.solver.selection.route == "invariance" and not res.converged
    assert res.bootstrap.converged.all()


def test_small_environments():
    """n_e = 2 rows, p = 5: a replicate that cannot be fitted (a resample that repeats
    rows leaves the pooled Gram matrix of a support singular) is counted, warned about and
    left out of the intervals, not fatal (this sample has 3 such among 20)."""
    df = simulate.eq33(p=5).sample(2, rng=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=20, rng=0)
    boot = res.bootstrap
    assert boot.n_boot == 20 and 0 < boot.failed.sum() < 20
    assert not (boot.failed & boot.converged).any()                        # failed => not conv.
    assert np.isnan(boot.draws[boot.failed]).all() and np.isfinite(boot.draws[~boot.failed]).all()
    said = [str(w.message) for w in caught if issubclass(w.category, BootstrapFailureWarning)]
    assert said == [f"{boot.failed.sum()} of 20 bootstrap refits failed and 0 did not "
                    "converge; intervals use the refits that ran."]
    assert np.isfinite(res.params).all()


def test_large_p_summary_shows_selected_only():
    """show="selected" (the default beyond SHOW_ALL_MAX_P = 60 covariates) lists the
    selected covariates and those the refits select often, and says how to see all."""
    sem = simulate.eq33(p=40)
    res = NegDRO(sem.sample(3000, rng=1), env="env", outcome="Y").fit(n_boot=10, rng=0)
    text = str(res.summary(show="selected"))
    shown = res.support | (res.support_freq >= 0.1)        # the rule of show="selected"
    hidden = [name for name in shown.index if not shown[name]]
    assert shown["X1"] and shown["X3"] and len(hidden) >= 30
    assert "X1 " in text and "summary(show='all')" in text
    assert not any(f"\n{name} " in text for name in hidden)
    assert all(f"\n{name} " in str(res.summary(show="all")) for name in hidden)


def test_fit_path():
    """Example 3 (strong regime, n = 10,000), the paper's estimator along gamma: gamma = 0
    leaves unequal risks (the equal-risk test rejects), gamma = 5 does not.  With the
    default refit the invariance route does not depend on gamma."""
    sem = simulate.example3("strong")
    model = NegDRO(sem.sample(10_000, rng=1), env="env", outcome="Y")
    path = model.fit_path([0, 1, 5, 20, 60], refit="negdro")
    assert path.params.shape == (5, 4) and path.risks.shape == (5, 2)
    assert path.invariance_pvalue.iloc[0] < 0.05 and path.invariance_pvalue.iloc[2] >= 0.05
    assert (path.refit == "negdro").all()
    default = model.fit_path([0, 5, 60])
    assert (default.refit == "ols").all()
    assert np.ptp(default.params.to_numpy(), axis=0).max() < 1e-12
    text, own = str(default.summary()), str(path.summary())
    assert "do not depend on gamma" in text and "do not depend" not in own
    frame = path.to_frame()
    assert list(frame.index) == [0, 1, 5, 20, 60] and (frame["selected"] >= 1).all()
    assert (frame["max risk"] >= frame["mean risk"]).all()
    assert frame["equal-risk p"].iloc[0] < 0.05 and (frame["refit"] == "Phi_mu (paper)").all()
    rows = [line.split() for line in own.splitlines() if line.split()[:1] == ["60"]]
    assert rows and rows[0][-1] == "Phi_mu"                      # the table's short label
    assert frame["risks within"].iloc[0] > frame["bound"].iloc[2] > frame["risks within"].iloc[2]


def test_gamma_auto_is_gone():
    with pytest.raises(ValueError, match="gamma='auto' was removed"):
        NegDRO(simulate.eq33(p=5).sample(50, rng=0), env="env", gamma="auto")


@pytest.mark.smoke
def test_plots_return_figures(model, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    sem = simulate.eq33(p=6)
    res = model.fit(n_boot=20, rng=0)
    figs = [res.plot_coefficients(beta_star=sem.beta_star), res.plot_selection(),
            res.plot_risks(), model.fit_path([0, 5, 20]).plot(beta_star=sem.beta_star)]
    for k, fig in enumerate(figs):
        fig.savefig(tmp_path / f"f{k}.png")
        assert (tmp_path / f"f{k}.png").stat().st_size > 5_000
    with pytest.raises(ValueError, match="n_boot"):
        model.fit(n_boot=0).plot_selection()


def test_printing_never_warns_and_large_p_identification_is_lazy():
    """p > 30: Condition 1b is computed on first use, without a warning (the summary line
    says it fails); p <= 30: computed and warned about in ``fit``, not when printing."""
    df = simulate.random_sem(36, rng=0).sample(500, rng=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")            # fit does not compute it for p > 30
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert not any("Condition 1b fails on these data" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = str(res.summary())
    assert not res.identification.holds and re.search(r"Cond. 1b margin: +\S+ fails", text)
    small = simulate.random_sem(12, shift="mean", rng=1).sample(500, rng=0)   # not identified
    with pytest.warns(IdentificationWarning, match="Condition 1b fails"):
        res = NegDRO(small, env="env", outcome="Y").fit(n_boot=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        str(res.summary())


def test_the_one_resampling_loop_spawns_and_counts_failures():
    """inference.replicate: the same draws for any n_jobs (one spawned generator per
    replicate), numerical failures are None and flagged; diagnose()'s report leaves a
    failed margin out with a warning instead of stopping, and its bound and p-value are
    those of every margin solved (it solves only where the bounds cannot decide)."""
    from negdro_stats._resampling import replicate
    from negdro_stats.identification.conditions import check_condition_1b
    from negdro_stats.identification.report import identification_report

    def one(k, child):
        if k % 3 == 2:
            raise np.linalg.LinAlgError("singular")
        return float(child.normal())

    serial, failed = replicate(one, 9, np.random.default_rng(5))
    threads, _ = replicate(one, 9, np.random.default_rng(5), n_jobs=2)
    assert serial == threads and failed.tolist() == [k % 3 == 2 for k in range(9)]
    assert all((v is None) == f for v, f in zip(serial, failed, strict=True))

    df = simulate.eq33(p=5).sample(300, rng=0)
    model = NegDRO(df, env="env", outcome="Y")
    c1b = model.fit(n_boot=0).identification
    calls = iter(range(100))

    def second_moments(mom):               # draws 0, 4, 8 (bootstrap) and 12 (permutation)
        if next(calls) % 4 == 0:
            raise ValueError("no margin")
        return mom.Sigma

    with pytest.warns(BootstrapFailureWarning, match="3 of 10 bootstrap and 1 of 6"):
        report = identification_report(
            condition_1b=c1b, invariance=None, second_moments=second_moments,
            resample=model.data.resample, permute=model.data.permute, n_boot=10, n_perm=6,
            alpha=0.05, rng=np.random.default_rng(0))
    assert np.isnan(report.boot_bounds[:, 0]).sum() == 3
    every, _ = replicate(lambda k, child: check_condition_1b(
        (model.data.resample(child) if k < 10 else model.data.permute(child)).Sigma
    ).relative_margin, 16, np.random.default_rng(0))
    boot = [every[k] for k in range(10) if k % 4]
    perm = [every[k] for k in range(10, 16) if k % 4]
    assert report.margin_lcb == pytest.approx(np.quantile(boot, 0.05), abs=1e-8)
    assert report.perm_pvalue == (1 + sum(v >= c1b.relative_margin for v in perm)) / 6


def test_diagnose_in_workers_is_the_report_of_one(forking):
    """diagnose()'s draws in forked workers: the same report, to the last bit, as in
    one process (with an intercept, a draw's stack was a strided view that came back
    contiguous from a worker, and the SDP rounded differently)."""
    sem = simulate.random_sem(8, n_envs=4, confounding=True, rng=3)
    model = NegDRO(sem.sample(1000, rng=0), env="env", outcome="Y", fit_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, two = (model.diagnose(n_boot=19, n_perm=19, rng=0, n_jobs=k) for k in (1, 2))
    assert str(one) == str(two) and one.margin_lcb == two.margin_lcb
    np.testing.assert_array_equal(one.boot_bounds, two.boot_bounds)
