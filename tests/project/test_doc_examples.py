"""Every Python example of the docs runs as written: each literal block of ``docs/*.rst``
that is Python (``.. code-block:: python``, or a bare ``::`` block that compiles) alone in
a fresh interpreter, in a scratch folder, as a user pastes it.  The ``>>>`` examples are
doctests (``test_docs.py``); blocks in other languages (shell, output) are not run."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"

# Python blocks deliberately not run, by "page:line", with the reason.
NOT_RUN: dict[str, str] = {}

# An extra a block needs, by a word in it (the test skips without it, as the docs say).
EXTRAS = {"parquet": "pyarrow", "dask": "dask", "sklearn": "sklearn", "plot": "matplotlib"}

_DIRECTIVE = re.compile(r"\s*\.\. code-block::\s*(\S*)\s*$")
_OPTION = re.compile(r"\s+:[\w-]+:")


def literal_blocks(text: str) -> list[tuple[int, str | None, str]]:
    """``(line, language, code)`` of each literal block: a ``code-block`` directive (its
    language) or a paragraph ending in ``::`` (language None); line counts from 1."""
    lines, found = text.splitlines(), []
    for i, line in enumerate(lines):
        directive = _DIRECTIVE.match(line)
        bare = line.rstrip().endswith("::") and not line.lstrip().startswith("..")
        if not (directive or bare):
            continue
        j = i + 1
        while j < len(lines) and directive and _OPTION.match(lines[j]):
            j += 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        indent = len(line) - len(line.lstrip())
        body = []
        while j < len(lines) and (not lines[j].strip()
                                  or len(lines[j]) - len(lines[j].lstrip()) > indent):
            body.append(lines[j])
            j += 1
        width = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        code = "\n".join(b[width:] for b in body).strip("\n") + "\n"
        found.append((i + 1, directive.group(1) if directive else None, code))
    return found


def _is_python(language: str | None, code: str) -> bool:
    if language is not None:
        return language == "python"
    try:
        compile(code, "<block>", "exec")
    except SyntaxError:
        return False
    return True


def python_blocks() -> list[tuple[str, str]]:
    """``("page:line", code)`` of every Python block of the docs."""
    return [(f"{page.name}:{line}", code) for page in sorted(DOCS.glob("*.rst"))
            for line, language, code in literal_blocks(page.read_text())
            if _is_python(language, code)]


def test_the_extractor_reads_directives_bare_blocks_and_options():
    text = ("Intro::\n\n    x = 1\n\n    y = x\n\nText.\n\n"
            ".. code-block:: bash\n   :caption: shell\n\n   negdro demo\n\n"
            ".. image:: a.png\n\nSay::\n\n    negdro fit data.csv --env site\n")
    assert literal_blocks(text) == [(1, None, "x = 1\n\ny = x\n"),
                                    (9, "bash", "negdro demo\n"),
                                    (16, None, "negdro fit data.csv --env site\n")]
    assert [_is_python(lang, code) for _, lang, code in literal_blocks(text)] == [
        True, False, False]


def test_the_docs_have_python_blocks_and_no_unknown_language():
    languages = {language for page in DOCS.glob("*.rst")
                 for _, language, _ in literal_blocks(page.read_text())}
    assert languages <= {None, "python", "bash", "text", "r"}, languages
    names = [name for name, _ in python_blocks()]
    assert {"inference.rst", "user_guide.rst"} <= {n.split(":")[0] for n in names}, names
    assert set(NOT_RUN) <= set(names), "NOT_RUN names a block that is not there"


@pytest.mark.parametrize("name, code", python_blocks(), ids=[n for n, _ in python_blocks()])
def test_python_block_runs_alone(name, code, tmp_path):
    if name in NOT_RUN:
        pytest.skip(NOT_RUN[name])
    for word, module in EXTRAS.items():
        if word in code.lower():
            pytest.importorskip(module)
    script = tmp_path / "example.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, f"docs/{name}:\n{code}\n{proc.stderr[-3000:]}"
