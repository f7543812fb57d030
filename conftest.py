"""Collection for the whole repository: the doctests of ``negdro_stats/`` skip 0.1's
forwarding modules (the part ``deprecated`` of ``architecture.toml``): their names live,
and are collected, in the new modules, and walking them would only raise
DeprecationWarnings."""

import tomllib
from pathlib import Path

_CONTRACT = tomllib.loads((Path(__file__).parent / "architecture.toml").read_text())
collect_ignore = [f"negdro_stats/{module}.py" for part in _CONTRACT["part"]
                  if part["name"] == "deprecated" for module in part["modules"]]
