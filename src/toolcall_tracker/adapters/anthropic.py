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

Malformed events never raise and never end the stream; they fail their own call only:

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

from collections.abc import Collection
from typing import Any, Final, Literal

from ..errors import CallFailure
from ..limits import Limits
from ._base import SinkAdapter
from ._common import (
    _IS_MAPPING,
    _get,
    _IdMinter,
    _json_text,
    _plain,
    _short,
    _tool_name,
    _usable_id,
    logger,
)

__all__ = ["AnthropicAdapter", "AnthropicMalformedEvent", "AnthropicServerToolError"]


class AnthropicMalformedEvent(CallFailure):
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
_JSON_WS: Final = " \t\n\r"


class _Block:
    """One tracked tool block: its call id, and what has been streamed into it."""

    __slots__ = ("blank", "call_id", "closed", "input", "name")

    def __init__(self, call_id: str, name: str, initial_input: Any) -> None:
        self.call_id = call_id
        self.name = name
        self.input = initial_input
        self.blank = True  # no non-whitespace fragment yet
        self.closed = False


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

    __slots__ = (
        "_blocks",
        "_early",
        "_ended",
        "_ids",
        "_ok_reasons",
        "_server_calls",
        "_server_tools",
        "_stop_reason",
        "_tool_types",
    )

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
        self._blocks: dict[int, _Block] = {}
        self._early: set[int] = set()  # indexes that got argument text before their block
        self._server_calls: set[str] = set()
        self._ids = _IdMinter()
        self._stop_reason: str | None = None
        self._ended = False

    def _translate(self, item: Any) -> None:
        """Write the events one stream event implies (often none). Never raises."""
        try:
            # The hot path, inlined: a non-empty fragment for a block already streaming
            # (as a plain dict, or as an SDK object). Anything else takes the general path.
            cls = type(item)
            if cls is dict:
                if item.get("type") == "content_block_delta":
                    block = self._blocks.get(item.get("index"))
                    delta = item.get("delta")
                    if (
                        block is not None
                        and not block.blank
                        and not block.closed
                        and type(delta) is dict
                        and delta.get("type") == "input_json_delta"
                    ):
                        text = delta.get("partial_json")
                        if type(text) is str and text:
                            self._sink.write_delta(block.call_id, text)
                            return
                    self._on_delta(item)
                    return
            elif _IS_MAPPING.get(cls) is False:
                try:  # plain attribute reads: an SDK event of this type has every field
                    if item.type == "content_block_delta":
                        block = self._blocks.get(item.index)
                        if block is not None and not block.blank and not block.closed:
                            delta = item.delta
                            if delta.type == "input_json_delta":
                                text = delta.partial_json
                                if type(text) is str and text:
                                    self._sink.write_delta(block.call_id, text)
                                    return
                        self._on_delta(item)
                        return
                except AttributeError:
                    pass  # not shaped like an SDK event: the general path reads it safely
            kind = _get(item, "type")
            if kind == "content_block_delta":
                self._on_delta(item)
                return
            if self._ended:
                return
            if kind == "content_block_start":
                self._on_block_start(item)
            elif kind == "message_start":
                self._on_message_start(item)
            elif kind == "content_block_stop":
                self._on_block_stop(item)
            elif kind == "message_delta":
                reason = _get(_get(item, "delta"), "stop_reason")
                if isinstance(reason, str):
                    self._stop_reason = reason
            elif kind == "message_stop":
                self._finish()
            elif kind == "error":
                self._on_error(item)
        except Exception:  # a hostile typed object; nothing to attribute it to
            logger.debug("anthropic: ignored an event that could not be read", exc_info=True)

    def _finish_stream(self) -> None:
        """The end of the stream: ``End`` unless ``message_stop`` already ended the turn.

        If a ``stop_reason`` arrived it decides ``ok``; a stream that stopped before any
        ``stop_reason`` ends not ok (reason ``"stream ended before message_stop"``).
        """
        if self._ended:
            return
        if self._stop_reason is None:
            self._ended = True
            self._sink.write_end(False, "stream ended before message_stop")
            return
        self._finish()

    # -- handlers ---------------------------------------------------------------------

    def _on_delta(self, item: Any) -> None:
        index = _get(item, "index")
        block = self._blocks.get(index)
        if block is None or block.closed:
            if (
                block is None
                and not self._ended
                and type(index) is int
                and _get(_get(item, "delta"), "type") == "input_json_delta"
                and len(self._early) < self._limits.max_calls
            ):
                # A fragment before its block started: the call that starts there cannot
                # be trusted (its text would miss this fragment).
                logger.debug("anthropic: an input_json_delta at index %d before its block", index)
                self._early.add(index)
            return
        delta = _get(item, "delta")
        if _get(delta, "type") != "input_json_delta":
            return  # text/citation deltas at a tool block's index: ignored, as upstream
        text = _get(delta, "partial_json")
        if type(text) is not str and not isinstance(text, str):
            self._fail(
                block,
                f"partial_json must be a string, got {_short(text)}",
                "content_block_delta",
                _get(item, "index"),
            )
            return
        if not text:
            return
        if block.blank and text.strip(_JSON_WS):
            block.blank = False
        self._sink.write_delta(block.call_id, text)

    def _on_message_start(self, item: Any) -> None:
        """Blocks that arrive whole inside ``message_start.message.content`` (programmatic
        tool calling), and a ``stop_reason`` already set there."""
        message = _get(item, "message")
        content = _get(message, "content")
        if isinstance(content, list | tuple):
            for index, block in enumerate(content):
                self._on_block_start(
                    {"type": "content_block_start", "index": index, "content_block": block}
                )
                self._on_block_stop({"type": "content_block_stop", "index": index})
        reason = _get(message, "stop_reason")
        if isinstance(reason, str):
            self._stop_reason = reason

    def _on_block_start(self, item: Any) -> None:
        index = _get(item, "index")
        content = _get(item, "content_block")
        block_type = _get(content, "type")
        if block_type not in self._tool_types:
            if self._server_tools and isinstance(block_type, str):
                self._on_server_result(content, block_type)
            return
        if type(index) is not int:
            logger.debug("anthropic: ignored a tool block without an integer index: %r", item)
            return
        call_id = _get(content, "id")
        old = self._blocks.get(index)
        if old is not None and not old.closed:
            if old.call_id == call_id:
                return  # the same block announced twice
            why = "a new block started at its index before it closed"
            self._fail(old, why, "content_block_start", index)
        max_id = self._limits.max_id_chars
        if not _usable_id(call_id, max_id):
            call_id = self._ids.mint(f"anthropic-block-{index}", max_id)
        elif not self._ids.claim(call_id):
            logger.debug("anthropic: ignored a tool block reusing id %r", call_id)
            self._blocks.pop(index, None)
            return
        name = _get(content, "name")
        block = self._blocks[index] = _Block(call_id, name if isinstance(name, str) else "", None)
        if block_type in _SERVER_TOOL_BLOCKS:
            self._server_calls.add(call_id)
        self._sink.write_start(call_id, _tool_name(block.name, self._limits.max_name_chars))
        if not isinstance(name, str):
            why = f"the tool block has no string name ({_short(name)})"
            self._fail(block, why, "content_block_start", index)
        elif index in self._early:
            self._early.discard(index)
            why = "argument text (input_json_delta) arrived before the block started"
            self._fail(block, why, "content_block_delta", index)
        else:
            block.input = _get(content, "input")

    def _on_block_stop(self, item: Any) -> None:
        index = _get(item, "index")
        block = self._blocks.get(index)
        if block is None or block.closed:
            return
        if not block.blank:
            block.closed = True
            self._sink.write_ready(block.call_id)
            return
        initial = block.input
        if initial is None or (not isinstance(initial, str) and not _plain(initial)):
            text: str | None = "{}"
        else:
            text = _json_text(initial)
        if text is None:
            why = f"the block's input cannot be written as JSON: {_short(initial)}"
            self._fail(block, why, "content_block_stop", index)
            return
        block.closed = True
        self._sink.write_delta(block.call_id, text)
        self._sink.write_ready(block.call_id)

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
            self._sink.write_error(
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
        self._sink.write_result(call_id, value)

    def _on_error(self, item: Any) -> None:
        error = _get(item, "error")
        parts = [p for p in (_get(error, "type"), _get(error, "message")) if isinstance(p, str)]
        self._ended = True
        self._blocks.clear()
        self._sink.write_end(False, "error: " + ": ".join(parts) if parts else "error")

    def _finish(self) -> None:
        self._ended = True
        self._blocks.clear()
        reason = self._stop_reason
        self._sink.write_end(
            reason in self._ok_reasons, reason or "message_stop without stop_reason"
        )

    def _fail(self, block: _Block, why: str, event_type: str, index: Any) -> None:
        if block.closed:
            return
        block.closed = True
        self._sink.write_error(
            block.call_id,
            AnthropicMalformedEvent(
                message=f"call {block.call_id!r} ({block.name}): malformed {event_type}: {why}",
                event_type=event_type,
                index=index if type(index) is int else None,
            ),
        )
