"""The type checker on the package: mypy (configured in pyproject.toml) finds no error
beyond ``tests/mypy_baseline.txt``, and every error listed there is still found, so the
list only shrinks.  An error is counted by its file, its code and its message (no line
numbers: an edit above it does not move it)."""

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "tests" / "mypy_baseline.txt"
ERROR = re.compile(r"^(?P<file>[^:]+):\d+: error: (?P<message>.*?)\s+\[(?P<code>[\w-]+)\]$")


def errors(report: str) -> Counter:
    """``file: [code] message`` of each error line in mypy's report."""
    return Counter(f"{m['file']}: [{m['code']}] {m['message']}"
                   for line in report.splitlines() if (m := ERROR.match(line)))


def test_the_errors_are_within_the_baseline(monkeypatch):
    api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(ROOT)
    report, trouble, status = api.run(["--config-file", "pyproject.toml"])
    assert status in (0, 1), trouble or report              # 2: mypy itself failed
    found = errors(report)
    listed = Counter(line for line in BASELINE.read_text().splitlines()
                     if line and not line.startswith("#"))
    new, fixed = found - listed, listed - found
    assert not new, "new type errors (fix them):\n" + "\n".join(sorted(new.elements()))
    assert not fixed, ("fixed, so remove them from tests/mypy_baseline.txt:\n"
                       + "\n".join(sorted(fixed.elements())))


def test_the_baseline_reader_sees_an_error():
    line = ("negdro_stats/cli.py:505: error: Incompatible return value type (got \"object\", "
            "expected \"float\")  [return-value]")
    assert errors(line) == Counter({"negdro_stats/cli.py: [return-value] Incompatible return "
                                    "value type (got \"object\", expected \"float\")": 1})
