"""Run a fuzz target under atheris, or under a plain random-bytes fallback.

Usage (from the repository root)::

    .venv/bin/python fuzz/fuzz_json.py -atheris_runs=200000 fuzz/corpus/fuzz_json
    .venv/bin/python fuzz/fuzz_adapters.py -max_total_time=300 fuzz/corpus/fuzz_adapters

With atheris installed (``.venv/bin/pip install atheris``) every libFuzzer flag works
(``-max_len``, ``-max_total_time``, ``-merge=1``, ``-artifact_prefix``...), and corpus
directories given as arguments are read and grown. Without atheris, or with ``--random``,
a fallback driver replays the corpus directories, then feeds random and mutated byte
strings: ``--runs N`` (default 100,000) and ``--seed S``; a failing input is written to
``fuzz/artifacts/crash-<sha1>`` and the run stops with exit status 1.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import random
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
if importlib.util.find_spec("toolcall_tracker") is None:  # not installed: this checkout's
    sys.path.insert(1, str(ROOT / "src"))


def _corpus(dirs: list[str]) -> list[bytes]:
    out = []
    for name in dirs:
        path = Path(name)
        if path.is_dir():
            out.extend(p.read_bytes() for p in sorted(path.iterdir()) if p.is_file())
    return out


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(4)
        if op == 0 and buf:
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif op == 1:
            buf.insert(rng.randint(0, len(buf)), rng.randrange(256))
        elif op == 2 and buf:
            del buf[rng.randrange(len(buf))]
        elif buf:
            a = rng.randrange(len(buf))
            b = min(len(buf), a + rng.randint(1, 16))
            buf[a:a] = buf[a:b]
    return bytes(buf)


def fallback(check: Callable[[bytes], None], argv: list[str]) -> int:
    runs, seed, dirs = 100_000, 0, []
    args = iter(argv)
    for arg in args:
        if arg == "--runs":
            runs = int(next(args))
        elif arg == "--seed":
            seed = int(next(args))
        elif arg.startswith("-atheris_runs=") or arg.startswith("-runs="):
            runs = int(arg.split("=", 1)[1])
        elif arg == "--random" or arg.startswith("-"):
            continue
        else:
            dirs.append(arg)
    rng = random.Random(seed)
    pool = _corpus(dirs) or [b""]
    inputs = list(pool)
    print(f"fallback driver: {len(pool)} corpus inputs, then {runs} random runs (seed {seed})")
    for i in range(len(pool) + runs):
        if i < len(inputs):
            data = inputs[i]
        elif rng.random() < 0.5:
            data = _mutate(rng, rng.choice(pool))
        else:
            data = (
                os.urandom(rng.randint(0, 256))
                if rng.random() < 0.2
                else rng.randbytes(rng.randint(0, 256))
            )
        try:
            check(data)
        except Exception:
            digest = hashlib.sha1(data).hexdigest()
            out = ROOT / "fuzz" / "artifacts"
            out.mkdir(parents=True, exist_ok=True)
            (out / f"crash-{digest}").write_bytes(data)
            traceback.print_exc()
            print(f"FAILED on input {data!r} (saved as fuzz/artifacts/crash-{digest})")
            return 1
    print(f"done: {len(pool) + runs} inputs, no failure")
    return 0


def main(check_name: str) -> None:
    """Run ``_checks.<check_name>`` under atheris if possible, else under :func:`fallback`.

    Under atheris the library is imported inside ``instrument_imports`` (so nothing may
    import it before this function runs), which gives libFuzzer its coverage feedback.
    """
    argv = sys.argv[1:]
    if "--random" not in argv:
        try:
            import atheris
        except ImportError:
            print("atheris is not installed: using the random-bytes fallback driver")
        else:
            assert "toolcall_tracker" not in sys.modules, "imported before instrumentation"
            with atheris.instrument_imports(include=["toolcall_tracker"]):
                import _checks
            atheris.Setup([sys.argv[0], *argv], getattr(_checks, check_name))
            atheris.Fuzz()
            return
    import _checks

    sys.exit(fallback(getattr(_checks, check_name), argv))
