"""Fuzz target: every adapter's ``feed`` on arbitrary JSON-ish dicts, then ``end``.

    .venv/bin/python fuzz/fuzz_adapters.py -atheris_runs=200000 fuzz/corpus/fuzz_adapters

Byte 0 of an input picks the adapter (OpenAIChatAdapter, OpenAIResponsesAdapter,
AnthropicAdapter, GeminiAdapter, AISDKAdapter: those present are imported, the others
skipped); the rest is JSON lines or bytes turned into dicts from the providers' own
vocabulary (see ``fuzz/_checks.py``). Invariants: ``feed`` never raises on a dict, and
everything it and ``end()`` return applies to a tracker without ``InvalidEvent``.
"""

from __future__ import annotations

from _driver import main

if __name__ == "__main__":
    main("check_adapters")
