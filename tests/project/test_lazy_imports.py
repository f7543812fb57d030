"""The package's public names are imported on first use (PEP 562, ``negdro_stats.__init__``):
the table ``_HOMES`` that does it, the imports type checkers read under ``TYPE_CHECKING``
and ``__all__`` name the same things, and each name is the object its module defines."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import negdro_stats

INIT = Path(negdro_stats.__file__)


def _type_checking_imports(source: str) -> dict[str, str]:
    """``{name: module}`` of the imports under ``if TYPE_CHECKING:`` (relative to the
    package; ``from . import x`` gives ``{x: x}``)."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1, ast.dump(imp)
                for alias in imp.names:
                    found[alias.asname or alias.name] = imp.module or alias.name
    return found


def test_the_lazy_table_the_type_checkers_imports_and_all_agree():
    homes = {name: module for module, names in negdro_stats._HOMES.items() for name in names}
    assert sum(map(len, negdro_stats._HOMES.values())) == len(homes)   # no name twice
    assert homes == _type_checking_imports(INIT.read_text())
    assert sorted(homes) == sorted(negdro_stats.__all__)
    assert len(set(negdro_stats.__all__)) == len(negdro_stats.__all__)


def test_the_check_sees_a_name_the_type_checkers_miss():
    """A name added to the table but not under TYPE_CHECKING is found (so the test above
    can fail)."""
    source = INIT.read_text().replace("    from .model import NegDRO, diagnose\n",
                                      "    from .model import NegDRO\n")
    assert "diagnose" not in _type_checking_imports(source)


def test_every_public_name_is_its_modules_object():
    for module, names in negdro_stats._HOMES.items():
        home = importlib.import_module(f"negdro_stats.{module}")
        for name in names:
            expected = home if name == module else getattr(home, name)
            assert getattr(negdro_stats, name) is expected, name
    assert set(negdro_stats.__all__) <= set(dir(negdro_stats))


def test_import_loads_no_stage_until_a_name_is_used():
    """``import negdro_stats`` alone loads neither pandas nor scipy nor a stage; the first
    ``negdro_stats.NegDRO`` loads the model; ``from negdro_stats import *`` and an unknown
    name behave as for any module."""
    code = (
        "import sys, negdro_stats as n\n"
        "heavy = ('numpy', 'pandas', 'scipy', 'negdro_stats.model', 'negdro_stats.data')\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "n.NegDRO\n"
        "print('negdro_stats.model' in sys.modules)\n"
        "try:\n    n.fit\nexcept AttributeError as exc:\n    print(exc)\n"
        "ns = {}\nexec('from negdro_stats import *', ns)\n"
        "print(sorted(set(ns) - {'__builtins__'}) == sorted(n.__all__))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    assert out == ["[]", "True", "module 'negdro_stats' has no attribute 'fit'", "True"], out
