"""Every adapter fed every real recording: the calls and the turn's end, as plain JSON.

Used by ``test_differential.py`` to guard rewrites of the adapters' internals: the view
computed here from the current code must equal the snapshot stored in
``tests/fixtures/adapter_differential.json``, which was computed from the code as it was
before the rewrite. Run this module to (re)write the snapshot::

    python tests/adapters/_differential.py --write

Recordings: the shared real streams (``shared/real-streams/{recorded,new-formats}/`` next
to the repository or one of its ancestors; never copied in), the project's own recordings
(``tests/fixtures/recorded/``) and the hand-written fixtures (``tests/fixtures/<format>/``).
Each file is read into the plain dicts its provider's JSON decodes to and fed, through
``apply_stream``, into a fresh machine by *every* adapter (not only its own format's), so
that both the right reading and the handling of foreign items are pinned.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_real_streams import sse_data  # the WHATWG event-stream reading, shared

from toolcall_tracker import tool_call_streaming_state_machine
from toolcall_tracker.adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    BedrockConverseAdapter,
    CohereAdapter,
    GeminiAdapter,
    MistralAdapter,
    OllamaAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    apply_stream,
)

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "tests" / "fixtures" / "adapter_differential.json"
SUFFIXES = (".sse", ".jsonl", ".json")

ADAPTERS: dict[str, Callable[[], Any]] = {
    "anthropic": AnthropicAdapter,
    "anthropic_server_tools": lambda: AnthropicAdapter(server_tools=True),
    "bedrock": BedrockConverseAdapter,
    "bedrock_server_tools": lambda: BedrockConverseAdapter(server_tools=True),
    "cohere": CohereAdapter,
    "gemini": GeminiAdapter,
    "ollama": OllamaAdapter,
    "mistral": MistralAdapter,
    "openai_chat": OpenAIChatAdapter,
    "openai_chat_lazy": lambda: OpenAIChatAdapter(eager=False),
    "openai_responses": OpenAIResponsesAdapter,
    "ai_sdk": AISDKAdapter,
}


def shared_streams() -> Path | None:
    """``shared/real-streams`` beside the repository or one of its ancestors, if present."""
    for folder in REPO.parents:
        candidate = folder / "shared" / "real-streams"
        if candidate.is_dir():
            return candidate
    return None


def recordings() -> dict[str, Path]:
    """``{key: path}`` of every recording present, keys stable across machines."""
    found: dict[str, Path] = {}
    shared = shared_streams()
    roots: list[tuple[str, Path]] = []
    if shared is not None:
        roots += [("shared/recorded", shared / "recorded")]
        roots += [("shared/new-formats", shared / "new-formats")]
    fixtures = REPO / "tests" / "fixtures"
    roots.append(("own/recorded", fixtures / "recorded"))
    roots += [
        (f"own/fixtures/{path.name}", path)
        for path in sorted(fixtures.iterdir())
        if path.is_dir() and path.name not in ("recorded", "seed")
    ]
    for prefix, root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and path.name != "expected.json":
                found[f"{prefix}/{path.relative_to(root).as_posix()}"] = path
    return found


def _decode(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # kept as the text it is: adapters must cope


def load_items(path: Path) -> list[Any]:
    """The recording's items, as the plain values its JSON decodes to."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [_decode(line) for line in text.splitlines() if line.strip()]
    if path.suffix == ".json":
        value = _decode(text)
        return value if isinstance(value, list) else [value]
    items = []
    for data in sse_data(text):
        if data.strip() == "[DONE]":
            break
        items.append(_decode(data))
    return items


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=True, default=repr)


def view(adapter_name: str, items: list[Any]) -> dict[str, Any]:
    """What ``adapter_name`` makes of ``items``: each call, the turn's end, or what raised."""
    machine = tool_call_streaming_state_machine()
    try:
        apply_stream(machine, items, ADAPTERS[adapter_name]())
    except Exception as exc:  # recorded as part of the behaviour
        raised: str | None = type(exc).__name__
    else:
        raised = None
    calls = []
    for call in machine.list():
        error = call.error
        calls.append(
            {
                "id": call.id,
                "name": call.name,
                "args_text": call.args_text,
                "args": _json(call.args),
                "status": call.status.value,
                "error_kind": None if error is None else getattr(error, "kind", repr(error)),
            }
        )
    end = machine.end
    result: dict[str, Any] = {
        "calls": calls,
        "end": None if end is None else {"ok": end.ok, "reason": end.reason},
    }
    if raised is not None:
        result["raised"] = raised
    return result


def views(path: Path) -> dict[str, Any]:
    items = load_items(path)
    return {name: view(name, items) for name in ADAPTERS}


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__)
        return 2
    if shared_streams() is None:
        print("shared/real-streams not found: refusing to write a partial snapshot")
        return 1
    snapshot = {key: views(path) for key, path in recordings().items()}
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(snapshot)} recordings x {len(ADAPTERS)} adapters to {SNAPSHOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
