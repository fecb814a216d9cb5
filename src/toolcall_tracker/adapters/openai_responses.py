"""The OpenAI Responses API adapter: :class:`OpenAIResponsesAdapter`.

A sans-IO translator (see :mod:`toolcall_tracker.adapters`)::

    stream = await client.responses.create(..., stream=True)
    await tracker.consume(adapt(stream, OpenAIResponsesAdapter()))

An item may be the official SDK's typed stream event (from ``create(..., stream=True)`` or
``.stream()``) or the plain ``dict`` decoded from the SSE ``data:`` JSON. This module never
imports ``openai``.

Robustness: as for :mod:`~toolcall_tracker.adapters.openai_chat`: a malformed item never
raises out of ``feed`` (except :class:`TypeError` for a value that is no provider item at
all); it fails its own call or is ignored and logged at DEBUG on the
``toolcall_tracker.adapters.openai`` logger. Items fed after the terminal event (or after
``end()``) are ignored.
"""

from __future__ import annotations

from typing import Any, Final

from ..limits import Limits
from ._common import _usable_id
from ._openai import (
    _FAILED,
    _MAPPING_TYPES,
    _PENDING,
    OpenAIArgumentsMismatch,
    OpenAICallFailure,
    OpenAIMalformedToolCall,
    OpenAITurnCutOff,
    _Call,
    _check_item,
    _dict_get,
    _Emitter,
    _get,
    _Getter,
    _is_mapping,
    _logger,
)

__all__ = [
    "OpenAIArgumentsMismatch",
    "OpenAICallFailure",
    "OpenAIMalformedToolCall",
    "OpenAIResponsesAdapter",
    "OpenAITurnCutOff",
]

_ARGS_DELTA: Final = "response.function_call_arguments.delta"
_ARGS_DONE: Final = "response.function_call_arguments.done"
_ITEM_ADDED: Final = "response.output_item.added"
_ITEM_DONE: Final = "response.output_item.done"
_COMPLETED: Final = "response.completed"


class OpenAIResponsesAdapter(_Emitter):
    """Responses API stream events to tracker events.

    Feed it each event of ``client.responses.create(..., stream=True)`` or of
    ``client.responses.stream(...)``, or each dict decoded from the SSE ``data:`` lines.

    - ``response.output_item.added`` with a ``function_call`` item starts a call. Its
      tracker id is the item's ``call_id`` (the id a ``function_call_output`` must
      reference); failing that the item's ``id``; failing that ``call_<output_index>``
      (made unique with ``_2``, ``_3``... if taken). An id longer than
      ``Limits.max_id_chars`` counts as missing; a name longer than ``max_name_chars`` is
      cut to a name no tool can have (``...(cut)``).
    - ``response.function_call_arguments.delta`` appends to the call whose item ``id``
      is the event's ``item_id``. A delta for an item that was never announced is ignored
      (and logged at DEBUG): the Responses API always announces an item before its
      deltas, and the delta is never routed to another call by ``output_index``. Text for
      an announced item whose name has not arrived yet waits for it (at most
      ``Limits.max_args_chars`` characters for all such calls together; past that the
      call fails with :class:`OpenAIMalformedToolCall` once named).
    - ``response.function_call_arguments.done``, ``response.output_item.done`` and
      ``response.completed`` carry the final ``arguments``; the first of them makes the
      call ready, so servers that send the arguments only at the end work too. If the
      final text extends the streamed text, the missing suffix is appended; if it
      disagrees otherwise, the call fails with :class:`OpenAIArgumentsMismatch` rather
      than run with text nobody saw (also when a later event contradicts the text a
      call was made ready with). The streamed text is not kept for this: the adapter
      compares a digest of it (BLAKE2b) and its length. An absent or empty final
      ``arguments`` says nothing: it is not compared, and it makes the call ready only if
      some text streamed (or at ``response.completed``), since such servers may send the
      arguments later. A call whose text is still empty when it becomes ready gets ``{}``.
    - ``response.completed`` makes every call still pending ready and ends the turn ok
      (``End(reason="completed")``). ``response.incomplete`` (reason
      ``incomplete: <incomplete_details.reason>``), ``response.failed`` (``failed:
      <error.code>``) and an ``error`` event (``error: <code>``) fail the pending calls
      with :class:`OpenAITurnCutOff` and end the turn not ok. Other events are ignored.

    :meth:`end` emits ``End(ok=False)`` if none of those arrived (``[]`` otherwise).

    Args:
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    _api = "responses"

    def __init__(self, *, limits: Limits | None = None) -> None:
        super().__init__(limits=limits)
        self._by_item: dict[str, _Call] = {}
        self._by_call_id: dict[str, _Call] = {}
        self._by_output: dict[int, _Call] = {}
        self._calls: list[_Call] = []

    def _translate(self, item: Any) -> None:
        """Write the events one stream event implies (possibly none).

        Raises:
            TypeError: ``item`` is not a provider item at all (see the module docs).
        """
        # Only the item's own fields are read here (nested ones go through ``_get``), so a
        # dict item can use ``dict.get`` itself.
        get: _Getter
        cls = type(item)
        if cls is dict:
            get = _dict_get
        elif _MAPPING_TYPES.get(cls) is False:  # an SDK object (known class)
            get = getattr
        elif _is_mapping(item):
            item = dict(item)  # an OrderedDict, say: read as the dict it is
            get = _dict_get
        else:
            get = getattr
        kind = get(item, "type", None)
        if self._ended:
            return
        if kind == _ARGS_DELTA:  # the hot path
            fragment = get(item, "delta", None)
            if type(fragment) is str and fragment:
                item_id = get(item, "item_id", None)
                call = self._by_item.get(item_id) if type(item_id) is str else None
                if call is None:
                    _logger.debug("ignored a delta for an unannounced item %.80r", item_id)
                elif call.status == _PENDING:
                    digest = call.digest
                    if call.started and digest is self._hashing and digest is not None:
                        # _append's common case, inlined: a started call, its digest current
                        call.has_text = True
                        call.size += len(fragment)
                        digest.add(fragment)
                        if call.scan is not None:
                            call.scan.add(fragment)
                        self._sink.write_delta(call.id, fragment)
                        if call.size > self._limits.max_args_chars:
                            call.status = _FAILED  # the sink failed it (ArgumentsTooLarge)
                    else:
                        self._append(call, fragment)
            return
        if kind == _ITEM_ADDED:
            self._item(_get(item, "item"), _get(item, "output_index"), None)
        elif kind == _ARGS_DONE:
            call = self._route(_get(item, "item_id"), _get(item, "output_index"))
            if call is not None:
                name = _get(item, "name")
                if not call.name and type(name) is str and name:
                    call.name = name
                if not call.started and call.name:
                    self._start(call)
                self._settle(call, _get(item, "arguments"), _ARGS_DONE)
        elif kind == _ITEM_DONE:
            self._item(_get(item, "item"), _get(item, "output_index"), _ITEM_DONE)
        elif kind == _COMPLETED:
            self._completed(_get(item, "response"))
        elif kind == "response.incomplete" or kind == "response.failed":
            self._stopped(kind, _get(item, "response"))
        elif kind == "error":
            code = _get(item, "code")
            message = _get(item, "message")
            detail = code if type(code) is str and code else message
            self._cut_off(f"error: {detail}" if type(detail) is str else "error")
        elif kind is None:
            _check_item(item)

    def _finish_stream(self) -> None:
        """``End(ok=False)`` if the stream ended before a terminal event, else nothing."""
        if self._ended:
            return
        self._ended = True
        self._sink.write_end(False, "stream ended before response.completed")

    # -- internals --------------------------------------------------------------------

    def _route(self, item_id: Any, output_index: Any) -> _Call | None:
        """The announced call an event with ``item_id`` / ``output_index`` is about."""
        call = None
        if type(item_id) is str:
            call = self._by_item.get(item_id)
        if call is None and type(output_index) is int:
            call = self._by_output.get(output_index)
        if call is None:
            _logger.debug("ignored an event for unknown item %.80r", item_id)
        return call

    def _item(self, item: Any, output_index: Any, source: str | None) -> None:
        """A ``function_call`` output item: start its call, and settle it if ``source``."""
        if item is None or _get(item, "type") != "function_call":
            return
        max_id = self._limits.max_id_chars
        item_id = _get(item, "id")
        call_id = _get(item, "call_id")
        name = _get(item, "name")
        item_id = item_id if _usable_id(item_id, max_id) else None
        call_id = call_id if _usable_id(call_id, max_id) else None
        output_index = output_index if type(output_index) is int else None
        call = None
        if item_id is not None:
            call = self._by_item.get(item_id)
        if call is None and call_id is not None:
            call = self._by_call_id.get(call_id)
        if call is None and source is not None and output_index is not None:
            call = self._by_output.get(output_index)
        if call is None:
            if call_id is not None:
                tracker_id = self._unique(call_id)
            elif item_id is not None:
                tracker_id = self._unique(item_id)
            elif output_index is not None:
                tracker_id = self._unique(f"call_{output_index}")
            else:
                tracker_id = self._unique(f"call_{len(self._calls)}")
            if tracker_id is None:
                return
            call = _Call(tracker_id, name if type(name) is str and name else None, True)
            if not self._admit(call):
                return
            self._calls.append(call)
        elif source is None and call.started:
            return  # a repeated output_item.added
        if item_id is not None:
            self._by_item.setdefault(item_id, call)
        if call_id is not None:
            self._by_call_id.setdefault(call_id, call)
        if output_index is not None:
            self._by_output.setdefault(output_index, call)
        if not call.name and type(name) is str and name:
            call.name = name
        if not call.started and call.name:
            self._start(call)
        arguments = _get(item, "arguments")
        if source is None:
            # output_item.added: usually "", but some servers send the whole item here.
            if (
                type(arguments) is str
                and arguments
                and not call.has_text
                and call.status == _PENDING
            ):
                self._append(call, arguments)
        else:
            self._settle(call, arguments, source)

    def _settle(self, call: _Call, final: Any, source: str) -> None:
        """Reconcile the streamed text with the final ``arguments``, then make it ready."""
        if call.status == _FAILED:
            return
        if final is not None and type(final) is not str:
            self._fail(
                call,
                OpenAIMalformedToolCall(
                    api="responses",
                    field="arguments",
                    message=f"the final arguments of tool call {call.id!r} in {source} "
                    f"are a {type(final).__name__}, not a string: {final!r:.200}",
                ),
            )
            return
        if not final:
            # Absent or "": says nothing. Ready now only if text streamed (or at the very
            # end): servers that send the arguments only later must get the chance to.
            if call.has_text or source == _COMPLETED:
                self._ready(call)
            return
        digest = call.digest
        streamed = digest.chars if digest is not None else 0
        if (
            digest is None
            or not digest.is_prefix_of(final)
            or (len(final) > streamed and call.status != _PENDING)
        ):
            self._fail(
                call,
                OpenAIArgumentsMismatch(
                    api="responses",
                    streamed_chars=streamed,
                    final=final,
                    source=source,
                    message=f"the final arguments of tool call {call.id!r} "
                    f"({call.name}) in {source} disagree with the text "
                    f"{'streamed' if call.status == _PENDING else 'it was made ready with'}"
                    f" ({streamed} characters, {len(final)} final; the streamed "
                    "text is not a prefix of the final one)",
                ),
            )
            return
        if len(final) > streamed:
            self._append(call, final[streamed:])
        self._ready(call)

    def _completed(self, response: Any) -> None:
        output = _get(response, "output")
        if type(output) is list:
            for position, item in enumerate(output):
                self._item(item, position, _COMPLETED)
        for call in self._calls:
            if call.status == _PENDING:
                self._ready(call)
        self._ended = True
        self._sink.write_end(True, "completed")

    def _stopped(self, kind: str, response: Any) -> None:
        if kind == "response.incomplete":
            detail = _get(_get(response, "incomplete_details"), "reason")
            reason = f"incomplete: {detail}" if type(detail) is str else "incomplete"
        else:
            error = _get(response, "error")
            detail = _get(error, "code")
            if type(detail) is not str:
                detail = _get(error, "message")
            reason = f"failed: {detail}" if type(detail) is str else "failed"
        self._cut_off(reason)

    def _cut_off(self, reason: str) -> None:
        self._fail_pending(self._calls, reason, None)
        self._ended = True
        self._sink.write_end(False, reason)
