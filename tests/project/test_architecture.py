"""The layout of the package against its one contract, ``architecture.toml`` (parts, the
modules of each, and the rules between them; the docs show the same file)."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import negdro_stats

PACKAGE = Path(negdro_stats.__file__).parent
CONTRACT = tomllib.loads((PACKAGE.parent / "architecture.toml").read_text())


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module by its dotted name under the package (a package is ``x/__init__``)."""
    return {".".join(p.relative_to(root).with_suffix("").parts): p for p in root.rglob("*.py")}


def _imports(name: str, path: Path, modules: set[str]) -> list[tuple[str, tuple[str, ...]]]:
    """``(module imported, names taken)`` for each import of the package in ``path``
    (relative or absolute, at any depth, in functions and under TYPE_CHECKING too)."""
    here = name.split(".")[:-1]                       # the package holding the module
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name.removeprefix("negdro_stats.").replace(".", "/"), ())
                      for a in node.names if a.name.startswith("negdro_stats.")]
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here[: len(here) - node.level + 1] + (node.module or "").split(".")
        elif (node.module or "").split(".")[0] == "negdro_stats":
            base = node.module.split(".")[1:]
        else:
            continue
        target = ".".join(p for p in base if p)
        names = tuple(a.name for a in node.names)
        if node.module is None:                       # from . import x: x a module or a name
            for a in names:
                sub = f"{target}.{a}" if target else a
                sub_found = sub in modules or f"{sub}.__init__" in modules
                found.append((sub if sub_found else target or "__init__", () if sub_found
                              else (a,)))
        else:
            found.append((target, names))
    return [(t if t in modules else f"{t}.__init__" if f"{t}.__init__" in modules else t, n)
            for t, n in found]


def _part_of(modules: dict[str, Path]) -> dict[str, str]:
    """The part of each module (a folder's modules belong to its part)."""
    owner = {}
    for part in CONTRACT["part"]:
        for module in part["modules"]:
            owner[module] = part["name"]
    found = {}
    for name in modules:
        top = name.split(".")[0]
        found[name] = owner.get(top) or owner.get(name)
    return found


def _violations(modules: dict[str, Path]) -> list[str]:
    """Every broken rule of the contract, in words."""
    part_of = _part_of(modules)
    order = [p["name"] for p in CONTRACT["part"]]
    only = {p["name"]: set(p["only"]) for p in CONTRACT["part"] if "only" in p}
    never = {(r["part"], r["imports"]) for r in CONTRACT.get("never", [])}
    packaged = {r["part"] for r in CONTRACT.get("through_package", [])}
    exported = {part: _all_of(modules[f"{part}.__init__"]) for part in packaged}
    broken = [f"{m} belongs to no part" for m, p in part_of.items() if p is None]
    for name, path in modules.items():
        mine = part_of[name]
        for target, names in _imports(name, path, set(modules)):
            theirs = part_of.get(target) or part_of.get(target.split(".")[0])
            if theirs is None:
                broken.append(f"{name} imports {target}, which is no module")
                continue
            if mine in only and target not in only[mine]:
                broken.append(f"{name} imports {target}; {mine} imports only {only[mine]}")
            if order.index(theirs) > order.index(mine):
                broken.append(f"{name} ({mine}) imports {target} ({theirs}), a part below")
            if (mine, theirs) in never:
                broken.append(f"{name} imports {target}: {mine} never imports {theirs}")
            if theirs in packaged and mine != theirs:
                if target != f"{theirs}.__init__":
                    broken.append(f"{name} imports {target}: {theirs} only through its package")
                broken += [f"{name} imports {theirs}.{n}, not in {theirs}.__all__"
                           for n in names if n not in exported[theirs]]
    long = CONTRACT.get("long", {})
    sizes = {name.replace(".", "/") + ".py": len(path.read_text().splitlines())
             for name, path in modules.items()}
    broken += [f"[long] names {f}, which has {sizes.get(f, 0)} lines: drop the entry"
               for f in long if sizes.get(f, 0) <= CONTRACT["max_lines"]]
    for name, path in modules.items():
        lines = len(path.read_text().splitlines())
        if lines > CONTRACT["max_lines"] and name.replace(".", "/") + ".py" not in long:
            broken.append(f"{name} has {lines} lines (> {CONTRACT['max_lines']}) and no "
                          "reason under [long]")
    return broken + _long_functions(modules) + _circles(modules)


def _long_functions(modules: dict[str, Path]) -> list[str]:
    """Functions over ``max_function_lines`` lines of code without a stated reason, and
    reasons for functions that are no longer long."""
    reasons, limit, found = CONTRACT.get("long_functions", {}), CONTRACT["max_function_lines"], {}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = node.body[1 if ast.get_docstring(node) and len(node.body) > 1 else 0]
                key = f"{name.replace('.', '/')}.py:{node.name}"
                found[key] = node.end_lineno - first.lineno + 1
    return ([f"{key} has {n} lines of code (> {limit}) and no reason under [long_functions]"
             for key, n in found.items() if n > limit and key not in reasons]
            + [f"[long_functions] names {key}, which has {found.get(key, 0)} lines: drop it"
               for key in reasons if found.get(key, 0) <= limit])


def _all_of(path: Path) -> set[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__"
                                                for t in node.targets):
            return {e.value for e in node.value.elts}
    return set()


def _circles(modules: dict[str, Path]) -> list[str]:
    """Each circle of imports between modules (a package's __init__ is a module)."""
    graph = {name: {t for t, _ in _imports(name, path, set(modules)) if t in modules} - {name}
             for name, path in modules.items()}
    circles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return [f"circle: {c}" for c in circles]


def test_the_package_keeps_its_contract():
    broken = _violations(_modules())
    assert not broken, "\n".join(broken)


def test_the_check_sees_broken_rules(tmp_path):
    """A results module importing the data stage, an upward import, an import of a
    private estimation module, a name outside estimation's __all__ and a circle are each
    found (so the contract test can fail)."""
    for name, text in {
        "results/bad.py": "from ..data import MultiEnvData\nfrom ..model import NegDRO\n",
        "inference/bad.py": "from ..estimation.route import solve\n"
                            "from ..estimation import _private\n",
        "data/a.py": "from .b import x\n", "data/b.py": "from .a import y\n",
        "estimation/__init__.py": "__all__ = ['solve']\n", "estimation/route.py": "",
        "data/__init__.py": "", "model.py": "",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = "\n".join(_violations(_modules(tmp_path)))
    for expected in ["results.bad imports data.__init__: results never imports data",
                     "results.bad (results) imports model",
                     "inference.bad imports estimation.route: estimation only through",
                     "estimation._private, not in estimation.__all__",
                     "circle: data.a -> data.b -> data.a"]:
        assert expected in found, found


def _private_model_calls(modules: dict[str, Path]) -> list[str]:
    """Where a module of the results stage reads a private attribute of the fit behind a
    result (``model._x``, ``self.model._x``): results read the fit only through
    :class:`negdro_stats.results.source.FitSource`."""
    found = []
    for name, path in modules.items():
        if not name.startswith("results."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and (isinstance(node.value, ast.Name) and node.value.id == "model"
                         or isinstance(node.value, ast.Attribute)
                         and node.value.attr == "model")):
                found.append(f"{name}:{node.lineno} reads model.{node.attr}")
    return found


def test_results_read_the_fit_only_through_its_protocol(tmp_path):
    assert _private_model_calls(_modules()) == []
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bad.py").write_text(
        "def f(res, model):\n    return res.model._condition_1b(), model._cache\n")
    assert sorted(_private_model_calls(_modules(tmp_path))) == [
        "results.bad:2 reads model._cache", "results.bad:2 reads model._condition_1b"]


def test_the_docs_show_the_contract():
    page = (PACKAGE.parent / "docs" / "architecture.rst").read_text()
    assert ".. literalinclude:: ../architecture.toml" in page
    for part in CONTRACT["part"]:
        assert f"``{part['name']}``" in page, part["name"]


def test_no_package_attribute_hides_a_submodule():
    """``import negdro_stats.inference.bootstrap as m`` gave the function ``bootstrap``
    where a submodule and a name of its package share a name."""
    import importlib

    for name in _modules():
        if not name.endswith("__init__") and "." in name:
            parent, _, leaf = name.rpartition(".")
            package = importlib.import_module(f"negdro_stats.{parent}")
            importlib.import_module(f"negdro_stats.{name}")
            assert getattr(package, leaf).__name__ == f"negdro_stats.{name}", name


def test_the_package_imports_its_heavy_dependencies_on_first_use():
    """``import negdro_stats`` loads no cvxpy, matplotlib, statsmodels' tables, pyarrow
    datasets, Dask or scikit-learn (each is imported where it is first needed), and the
    lazily exported ``NegDRORegressor`` is in ``__all__`` and ``dir()``."""
    code = ("import sys, negdro_stats as n; "
            "print(sorted(m for m in ('cvxpy', 'matplotlib', 'statsmodels.iolib.summary', "
            "'pyarrow.dataset', 'dask', 'sklearn', 'narwhals.stable.v1.dependencies.dask') "
            "if m in sys.modules)); "
            "print('NegDRORegressor' in n.__all__ and 'NegDRORegressor' in dir(n))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True", out
