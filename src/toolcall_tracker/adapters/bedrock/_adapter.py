"""The AWS Bedrock Converse stream adapter: :class:`BedrockConverseAdapter`.

Feed it the events of ``converse_stream``: the dicts boto3 (and aioboto3 / aiobotocore)
yield from ``response["stream"]``, each with one key naming the event::

    response = client.converse_stream(modelId=..., messages=..., toolConfig=...)
    apply_stream(tracker, response["stream"], BedrockConverseAdapter())

    # aioboto3 / aiobotocore: the stream is an async iterable of the same dicts
    response = await client.converse_stream(...)
    await tracker.consume(adapt(response["stream"], BedrockConverseAdapter()))

How the wire maps to tracker events:

- ``contentBlockStart`` whose ``start.toolUse`` has a ``toolUseId`` and ``name`` starts a
  call whose id is the ``toolUseId`` (the id your ``toolResult`` must reference). Later
  events name the block only by ``contentBlockIndex``, so they are routed by index.
- ``contentBlockDelta`` with ``delta.toolUse.input`` appends that text (empty fragments,
  such as the customary first one, emit nothing).
- ``contentBlockStop`` makes the call ready; a call with no argument text is ``{}``.
- ``messageStop`` ends the turn: ``End(ok=True)`` for ``stopReason`` ``tool_use``,
  ``end_turn`` and ``stop_sequence`` (configurable, see ``ok_stop_reasons``);
  ``End(ok=False, reason=stopReason)`` for ``max_tokens``, ``guardrail_intervened``,
  ``content_filtered``, ``model_context_window_exceeded`` and anything else. A call whose
  block never closed is failed by the tracker (``IncompleteArguments``).
- An exception event (``modelStreamErrorException``, ``throttlingException``... any key
  ending in ``Exception``, as a decoder that does not raise them yields them) ends the
  turn not ok (reason ``"error: <key>: <message>"``).
- ``messageStart``, ``metadata`` (before or after ``messageStop``), text and reasoning
  blocks (with or without a ``contentBlockStart``) and unknown events are ignored.

Server-side tools. A ``toolUse`` block whose ``type`` is ``server_tool_use`` (Nova's
built-in code interpreter, say) is run by AWS, and its ``toolResult`` block follows in the
same stream. By default both are ignored, so ``ready_calls()`` only yields calls your code
must run. With ``BedrockConverseAdapter(server_tools=True)`` they are tracked: the call
becomes ready like any other, and its ``toolResult`` block completes it (``Result`` with
the block's content list as plain JSON, or ``Error`` with a :class:`BedrockServerToolError`
when the block's ``status`` is ``error``).

Malformed events never raise and fail their own call only (what the sink or one of its
listeners raises propagates):

- ``input`` that is not a string, or a ``toolUse`` without a string ``name``: the call
  fails with a :class:`BedrockMalformedEvent`; later events for its block are dropped;
- a ``toolUse`` without a usable ``toolUseId`` (missing, or longer than
  ``Limits.max_id_chars``): the call gets ``bedrock-block-<index>`` (``-2``, ``-3``...
  appended if taken); a name longer than ``Limits.max_name_chars`` is cut (``...(cut)``);
- a ``toolUse`` reusing an id an earlier block of the stream used: ignored;
- ``toolUse.input`` arriving before its block's ``contentBlockStart``: the call that then
  starts at that index fails with a :class:`BedrockMalformedEvent`;
- anything else that cannot be read: ignored, logged at DEBUG on the
  ``toolcall_tracker.adapters`` logger.

One adapter per model turn (per stream).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Final, Literal

from ...failures import CallFailure, MalformedStreamItem
from ...limits import Limits
from .._calls import RULES, AdapterCallTable, malformed_event
from .._common import READ_ERRORS, _get, _json_text, _plain, logger
from .._protocol import SinkAdapter

__all__ = ["BedrockConverseAdapter", "BedrockMalformedEvent", "BedrockServerToolError"]


class BedrockMalformedEvent(MalformedStreamItem):
    """A stream event concerning this call was malformed, so the call cannot be trusted.

    ``event_type`` is the offending event's key (``contentBlockDelta``...); ``index`` its
    ``contentBlockIndex``.
    """

    kind: Literal["bedrock_malformed_event"] = "bedrock_malformed_event"
    event_type: str | None = None
    index: int | None = None


class BedrockServerToolError(CallFailure):
    """A server-side tool (``server_tools=True``) reported an error in its ``toolResult``
    block, or its result outgrew ``Limits.max_args_chars``. ``content`` is the result
    content received (as plain JSON) when it was kept."""

    kind: Literal["bedrock_server_tool_error"] = "bedrock_server_tool_error"
    status: str | None = None
    content: Any = None


_DEFAULT_OK: Final = ("end_turn", "tool_use", "stop_sequence")
_FAILURE: Final = malformed_event(BedrockMalformedEvent)


class _ResultBlock:
    """A server tool's ``toolResult`` block: its content pieces, bounded in size."""

    __slots__ = ("call_id", "chars", "content", "status", "too_large")

    def __init__(self, call_id: str, status: Any) -> None:
        self.call_id = call_id
        self.status = status if isinstance(status, str) else None
        self.content: list[Any] = []
        self.chars = 0
        self.too_large = False


class BedrockConverseAdapter(SinkAdapter):
    """Translate a Bedrock ``converse_stream`` into tracker events (see the module doc).

    Args:
        server_tools: also track ``server_tool_use`` blocks (run by AWS; completed by their
            ``toolResult`` blocks). Off by default.
        ok_stop_reasons: the ``stopReason`` values that end the turn ok. Default
            ``("end_turn", "tool_use", "stop_sequence")``.
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    def __init__(
        self,
        *,
        server_tools: bool = False,
        ok_stop_reasons: Collection[str] = _DEFAULT_OK,
        limits: Limits | None = None,
    ) -> None:
        super().__init__(limits=limits)
        self._server_tools = server_tools
        self._ok_reasons = frozenset(ok_stop_reasons)
        self._table = self._calls = AdapterCallTable(RULES["bedrock"], _FAILURE, self._sink)
        self._results: dict[int, _ResultBlock] = {}
        self._server_calls: set[str] = set()

    def _translate(self, item: Any) -> None:
        self._read((item,))

    def _read(self, items: Iterable[Any]) -> None:
        """Write the events each stream event implies (often none). Only what the sink
        raises propagates; an event that cannot be read is logged and ignored."""
        calls = self._calls
        for item in items:
            try:
                if calls.ended:
                    continue
                if type(item) is dict:  # the fast path: more text, as boto3's plain dicts
                    body = item.get("contentBlockDelta")  # (get: most other events lack it)
                    if type(body) is dict:
                        try:  # subscripts: a missing key takes the general path below
                            fragment = body["delta"]
                            tool_use = fragment["toolUse"] if type(fragment) is dict else None
                            if type(tool_use) is dict:
                                index, text = body["contentBlockIndex"], tool_use["input"]
                        except KeyError:
                            tool_use = None
                        if type(tool_use) is dict and calls.more(index, text):
                            continue
                delta = _get(item, "contentBlockDelta", "content_block_delta")
                if delta is not None:
                    index = _get(delta, "contentBlockIndex", "content_block_index")
                    tool_use = _get(_get(delta, "delta"), "toolUse", "tool_use")
                    if not calls.more(index, _get(tool_use, "input")):
                        self._on_delta(index, delta, tool_use)
                    continue
                start = _get(item, "contentBlockStart", "content_block_start")
                if start is not None:
                    self._on_start(start)
                    continue
                stop = _get(item, "contentBlockStop", "content_block_stop")
                if stop is not None:
                    index = _get(stop, "contentBlockIndex", "content_block_index")
                    result = self._results.pop(index, None)
                    if result is not None:
                        self._on_result_stop(result)
                    else:
                        calls.close(index, "contentBlockStop")
                    continue
                message_stop = _get(item, "messageStop", "message_stop")
                if message_stop is not None:
                    reason = _get(message_stop, "stopReason", "stop_reason")
                    self._end(
                        isinstance(reason, str) and reason in self._ok_reasons,
                        reason if isinstance(reason, str) else "messageStop without stopReason",
                    )
                    continue
                if isinstance(item, dict):
                    for key, value in item.items():
                        if isinstance(key, str) and key.endswith("Exception"):
                            message = _get(value, "message")
                            text = f"error: {key}" + (
                                f": {message:.200}" if isinstance(message, str) else ""
                            )
                            self._end(False, text)
                            break
            except READ_ERRORS:  # a hostile object; nothing to attribute it to
                logger.debug("bedrock: ignored an event that could not be read", exc_info=True)

    _translate_all = _read

    def _finish_stream(self) -> None:
        """The end of the stream: ``End(ok=False)`` unless ``messageStop`` ended the turn."""
        if not self._calls.ended:
            self._end(False, "stream ended before messageStop")

    # -- handlers ---------------------------------------------------------------------

    def _on_start(self, start: Any) -> None:
        index = _get(start, "contentBlockIndex", "content_block_index")
        body = _get(start, "start")
        tool_use = _get(body, "toolUse", "tool_use")
        if tool_use is None:
            result = _get(body, "toolResult", "tool_result")
            if result is not None and self._server_tools and type(index) is int:
                call_id = _get(result, "toolUseId", "tool_use_id")
                if isinstance(call_id, str) and call_id in self._server_calls:
                    self._server_calls.discard(call_id)
                    self._results[index] = _ResultBlock(call_id, _get(result, "status"))
            return
        if type(index) is not int:
            logger.debug("bedrock: ignored a toolUse block without an integer index")
            return
        server = _get(tool_use, "type") == "server_tool_use"
        if server and not self._server_tools:
            return
        record = self._calls.start(
            index,
            _get(tool_use, "toolUseId", "tool_use_id"),
            _get(tool_use, "name"),
            "start",
            server=server,
        )
        if record is not None and server:
            self._server_calls.add(record.call_id)

    def _on_delta(self, index: Any, event: Any, tool_use: Any) -> None:
        calls = self._calls
        record = calls.records.get(index)
        if record is None or not record.open:
            result = self._results.get(index)
            if result is not None:
                delta = _get(event, "delta")
                self._on_result_delta(result, _get(delta, "toolResult", "tool_result"))
            elif record is None and type(index) is int and tool_use is not None:
                calls.early(index)
            return
        if tool_use is not None:  # text or reasoning at a tool block's index: ignored
            calls.append(record, _get(tool_use, "input"), "contentBlockDelta")

    def _on_result_delta(self, result: _ResultBlock, pieces: Any) -> None:
        if result.too_large or pieces is None:
            return
        pieces = _plain(pieces)
        text = _json_text(pieces)
        limit = self._calls.limits.max_args_chars
        size = len(text) if text is not None else limit + 1
        result.chars += size
        if result.chars > limit:
            result.too_large = True
            result.content = []
            return
        if isinstance(pieces, list):
            result.content.extend(pieces)
        else:
            result.content.append(pieces)

    def _on_result_stop(self, result: _ResultBlock) -> None:
        if result.too_large or result.status == "error":
            why = (
                "its result outgrew Limits.max_args_chars"
                if result.too_large
                else "it reported status 'error'"
            )
            self._calls.error(
                result.call_id,
                BedrockServerToolError(
                    message=f"the server tool {result.call_id!r} failed: {why}",
                    status=result.status,
                    content=None if result.too_large else result.content,
                ),
            )
            return
        self._calls.result(result.call_id, result.content)

    def _end(self, ok: bool, reason: str) -> None:
        self._results.clear()
        self._calls.end(ok, reason)
