"""negdro: fit NegDRO to multi-environment data from the command line.

Commands::

    negdro demo                           simulate eq. (33) of the paper and fit it
    negdro fit DATA.csv --env COL         fit NegDRO; print the summary (or --json)
    negdro diagnose DATA.csv --env COL    do the environments identify beta*?
    negdro design PLAN.json|PLAN.toml     check a planned linear SEM before collecting data

``python -m negdro_stats`` is the same program.  Errors are one line on stderr,
``negdro: error: ...``; warnings are one line each, ``negdro: warning: ...``.

Exit status::

  0    success
  2    usage error (unknown option, missing argument, --gamma auto, ...)
  3    input file missing, unreadable, not CSV/JSON/TOML, empty, or with a ragged row
  4    invalid data or arguments (unknown column, NaN rows, blank env cells,
       gamma < 0, a plan file with an unknown key, ...)
  5    numerical failure (a solver could not produce a result)
  130  interrupted (Ctrl-C)
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import re
import sys
import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from . import __version__, exceptions
from ._resampling import DEFAULT_N_RESAMPLE
from ._validation import did_you_mean
from .exceptions import DataError

if TYPE_CHECKING:          # the stages are imported when a command runs, not for --help
    import pandas as pd

    from . import LinearSEM, NegDRO

__all__ = ["main"]

EXIT_USAGE, EXIT_INPUT, EXIT_INVALID, EXIT_NUMERICAL = 2, 3, 4, 5

# Every exception class of negdro_stats.exceptions except DataError is a numerical failure.
_NUMERICAL_ERRORS = tuple(
    cls for cls in (getattr(exceptions, name) for name in exceptions.__all__)
    if issubclass(cls, Exception) and not issubclass(cls, (Warning, DataError))
) + (np.linalg.LinAlgError, FloatingPointError)

# The package's messages name Python arguments; say them as this program's options.
_PYTHON_TO_OPTION = {
    "missing='drop'": "--missing drop",
    "fit_intercept=True": "--intercept",
    "Encode them first (e.g. pandas.get_dummies) or use NegDRO.from_formula.":
        "Encode them as numbers, or leave them out with --covariates.",
    "pass overwrite=True to replace it": "remove it or give --save another path",
    "pass encoding= with": "pass --encoding with",
    "(outcome=, covariates=)": "(--outcome, --covariates)",
}
_LONG_LIST = 8          # error messages show at most this many items of a list

# The optional keys of a plan: what each must be, and the test of it.
_PLAN_VALUES = {
    "outcome": ("a name", lambda v: isinstance(v, str)),
    "covariates": ("a list of names",
                   lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v)),
    "noise_var": ("a number or {name: number}", lambda v: _is_number(v) or (
        isinstance(v, dict) and all(map(_is_number, v.values())))),
    "confounders": ('a list of [name, name, correlation] triples, e.g. [["X1", "Y", 0.5]]',
                    lambda v: isinstance(v, list) and all(
                        isinstance(c, list) and len(c) == 3 and _is_number(c[2])
                        and all(isinstance(name, str) for name in c[:2]) for c in v)),
    "envs": ("a list of labels", lambda v: isinstance(v, list)),
}
PLAN_KEYS = ("equations", "interventions", *_PLAN_VALUES)


class CLIError(Exception):
    """A user error: printed as one line ``negdro: error: <message>``, exit ``code``."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@contextlib.contextmanager
def _package_errors(data_exit: int = EXIT_INVALID) -> Iterator[None]:
    """Turn the package's validation and numerical errors into :class:`CLIError` (a
    DataError exits with ``data_exit``: the input file's code where it is the file's form).

    Only around calls into negdro_stats: a bug in this module still shows its traceback.
    """
    try:
        yield
    except DataError as exc:
        raise CLIError(_cli_spelling(str(exc)), data_exit) from exc
    except _NUMERICAL_ERRORS as exc:
        raise CLIError(f"numerical failure: {exc}", EXIT_NUMERICAL) from exc
    except (ValueError, TypeError) as exc:
        raise CLIError(_cli_spelling(str(exc)), EXIT_INVALID) from exc


def _cli_spelling(message: str) -> str:
    """The package's message for this program: its fixes as options (``missing='drop'`` ->
    ``--missing drop``), and long lists (say, 2000 labels of a wrong --env) shortened."""
    for python, option in _PYTHON_TO_OPTION.items():
        message = message.replace(python, option)
    message = re.sub(r"\b(sep|decimal|encoding)='([^']*)'", r"--\1 '\2'", message)
    message = re.sub(r"The '(\w+)' (?:parameter|argument) of NegDRO(?:\.\w+)?",
                     lambda m: f"--{m.group(1).replace('_', '-')}", message)
    message = re.sub(r"^(not_descendants|targets) names", lambda m: "--" + m.group(1).replace(
        "_", "-") + " names", message)
    message = re.sub(r"^targets\['?(.*?)'?\] names", r"--targets \1= names", message)
    return re.sub(r"\[([^\[\]]*)\]", _shorten_list, message)


def _shorten_list(match: re.Match) -> str:
    items = match.group(1).split(", ")
    if len(items) <= _LONG_LIST:
        return match.group(0)
    return f"[{', '.join(items[:5])}, ... ({len(items)} in all)]"


# ---------------------------------------------------------------------------- input
#: How the column errors of :func:`~negdro_stats.data.readers.resolve_columns` name the flags.
COLUMN_FLAGS = {"env": "--env", "outcome": "--outcome", "covariates": "--covariates"}


def _names(text: str | None, flag: str) -> list[str] | None:
    """The comma-separated column names of ``flag`` (None when not given)."""
    if text is None:
        return None
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise CLIError(f"{flag} is empty; give column names separated by commas, "
                       f"e.g. {flag} X1,X3.", EXIT_INVALID)
    return names


def _declarations(args: argparse.Namespace) -> dict:
    """``not_descendants`` and ``targets`` of ``NegDRO`` from ``--not-descendants A,B``
    and each ``--targets ENV=A,B`` (``fit`` and ``design``; none for the others)."""
    declared = {}
    if getattr(args, "not_descendants", None) is not None:
        declared["not_descendants"] = _names(args.not_descendants, "--not-descendants")
    if getattr(args, "targets", None):
        targets: dict[str, list[str]] = {}
        for item in args.targets:
            env, sep, names = item.partition("=")
            if not sep or not env.strip():
                raise CLIError(f"--targets {item!r}: give an environment label, '=' and the "
                               "covariates it intervenes on, e.g. --targets 2=X1,X3.",
                               EXIT_INVALID)
            targets.setdefault(env.strip(), []).extend(_names(names, f"--targets {env}="))
        declared["targets"] = targets
    return declared


def _read_csv(args: argparse.Namespace) -> tuple[pd.DataFrame, str, list[str]]:
    """The CSV file of ``args`` as a frame of env, the outcome, the chosen covariates and
    the clusters of ``--groups`` (never a covariate; the library's one reader,
    :class:`~negdro_stats.data.csv_file.CsvFile`; its text's defects exit as input
    errors, the columns' as invalid options); the outcome and the covariates."""
    from .data.csv_file import CsvFile
    from .data.readers import resolve_columns
    with _package_errors(EXIT_INPUT):
        file = CsvFile(args.path, sep=args.sep, decimal=args.decimal, encoding=args.encoding)
    with _package_errors():
        groups = _groups(args)
        if groups and groups not in file.header:
            raise CLIError(f"--groups {groups!r} is not a column of {args.path}."
                           f"{did_you_mean(groups, file.header)}", EXIT_USAGE)
        outcome, names = resolve_columns([c for c in file.header if c != groups], args.env,
                                         args.outcome, _names(args.covariates, "--covariates"),
                                         where=args.path, flags=COLUMN_FLAGS)
    with _package_errors(EXIT_INPUT):
        return file.frame(args.env, [outcome, *names], [groups] if groups else []), outcome, names


def _groups(args: argparse.Namespace) -> str | None:
    """The column of ``--groups`` (``fit --cov-type cluster``), None without it."""
    return getattr(args, "groups", None)


def _dependence(args: argparse.Namespace) -> dict:
    """``fit``'s ``cov_type`` and ``cov_kwds`` from ``--cov-type``, ``--maxlags`` and
    ``--groups``, checked against each other and the data's kind before it is read."""
    if args.maxlags is not None and args.cov_type != "HAC":
        raise CLIError("--maxlags applies to --cov-type HAC.", EXIT_USAGE)
    if args.groups is not None and args.cov_type != "cluster":
        raise CLIError("--groups applies to --cov-type cluster.", EXIT_USAGE)
    if args.cov_type == "cluster" and args.groups is None:
        raise CLIError("--cov-type cluster needs --groups COL, the column of cluster labels "
                       "(clusters within environments).", EXIT_USAGE)
    if args.cov_type != "nonrobust" and _is_parquet(args.path):
        raise CLIError(f"--cov-type {args.cov_type} needs the rows in memory; Parquet data "
                       "are read as block moments: give a CSV file.", EXIT_USAGE)
    kwds = ({"maxlags": args.maxlags} if args.maxlags is not None else
            {"groups": args.groups} if args.groups is not None else {})
    return {"cov_type": args.cov_type, "cov_kwds": kwds}


def _is_parquet(path: str) -> bool:
    """Parquet data by the package's one reader choice; any other path is read as CSV."""
    from .data.readers import path_kind
    return path_kind(path) == "parquet"


def _model(args: argparse.Namespace, gamma: float = 20.0) -> NegDRO:
    """NegDRO on the CSV or Parquet data of ``args`` with the shared data options
    (Parquet files, directories and globs are read batch by batch, with block moments)."""
    from . import NegDRO
    from .data.readers import FIRST_COLUMN
    if args.decimal == args.sep:
        raise CLIError(f"--decimal {args.decimal!r} is also the separator (--sep "
                       f"{args.sep!r}); a file with decimal commas is ';'-separated: pass "
                       "--sep ';'.", EXIT_USAGE)
    if _is_parquet(args.path):
        if not glob.glob(args.path):
            raise CLIError(f"{args.path}: no such file.", EXIT_INPUT)
        if os.path.isdir(args.path) and not glob.glob(os.path.join(args.path, "**",
                                                                  "*.parquet"), recursive=True):
            raise CLIError(f"{args.path} is a directory without .parquet files; give a CSV "
                           "file or Parquet data.", EXIT_INPUT)
        covariates = _names(args.covariates, "--covariates")
        with _package_errors(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=FIRST_COLUMN)   # (args.note says it)
            model = NegDRO.from_parquet(args.path, args.env, outcome=args.outcome,
                                        covariates=covariates, gamma=gamma,
                                        fit_intercept=args.intercept, missing=args.missing,
                                        **_declarations(args))
    else:
        frame, outcome, names = _read_csv(args)
        with _package_errors():
            model = NegDRO(frame, env=args.env, outcome=outcome, covariates=names, gamma=gamma,
                           fit_intercept=args.intercept, missing=args.missing,
                           **_declarations(args))
    if args.outcome is None:                      # said after the command succeeds (main)
        args.note = (f"no --outcome given; the outcome was {model.endog_name!r}, the first "
                     "column other than --env.")
    return model


# ---------------------------------------------------------------------------- commands
def _as_json(obj: dict) -> str:
    from ._json import jsonable
    return json.dumps(jsonable(obj), indent=2, allow_nan=False)


def _advice_json(advice) -> dict | str:
    """An InterventionAdvice, or the reason none exists (a string)."""
    if isinstance(advice, str):
        return advice
    return {"condition": advice.condition, "covariates": advice.covariates,
            "variance": advice.variance, "margin": advice.margin,
            "exhaustive": advice.exhaustive}


def _demo(args: argparse.Namespace) -> int:
    from . import NegDRO, simulate
    with _package_errors():
        sem = simulate.eq33(p=args.p, variant=args.variant)
        data = sem.sample(args.n, rng=args.seed)
    print(f"Simulated eq. (33) of the paper ({args.variant} variant): p = {args.p} covariates, "
          f"4 environments, n = {args.n} rows each; true beta* = (0.5, 0, -0.5, 0, ...).\n")
    with _package_errors():
        res = NegDRO(data, env="env", outcome="Y", gamma=args.gamma).fit(
            n_boot=args.n_boot, rng=args.seed)
        summary = res.summary()
    print(summary)
    err = float(np.linalg.norm(res.params.to_numpy() - sem.beta_star))
    print(f"\n||b_hat - beta*||_2 = {err:.4f}")
    return 0


def _fit(args: argparse.Namespace) -> int:
    if args.json and args.format is not None:
        raise CLIError("--json and --format are alternatives; give one of them.", EXIT_USAGE)
    dependence = _dependence(args)
    model = _model(args, gamma=args.gamma)
    with _package_errors():
        res = model.fit(n_boot=args.n_boot, rng=args.seed, refit=args.refit,
                        test_level=args.test_level, **dependence)
        if args.save is not None:
            res.save(args.save)
        if args.json:
            output = res.to_dict(alpha=args.alpha)
        else:
            summary = res.summary(alpha=args.alpha, detail=args.detail)
            output = {"text": summary.as_text, "html": summary.as_html,
                      "latex": summary.as_latex}[args.format or "text"]()
    print(_as_json(output) if args.json else output)
    return 0


def _diagnose(args: argparse.Namespace) -> int:
    model = _model(args)
    with _package_errors():
        report = model.diagnose(n_boot=args.n_boot, n_perm=args.n_perm, alpha=args.alpha,
                                rng=args.seed)
    print(_as_json({**report.to_dict(), "n_boot": args.n_boot}) if args.json else report)
    return 0


def _design(args: argparse.Namespace) -> int:
    from . import LinearSEM
    plan = _read_plan(args.path)
    with _package_errors():
        sem = LinearSEM.from_equations(**plan)
        report = sem.check_identification(**_declarations(args))
        if not report.identified:
            print(f"negdro: searching for the smallest intervention that identifies beta* "
                  f"({sem.p} covariates)...", file=sys.stderr, flush=True)
        advice = _suggest(sem)
    if args.json:
        print(_as_json({**report.to_dict(), "advice": _advice_json(advice)}))
        return 0
    print(report)
    print(f"\nAdvice: {advice}")
    return 0


def _suggest(sem: LinearSEM):
    """LinearSEM.suggest_interventions()'s advice (the API's, the same search), or in
    words why no single added environment suffices."""
    try:
        return sem.suggest_interventions()
    except DataError as exc:
        return f"none found. {_one_line(exc)}"


# ---------------------------------------------------------------------------- plan files
def _read_plan(path: str) -> dict:
    """The keyword arguments of :meth:`LinearSEM.from_equations` from a JSON or TOML plan."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".json", ".toml"):
        raise CLIError(f"{path}: a plan must be a .json or .toml file.", EXIT_INPUT)
    try:
        with open(path, "rb") as handle:
            plan = tomllib.load(handle) if suffix == ".toml" else json.load(handle)
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file.", EXIT_INPUT) from None
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}.", EXIT_INPUT) from None
    except tomllib.TOMLDecodeError as exc:
        raise CLIError(f"{path} is not valid TOML: {_one_line(exc)}.", EXIT_INPUT) from None
    except json.JSONDecodeError as exc:
        raise CLIError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column "
                       f"{exc.colno}).", EXIT_INPUT) from None
    except UnicodeDecodeError:
        raise CLIError(f"{path} is not a text file (not valid UTF-8).", EXIT_INPUT) from None
    return _check_plan(plan, path)


def _plan_error(path: str, message: str) -> NoReturn:
    raise CLIError(f"{path}: {message}", EXIT_INVALID)


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_plan(plan: object, path: str) -> dict:
    if not isinstance(plan, dict):
        _plan_error(path, "the plan must be a table of keys (equations, interventions, ...).")
    for key in plan:
        if key not in PLAN_KEYS:
            _plan_error(path, f"unknown key {key!r}.{did_you_mean(key, PLAN_KEYS)} The keys are "
                              f"{', '.join(PLAN_KEYS)}.")
    for key in ("equations", "interventions"):
        if key not in plan:
            _plan_error(path, f"the plan needs {key!r}.")
    equations = plan["equations"]
    if not isinstance(equations, dict) or not all(
            isinstance(parents, dict) and all(_is_number(c) for c in parents.values())
            for parents in equations.values()):
        _plan_error(path, "'equations' must map each child to {parent: coefficient}, e.g. "
                          "{\"Y\": {\"X1\": 1.5}}.")
    interventions = plan["interventions"]
    if not isinstance(interventions, list) or not all(isinstance(iv, dict)
                                                      for iv in interventions):
        _plan_error(path, "'interventions' must be a list with one table per environment "
                          "({} for the observational one).")
    kwargs = {"equations": equations,
              "interventions": [{v: _intervention(spec, path, k, v) for v, spec in iv.items()}
                                for k, iv in enumerate(interventions)]}
    for key, (what, valid) in _PLAN_VALUES.items():
        if key in plan and not valid(plan[key]):
            _plan_error(path, f"{key!r} must be {what}; got {plan[key]!r}.")
    kwargs.update({key: plan[key] for key in _PLAN_VALUES if key in plan})
    if "confounders" in plan:               # as tuple keys, which JSON and TOML lack
        kwargs["confounders"] = {(a, b): float(rho) for a, b, rho in plan["confounders"]}
    return kwargs


def _intervention(spec: object, path: str, k: int, name: str) -> float | tuple[float, float]:
    """A variance, or ``[mean, variance]`` as the tuple ``from_equations`` expects."""
    if _is_number(spec):
        return spec
    if isinstance(spec, list) and len(spec) == 2 and all(map(_is_number, spec)):
        return (spec[0], spec[1])
    _plan_error(path, f"interventions[{k}][{name!r}] must be a variance or [mean, variance]; "
                      f"got {spec!r}.")


# ---------------------------------------------------------------------------- parser
class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{message} (see '{self.prog} --help')", EXIT_USAGE)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _gamma(text: str) -> float:
    if text.strip().lower() == "auto":
        raise argparse.ArgumentTypeError(
            "'auto' is not supported (it was removed: it never beat gamma = 20); give a "
            "number such as 20, the paper's choice. In Python, NegDRO(...).fit_path() shows "
            "the effect of gamma")
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number >= 0 such as 20, got {text!r}") from None


def _separator(text: str) -> str:
    """--sep: one character; '\\t' (as typed in a shell) means a tab."""
    sep = "\t" if text == "\\t" else text
    if len(sep) != 1:
        raise argparse.ArgumentTypeError(f"must be one character (or '\\t'); got {text!r}")
    return sep


def _add_data_options(parser: argparse.ArgumentParser) -> None:
    """The data options shared by ``fit`` and ``diagnose``."""
    from .data import MISSING
    parser.add_argument("path", metavar="DATA", help="a CSV file with a header row, or "
                        "Parquet data: a .parquet file, a directory or a glob such as "
                        "'cells/*.parquet' (read batch by batch)")
    group = parser.add_argument_group("data")
    group.add_argument("--env", required=True, metavar="COL",
                       help="column holding the environment labels")
    group.add_argument("--outcome", metavar="COL",
                       help="outcome column (default: the first column other than --env)")
    group.add_argument("--covariates", metavar="A,B,C",
                       help="covariate columns, comma-separated (default: every other column)")
    group.add_argument("--intercept", action="store_true",
                       help="add a constant covariate 'const' (the paper's model has none)")
    group.add_argument("--sep", default=",", type=_separator, metavar="CHAR",
                       help="field separator of a CSV file (default ','; '\\t' for tabs)")
    group.add_argument("--decimal", default=".", choices=[".", ","],
                       help="decimal mark of a CSV file (default '.')")
    group.add_argument("--encoding", default="utf-8", metavar="NAME",
                       help="text encoding of a CSV file (default utf-8; e.g. latin-1)")
    group.add_argument("--missing", choices=MISSING, default="raise",
                       help="rows with NaN or infinite values: stop with an error, or drop "
                            "them (default: raise)")
    parser.add_argument("--seed", type=_count, default=None, metavar="S",
                        help="seed of the resampling (default: fresh randomness)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of text (NaN as null, infinities as "
                             "\"Infinity\" and \"-Infinity\")")


def _fit_options(fit: argparse.ArgumentParser) -> None:
    from .data.dependence import COV_TYPES
    from .estimation import DEFAULT_ALPHA, REFITS
    _add_data_options(fit)
    fit.add_argument("--gamma", type=_gamma, default=20.0,
                     help="invariance strength of eq. (9) (default: 20, the paper's)")
    fit.add_argument("--refit", choices=REFITS, default="auto",
                     help="support and refit: invariance selection (auto), the paper's "
                          "algorithm verbatim (negdro), or (31) on its support (invariant)")
    fit.add_argument("--alpha", type=float, default=0.05,
                     help="1 - the intervals' coverage (default 0.05: 95%% intervals)")
    fit.add_argument("--test-level", type=float, default=DEFAULT_ALPHA,
                     help="level of the selection's J tests and pruning (refit auto; "
                          f"default {DEFAULT_ALPHA:g})")
    fit.add_argument("--n-boot", type=_count, default=0,
                     help="bootstrap replicates for errors, intervals and selection "
                          "frequencies (default 0: analytic standard errors and robust "
                          "intervals)")
    rows = fit.add_argument_group("rows that are not independent (every test, interval and "
                                  "resample follows)")
    rows.add_argument("--cov-type", choices=COV_TYPES, default="nonrobust",
                      help="HAC: each environment's rows are a time series, in file order "
                           "(Newey-West; moving-block bootstrap); cluster: rows in clusters "
                           "of --groups (default nonrobust: independent rows)")
    rows.add_argument("--maxlags", type=_count, default=None, metavar="L",
                      help="the HAC covariance's lags (default: Andrews' plug-in)")
    rows.add_argument("--groups", metavar="COL", default=None,
                      help="the column of cluster labels for --cov-type cluster (never a "
                           "covariate)")
    _knows(fit)
    fit.add_argument("--format", choices=["text", "html", "latex"], default=None,
                     help="format of the summary (default: text)")
    fit.add_argument("--detail", action="store_true",
                     help="the summary with its numbered notes (summary(detail=True))")
    fit.add_argument("--save", metavar="PATH", default=None,
                     help="also save the results to PATH (negdro_stats.load(PATH) reads "
                          "them); an existing file is not replaced")
    fit.set_defaults(func=_fit)


def _diagnose_options(diagnose: argparse.ArgumentParser) -> None:
    _add_data_options(diagnose)
    diagnose.add_argument("--n-boot", type=_count, default=DEFAULT_N_RESAMPLE,
                          help="bootstrap resamples for the margin's lower bound (0: none)")
    diagnose.add_argument("--n-perm", type=_count, default=DEFAULT_N_RESAMPLE,
                          help="label permutations for the heterogeneity test (0: none)")
    diagnose.add_argument("--alpha", type=float, default=0.05,
                          help="one minus the confidence level of the bound (default 0.05)")
    diagnose.set_defaults(func=_diagnose)


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser of ``argv``: the data options (their choices import the package's stages)
    only where ``argv`` names ``fit`` or ``diagnose``, so that --help imports neither."""
    parser = _Parser(prog="negdro", description=__doc__.split("\n\n", 1)[0],
                     epilog=__doc__[__doc__.index("Exit status:"):].rstrip().replace(
                         "::\n", ":", 1), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"negdro {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    named = next((word for word in argv if not word.startswith("-")), None)

    demo = sub.add_parser("demo", help="simulate eq. (33), fit NegDRO, print the summary")
    demo.add_argument("--p", type=int, default=10, help="number of covariates (>= 5)")
    demo.add_argument("--n", type=int, default=20_000, help="rows per environment")
    demo.add_argument("--seed", type=_count, default=0,
                      help="seed of the simulation and the bootstrap (default 0)")
    demo.add_argument("--gamma", type=_gamma, default=20.0,
                      help="NegDRO's gamma (default 20)")
    demo.add_argument("--variant", choices=["text", "code"], default="text",
                      help="eq. (33) as printed in the paper ('text', default) or as in the "
                           "authors' public code ('code')")
    demo.add_argument("--n-boot", type=_count, default=0,
                      help="bootstrap replicates (default 0: analytic standard errors and "
                           "robust intervals)")
    demo.set_defaults(func=_demo)

    fit = sub.add_parser("fit", help="fit NegDRO to a CSV or Parquet file")
    diagnose = sub.add_parser("diagnose", help="how well do the environments identify "
                                               "beta*? (Condition 1b with uncertainty)")
    if named == "fit":
        _fit_options(fit)
    if named == "diagnose":
        _diagnose_options(diagnose)

    design = sub.add_parser(
        "design", help="check a planned linear SEM (JSON or TOML) and suggest interventions",
        description="Check a planned linear SEM. The plan holds 'equations' ({child: {parent: "
                    "coefficient}}), 'interventions' (one table per environment, {covariate: "
                    "variance} or {covariate: [mean, variance]}; {} is observational) and "
                    "optionally 'outcome' (default Y), 'covariates', 'noise_var', "
                    "'confounders' ([[name, name, correlation], ...]: hidden confounding) and "
                    "'envs'.")
    design.add_argument("path", metavar="PLAN", help="plan file, .json or .toml")
    design.add_argument("--json", action="store_true", help="print one JSON object")
    _knows(design)
    design.set_defaults(func=_design)
    return parser


def _knows(command: argparse.ArgumentParser) -> None:
    """The declarations' flags (:func:`_declarations`), for ``fit`` and ``design``."""
    knows = command.add_argument_group(
        "what you know of the design (it can settle a fit that rests on Condition 4)")
    knows.add_argument("--not-descendants", metavar="A,B",
                       help="covariates that cannot be descendants of the outcome (measured "
                            "before it, or assigned by design)")
    knows.add_argument("--targets", metavar="ENV=A,B", action="append",
                       help="the covariates environment ENV intervenes on; repeat for each "
                            "environment")


def _format_warning(message, category, filename, lineno, line=None) -> str:
    return f"negdro: warning: {_cli_spelling(_one_line(message))}\n"


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``negdro`` and ``python -m negdro_stats``; returns the exit status."""
    previous = warnings.formatwarning
    warnings.formatwarning = _format_warning
    try:
        argv = sys.argv[1:] if argv is None else argv
        args = _parser(argv).parse_args(argv)
        status = args.func(args)
        if status == 0 and getattr(args, "note", None):
            print(f"negdro: note: {args.note}", file=sys.stderr)
        return status
    except CLIError as exc:
        print(f"negdro: error: {_one_line(exc)}", file=sys.stderr)
        return exc.code
    except SystemExit as exc:             # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print("negdro: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:               # output piped into head & co., which quit early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141                        # 128 + SIGPIPE, as a shell reports it
    finally:
        warnings.formatwarning = previous


if __name__ == "__main__":
    sys.exit(main())
