"""Issue 41 item 1: one truth per result.  A result's intervals, p-values and verdicts are
decided once and every view reads them -- the summary's table, ``conf_int()``,
``to_dict()`` (the CLI's JSON) -- whatever was called before; ``load(save(res))`` is
the same result."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from negdro_stats import BootstrapPendingError, NegDRO, load, simulate
from negdro_stats.results.tables import fmt_bound as _bound
from negdro_stats.results.tables import fmt_p as _pvalue


def _table(res, **kw) -> dict:
    """The summary's coefficient table as {covariate: {column: cell}}."""
    table = res.summary(**kw).tables[1]
    header = [str(c.data).strip() for c in table[0]][1:]
    return {str(row[0].data).strip(): dict(zip(header, (str(c.data).strip() for c in row[1:]),
                                               strict=True)) for row in table[1:]}


def _views_agree(res) -> None:
    """The summary's intervals and p-values are conf_int()'s, to_dict()'s and the p-value
    attributes', cell by cell."""
    table, data = _table(res), res.to_dict()
    ci, kind = res.conf_int(), res.interval_kind
    assert data["conf_int"]["kind"] == kind
    for side in ("lower", "upper"):
        got = [data["conf_int"][side][name] for name in ci.index]
        want = ci[side].to_numpy()
        finite = np.isfinite(want)
        np.testing.assert_allclose(np.array(got, object)[finite].astype(float), want[finite],
                                   rtol=1e-12)
        assert all((v is None) if np.isnan(w) else v == ("Infinity" if w > 0 else "-Infinity")
                   for v, w, ok in zip(got, want, finite, strict=True) if not ok)
    lo, hi = f"[{0.05 / 2:g}", f"{1 - 0.05 / 2:g}]"
    for name, row in table.items():
        if row.get(lo) in ("-", "empty"):
            assert not res.support[name] and kind in ("wald", "bootstrap") or row[lo] == "empty"
            continue
        assert row[lo] == _bound(ci.loc[name, "lower"]) and row[hi] == _bound(ci.loc[name, "upper"])
        if "P>|z|" in row and row["P>|z|"] != "-":
            assert row["P>|z|"] == _pvalue(res.pvalues[name])
    for name, cell in ((n, r["robust p"]) for n, r in table.items() if "robust p" in r):
        assert cell == _pvalue(res.robust_pvalues[name])


def _round_trips(res, path) -> None:
    res.save(path, overwrite=True)
    back = load(path)
    assert str(back.summary()) == str(res.summary())
    assert back.to_dict() == res.to_dict()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1), p=st.sampled_from([6, 12, 40, 60]),
       intervened=st.sampled_from([0.5, 1.0]), confounding=st.booleans(),
       boot=st.sampled_from([None, 0, 6]))
@example(seed=3, p=60, intervened=1.0, confounding=False, boot=None)
@example(seed=2, p=40, intervened=0.5, confounding=True, boot=6)
@example(seed=5, p=12, intervened=0.5, confounding=True, boot=None)
def test_every_view_reads_one_decision(seed, p, intervened, confounding, boot, tmp_path):
    """Random designs (limited or full interventions, hidden confounding, p up to 60, an
    intercept in a third of them; the routes they take), with the bootstrap deferred,
    none, or run by the fit: the
    views agree; the summary, to_dict() and conf_int() are the same after the deferred
    bootstrap ran on request; and the saved result loads as it was."""
    sem = simulate.random_sem(p, n_envs=4, n_parents=2, n_children=2, intervened=intervened,
                              confounding=confounding, shift_downstream=intervened < 1,
                              rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(sem.sample(600, rng=seed % 997), env="env", outcome="Y",
                     fit_intercept=seed % 3 == 0).fit(n_boot=boot, rng=seed, n_jobs=1)
        _views_agree(res)
        before = (str(res.summary()), res.to_dict(), res.conf_int())
        _round_trips(res, tmp_path / "before.pkl")
        if boot is None:
            with pytest.raises(BootstrapPendingError):
                _ = res.boot_se
            res.run_bootstrap(n_boot=4)
        else:
            _ = res.boot_se
        assert (str(res.summary()), res.to_dict()) == before[:2]
        assert res.conf_int().equals(before[2])
        _round_trips(res, tmp_path / "after.pkl")


def test_the_json_says_what_the_text_says_of_condition_1b():
    """Condition 1b's verdict is decided once: where the sample margin is positive but
    the rank test leaves directions undetermined, the header says "unclear" and the
    JSON (the CLI's ``fit --json``) says verdict "unclear" and holds null -- it said
    ``"holds": true`` beside the text's "unclear"."""
    sem = simulate.random_sem(6, n_envs=4, n_parents=2, n_children=2, intervened=0.5,
                              shift_downstream=True, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(sem.sample(600, rng=4), env="env", outcome="Y").fit(n_boot=0)
    header = str(res.summary()).split("Converged:")[0]
    data = res.to_dict()["identification"]
    assert res.identification.holds and "unclear" in header
    assert data["verdict"] == "unclear" and data["holds"] is None


def test_a_result_holds_one_bootstrap():
    """run_bootstrap() returns the bootstrap a result has; asking for another (other
    n_boot or rng) is refused, so that boot_se, conf_int and the summary never read two
    different bootstraps."""
    from negdro_stats import DataError

    df = simulate.eq33(p=5).sample(300, rng=0)
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=4, rng=0, n_jobs=1)
    assert res.run_bootstrap() is res.fit_bootstrap
    with pytest.raises(DataError, match="has its bootstrap \\(4 refits\\)"):
        res.run_bootstrap(n_boot=10)


def test_a_result_without_a_robust_set_reports_wald_in_every_view(tmp_path):
    """30 covariates, three environments of 200 rows: too few moment conditions for a
    robust set.  The kind was "robust", so conf_int() raised a DataError while the
    summary showed Wald columns; now the kind is "wald" and every view agrees (a
    helper's hunt on fresh designs found it in 9 of 391 fits; seed 101, the first test
    case, now gives Theorem 6's fit with its conditional Wald intervals)."""
    sem = simulate.random_sem(30, n_envs=3, confounding=True, rng=112)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(sem.sample(200, rng=112), env="env", outcome="Y").fit(n_boot=0)
    assert res.interval_kind == "wald"
    _views_agree(res)
    text = " ".join(str(res.summary(detail=True)).split())
    assert "too few moment conditions for robust ones" in text
    _round_trips(res, tmp_path / "wald.pkl")
