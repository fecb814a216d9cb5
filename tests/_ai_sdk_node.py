"""The real Vercel AI SDK (``tests/js``, the ``ai`` package from npm), run through Node.

``produced()`` has the SDK write UI message streams (``tests/js/produce.mjs``: ``streamText``
with its mock model, ``toUIMessageStreamResponse()``); ``consume(text)`` has it read one
(``tests/js/consume.mjs``: its event-stream parser, chunk schema and chat state, as
``useChat`` reads them). Without ``node`` or ``tests/js/node_modules`` (run ``npm ci`` in
``tests/js``) the tests that need them skip, or fail when
``TOOLCALL_TRACKER_REQUIRE_NODE`` is set (``.ci/run`` sets it) or ``CI`` is ``true``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

JS = Path(__file__).parent / "js"
TIMEOUT = 120


def need_node() -> str:
    """The ``node`` executable; skips (or fails, in CI) when the fixture package is unusable."""
    node = shutil.which("node")
    if node is None:
        why = "node is not installed (the real AI SDK tests need Node >= 20)"
    elif not (JS / "node_modules" / "ai").is_dir():
        why = "tests/js/node_modules is missing: run `npm ci` in tests/js"
    else:
        return node
    if os.environ.get("TOOLCALL_TRACKER_REQUIRE_NODE") or os.environ.get("CI") == "true":
        pytest.fail(f"{why} (required here: CI=true or TOOLCALL_TRACKER_REQUIRE_NODE)")
    pytest.skip(why)


@cache
def _produced(out: str) -> dict[str, str]:
    node = need_node()
    subprocess.run([node, "produce.mjs", out], cwd=JS, check=True, timeout=TIMEOUT)
    return {path.stem: path.read_text(encoding="utf-8") for path in Path(out).glob("*.sse")}


def produced(tmp: Path) -> dict[str, str]:
    """Every scenario's stream, as the SDK wrote it (``name -> SSE text``)."""
    return _produced(str(tmp))


def consume(text: str, message: dict[str, Any] | None = None) -> dict[str, Any]:
    """How the SDK reads ``text``: ``rejected`` chunks, chat-state ``errors``,
    ``finishReason`` and the assistant message's ``parts``; continuing ``message`` (an
    assistant message: ``id``, ``role``, ``parts``) if given."""
    node = need_node()
    extra = [] if message is None else [json.dumps(message)]
    done = subprocess.run(
        [node, "consume.mjs", *extra],
        cwd=JS,
        input=text.encode(),
        capture_output=True,
        check=True,
        timeout=TIMEOUT,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result
