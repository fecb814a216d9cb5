"""The official SDKs' typed stream objects for plain stream dicts (shared by tests).

``typed(fmt, item)`` validates a decoded item into the object the provider's SDK yields
(openai ``ChatCompletionChunk`` / Responses events, anthropic ``RawMessageStreamEvent``,
google-genai ``GenerateContentResponse``), or returns ``None`` when that SDK is not
installed or does not know the item (a newer event type than the SDK).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError


@cache
def _validator(fmt: str) -> Callable[[Any], Any] | None:
    try:
        if fmt == "openai-chat":
            from openai.types.chat import ChatCompletionChunk

            return ChatCompletionChunk.model_validate
        if fmt == "openai-responses":
            from openai.types.responses import ResponseStreamEvent

            return TypeAdapter(ResponseStreamEvent).validate_python
        if fmt == "anthropic":
            from anthropic.types import RawMessageStreamEvent

            return TypeAdapter(RawMessageStreamEvent).validate_python
        if fmt == "gemini":
            from google.genai.types import GenerateContentResponse

            return GenerateContentResponse.model_validate
    except ImportError:
        return None
    return None


def typed(fmt: str, item: Any) -> Any:
    """The SDK object for ``item``, or ``None`` (no SDK, or it does not know the item)."""
    validate = _validator(fmt)
    if validate is None:
        return None
    try:
        return validate(item)
    except ValidationError:
        return None
