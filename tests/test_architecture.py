"""The layering of DESIGN.md: each module imports only the package modules listed here."""

import ast
from pathlib import Path

import negdro_stats

ALLOWED = {
    "_typing": set(),
    "exceptions": set(),
    "_validation": set(),
    "moments": {"_typing"},
    "objective": {"_typing"},
    "selection": {"_typing"},
    "solvers": {"_typing", "moments", "objective", "selection"},
    "diagnostics": {"_typing", "exceptions", "moments"},
    "report": {"_typing", "diagnostics", "moments"},
    "design": {"_typing", "exceptions", "moments", "diagnostics"},
    "simulate": {"design", "exceptions"},
    "studies": {"design", "exceptions", "baselines", "model"},
    # results sees the model only under TYPE_CHECKING
    "inference": {"_typing", "moments", "solvers"},
    "results": {"_typing", "_validation", "exceptions", "solvers", "diagnostics", "report",
                "inference", "plotting"},
    "plotting": {"_typing"},
    "baselines": {"_typing", "exceptions", "moments"},
    "model": {"_typing", "_validation", "exceptions", "moments", "results", "solvers",
              "diagnostics", "report", "inference", "selection"},
    "cli": {"__init__"},
    "__main__": {"cli"},
}


def _package_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module is None:                       # from . import x: the package
                found.add("__init__")
            else:
                found.add(node.module.split(".")[0])
    # imports guarded by `if TYPE_CHECKING:` do not count
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and sub.level == 1 and sub.module:
                    found.discard(sub.module.split(".")[0])
    return found


def test_layering():
    root = Path(negdro_stats.__file__).parent
    for path in sorted(root.glob("*.py")):
        name = path.stem
        if name == "__init__":
            continue
        assert name in ALLOWED, f"new module {name}: add it to the layering table"
        extra = _package_imports(path) - ALLOWED[name]
        assert not extra, f"{name} imports {sorted(extra)}, which its layer may not"
