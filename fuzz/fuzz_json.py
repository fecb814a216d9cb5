"""Fuzz target: the JSON-at-ready path (arbitrary bytes -> a call's deltas -> ready).

    .venv/bin/python fuzz/fuzz_json.py -atheris_runs=200000 fuzz/corpus/fuzz_json

Invariants (see ``fuzz/_checks.py``): ``apply`` never raises; the call is ``running``
with ``args`` equal to the stdlib's strict ``json.loads`` (``JSON.parse`` rules) or in
``error`` with an ``InvalidArguments``; the argument text is kept verbatim; a bystander call
is untouched. ``--random`` forces the fallback driver (no atheris needed).
"""

from __future__ import annotations

from _driver import main

if __name__ == "__main__":
    main("check_json")
