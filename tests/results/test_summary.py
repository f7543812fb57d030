"""Issue 41 item 5: the summary in statsmodels' style -- one format per p-value column,
unselected covariates shown as such, R-squared and the covariance type in the header,
every row up to a documented limit.  Each test failed on the code before."""

import re
import warnings

import pytest
import statsmodels.api as sm

from negdro_stats import NegDRO, simulate
from negdro_stats.results.results import SHOW_ALL_MAX_P


def _rows(summary) -> dict:
    table = summary.tables[1]
    header = [str(c.data).strip() for c in table[0]][1:]
    return {str(row[0].data).strip(): dict(zip(header, (str(c.data).strip() for c in row[1:]),
                                               strict=True)) for row in table[1:]}


@pytest.fixture(scope="module")
def fits():
    df = simulate.eq33(p=10).sample(2000, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return df, NegDRO(df, env="env", outcome="Y").fit(n_boot=30, rng=0)


def test_p_values_have_one_format(fits):
    """P-values were printed as 0, 1.8e-100 and 1 in one column."""
    _, res = fits
    for intervals in ("wald", "robust"):
        for row in _rows(res.summary(intervals=intervals)).values():
            for column in ("P>|z|", "robust p"):
                if column in row:
                    assert re.fullmatch(r"<0\.001|[01]\.\d{3}|n/a|-", row[column]), row


def test_never_selected_covariates_have_no_zero_interval(fits):
    """A covariate that no refit selected showed the interval [0, 0]."""
    _, res = fits
    rows = _rows(res.summary(intervals="bootstrap"))
    never = [name for name in rows if res.support_freq[name] == 0 and not res.support[name]]
    assert never
    for name in never:
        assert rows[name]["boot se"] == "-" and rows[name]["[0.025"] == "-", rows[name]
    assert "'-': none did" in " ".join(str(res.summary(intervals="bootstrap")).split())


def test_the_header_has_r_squared_and_the_covariance_type(fits):
    df, res = fits
    text = str(res.summary())
    chosen = [c for c in res.params.index if res.support[c]]
    r2 = sm.OLS(df["Y"], df[chosen]).fit().rsquared             # (pooled OLS was reported)
    assert res.solver.refit == "ols" and abs(res.rsquared - r2) < 1e-12
    assert re.search(rf"R-squared:\s+{r2:.3f}", text)
    assert re.search(r"Cov\. Type:\s+HC0", text)


def test_every_row_up_to_the_limit():
    """At p = 50 the summary hid 48 rows by default."""
    df = simulate.eq33(p=50).sample(400, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    assert SHOW_ALL_MAX_P >= 50 and len(_rows(res.summary())) == 50


def test_an_interval_that_excludes_its_estimate_is_said():
    """The README's example (eq. (33), n = 2,000, seed 0): X2 is not selected (0) while
    its robust interval is [-0.047, -0.001]; the table showed both without a word."""
    df = simulate.eq33(p=10).sample(2000, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    ci = res.conf_int(kind="robust")
    assert res.params["X2"] == 0 and ci.loc["X2", "upper"] < 0
    text = " ".join(str(res.summary()).split())
    assert "The robust intervals of X2 exclude the estimate itself" in text


def test_bootstrap_intervals_without_a_bootstrap_are_refused():
    """summary(intervals='bootstrap') after fit(n_boot=0) showed columns of nan."""
    from negdro_stats import DataError

    df = simulate.eq33(p=5).sample(300, rng=0)
    res = NegDRO(df, env="env", outcome="Y").fit(n_boot=0)
    with pytest.raises(DataError, match=r"no bootstrap \(res.run_bootstrap\(\) runs one"):
        res.summary(intervals="bootstrap")
