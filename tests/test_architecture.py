"""The layering of the package, derived from one ranking: a module imports only modules
ranked above it (imports under ``TYPE_CHECKING`` count too; there are no exceptions)."""

import ast
from pathlib import Path

import negdro_stats

RANKING = [
    "_version", "_typing", "exceptions", "_validation", "_json", "_saving",   # foundations
    "fourth",                                  # fourth moments, carried with the moments
    "moments", "sources", "data",              # the currency, its readers, the container
    "objective", "selection", "solvers",       # the maths on moments
    "diagnostics",                             # conditions
    "route",                                   # the estimator on moments: selection, verdict
    "robust",                                  # confidence sets by test inversion
    "sandwich",                                # analytic covariance of the refit
    "inference",                               # the one resampling loop, the bootstrap
    "plotting",                                # figures of results, paths and plans
    "design",                                  # planned designs
    "baselines", "simulate",                   # peers and the paper's SEMs: moments/design only
    "datasets",                                # bundled real data
    "holdout",                                 # LOEO validation: peers + a NegDRO callable
    "planning",                                # sample sizes for a planned design
    "report", "summary", "results",            # the summaries' tables: results import them
    "model",                                   # orchestration
    "theory", "testing",                       # the paper's results as checks; strategies
    "studies",                                 # the one place with the model and the peers
    "estimator",                               # scikit-learn wrapper of the model
    "__init__", "cli", "__main__",
]


def _package_imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules that ``path`` imports (``from . import x`` counts as ``x`` when
    ``x`` is a module, else as the package's ``__init__``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module is not None:
                found.add(node.module.split(".")[0])
            else:
                found |= {a.name if a.name in modules else "__init__" for a in node.names}
    return found


def test_every_module_is_ranked():
    root = Path(negdro_stats.__file__).parent
    modules = {path.stem for path in root.glob("*.py")}
    assert modules == set(RANKING), (f"unranked: {sorted(modules - set(RANKING))}; "
                                     f"ranked but absent: {sorted(set(RANKING) - modules)}")


def test_layering():
    root = Path(negdro_stats.__file__).parent
    modules = set(RANKING)
    for path in sorted(root.glob("*.py")):
        rank = RANKING.index(path.stem)
        above = set(RANKING[:rank])
        upward = _package_imports(path, modules) - above - {path.stem}
        assert not upward, f"{path.stem} imports {sorted(upward)}, ranked at or below it"


def test_the_check_sees_upward_imports(tmp_path):
    """The parser finds both import forms (so the layering test can fail)."""
    mod = tmp_path / "m.py"
    mod.write_text("from .model import NegDRO\nfrom . import studies, NegDRO\n")
    assert _package_imports(mod, set(RANKING)) == {"model", "studies", "__init__"}


def test_the_package_imports_its_heavy_dependencies_on_first_use():
    """``import negdro_stats`` loads no cvxpy, matplotlib, statsmodels' tables, pyarrow
    datasets, Dask or scikit-learn (each is imported where it is first needed), and the
    lazily exported ``NegDRORegressor`` is in ``__all__`` and ``dir()``."""
    import subprocess
    import sys

    code = ("import sys, negdro_stats as n; "
            "print(sorted(m for m in ('cvxpy', 'matplotlib', 'statsmodels.iolib.summary', "
            "'pyarrow.dataset', 'dask', 'sklearn', 'narwhals.stable.v1.dependencies.dask') "
            "if m in sys.modules)); "
            "print('NegDRORegressor' in n.__all__ and 'NegDRORegressor' in dir(n))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True", out
