"""The official SDKs' typed stream objects for plain stream dicts (shared by tests).

``typed(fmt, item)`` builds from a decoded item the object the provider's SDK yields:
openai ``ChatCompletionChunk`` and Responses events and anthropic ``RawMessageStreamEvent``
the way their streams build them (the SDKs' lenient ``construct_type``, which keeps
fields and event types newer than the SDK), google-genai ``GenerateContentResponse`` by
validation; ``None`` when that SDK is not installed or rejects the item.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import ValidationError


@cache
def _validator(fmt: str) -> Callable[[Any], Any] | None:
    try:
        if fmt == "openai-chat":
            from openai._models import construct_type
            from openai.types.chat import ChatCompletionChunk

            return lambda item: construct_type(type_=ChatCompletionChunk, value=item)
        if fmt == "openai-responses":
            from openai._models import construct_type
            from openai.types.responses import ResponseStreamEvent

            return lambda item: construct_type(type_=ResponseStreamEvent, value=item)
        if fmt == "anthropic":
            from anthropic._models import construct_type as construct
            from anthropic.types import RawMessageStreamEvent

            return lambda item: construct(type_=RawMessageStreamEvent, value=item)
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
