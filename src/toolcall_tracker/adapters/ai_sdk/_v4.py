"""The Vercel AI SDK v4 data stream protocol: its adapter and its declaration (one file).

What ``streamText(...).toDataStreamResponse()`` sends in AI SDK v4 (and what many Python
servers written for v4's ``useChat`` still send): one part per line, ``CODE:JSON``::

    0:"Let me look that up."                                       text
    b:{"toolCallId":"call_1","toolName":"getWeather"}              a call starts
    c:{"toolCallId":"call_1","argsTextDelta":"{\\"city\\":"}        its argument text grows
    9:{"toolCallId":"call_1","toolName":"getWeather","args":{...}} the whole call
    a:{"toolCallId":"call_1","result":{...}}                       the server ran it
    e:{"finishReason":"tool-calls","usage":{...},"isContinued":false}   a step ends
    d:{"finishReason":"stop","usage":{...}}                        the message ends
    3:"An error occurred."                                         an error

:class:`AISDKDataStreamAdapter` reads those lines (``str`` or ``bytes``, with or without
the newline, or wrapped in an SSE ``data:`` line) as a wire map onto the UI message stream
reader (:class:`~toolcall_tracker.adapters.AISDKAdapter`), which holds the call life cycle
and its rules:

- ``b:`` starts a call; ``c:`` appends ``argsTextDelta``.
- ``9:`` states the call's input: its ``args`` count. The streamed ``c:`` text is kept
  when it parses to them, else ``args`` is written as the call's text (what ``useChat``
  shows); the call becomes ready at the end of its step (``e:``) or message (``d:``).
- ``a:`` finishes the call as ``done`` with ``result``: the server ran the tool, so the
  client must not run it again (do not register such a tool with the client's runner).
- ``3:`` ends the turn not ok, with the error text as the reason.
- All steps (``e:`` lines) form one turn, which ends at ``d:``: ok for the finish reasons
  ``stop`` and ``tool-calls``, not ok for the others. A stream without ``d:`` or ``3:``
  ends not ok.
- Every other part (text ``0:``, reasoning, data ``2:``, annotations ``8:``, sources,
  step starts ``f:``) is ignored, as is a line that is not a data stream part.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from ._adapter import AISDKAdapter
from ._lines import split_line

logger: Final = logging.getLogger("toolcall_tracker.adapters")

__all__ = ["AISDKDataStreamAdapter"]


_PARTS: Final = {
    "b": "tool-input-start",
    "c": "tool-input-delta",
    "9": "tool-input-available",
    "a": "tool-output-available",
    "3": "error",
    "e": "finish-step",
    "d": "finish",
}
"""The codes that matter to tool calls, and the UI message stream part each one is."""


def _part(code: str, value: Any) -> dict[str, Any] | None:
    """The UI message stream part a v4 part is, or ``None`` if it says nothing of calls."""
    kind = _PARTS.get(code)
    if kind is None:
        return None
    if kind == "error":
        return {"type": "error", "errorText": value if isinstance(value, str) else str(value)}
    if not isinstance(value, dict):
        return None
    if kind == "finish":
        return {"type": "finish", "finishReason": value.get("finishReason")}
    if kind == "finish-step":
        return {"type": "finish-step"}
    part: dict[str, Any] = {"type": kind, "toolCallId": value.get("toolCallId")}
    if kind == "tool-input-start":
        part["toolName"] = value.get("toolName")
    elif kind == "tool-input-delta":
        part["inputTextDelta"] = value.get("argsTextDelta")
    elif kind == "tool-input-available":
        part["toolName"] = value.get("toolName")
        if "args" in value:
            part["input"] = value["args"]
    else:  # tool-output-available
        part["output"] = value.get("result")
    return part


class AISDKDataStreamAdapter(AISDKAdapter):
    """Translate AI SDK v4 data stream lines into tracker events (see the module doc).

    An item is one line (``str`` or ``bytes``): ``9:{...}``, ``data: 0:"..."``... One
    adapter per stream. Limits, the mismatch check and the failures are those of
    :class:`~toolcall_tracker.adapters.AISDKAdapter`.
    """

    def _translate(self, item: Any) -> None:
        """Write the events one line implies (possibly none). Never raises."""
        split = split_line(item)
        if split is None:
            logger.debug("ai_sdk_v4: ignored an item that is not a data stream part: %.200r", item)
            return
        code, text = split
        if code not in _PARTS:
            return  # text, reasoning, data, annotations, steps: nothing about calls
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
            logger.debug("ai_sdk_v4: ignored a part whose JSON does not parse: %.200r", item)
            return
        part = _part(code, value)
        if part is not None:
            super()._translate(part)
