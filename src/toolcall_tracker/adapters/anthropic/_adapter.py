"""The Anthropic Messages stream adapter: :class:`AnthropicAdapter`.

Feed it the events of a Messages stream, either the ``anthropic`` client's typed events
(``client.messages.create(stream=True)`` or ``client.messages.stream(...)``; the helper
events the latter adds, ``text``, ``input_json``, ``thinking``..., are ignored) or the
plain dicts decoded from the SSE ``data:`` lines::

    async with client.messages.stream(model=..., tools=..., messages=...) as stream:
        await tracker.consume(adapt(stream, AnthropicAdapter()))

How the wire maps to tracker events:

- ``content_block_start`` with a ``tool_use`` block starts a call whose id is the block's
  ``id`` (the id your ``tool_result`` must reference). Later events name the block only by
  its ``index``, so they are routed by index.
- ``content_block_delta`` with an ``input_json_delta`` appends ``partial_json`` (empty
  fragments, such as the customary first one, emit nothing).
- ``content_block_stop`` makes the call ready. If no non-blank fragment arrived, the
  block's own ``input`` is the argument text: the JSON of ``input`` when it is non-empty (a
  block that arrives whole, with no deltas), else ``{}`` (an argument-less tool). When
  fragments did arrive they win over the block's initial ``input``, as in the official
  client's accumulated message.
- ``message_delta`` records ``stop_reason``; ``message_stop`` ends the turn:
  ``End(ok=True)`` for ``end_turn`` and ``tool_use`` (configurable, see
  ``ok_stop_reasons``), ``End(ok=False, reason=stop_reason)`` for ``max_tokens``,
  ``stop_sequence``, ``pause_turn``, ``refusal`` and anything else. A call whose block
  was closed by a ``max_tokens`` cut has truncated JSON and fails to parse
  (``InvalidArguments``); one whose block never closed is failed by the tracker at the
  end (``IncompleteArguments``).
- An ``error`` event ends the turn not ok (reason ``"error: <type>: <message>"``).
- ``message_start`` may carry whole blocks in ``message.content`` (programmatic tool
  calling sends a ``tool_use`` there, with ``stop_reason`` set in the same message and no
  content-block events or ``message_delta``): each tool block there becomes a whole call
  (``start``, its ``input`` as JSON, ``ready``), and its ``stop_reason`` counts.
- ``ping``, text, thinking and redacted-thinking blocks and every other unknown event or
  block type are ignored silently.

Server-side tools. ``server_tool_use`` (web search, web fetch, code execution...) and
``mcp_tool_use`` blocks are calls Anthropic's servers execute themselves; their results
arrive later in the same stream as ``*_tool_result`` blocks. By default they are ignored,
so a loop over ``tracker.ready_calls()`` only ever sees calls your code must run. With
``AnthropicAdapter(server_tools=True)`` they are tracked too (start, deltas, ready like a
``tool_use``), and their result blocks complete them: ``Result`` with the block's
``content`` as plain JSON, or ``Error`` with an :class:`AnthropicServerToolError` when the
content is an error object (``type`` ending in ``_error``) or ``is_error`` is true.

Malformed events never raise and never end the stream; they fail their own call only (an
exception raised by the sink being written into, or by one of its listeners, is not a
malformed event: it propagates):

- an ``input_json_delta`` whose ``partial_json`` is not a string, a tool block without a
  string ``name``, or an ``input`` that cannot be written as JSON: the call fails with an
  :class:`AnthropicMalformedEvent` (``Error`` event); later events for its block are
  dropped;
- a tool block without an ``id`` (or with one longer than ``Limits.max_id_chars``): the
  call gets the synthetic id ``anthropic-block-<index>`` (``-2``, ``-3``... appended if
  that is taken); a name longer than ``Limits.max_name_chars`` is cut to a name no tool
  can have (``...(cut)``);
- a tool block reusing an id an earlier block of the stream used: the block is ignored;
- an ``input_json_delta`` that arrives before its block's ``content_block_start``: the
  call that then starts at that index fails with an :class:`AnthropicMalformedEvent`
  (logged at DEBUG), rather than run without that text;
- a second tool block at an index whose call is still open: the first call fails
  (superseded) and the second starts;
- an event whose ``index`` names no tool block, or an item that is not an event at all:
  ignored, and logged at DEBUG on the ``toolcall_tracker.adapters`` logger.

One adapter per model turn (per stream).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Final, Literal

from ...failures import CallFailure, MalformedStreamItem
from ...limits import Limits
from .._calls import RULES, AdapterCallTable, malformed_event
from .._common import _IS_MAPPING, READ_ERRORS, _get, _plain, logger
from .._protocol import SinkAdapter

__all__ = ["AnthropicAdapter", "AnthropicMalformedEvent", "AnthropicServerToolError"]


class AnthropicMalformedEvent(MalformedStreamItem):
    """A stream event concerning this call was malformed, so the call cannot be trusted.

    ``event_type`` is the offending event's ``type``; ``index`` its content block index.
    """

    kind: Literal["anthropic_malformed_event"] = "anthropic_malformed_event"
    event_type: str | None = None
    index: int | None = None


class AnthropicServerToolError(CallFailure):
    """A server-side tool (``server_tools=True``) reported an error in its result block.

    ``error_code`` is the error object's ``error_code`` when it has one; ``content`` the
    result block's content as plain JSON.
    """

    kind: Literal["anthropic_server_tool_error"] = "anthropic_server_tool_error"
    error_code: str | None = None
    content: Any = None


_CLIENT_TOOL_BLOCKS: Final = frozenset({"tool_use"})
_SERVER_TOOL_BLOCKS: Final = frozenset({"server_tool_use", "mcp_tool_use"})
_FAILURE: Final = malformed_event(AnthropicMalformedEvent)


class AnthropicAdapter(SinkAdapter):
    """Translate an Anthropic Messages stream into tracker events (see the module doc).

    Args:
        server_tools: also track ``server_tool_use`` / ``mcp_tool_use`` blocks (executed by
            Anthropic; completed by their ``*_tool_result`` blocks). Off by default.
        ok_stop_reasons: the ``stop_reason`` values that end the turn ok. Default
            ``("end_turn", "tool_use")``; add ``"stop_sequence"`` if your stop sequences
            are a normal way for a turn to end.
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    def __init__(
        self,
        *,
        server_tools: bool = False,
        ok_stop_reasons: Collection[str] = ("end_turn", "tool_use"),
        limits: Limits | None = None,
    ) -> None:
        super().__init__(limits=limits)
        self._server_tools = server_tools
        self._tool_types = (
            _CLIENT_TOOL_BLOCKS | _SERVER_TOOL_BLOCKS if server_tools else _CLIENT_TOOL_BLOCKS
        )
        self._ok_reasons = frozenset(ok_stop_reasons)
        self._table = self._calls = AdapterCallTable(RULES["anthropic"], _FAILURE, self._sink)
        self._server_calls: set[str] = set()
        self._stop_reason: str | None = None

    def _translate(self, item: Any) -> None:
        self._read((item,))

    def _read(self, items: Iterable[Any]) -> None:
        """Write the events each stream event implies (often none). Only what the sink
        raises propagates; an event that cannot be read is logged and ignored."""
        calls = self._calls
        for item in items:
            try:
                # The fast path: the events of a call (more text, its block's start and stop),
                # read from a dict or an SDK object with plain access. Anything else, or
                # anything shaped otherwise, takes the general path below.
                cls = type(item)
                kind = None
                if cls is dict:
                    try:  # subscripts, not get(): a missing key takes the general path below
                        kind = item["type"]
                        if kind == "content_block_delta":
                            delta = item["delta"]
                            text = (
                                delta["partial_json"]
                                if delta["type"] == "input_json_delta"
                                else None
                            )
                            index = item["index"]
                            if type(delta) is not dict:
                                text = None  # (a dict's subclass: the general path decides)
                        elif kind == "content_block_start":
                            index, content = item["index"], item["content_block"]
                        elif kind == "content_block_stop":
                            index = item["index"]
                    except (KeyError, TypeError):
                        kind = None
                elif _IS_MAPPING.get(cls) is False:
                    try:  # an SDK event of this type has every field
                        kind = item.type
                        if kind == "content_block_delta":
                            delta = item.delta
                            text = delta.partial_json if delta.type == "input_json_delta" else None
                            index = item.index
                        elif kind == "content_block_start":
                            index, content = item.index, item.content_block
                        elif kind == "content_block_stop":
                            index = item.index
                    except Exception:  # not shaped like an SDK event, or a read raised:
                        kind = None  # the general path reads it through _get
                if kind == "content_block_delta":
                    if not calls.more(index, text):
                        self._on_delta(item)
                    continue
                if kind == "content_block_start" or kind == "content_block_stop":
                    if not calls.ended:  # (the calls' own events, read: as below)
                        if kind == "content_block_start":
                            self._on_block_start(index, content)
                        else:
                            calls.close(index, "content_block_stop")
                    continue
                kind = _get(item, "type")
                if kind == "content_block_delta":
                    self._on_delta(item)
                elif calls.ended:
                    continue
                elif kind == "content_block_start":
                    self._on_block_start(_get(item, "index"), _get(item, "content_block"))
                elif kind == "message_start":
                    self._on_message_start(item)
                elif kind == "content_block_stop":
                    calls.close(_get(item, "index"), "content_block_stop")
                elif kind == "message_delta":
                    reason = _get(_get(item, "delta"), "stop_reason")
                    if isinstance(reason, str):
                        self._stop_reason = reason
                elif kind == "message_stop":
                    self._finish()
                elif kind == "error":
                    self._on_error(item)
            except READ_ERRORS:  # a hostile typed object; nothing to attribute it to
                logger.debug("anthropic: ignored an event that could not be read", exc_info=True)

    _translate_all = _read

    def _finish_stream(self) -> None:
        """The end of the stream: ``End`` unless ``message_stop`` already ended the turn.

        If a ``stop_reason`` arrived it decides ``ok``; a stream that stopped before any
        ``stop_reason`` ends not ok (reason ``"stream ended before message_stop"``).
        """
        if self._calls.ended:
            return
        if self._stop_reason is None:
            self._calls.end(False, "stream ended before message_stop")
            return
        self._finish()

    # -- handlers ---------------------------------------------------------------------

    def _on_delta(self, item: Any) -> None:
        calls = self._calls
        index = _get(item, "index")
        record = calls.records.get(index)
        delta = _get(item, "delta")
        if record is None or not record.open:
            if record is None and type(index) is int and _get(delta, "type") == "input_json_delta":
                calls.early(index)
            return
        if _get(delta, "type") == "input_json_delta":  # text/citation deltas: ignored
            calls.append(record, _get(delta, "partial_json"), "content_block_delta")

    def _on_message_start(self, item: Any) -> None:
        """Blocks that arrive whole inside ``message_start.message.content`` (programmatic
        tool calling), and a ``stop_reason`` already set there."""
        message = _get(item, "message")
        content = _get(message, "content")
        if isinstance(content, list | tuple):
            for index, block in enumerate(content):
                self._on_block_start(index, block)
                self._calls.close(index, "content_block_stop")
        reason = _get(message, "stop_reason")
        if isinstance(reason, str):
            self._stop_reason = reason

    def _on_block_start(self, index: Any, content: Any) -> None:
        plain = type(content) is dict  # (read with get: _get's first test, done once)
        block_type = content.get("type") if plain else _get(content, "type")
        if block_type not in self._tool_types:
            if self._server_tools and isinstance(block_type, str):
                self._on_server_result(content, block_type)
            return
        if type(index) is not int:
            logger.debug("anthropic: ignored a tool block without an integer index")
            return
        server = block_type in _SERVER_TOOL_BLOCKS
        if plain:
            call_id, name, initial = content.get("id"), content.get("name"), content.get("input")
        else:
            call_id, name = _get(content, "id"), _get(content, "name")
            initial = _get(content, "input")
        record = self._calls.start(
            index, call_id, name, "content_block_start", initial=initial, server=server
        )
        if record is not None and server:
            self._server_calls.add(record.call_id)

    def _on_server_result(self, content: Any, block_type: str) -> None:
        call_id = _get(content, "tool_use_id")
        if not block_type.endswith("_tool_result") or call_id not in self._server_calls:
            return
        self._server_calls.discard(call_id)
        value = _plain(_get(content, "content"))
        error_type = _get(value, "type") if isinstance(value, dict) else None
        if _get(content, "is_error") is True or (
            isinstance(error_type, str) and error_type.endswith("_error")
        ):
            code = _get(value, "error_code") if isinstance(value, dict) else None
            self._calls.error(
                call_id,
                AnthropicServerToolError(
                    message=f"the server tool reported an error ({block_type}"
                    + (f": {code}" if isinstance(code, str) else "")
                    + ")",
                    error_code=code if isinstance(code, str) else None,
                    content=value,
                ),
            )
            return
        self._calls.result(call_id, value)

    def _on_error(self, item: Any) -> None:
        error = _get(item, "error")
        parts = [p for p in (_get(error, "type"), _get(error, "message")) if isinstance(p, str)]
        self._calls.end(False, "error: " + ": ".join(parts) if parts else "error")

    def _finish(self) -> None:
        reason = self._stop_reason
        self._calls.end(reason in self._ok_reasons, reason or "message_stop without stop_reason")
