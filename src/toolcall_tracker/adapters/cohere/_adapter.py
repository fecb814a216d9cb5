"""The Cohere v2 chat stream adapter: :class:`CohereAdapter`.

Feed it the events of a v2 chat stream: the ``cohere`` client's typed events
(``client.chat_stream(...)``, ``AsyncClientV2.chat_stream(...)``) or the plain dicts
decoded from the SSE ``data:`` lines::

    stream = client.chat_stream(model=..., messages=..., tools=...)   # cohere.ClientV2
    apply_stream(tracker, stream, CohereAdapter())

    async with ToolCallTracker() as tracker:                          # cohere.AsyncClientV2
        await tracker.consume(adapt(client.chat_stream(...), CohereAdapter()))

How the wire maps to tracker events:

- ``tool-call-start`` starts a call whose id is ``delta.message.tool_calls.id`` (the id your
  ``tool`` message's ``tool_call_id`` must reference) and whose name is its
  ``function.name``; its ``function.arguments`` (usually ``""``) is the first text. Later
  events name the call only by its ``index``, so they are routed by index.
- ``tool-call-delta`` appends ``function.arguments`` (pretty-printed JSON is fine: the text
  is kept as sent and parsed when the call is ready).
- ``tool-call-end`` makes the call ready; a call with no argument text (one that goes
  straight from start to end, an argument-less tool) is ``{}``.
- ``message-end`` ends the turn: ``End(ok=True)`` for ``finish_reason`` ``TOOL_CALL``,
  ``COMPLETE`` and ``STOP_SEQUENCE`` (configurable, see ``ok_finish_reasons``);
  ``End(ok=False, reason=finish_reason)`` for ``MAX_TOKENS``, ``TIMEOUT``, ``ERROR`` and
  anything else (with ``delta.error``, the reason is ``"error: <text>"``). A call not
  ended by then is failed by the tracker (``IncompleteArguments``).
- ``message-start``, ``tool-plan-delta``, ``content-*``, ``citation-*``, ``debug`` and
  unknown events are ignored; so is anything after ``message-end`` (the SSE body's final
  ``[DONE]`` never reaches the adapter as an item).

Malformed events never raise and fail their own call only (what the sink or one of its
listeners raises propagates):

- ``function.arguments`` that is not a string, or a call without a string name: the call
  fails with a :class:`CohereMalformedEvent`; later events for its index are dropped;
- a call without a usable id (missing, or longer than ``Limits.max_id_chars``) gets
  ``cohere-call-<index>`` (``-2``, ``-3``... appended if taken); a name longer than
  ``Limits.max_name_chars`` is cut (``...(cut)``); a call reusing an id: ignored;
- a ``tool-call-delta`` before its ``tool-call-start``: the call that then starts at that
  index fails with a :class:`CohereMalformedEvent`;
- anything else that cannot be read: ignored, logged at DEBUG on the
  ``toolcall_tracker.adapters`` logger.

One adapter per model turn (per stream).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Final, Literal

from ...failures import MalformedStreamItem
from ...limits import Limits
from .._calls import RULES, AdapterCallTable, malformed_event
from .._common import READ_ERRORS, _get, logger
from .._protocol import SinkAdapter

__all__ = ["CohereAdapter", "CohereMalformedEvent"]


class CohereMalformedEvent(MalformedStreamItem):
    """A stream event concerning this call was malformed, so the call cannot be trusted.

    ``event_type`` is the offending event's ``type``; ``index`` its tool-call index.
    """

    kind: Literal["cohere_malformed_event"] = "cohere_malformed_event"
    event_type: str | None = None
    index: int | None = None


_DEFAULT_OK: Final = ("TOOL_CALL", "COMPLETE", "STOP_SEQUENCE")
_FAILURE: Final = malformed_event(CohereMalformedEvent)


def _tool_call(event: Any) -> Any:
    """``delta.message.tool_calls`` of a tool-call event (one object; a list's first)."""
    value = _get(_get(_get(event, "delta"), "message"), "tool_calls")
    if isinstance(value, list | tuple):
        return value[0] if value else None
    return value


class CohereAdapter(SinkAdapter):
    """Translate a Cohere v2 chat stream into tracker events (see the module doc).

    Args:
        ok_finish_reasons: the ``finish_reason`` values that end the turn ok. Default
            ``("TOOL_CALL", "COMPLETE", "STOP_SEQUENCE")``.
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    def __init__(
        self, *, ok_finish_reasons: Collection[str] = _DEFAULT_OK, limits: Limits | None = None
    ) -> None:
        super().__init__(limits=limits)
        self._ok_reasons = frozenset(ok_finish_reasons)
        self._table = self._calls = AdapterCallTable(RULES["cohere"], _FAILURE, self._sink)

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
                if type(item) is dict and item.get("type") == "tool-call-delta":
                    # The fast path: more text, as the plain dicts of the SSE data lines (read
                    # with subscripts; a missing key or another shape takes the general path).
                    try:
                        text = item["delta"]["message"]["tool_calls"]["function"]["arguments"]
                        fast = calls.more(item["index"], text)
                    except (KeyError, TypeError):
                        fast = False
                    if fast:
                        continue
                kind = _get(item, "type")
                if kind == "tool-call-delta":
                    index = _get(item, "index")
                    text = _get(_get(_tool_call(item), "function"), "arguments")
                    if not calls.more(index, text):
                        record = calls.records.get(index)
                        if record is None:
                            if type(index) is int:
                                calls.early(index)
                        else:
                            calls.append(record, text, "tool-call-delta")
                elif kind == "tool-call-start":
                    self._on_start(item)
                elif kind == "tool-call-end":
                    calls.close(_get(item, "index"), "tool-call-end")
                elif kind == "message-end":
                    self._on_message_end(_get(item, "delta"))
            except READ_ERRORS:  # a hostile object; nothing to attribute it to
                logger.debug("cohere: ignored an event that could not be read", exc_info=True)

    _translate_all = _read

    def _finish_stream(self) -> None:
        """The end of the stream: ``End(ok=False)`` unless ``message-end`` ended the turn."""
        if not self._calls.ended:
            self._calls.end(False, "stream ended before message-end")

    # -- handlers ---------------------------------------------------------------------

    def _on_start(self, item: Any) -> None:
        index = _get(item, "index")
        if type(index) is not int:
            logger.debug("cohere: ignored a tool-call-start without an integer index")
            return
        tool_call = _tool_call(item)
        function = _get(tool_call, "function")
        record = self._calls.start(
            index, _get(tool_call, "id"), _get(function, "name"), "tool-call-start"
        )
        if record is not None:
            self._calls.append(record, _get(function, "arguments"), "tool-call-start")

    def _on_message_end(self, delta: Any) -> None:
        reason = _get(delta, "finish_reason")
        error = _get(delta, "error")
        if isinstance(error, str) and error:
            self._calls.end(False, f"error: {error:.200}")
        elif isinstance(reason, str):
            self._calls.end(reason in self._ok_reasons, reason)
        else:
            self._calls.end(False, "message-end without finish_reason")
