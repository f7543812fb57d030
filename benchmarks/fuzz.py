"""The fuzzers of the test suite, run by the thousand (issue 65 item 7).

    python benchmarks/fuzz.py [--load 6000] [--cli 2500] [--cli-process 40]
        [--types 2500] [--seed 0] [--out benchmarks/results/fuzz.json]

- ``load``: byte mutations of saved results, each loaded in a child process and read
  (``tests/results/test_load_fuzz.py``: sealed files as save() writes them, unsealed
  ones as earlier versions did, with Arrow buffers);
- ``cli``: random argument lists through ``negdro_stats.cli.main`` in this process;
  ``cli-process``: the same through ``python -m negdro_stats`` (a signal counts as a
  crash);
- ``types``: ``NegDRO(...)``, ``fit(...)`` and a results method with arguments of random
  types (``tests/model/test_fuzz.py``).

Counts the outcomes of each; a failure is a crash (a signal), a hang, or an exception
other than the package's documented errors (with its input and last line).  Prints a
table and writes JSON (with the date and command) to ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
import warnings
from collections import Counter
from pathlib import Path

from _timing import write_result

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.model import test_fuzz  # noqa: E402
from tests.results import test_load_fuzz  # noqa: E402


def _cases(case, n: int, seed: int, *args) -> tuple[Counter, list]:
    """``case(seed + k, *args)`` for k < n: the outcomes' counts and the failures."""
    counts, failures = Counter(), []
    for k in range(n):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                counts[case(seed + k, *args)] += 1
        except Exception as exc:
            counts["unhandled"] += 1
            last = traceback.extract_tb(exc.__traceback__)[-1]
            failures.append((f"seed {seed + k}", f"{type(exc).__name__}: {str(exc)[:300]} "
                                                 f"({last.filename}:{last.lineno})"))
    return counts, failures


def _load(n: int, seed: int, folder: Path) -> tuple[Counter, list]:
    """The load fuzzer's counts, by outcome and by base file and outcome."""
    counts, by_file, failures = test_load_fuzz.run(n, seed, folder)
    return counts + Counter({f"by file: {k}": v for k, v in by_file.items()}), failures


def run(args) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="negdro_fuzz_"))
    parts = {}
    for name, n, go in [
            ("load", args.load, lambda n: _load(n, args.seed, folder / "load")),
            ("cli", args.cli, lambda n: _cases(test_fuzz.cli_case, n, args.seed, folder)),
            ("cli-process", args.cli_process,
             lambda n: _cases(test_fuzz.cli_process_case, n, args.seed, folder)),
            ("types", args.types, lambda n: _cases(test_fuzz.argument_types_case, n,
                                                    args.seed))]:
        (folder / "load").mkdir(exist_ok=True)
        counts, failures = go(n) if n else (Counter(), [])
        inputs = sum(v for k, v in counts.items() if not k.startswith("by file"))
        parts[name] = {"inputs": inputs, "counts": dict(sorted(counts.items())),
                       "failures": [list(f) for f in failures]}
        print(name, parts[name]["counts"], flush=True)
    return parts


def table(result: dict) -> str:
    lines = [f"# {result['command']}  ({result['date']})", "",
             f"{'fuzzer':<12} {'inputs':>7} {'crash':>6} {'hang':>5} {'unhandled':>9}  outcomes"]
    for name, part in result["parts"].items():
        c = part["counts"]
        rest = {k: v for k, v in c.items() if k not in ("crash", "hang", "unhandled")}
        lines.append(f"{name:<12} {part['inputs']:>7} {c.get('crash', 0):>6} "
                     f"{c.get('hang', 0):>5} {c.get('unhandled', 0):>9}  {rest}")
    lines.append(f"{'total':<12} {result['inputs']:>7} {result['crashes']:>6} "
                 f"{result['hangs']:>5} {result['unhandled']:>9}")
    for name, part in result["parts"].items():
        lines += [f"  {name} {where}: {what}" for where, what in part["failures"][:20]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--load", type=int, default=6000)
    ap.add_argument("--cli", type=int, default=2500)
    ap.add_argument("--cli-process", type=int, default=40)
    ap.add_argument("--types", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/fuzz.json")
    args = ap.parse_args()
    parts = run(args)
    total = {k: sum(p["counts"].get(k, 0) for p in parts.values())
             for k in ("crash", "hang", "unhandled")}
    write_result(args.out, table, parts=parts, seed=args.seed,
                 inputs=sum(p["inputs"] for p in parts.values()), crashes=total["crash"],
                 hangs=total["hang"], unhandled=total["unhandled"])


if __name__ == "__main__":
    main()
