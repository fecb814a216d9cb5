"""``python -m toolcall_tracker``: the command line (see :mod:`toolcall_tracker.cli`)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
