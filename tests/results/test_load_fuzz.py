"""A fuzzer of ``load()``: byte mutations of saved results, each loaded in a child
process and, if it loads, read through ``to_dict()``, ``conf_int()`` and (one in ten)
``summary()``.  The files:

- sealed, as ``save()`` writes them (a fit with text labels, a path): a changed byte
  fails the SHA-256 check, so nearly every mutation is refused at once;
- unsealed, as earlier versions wrote them (the same fit pickled with pandas' ``str``
  labels as Arrow buffers; the file saved by 0.2): what a crafted file can reach, the
  restricted unpickler and the checks of Arrow buffers and frames.

Outcome of each file:

- ``loaded``: a result came back and its views work;
- ``refused``: a DataError at load;
- ``view_error:<Type>``: a loaded result whose view raised one of the package's errors
  (a ``ValueError``/``TypeError`` raised by a line of negdro_stats, or a class of
  ``negdro_stats.exceptions``);
- ``unsealed_view_error``: an unsealed file whose changed bytes rename an attribute or
  point a reference at another object, which load cannot tell from a result (no
  checksum to check): its view raised another exception (an AttributeError, say);

and never ``crash`` (the child ended by a signal: SIGSEGV, SIGABRT; the next child goes
on after the file), ``hang`` (a batch over its time) or ``unhandled`` (any other
exception, from load or from a sealed file's view).  Issue 65: before the checks, one
changed byte in an Arrow offsets buffer made the first ``summary()`` read out of bounds
(16 crashes in 1,000 mutations of the unsealed fit).

The default run mutates 1,500 files (about 20 s); ``NEGDRO_FUZZ_SCALE=10`` ten times more,
``NEGDRO_FUZZ_SEED`` replays a run (its seed is printed).  ``benchmarks/fuzz.py`` runs
this with the other fuzzers.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import pickletools
import subprocess
import sys
import traceback
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

LOADER = "negdro_stats:load"
CHILD_MEMORY = 4 << 30            # bytes of address space a child may use (then MemoryError)
BATCH_SECONDS = 300               # a batch still running then is a hang
# the value an Arrow offset or a length is set to: past the end, negative, huge
WORDS = [2**31 - 1, 2**31, 2**32 - 1, 2**20, 1000, 2**63, 2**64 - 1]


# ------------------------------------------------------------------ the files
UNSEALED = ("arrow", "golden_0_2")


def saved_files(folder: Path) -> dict[str, bytes]:
    """The files to mutate, by name (made afresh: a fit of 5 covariates, 4 environments
    with text labels, and its path over two gammas; :data:`UNSEALED` names those without
    the seal)."""
    from negdro_stats import NegDRO, simulate

    df = simulate.eq33(p=5).sample(60, rng=0)
    df["env"] = df["env"].map(lambda e: f"site {e}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NegDRO(df, env="env", outcome="Y")
        res = model.fit(n_boot=3, rng=0)
        str(res.summary())                             # its lazy parts computed, as a user's
        path = model.fit_path([0.0, 5.0])
    res.save(folder / "saved.pkl")
    path.save(folder / "path.pkl")
    golden = Path(__file__).parents[1] / "golden" / "saved_by_0_2.pkl"
    return {"saved": (folder / "saved.pkl").read_bytes(),
            "path": (folder / "path.pkl").read_bytes(),
            "arrow": pickle.dumps({"negdro_stats": "0.2.0", "results": res},
                                  protocol=pickle.HIGHEST_PROTOCOL),
            "golden_0_2": golden.read_bytes()}


def buffers(data: bytes) -> list[tuple[int, int]]:
    """``(start, length)`` of every byte string in a pickle: numpy's and Arrow's buffers
    (offsets, validity bitmaps, UTF-8 text, float data)."""
    from negdro_stats._saving import _SEAL

    start = data.index(b"\n") + 1 if data.startswith(_SEAL) else 0
    heads = {"BYTEARRAY8": 9, "BINBYTES8": 9, "BINBYTES": 5, "SHORT_BINBYTES": 2}
    return [(start + pos + heads[op.name], len(arg))
            for op, arg, pos in pickletools.genops(data[start:])
            if op.name in heads and len(arg)]


def mutate(data: bytes, spans: list[tuple[int, int]], rng: np.random.Generator) -> bytes:
    """One to three changes: a bit flipped, a byte set, inserted or deleted, a 4- or
    8-byte word set to one of :data:`WORDS`, or the file cut short; seven in ten inside
    a buffer (each buffer as likely as any other, so the short Arrow offsets are hit)."""
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.7 and spans:
            start, length = spans[rng.integers(len(spans))]
            i = min(start + int(rng.integers(length)), len(out) - 1)   # (after a cut)
        else:
            i = int(rng.integers(len(out)))
        kind = int(rng.integers(6))
        if kind == 0:
            out[i] ^= 1 << int(rng.integers(8))
        elif kind == 1:
            out[i] = int(rng.integers(256))
        elif kind == 2:
            out[i:i] = bytes([int(rng.integers(256))])
        elif kind == 3:
            del out[i]
        elif kind == 4:
            size = int(rng.choice([4, 8]))
            i -= i % size
            word = int(rng.choice(WORDS)) % (1 << 8 * size)
            out[i:i + size] = word.to_bytes(size, "little")
        else:
            del out[int(rng.integers(len(out))):]
        if not out:
            break
    return bytes(out)


# ------------------------------------------------------------------ the child
def load_and_read(path: str, summary: bool, loader: str = LOADER) -> str:
    """The outcome of loading ``path`` with ``loader`` ('module:function') and reading
    its views (see the module's doc)."""
    import importlib

    import negdro_stats
    from negdro_stats import exceptions

    package = str(Path(negdro_stats.__file__).parent)
    module, function = loader.split(":")
    try:
        res = getattr(importlib.import_module(module), function)(path)
    except exceptions.DataError:
        return "refused"
    except Exception as exc:
        return _unhandled("load", exc)
    try:
        if hasattr(res, "to_dict"):
            res.to_dict(), res.conf_int(), repr(res)
        else:
            res.to_frame(), repr(res)
        if summary:
            str(res.summary())
    except (ValueError, TypeError, *_package_errors()) as exc:
        origin = traceback.extract_tb(exc.__traceback__)[-1].filename
        if origin.startswith(package) and str(exc):
            return f"view_error:{type(exc).__name__}"
        return _unhandled("view", exc)
    except Exception as exc:
        return _unhandled("view", exc)
    return "loaded"


def _package_errors() -> tuple[type, ...]:
    from negdro_stats import exceptions

    return tuple(getattr(exceptions, name) for name in exceptions.__all__
                 if issubclass(getattr(exceptions, name), Exception))


def _unhandled(stage: str, exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1]
    return (f"unhandled:{stage}:{type(exc).__name__}: {str(exc)[:120]} "
            f"({last.filename}:{last.lineno})")


def _child(folder: str, seed: int, start: int, stop: int, summary_every: int,
           loader: str) -> None:
    """Mutate and load files ``start..stop-1`` of the run, printing 'start k' before each
    and its outcome after, so that the parent knows which file a signal ended.  File k
    is a mutation of base ``k % 4`` drawn from ``(seed, k)`` alone."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    warnings.simplefilter("ignore")
    names = sorted(p.stem for p in Path(folder).glob("*.base"))
    bases = {name: (Path(folder) / f"{name}.base").read_bytes() for name in names}
    spans = {name: buffers(data) for name, data in bases.items()}
    target = os.path.join(folder, "mutated.pkl")
    for k in range(start, stop):
        name = names[k % len(names)]
        Path(target).write_bytes(mutate(bases[name], spans[name],
                                        np.random.default_rng([seed, k])))
        print(f"start {k}", flush=True)
        print(json.dumps([k, load_and_read(target, k % summary_every == 0, loader)]),
              flush=True)


# ------------------------------------------------------------------ the parent
def run(n: int, seed: int, folder: Path, summary_every: int = 10,
        loader: str = LOADER) -> tuple[Counter, Counter, list]:
    """Load ``n`` mutated files (cycling over :func:`saved_files`) in child processes;
    the outcomes' counts, their counts by base file ('arrow loaded'), and ``(file,
    outcome)`` of every failure."""
    names = sorted(saved_files(folder).items())
    for name, data in names:
        (folder / f"{name}.base").write_bytes(data)
    counts, by_file, failures, start = Counter(), Counter(), [], 0
    while start < n:
        last = start
        try:
            out = subprocess.run(
                [sys.executable, __file__, str(folder), str(seed), str(start), str(n),
                 str(summary_every), loader], capture_output=True, text=True,
                timeout=BATCH_SECONDS)
            lines, status, stderr = out.stdout.splitlines(), out.returncode, out.stderr
        except subprocess.TimeoutExpired as exc:
            text = exc.stdout or ""
            lines = (text.decode() if isinstance(text, bytes) else text).splitlines()
            status, stderr = "hang", ""
        for line in lines:
            if line.startswith("start "):
                last = int(line.split()[1])
                continue
            k, detail = json.loads(line)
            name, last = names[k % len(names)][0], k + 1
            outcome = detail.split(":")[0] if detail.startswith("unhandled") else detail
            if detail.startswith("unhandled:view") and name in UNSEALED:
                outcome = "unsealed_view_error"
            counts[outcome] += 1
            by_file[f"{name} {outcome}"] += 1
            if outcome == "unhandled":
                failures.append((f"{name} #{k}", detail))
        if status == 0:
            break
        kind, name = ("hang" if status == "hang" else "crash"), names[last % len(names)][0]
        counts[kind] += 1
        by_file[f"{name} {kind}"] += 1
        failures.append((f"{name} #{last}", f"{kind} (exit {status}) {stderr[-300:]}"))
        start = last + 1
    return counts, by_file, failures


def test_no_changed_byte_crashes_load_or_the_views(tmp_path):
    pytest.importorskip("pyarrow")
    scale = int(os.environ.get("NEGDRO_FUZZ_SCALE", "1"))
    seed = int(os.environ.get("NEGDRO_FUZZ_SEED", np.random.SeedSequence().entropy % 2**32))
    counts, by_file, failures = run(1500 * scale, seed, tmp_path)
    print(f"\nload fuzz (seed {seed}):", dict(sorted(by_file.items())))
    assert sum(counts.values()) == 1500 * scale
    assert not failures, (f"seed {seed} (NEGDRO_FUZZ_SEED={seed} replays it): "
                          + "\n".join(f"{file}: {what}" for file, what in failures[:10]))
    assert by_file["arrow loaded"] > 0 and by_file["arrow refused"] > 0   # both reached


def test_the_child_reports_a_crash_and_goes_on(tmp_path, monkeypatch):
    """A child killed by a signal is counted as a crash of the file it was loading, and
    the next child loads the files after it."""
    (tmp_path / "bomb.py").write_text(      # the 2nd load a signal, the 3rd a KeyError
        "import os, signal\nfrom pathlib import Path\nfrom negdro_stats import DataError\n\n"
        "def load(path):\n    calls = Path(path).with_name('calls')\n"
        "    calls.write_text(str(n := int(calls.read_text() if calls.exists() else 0) + 1))\n"
        "    if n == 2:\n        os.kill(os.getpid(), signal.SIGSEGV)\n"
        "    if n == 3:\n        return {}['x']\n"
        "    raise DataError('refused')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    monkeypatch.setattr(sys.modules[__name__], "saved_files",
                        lambda folder: {"x": pickle.dumps(b"abc")})
    counts, _, failures = run(4, 0, tmp_path, loader="bomb:load")
    assert counts == Counter(refused=2, crash=1, unhandled=1), counts
    assert failures[0][0] == "x #1" and "exit -11" in failures[0][1]
    assert failures[1][0] == "x #2" and "KeyError" in failures[1][1]


# ------------------------------------------------------------------ crafted files
def _payload(value: object) -> bytes:
    return pickle.dumps({"negdro_stats": "0.2.0", "results": value}, protocol=5)


def _load_error(tmp_path: Path, data: bytes) -> str:
    from negdro_stats import DataError, load

    (tmp_path / "crafted.pkl").write_bytes(data)
    with pytest.raises(DataError) as caught:
        load(tmp_path / "crafted.pkl")
    return str(caught.value)


def test_arrow_offsets_past_the_end_are_refused(tmp_path):
    """Issue 65: text labels pickled as Arrow buffers (as earlier versions saved them),
    the last string offset moved past the data -- pyarrow's own reconstruction took it,
    and the first read of the labels ran out of bounds (SIGSEGV)."""
    pa = pytest.importorskip("pyarrow")
    import pandas as pd

    offsets = b"".join(v.to_bytes(8, "little") for v in (0, 1, 3))
    data = _payload(pd.Index(["a", "bb"], dtype=pd.StringDtype("pyarrow", np.nan)))
    assert data.count(offsets) == 1 and b"pyarrow.lib" in data
    bad = data.replace(offsets, b"".join(v.to_bytes(8, "little") for v in (0, 1, 2**40)))
    assert "ArrowInvalid" in _load_error(tmp_path, bad)
    assert isinstance(pa.array(["a"]), pa.Array)


def test_a_frame_whose_blocks_miss_its_columns_is_refused(tmp_path):
    """A frame whose text block claims column 5 of 3 (the count still 3): pandas
    rebuilt it and wrote past the end of its column index on first use (SIGSEGV)."""
    import pandas as pd

    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "c": ["x", "y"]})
    data = _payload(frame)
    assert data.count(b"K\x02K\x03K\x01\x87") == 1              # slice(2, 3, 1)
    message = _load_error(tmp_path, data.replace(b"K\x02K\x03K\x01\x87",
                                                 b"K\x05K\x06K\x01\x87"))
    assert "a frame whose blocks do not fit its axes" in message


def test_categorical_codes_and_sized_builtins_are_refused(tmp_path):
    """A Categorical (its codes index the categories unchecked) and a bytearray of a
    size the file names are refused without being made."""
    import pandas as pd

    message = _load_error(tmp_path, _payload(pd.Categorical(["a", "b"])))
    assert "refers to pandas" in message and "Categorical" in message

    class Huge:
        def __reduce__(self):
            return bytearray, (10**13,)

    assert "a bytearray is stored in an unknown form" in _load_error(tmp_path,
                                                                     _payload(Huge()))


def test_save_writes_no_arrow_and_a_changed_byte_is_refused(tmp_path):
    """A saved fit with text labels names no pyarrow function, loads with the labels'
    dtype, and one changed byte anywhere after the seal is a DataError."""
    from negdro_stats import DataError, load

    class Names(pickle.Unpickler):
        modules: set = set()

        def find_class(self, module, name):
            self.modules.add(module.split(".")[0])
            return super().find_class(module, name)

    bases = saved_files(tmp_path)
    Names(io.BytesIO(bases["saved"].split(b"\n", 1)[1])).load()
    assert Names.modules == {"builtins", "negdro_stats", "numpy", "pandas"}, Names.modules
    back = load(tmp_path / "saved.pkl")
    assert str(back.params.index.dtype) == "str" and b"pyarrow.lib" in bases["arrow"]
    data = bytearray(bases["saved"])
    data[len(data) // 2] ^= 1
    (tmp_path / "changed.pkl").write_bytes(bytes(data))
    with pytest.raises(DataError, match="was changed after save"):
        load(tmp_path / "changed.pkl")


if __name__ == "__main__":
    _child(sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6])
