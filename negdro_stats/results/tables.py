"""How the summaries are written: statsmodels' table and summary classes with their HTML
and LaTeX escaped, the number and p-value formats of every table, and the widths and
wrapping that keep text WIDTH columns wide (:mod:`~negdro_stats.results.summary` fills
them)."""

from __future__ import annotations

import html
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

__all__ = ["WIDTH", "NegDROSummary", "Table", "fmt_bound", "fmt_num", "fmt_p", "grid",
           "latex_escape", "pair_widths", "shorten", "wrap_note"]

WIDTH = 78                     # of the summary's tables and notes (as statsmodels)


_LATEX = {"\\": r"\textbackslash{}", "%": r"\%", "&": r"\&", "_": r"\_", "#": r"\#",
          "$": r"\$", "{": r"\{", "}": r"\}", "^": r"\textasciicircum{}",
          "~": r"\textasciitilde{}"}


# statsmodels' table cells already replace # $ % & > _ | (its default_latex_fmt)
_LATEX_CELL = {ch: _LATEX[ch] for ch in "\\{}^~"} | {"<": r"\textless{}"}


def latex_escape(text: str, table: dict = _LATEX) -> str:
    return "".join(table.get(ch, ch) for ch in text)


def _escaped(table: SimpleTable, escape: Callable[[str], str], render: Callable[[], str]
             ) -> str:
    """``render()`` with the text of ``table``'s title and cells escaped, then put back."""
    saved = [(table, "title", table.title)]
    table.title = escape(table.title) if isinstance(table.title, str) else table.title
    for row in table:
        for cell in row:
            if isinstance(cell.data, str):
                saved.append((cell, "data", cell.data))
                cell.data = escape(cell.data)
    try:
        return render()
    finally:
        for obj, attr, value in saved:
            setattr(obj, attr, value)


class Table(SimpleTable):
    """statsmodels' table with its HTML and LaTeX escaped, each table on its own too
    (``summary().tables[1].as_html()``): statsmodels writes cell text as it is, and a
    column name ``<script>`` would run in a notebook.  The text is as it is."""

    def as_html(self, **fmt_dict: Any) -> str:
        return _escaped(self, html.escape, lambda: super(Table, self).as_html(**fmt_dict))

    def as_latex_tabular(self, center: bool = True, **fmt_dict: Any) -> str:
        return _escaped(self, lambda text: latex_escape(text, _LATEX_CELL),
                        lambda: super(Table, self).as_latex_tabular(center, **fmt_dict))


class NegDROSummary(Summary):
    """A statsmodels ``Summary`` with ``verdict`` lines above the tables when the
    reader must not miss them, ``details`` (the numbered notes of a short summary) as a
    collapsible block of :meth:`as_html`, and notes LaTeX-escaped in :meth:`as_latex`
    (statsmodels escapes table stubs but not ``extra_txt``: "50%" would start a
    comment)."""

    verdict: str | None = None
    details: str | None = None

    def as_text(self) -> str:
        text = super().as_text()
        text = text if self.verdict is None else f"{self.verdict}\n{text}"
        return "\n".join(line.rstrip() for line in text.split("\n"))

    def as_html(self) -> str:
        notes = self.extra_txt
        self.extra_txt = None if notes is None else html.escape(notes)
        try:
            page = super().as_html()              # (the tables escape their cells)
        finally:
            self.extra_txt = notes
        if self.details:
            page += ("\n<details><summary>Notes: how the support and coefficients were "
                     "chosen, what each figure assumes</summary>\n<pre>"
                     f"{html.escape(self.details)}</pre>\n</details>")
        return (page if self.verdict is None else
                f"<p><b>{html.escape(self.verdict)}</b></p>\n{page}")

    def as_latex(self) -> str:
        notes, self.extra_txt = self.extra_txt, None
        try:
            latex = super().as_latex()            # (the tables escape their cells)
        finally:
            self.extra_txt = notes
        if notes:
            latex += "\n\n" + latex_escape(notes).replace("\n", "\n\n")
        if self.verdict is not None:
            latex = "\\textbf{" + latex_escape(self.verdict) + "}\n\n" + latex
        return latex




def fmt_num(x: float) -> str:
    """A table number formatted by magnitude (as statsmodels' ``forg``): fixed with four
    decimals between 1e-4 and 1e4, else scientific; exact zeros as 0."""
    if x == 0:
        return "0"
    if not np.isfinite(x) or 1e-4 <= abs(x) < 1e4:
        return f"{x:.4f}"
    return f"{x:.4e}"


def fmt_bound(x: float) -> str:
    """An interval's bound: :func:`fmt_num`, "n/a" where there is none (the robust set
    profiles the intercept, it does not test it), as the p-value beside it says."""
    return "n/a" if np.isnan(x) else fmt_num(x)


def fmt_p(p: float) -> str:
    """A p-value in the table's one format: three decimals, "<0.001" below (statsmodels
    prints 0.000), "n/a" where there is none."""
    if np.isnan(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def wrap_note(note: str, width: int = WIDTH, indent: str = "    ") -> str:
    """A note in lines of ``width``, indented under its number; words and hyphenated
    names ("GMM-BIC") are never split."""
    return textwrap.fill(note, width, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False)


def shorten(text: str, k: int) -> str:
    """``text``, cut to ``k`` characters with "..." when longer (a header cell)."""
    return text if len(text) <= k else text[:k - 3] + "..."


def pair_widths(columns: list[list[tuple[str, str]]], width: int, sep: int) -> list[int]:
    """Column widths for (label, value) pairs that fill ``width``: labels as wide as the
    longest, values share what is left (at least as wide as the longest)."""
    labels = [max(len(a) for a, _ in col) for col in columns]
    values = [max(len(b) for _, b in col) for col in columns]
    spare = max(width - sum(labels) - sum(values) - sep * (2 * len(columns) - 1), 0)
    values = [v + spare // len(columns) + (k == 0) * (spare % len(columns))
              for k, v in enumerate(values)]
    return [w for pair in zip(labels, values, strict=True) for w in pair]


def grid(rows: list[list[str]], headers: list[str], stubs: list[str], stub_header: str,
           width: int = WIDTH) -> SimpleTable:
    """A table of ``rows`` as wide as the header table (``width``): data columns as wide
    as their longest entry (at least 8) plus a space; the stub column, left-aligned,
    takes the rest."""
    cols = [max(8, *(len(c) for c in column)) + 1 for column in zip(headers, *rows,
                                                               strict=True)]
    stub = max(len(stub_header), *(len(t) for t in stubs), width - sum(cols) - len(cols))
    table = Table(rows, headers=headers, stubs=stubs,
                        txt_fmt={"data_fmts": ["%s"], "header_align": "r",
                                 "colwidths": [stub, *cols]})
    table[0][0].data, table[0][0].datatype = stub_header, "stub"   # the header row's stub
    return table
