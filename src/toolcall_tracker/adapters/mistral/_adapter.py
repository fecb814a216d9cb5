"""The Mistral chat stream adapter: :class:`MistralAdapter`.

Mistral's chat stream is OpenAI Chat Completions with quirks, so this is a thin layer over
:class:`~toolcall_tracker.adapters.OpenAIChatAdapter` (same routing, ids, readiness and
turn end). Feed it the ``mistralai`` client's stream objects or the plain dicts decoded
from the SSE ``data:`` lines::

    stream = await client.chat.stream_async(model=..., messages=..., tools=...)
    async with ToolCallTracker() as tracker:
        await tracker.consume(adapt(stream, MistralAdapter()))

What it adds to the Chat adapter:

- ``CompletionEvent`` items (what ``client.chat.stream`` yields) are unwrapped to their
  ``data`` chunk.
- The SDK's models fill fields the server did not send with defaults: a missing tool-call
  ``id`` becomes the string ``"null"``, a missing ``index`` becomes ``0``. Fields the
  server did not send are dropped again (pydantic's ``exclude_unset``), and an id equal to
  ``"null"`` is treated as missing in dicts too, so calls without ids get the Chat
  adapter's synthetic ``call_<choice>_<n>`` and calls without index are told apart by
  name (two whole calls to one tool, each a complete JSON value, stay two calls).
- ``function.arguments`` given as an object (the SDK accepts a dict) is written as its
  compact JSON text.

Everything else is the Chat adapter's: whole calls in the same chunk as
``finish_reason`` are ready at that ``finish_reason``; ``tool_calls`` and ``stop`` end the
turn ok, ``length``, ``model_length``, ``error`` and the rest end it not ok. Unlike the
Chat adapter, ``feed`` never raises: an item that is not a chunk at all is ignored and
logged at DEBUG on the ``toolcall_tracker.adapters`` logger.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ...limits import Limits
from .._common import READ_ERRORS, _get, _json_text, logger
from ..openai._chat import OpenAIChatAdapter
from ..openai._shared import _NotAnItem

__all__ = ["MistralAdapter"]


def _fix_call(tool_call: Any) -> Any:
    """A tool-call fragment with the SDK's stand-ins for missing fields removed."""
    if not isinstance(tool_call, dict):
        return tool_call
    fixed = dict(tool_call)
    if fixed.get("id") == "null":
        del fixed["id"]
    function = fixed.get("function")
    if isinstance(function, dict):
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            text = _json_text(arguments)
            # An object that cannot be written as JSON stays as it is: the Chat adapter
            # fails the call (its arguments are not a string).
            if text is not None:
                fixed["function"] = {**function, "arguments": text}
    return fixed


def _fix_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return chunk
    fixed_choices = []
    for choice in choices:
        delta = choice.get("delta") if isinstance(choice, dict) else None
        tool_calls = delta.get("tool_calls") if isinstance(delta, dict) else None
        if isinstance(tool_calls, list):
            delta = {**delta, "tool_calls": [_fix_call(call) for call in tool_calls]}  # type: ignore[dict-item]
            choice = {**choice, "delta": delta}
        fixed_choices.append(choice)
    return {**chunk, "choices": fixed_choices}


class MistralAdapter(OpenAIChatAdapter):
    """Translate a Mistral chat stream (``mistralai`` objects or dicts) into tracker events.

    See the module doc for what it adds to :class:`OpenAIChatAdapter`.

    Args:
        eager: as :class:`OpenAIChatAdapter` (a call becomes ready when the next starts).
        limits: the limits to honour through ``feed`` / ``end``.
    """

    def __init__(self, *, eager: bool = True, limits: Limits | None = None) -> None:
        super().__init__(eager=eager, limits=limits)

    def _translate(self, item: Any) -> None:
        if type(item) is dict and not self._calls.ended and self._fast_dict(item):
            return  # more text for a streaming call: nothing in it needs a fix
        try:  # reading the item: what fails here is the item's
            if isinstance(item, BaseModel):
                data = _get(item, "data")
                if isinstance(data, BaseModel) and _get(item, "choices") is None:
                    item = data  # a CompletionEvent
                item = item.model_dump(mode="json", by_alias=True, exclude_unset=True)
            elif isinstance(item, dict) and "choices" not in item and "data" in item:
                item = item["data"]  # a CompletionEvent as a dict
            if isinstance(item, dict):
                item = _fix_chunk(item)
        except READ_ERRORS:
            logger.debug("mistral: ignored an item that could not be read", exc_info=True)
            return
        try:  # writing: only "not an item at all" is the item's; the sink's errors propagate
            super()._translate(item)
        except _NotAnItem:
            logger.debug("mistral: ignored an item that is not a chunk", exc_info=True)
