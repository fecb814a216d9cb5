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

import json
from collections.abc import Callable, Iterable
from typing import Any, Final

from ...limits import Limits
from ._shared import (
    _FAILED,
    _MAPPING_TYPES,
    _PENDING,
    _READY,
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
    report_untracked,
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
_CUSTOM_DELTA: Final = "response.custom_tool_call_input.delta"
_CUSTOM_DONE: Final = "response.custom_tool_call_input.done"


def _json_string_body(text: str) -> str:
    """``text`` escaped as the inside of a JSON string (no quotes)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class _RCall(_Call):
    """A Responses call; ``verified``: the final text last found equal to the text it was
    made ready with (``None``: none yet), which the events repeating it need not check."""

    __slots__ = ("verified",)
    verified: str | None


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
      call was made ready with). The streamed text is not copied for this: the adapter
      reads it from the sink (``args_text``, which a machine and a tracker have); only a
      sink without it (``feed`` / ``end``'s collector) makes the adapter keep a copy,
      within ``Limits.max_args_chars``. An absent or empty final
      ``arguments`` says nothing: it is not compared, and it makes the call ready only if
      some text streamed (or at ``response.completed``), since such servers may send the
      arguments later. A call whose text is still empty when it becomes ready gets ``{}``.
    - ``response.completed`` makes every call still pending ready and ends the turn ok
      (``End(reason="completed")``). ``response.incomplete`` (reason
      ``incomplete: <incomplete_details.reason>``), ``response.failed`` (``failed:
      <error.code>``) and an ``error`` event (``error: <code>``) fail the pending calls
      with :class:`OpenAITurnCutOff` and end the turn not ok. Other events are ignored.

    Custom tools (free-text input, such as GPT-5's grammar tools). A ``custom_tool_call``
    item is a call like a ``function_call``: same ids, routing and readiness, with
    ``response.custom_tool_call_input.delta`` / ``.done`` and the item's ``input`` in place
    of the arguments events and ``arguments``. Its free text is written as *one JSON
    string*: ``args_text`` is ``"SELECT * FROM users LIMIT 5;"`` (quotes included, the
    text escaped as JSON), so ``ready`` parses exactly one JSON value and ``call.args`` is
    the input text itself. A call whose text is a JSON string is a custom tool's call:
    :func:`~toolcall_tracker.feedback.openai_responses_items` answers it with a
    ``custom_tool_call_output`` item.

    Other output items whose type ends in ``_call`` are not tracked: those the server runs
    (``web_search_call``, ``file_search_call``, ``code_interpreter_call``...) are ignored
    (logged at DEBUG); any other (``computer_call``, ``local_shell_call``...) is a call
    your code must answer itself, and is reported at WARNING on the
    ``toolcall_tracker.adapters.openai`` logger rather than dropped silently.

    Memory: the adapter's records are bounded by ``Limits.max_calls``: when that many are
    kept, the records of calls already ready or failed are released (their ids are
    remembered, ``Limits.remember_forgotten`` of them, so late events for them are
    ignored), and a call past ``2 * max_calls`` pending records (as many started as the
    sink can track, as many waiting for their name) is not tracked.

    :meth:`end` emits ``End(ok=False)`` if none of those arrived (``[]`` otherwise).

    Args:
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    _api = "responses"
    _rules_name = "openai_responses"

    def __init__(self, *, limits: Limits | None = None) -> None:
        super().__init__(limits=limits)
        self._by_item: dict[str, _RCall] = {}
        self._by_call_id: dict[str, _RCall] = {}
        self._by_output: dict[int, _RCall] = {}
        self._order: list[_Call] = []
        self._retired: dict[str, None] = {}  # ids of released records, oldest first

    def _translate(self, item: Any) -> None:
        self._read((item,))

    def _read(self, items: Iterable[Any]) -> None:
        """Write the events each item implies (possibly none).

        Raises:
            TypeError: an item is not a provider item at all (see the module docs).
        """
        # The hot path: a fragment, read with plain access from a dict or an SDK object,
        # for a streaming call: the table's fast path (``AdapterCallTable.more_of``). Any
        # other fragment: _fragment; any other event: its handler (_event). Neither
        # writes once the turn ended; nor does the hot path: _end empties ``_by_item``.
        for item in items:
            cls = type(item)
            if cls is dict:
                try:  # plain subscripts (the fields are there), else the defaults of ``get``
                    kind = item["type"]
                except KeyError:
                    kind = None
                if kind != _ARGS_DELTA:
                    self._event(item, kind, _dict_get)
                    continue
                try:
                    item_id, fragment = item["item_id"], item["delta"]
                except KeyError:
                    item_id, fragment = item.get("item_id"), item.get("delta")
            elif _MAPPING_TYPES.get(cls) is False or not _is_mapping(item):  # an SDK object
                try:  # plain attributes (an SDK event has every field), else None
                    kind = item.type
                except AttributeError:
                    kind = None
                if kind != _ARGS_DELTA:
                    self._event(item, kind, getattr)
                    continue
                try:
                    item_id, fragment = item.item_id, item.delta
                except AttributeError:
                    item_id, fragment = getattr(item, "item_id", None), getattr(item, "delta", None)
            else:  # a Mapping that is no dict (an OrderedDict, say): read as the dict it is
                self._read((dict(item),))
                continue
            call = self._by_item.get(item_id) if type(item_id) is str else None
            if call is None or not self._calls.more_of(call, fragment):
                self._fragment(call, item_id, fragment)

    _translate_all = _read

    def _event(self, item: Any, kind: Any, get: _Getter) -> None:
        """Any event but a fragment: its handler (``_HANDLERS``). Only the item's own fields
        are read with ``get`` (``dict.get`` or ``getattr``), nested ones with their own."""
        if self._calls.ended:
            return
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, item, get)
        elif kind is None:
            _check_item(item)

    # -- one handler per event type (``_HANDLERS``) -----------------------------------

    def _on_item_added(self, item: Any, get: _Getter) -> None:
        self._item(get(item, "item", None), get(item, "output_index", None), None)

    def _on_item_done(self, item: Any, get: _Getter) -> None:
        self._item(get(item, "item", None), get(item, "output_index", None), _ITEM_DONE)

    def _on_args_done(self, item: Any, get: _Getter) -> None:
        call = self._route(get(item, "item_id", None), get(item, "output_index", None))
        if call is not None:
            name = None if call.name else get(item, "name", None)  # (absent in SDK events)
            if type(name) is str and name:
                call.name = name
            if not call.started and call.name:
                self._start(call)
            self._settle(call, get(item, "arguments", None), _ARGS_DONE)

    def _on_custom_delta(self, item: Any, get: _Getter) -> None:
        fragment = get(item, "delta", None)
        call = self._route(get(item, "item_id", None), None)
        if call is None or not call.custom or call.status != _PENDING:
            return
        if type(fragment) is str and fragment:
            self._append_input(call, fragment)

    def _on_custom_done(self, item: Any, get: _Getter) -> None:
        call = self._route(get(item, "item_id", None), get(item, "output_index", None))
        if call is not None and call.custom:
            self._settle(call, get(item, "input", None), _CUSTOM_DONE)

    def _on_error(self, item: Any, get: _Getter) -> None:
        code, message = get(item, "code", None), get(item, "message", None)
        detail = code if type(code) is str and code else message
        self._cut_off(f"error: {detail}" if type(detail) is str else "error")

    def _fragment(self, call: _RCall | None, item_id: Any, fragment: Any) -> None:
        """A ``function_call_arguments.delta`` the fast path did not take: ``fragment`` for
        ``call``, the announced call of ``item_id`` (``None``: there is none)."""
        if type(fragment) is not str or not fragment or self._calls.ended:
            return
        if call is None:
            _logger.debug("ignored a delta for an unannounced item %.80r", item_id)
        elif call.status == _PENDING:
            self._append(call, fragment)

    def _finish_stream(self) -> None:
        """``End(ok=False)`` if the stream ended before a terminal event, else nothing."""
        if not self._calls.ended:
            self._end(False, "stream ended before response.completed")

    # -- internals --------------------------------------------------------------------

    def _route(self, item_id: Any, output_index: Any) -> _RCall | None:
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
        """A call output item: start its call, and settle it if ``source``."""
        cls = type(item)  # the item's getter, picked once (as in _translate)
        get: _Getter = (
            _dict_get if cls is dict else getattr if _MAPPING_TYPES.get(cls) is False else _get
        )
        item_type = get(item, "type", None)
        if item_type == "function_call":
            custom = False
        elif item_type == "custom_tool_call":
            custom = True
        else:
            if source is None and type(item_type) is str and item_type.endswith("_call"):
                report_untracked(item, item_type)
            return
        max_id = self._limits.max_id_chars
        item_id = get(item, "id", None)
        call_id = get(item, "call_id", None)
        if type(item_id) is not str or not 0 < len(item_id) <= max_id:
            item_id = None  # unusable: as if absent (see _common._usable_id)
        if type(call_id) is not str or not 0 < len(call_id) <= max_id:
            call_id = None
        output_index = output_index if type(output_index) is int else None
        call = None
        if item_id is not None:
            call = self._by_item.get(item_id)
            if source is not None and call is not None and call.status == _READY:
                # output_item.done, response.completed repeating a call already ready (so
                # named and started): what the general path below does, in short.
                if call.custom is custom:
                    if call_id is not None:
                        self._by_call_id.setdefault(call_id, call)
                    if output_index is not None:
                        self._by_output.setdefault(output_index, call)
                    arguments = get(item, "input" if custom else "arguments", None)
                    if type(arguments) is not str or arguments != call.verified:
                        self._settle(call, arguments, source)  # (verified: nothing to do)
                return
        if call is None and call_id is not None:
            call = self._by_call_id.get(call_id)
        if call is None and source is not None and output_index is not None:
            call = self._by_output.get(output_index)
        if call is None:
            if item_id in self._retired or call_id in self._retired:
                return  # a late event for a call whose record was released
            if len(self._order) >= self._limits.max_calls and not self._prune():
                _logger.debug("ignored tool call %r: Limits.max_calls calls pending", call_id)
                return
            key = output_index if output_index is not None else len(self._order)
            tracker_id = self._calls.claim(key, call_id if call_id is not None else item_id)
            if tracker_id is None:
                return
            name = get(item, "name", None)
            call = _RCall(key, tracker_id, name if type(name) is str and name else None)
            call.custom = custom
            call.verified = None
            if not self._admit(call):
                return
            self._order.append(call)
        elif source is None and call.started:
            return  # a repeated output_item.added
        elif call.custom is not custom:
            return  # an item of the other kind claiming this call's ids: not this call
        if item_id is not None:
            self._by_item.setdefault(item_id, call)
        if call_id is not None:
            self._by_call_id.setdefault(call_id, call)
        if output_index is not None:
            self._by_output.setdefault(output_index, call)
        if not call.name:
            name = get(item, "name", None)
            if type(name) is str and name:
                call.name = name
        if not call.started and call.name:
            self._start(call)
        arguments = get(item, "input" if custom else "arguments", None)
        if source is not None:
            self._settle(call, arguments, source)
        # output_item.added: usually "", but some servers send the whole item here.
        elif type(arguments) is str and arguments and not call.has_text and call.status == _PENDING:
            if custom:
                self._append_input(call, arguments)
            else:
                self._append(call, arguments)

    def _append_input(self, call: _Call, text: str) -> None:
        """Free text for a custom tool's call: written as the body of one JSON string (the
        opening quote first; :meth:`_Emitter._ready` writes the closing one)."""
        body = _json_string_body(text)
        self._append(call, body if call.has_text else '"' + body)

    def _prune(self) -> bool:
        """Release the records of calls already ready or failed (their ids are remembered);
        ``False`` if ``2 * Limits.max_calls`` records are still pending (the sink tracks at
        most ``max_calls`` of them, and at most ``max_calls`` more wait for a name)."""
        limit = 2 * self._limits.max_calls  # started calls, and as many waiting for a name
        keep = [call for call in self._order if call.status == _PENDING]
        if len(keep) == len(self._order):
            return len(keep) < limit
        retired = self._retired
        for index, call in [*self._by_item.items(), *self._by_call_id.items()]:
            if call.status != _PENDING:
                retired[index] = None
        while len(retired) > self._limits.remember_forgotten:
            del retired[next(iter(retired))]
        self._order = keep
        self._by_item = {k: c for k, c in self._by_item.items() if c.status == _PENDING}
        self._by_call_id = {k: c for k, c in self._by_call_id.items() if c.status == _PENDING}
        self._by_output = {k: c for k, c in self._by_output.items() if c.status == _PENDING}
        return len(keep) < limit

    def _settle(self, call: _RCall, final: Any, source: str) -> None:
        """Reconcile the streamed text with the final ``arguments``, then make it ready."""
        if call.status == _FAILED:
            return
        if final is not None and type(final) is not str:
            self._fail(
                call,
                OpenAIMalformedToolCall(
                    api="responses",
                    field="arguments",
                    message=f"the final arguments of tool call {call.call_id!r} in {source} "
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
        if call.status == _READY and final == call.verified:
            # Checked already, against the text the call was made ready with, which no
            # longer changes: output_item.done and response.completed repeat it.
            return
        raw = final
        if call.custom:  # compared as the JSON string written (closed once ready)
            final = '"' + _json_string_body(final) + ("" if call.status == _PENDING else '"')
        if call.started:  # the sink's text (args_text), or the copy kept for a sink without
            streamed_text = self._calls.text(call)
        else:  # what waits for the name (None: unknown, it outgrew the limits)
            streamed_text = None if call.dropped else "".join(call.parts)
        if streamed_text is None:
            # The sink holds no such call (it refused its start): nothing runs with it.
            self._ready(call)
            return
        streamed = len(streamed_text)
        if not final.startswith(streamed_text) or (
            len(final) > streamed and call.status != _PENDING
        ):
            self._fail(
                call,
                OpenAIArgumentsMismatch(
                    api="responses",
                    streamed_chars=streamed,
                    final=final,
                    source=source,
                    message=f"the final arguments of tool call {call.call_id!r} "
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
        if call.status == _READY:
            call.verified = raw

    def _completed(self, item: Any, get: _Getter) -> None:
        output = _get(get(item, "response", None), "output")
        if type(output) is list:
            for position, item in enumerate(output):
                self._item(item, position, _COMPLETED)
        for call in self._order:
            if call.status == _PENDING:
                self._ready(call)
        self._end(True, "completed")

    def _stopped(self, item: Any, get: _Getter) -> None:
        response = get(item, "response", None)
        if get(item, "type", None) == "response.incomplete":
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
        self._fail_pending(self._order, reason, None)
        self._end(False, reason)

    def _end(self, ok: bool, reason: str) -> None:
        """End the turn; nothing is routed any more (the hot path asks nothing else)."""
        self._by_item = {}
        self._calls.end(ok, reason)

    def _calls_event(self) -> str:
        return _ARGS_DELTA  # (``RULES["openai_responses"].delta_event``, without the look-up)


_Handler = Callable[[OpenAIResponsesAdapter, Any, _Getter], None]
_HANDLERS: Final[dict[str, _Handler]] = {
    _ITEM_ADDED: OpenAIResponsesAdapter._on_item_added,
    _ARGS_DONE: OpenAIResponsesAdapter._on_args_done,
    _ITEM_DONE: OpenAIResponsesAdapter._on_item_done,
    _CUSTOM_DELTA: OpenAIResponsesAdapter._on_custom_delta,
    _CUSTOM_DONE: OpenAIResponsesAdapter._on_custom_done,
    _COMPLETED: OpenAIResponsesAdapter._completed,
    "response.incomplete": OpenAIResponsesAdapter._stopped,
    "response.failed": OpenAIResponsesAdapter._stopped,
    "error": OpenAIResponsesAdapter._on_error,
}
"""The handler of each event type but the fragments (which ``_translate`` reads itself)."""
