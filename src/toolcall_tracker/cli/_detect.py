"""Recognising a stream's format from its items' shapes (``--format auto``).

Only the first :data:`DETECT_ITEMS` items are looked at (fewer if they hold more than
:data:`DETECT_CHARS` characters): a stream has one format. They are kept for the replay,
which reads the rest as it goes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from ._input import InputError, Item

FORMATS: Final = (
    "seed",
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "ai-sdk",
    "bedrock",
    "cohere",
    "ollama",
    "mistral",
)
"""The stream formats ``--format`` accepts (besides ``auto``).

LiteLLM's chunks, and Mistral's and Ollama's OpenAI-compatible ones, are ``openai-chat``.
"""

DETECT_ITEMS: Final = 1000
"""The items ``--format auto`` looks at."""
DETECT_CHARS = 16 * 1024 * 1024
"""``--format auto`` stops looking once the items it holds are this long."""

_SEED_TYPES: Final = frozenset({"start", "delta", "ready", "result", "error", "end"})
_ANTHROPIC_TYPES: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_AI_SDK_PREFIXES: Final = (
    "tool-input-",
    "tool-output-",
    "text-",
    "reasoning-",
    "source-",
    "data-",
    "start-step",
    "finish-step",
)
_AI_SDK_TYPES: Final = frozenset({"finish", "abort", "file", "message-metadata"})
_BEDROCK_KEYS: Final = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
)
_COHERE_TYPES: Final = frozenset(
    {
        "message-start",
        "message-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "content-start",
        "content-delta",
        "content-end",
        "citation-start",
        "citation-end",
    }
)
_GEMINI_KEYS: Final = (
    "candidates",
    "promptFeedback",
    "prompt_feedback",
    "usageMetadata",
    "usage_metadata",
)


def item_format(value: dict[str, Any]) -> str | None:
    """The format one item's shape is distinctive of, or ``None`` if it says nothing.

    Mistral's wire chunks are Chat Completions chunks (``openai-chat``, read the same way);
    a dumped ``mistralai`` ``CompletionEvent`` (``{"data": chunk}``) is ``mistral``.
    """
    if isinstance(value.get("choices"), list) or value.get("object") == "chat.completion.chunk":
        return "openai-chat"
    if any(key in value for key in _GEMINI_KEYS):
        return "gemini"
    if any(key in value for key in _BEDROCK_KEYS):
        return "bedrock"
    if isinstance(value.get("done"), bool) and ("created_at" in value or "message" in value):
        return "ollama"
    data = value.get("data")
    if len(value) == 1 and isinstance(data, dict) and isinstance(data.get("choices"), list):
        return "mistral"
    kind = value.get("type")
    if not isinstance(kind, str):
        return None
    if kind.startswith("response."):
        return "openai-responses"
    if kind in _ANTHROPIC_TYPES:
        return "anthropic"
    if kind in _COHERE_TYPES:
        return "cohere"
    if kind.startswith(_AI_SDK_PREFIXES) or kind in _AI_SDK_TYPES:
        return "ai-sdk"
    if kind in _SEED_TYPES and _looks_seed(kind, value):
        return "seed"
    return None


def _looks_seed(kind: str, value: dict[str, Any]) -> bool:
    """Whether an item of a seed ``type`` has the seed event's fields.

    Other formats reuse some of these type names (``start`` and ``error`` in the AI SDK,
    ``error`` in the Anthropic and Responses streams) with other fields.
    """
    if kind == "end":
        return set(value) <= {"type", "ok", "reason"}
    if not isinstance(value.get("id"), str):
        return False
    if kind == "start":
        return isinstance(value.get("name"), str)
    if kind == "delta":
        return "argsTextDelta" in value or "args_text_delta" in value
    if kind == "ready":
        return set(value) <= {"type", "id"}
    return kind in value  # result / error


def mismatch(fmt: str, items: int, votes: dict[str, int]) -> str:
    """Why no item of a stream is a ``fmt`` item, and the format that would fit."""
    what = f"none of the {items} items is" if items != 1 else "the item is not"
    ranked = sorted(votes.items(), key=lambda vote: -vote[1])
    if not ranked:
        return f"{what} a {fmt} item, nor one of any format this tool knows"
    best, count = ranked[0]
    return f"{what} a {fmt} item; {count} of {items} look like {best} (pass --format {best})"


def detect(items: Iterator[Item]) -> tuple[str, list[Item]]:
    """The format most of the first items are distinctive of (``--format auto``).

    Reads the first :data:`DETECT_ITEMS` items (fewer once they hold :data:`DETECT_CHARS`
    characters) from ``items``, and returns them with the format, for the replay: the
    rest stay unread in ``items``.

    Raises:
        InputError: no item is distinctive, two formats tie, or the items are bad.
    """
    window: list[Item] = []
    chars = 0
    votes: dict[str, int] = {}
    for item in items:
        window.append(item)
        found = item_format(item.value)
        if found is not None:
            votes[found] = votes.get(found, 0) + 1
        chars += item.chars
        if len(window) >= DETECT_ITEMS or chars >= DETECT_CHARS:
            break
    if not votes:
        raise InputError(
            "cannot recognise the stream's format from its items; pass --format "
            f"({', '.join(FORMATS)})"
        )
    ranked = sorted(votes.items(), key=lambda vote: -vote[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        raise InputError(
            f"the items fit {ranked[0][0]} and {ranked[1][0]} equally well; pass --format"
        )
    return ranked[0][0], window
