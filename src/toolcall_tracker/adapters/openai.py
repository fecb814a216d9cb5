"""Adapters for OpenAI streams: Chat Completions chunks and Responses API events.

Both are sans-IO translators (see :mod:`toolcall_tracker.adapters`): ``feed(item)`` returns
the tracker events one provider item implies, ``end()`` what the end of the stream implies::

    stream = await client.chat.completions.create(..., stream=True)
    await tracker.consume(adapt(stream, OpenAIChatAdapter()))

    stream = await client.responses.create(..., stream=True)
    await tracker.consume(adapt(stream, OpenAIResponsesAdapter()))

An item may be the official SDK's typed object (``ChatCompletionChunk``, a Responses
stream event, or what the SDK's ``.stream()`` helpers yield) or the plain ``dict`` decoded
from the SSE ``data:`` JSON. This module never imports ``openai``: it reads fields through
one small accessor that handles both.

Robustness: a malformed item never raises out of ``feed``. A fragment that can be pinned
to a call but is unusable (arguments that are not a string, say) fails that call with an
``Error`` event whose value is one of the :class:`OpenAICallFailure` models below; anything
that cannot be pinned to a call is ignored (and logged at DEBUG on the
``toolcall_tracker.adapters.openai`` logger). The one exception: ``feed`` raises
:class:`TypeError` for a value that is not a provider item at all (``None``, a string or
bytes, a number, a list or tuple), which means the wrong stream was plugged in (raw SSE
lines, say). Items fed once the turn is over (after ``end()``, or for Responses after
its terminal event) are ignored and return ``[]``.

Error values (stored in ``ToolCall.error``; frozen pydantic models deriving from
:class:`~toolcall_tracker.CallFailure` through :class:`OpenAICallFailure`, whose ``api``
field says ``"chat.completions"`` or ``"responses"``):

- :class:`OpenAITurnCutOff` (``kind="turn_cut_off"``): the turn stopped before the call's
  arguments were complete: ``finish_reason`` ``length``, ``content_filter`` or another
  non-ok reason; ``response.incomplete`` / ``response.failed``; an ``error`` event.
- :class:`OpenAIMalformedToolCall` (``kind="malformed_tool_call"``): a field the call
  needs is unusable (arguments that are not a string, a name that never came).
- :class:`OpenAIArgumentsMismatch` (``kind="arguments_mismatch"``, Responses): the final
  ``arguments`` disagree with the streamed text (and do not merely extend it).
- :class:`OpenAILateArguments` (``kind="late_arguments"``, Chat with ``eager=True``):
  argument text arrived for a call that had already been made ready.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias

from ..errors import CallFailure
from ._base import AdapterEvent, _FastLane
from ._common import _delta, _end, _error, _ready, _start, _usable_id

__all__ = [
    "OpenAIArgumentsMismatch",
    "OpenAICallFailure",
    "OpenAIChatAdapter",
    "OpenAILateArguments",
    "OpenAIMalformedToolCall",
    "OpenAIResponsesAdapter",
    "OpenAITurnCutOff",
]

_logger: Final = logging.getLogger("toolcall_tracker.adapters.openai")

_API = Literal["chat.completions", "responses"]


# -- error values ----------------------------------------------------------------------


class OpenAICallFailure(CallFailure):
    """Base of the error values the OpenAI adapters put in ``Error`` events.

    ``api`` names the stream format: ``"chat.completions"`` or ``"responses"``.
    """

    api: _API


class OpenAITurnCutOff(OpenAICallFailure):
    """The turn stopped before the call's arguments were complete; the text may be cut.

    ``reason`` is the provider's reason: the choice's ``finish_reason`` (``"length"``,
    ``"content_filter"``, ...) for Chat; ``"incomplete: <incomplete_details.reason>"``,
    ``"failed: <error.code>"`` or ``"error: <code>"`` for Responses (and for a Chat
    stream that carried an ``error`` object). ``choice`` is the Chat choice index.
    """

    kind: Literal["turn_cut_off"] = "turn_cut_off"
    reason: str
    choice: int | None = None


class OpenAIMalformedToolCall(OpenAICallFailure):
    """A field the call needs was unusable; ``field`` names it (``"function.arguments"``)."""

    kind: Literal["malformed_tool_call"] = "malformed_tool_call"
    field: str


class OpenAIArgumentsMismatch(OpenAICallFailure):
    """(Responses) The final ``arguments`` disagree with the streamed fragments.

    ``streamed`` is the text the fragments built, ``final`` what ``source`` (the event
    type that carried it) says. A ``final`` that merely extends ``streamed`` is not a
    mismatch: the missing suffix is appended instead.
    """

    kind: Literal["arguments_mismatch"] = "arguments_mismatch"
    streamed: str
    final: str
    source: str


class OpenAILateArguments(OpenAICallFailure):
    """(Chat, ``eager=True``) Argument text arrived for a call that was already ready.

    Eager mode made the call ready when the next call of its choice started; the server
    then sent more of its arguments (it interleaves calls), so the tool ran with truncated
    text. ``fragment`` is the first late fragment.
    """

    kind: Literal["late_arguments"] = "late_arguments"
    fragment: str


# -- shared machinery ------------------------------------------------------------------


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """Field ``key`` of a plain dict or of an SDK object; ``default`` when absent.

    This is the one accessor. On the hot path an adapter picks it once per item: an
    item that is a ``dict`` is read with it all the way down (it copes with any nested
    value), an SDK object with the built-in ``getattr`` (which is what this does for
    non-dicts, minus the call overhead).
    """
    if type(obj) is dict:
        return obj.get(key, default)
    return getattr(obj, key, default)


_Getter: TypeAlias = Callable[[Any, str, Any], Any]
_dict_get: Final[_Getter] = dict.get

_NOT_ITEMS: Final = (str, bytes, bytearray, int, float, list, tuple)


def _check_item(item: object) -> None:
    """Raise ``TypeError`` for a value that cannot be a provider item at all."""
    if item is None or (type(item) is not dict and isinstance(item, _NOT_ITEMS)):
        raise TypeError(
            f"expected an OpenAI stream item (an SDK object or a dict decoded from the SSE "
            f"JSON), got {type(item).__name__}: {item!r:.80}"
        )


_PENDING, _READY, _FAILED = 0, 1, 2


class _Call:
    """The adapter's record of one call.

    ``id`` is the tracker id (``None`` until known, for a Responses call seen only
    through deltas). ``started`` says whether ``Start`` was emitted; until then fragments
    wait in ``parts``. ``parts`` keeps every fragment when ``keep`` is set (the Responses
    adapter compares the streamed text with the final ``arguments``); ``has_text`` says
    whether any non-empty fragment arrived.
    """

    __slots__ = ("has_text", "id", "keep", "name", "parts", "started", "status")

    def __init__(self, call_id: str | None, name: str | None, keep: bool) -> None:
        self.id = call_id
        self.name = name
        self.started = False
        self.status = _PENDING
        self.has_text = False
        self.keep = keep
        self.parts: list[str] = []

    def text(self) -> str:
        parts = self.parts
        if len(parts) > 1:
            joined = "".join(parts)
            parts.clear()  # (not parts[:] = ...: that copies the old pointers first)
            parts.append(joined)
        return parts[0] if parts else ""


class _Emitter(_FastLane):
    """What both adapters share: unique ids, starting, appending, readying, failing."""

    _api: _API

    def __init__(self) -> None:
        super().__init__()
        self._used_ids: set[str] = set()
        self._ended = False

    def _unique(self, candidate: str) -> str:
        """``candidate``, or ``candidate_2``, ``_3``... if another call already has it."""
        used = self._used_ids
        unique = candidate
        suffix = 2
        while unique in used:
            unique = f"{candidate}_{suffix}"
            suffix += 1
        used.add(unique)
        return unique

    def _start(self, call: _Call, out: list[AdapterEvent]) -> None:
        """Emit ``Start`` (and the fragments that waited for it), once id and name are known."""
        call.started = True
        call_id: Any = call.id
        out.append(_start(call_id, call.name or ""))
        if call.has_text:
            out.append(_delta(call_id, call.text()))
            if not call.keep:
                call.parts = []

    def _append(self, call: _Call, fragment: str, out: list[AdapterEvent]) -> None:
        """Append a non-empty fragment to a pending call."""
        call.has_text = True
        if call.started:
            if call.keep:
                call.parts.append(fragment)
            call_id: Any = call.id
            out.append(_delta(call_id, fragment))
        else:
            call.parts.append(fragment)

    def _ready(self, call: _Call, out: list[AdapterEvent]) -> None:
        """Make a pending call ready: empty text becomes ``{}``; a nameless call fails."""
        if call.status != _PENDING:
            return
        if not call.name:
            self._fail(
                call,
                OpenAIMalformedToolCall(
                    api=self._api,
                    field="function.name" if self._api == "chat.completions" else "name",
                    message=f"tool call {call.id!r} never received a function name",
                ),
                out,
            )
            return
        if not call.started:
            self._start(call, out)
        call_id: Any = call.id
        if not call.has_text:
            call.has_text = True
            if call.keep:
                call.parts.append("{}")
            out.append(_delta(call_id, "{}"))
        call.status = _READY
        out.append(_ready(call_id))

    def _fail(self, call: _Call, error: OpenAICallFailure, out: list[AdapterEvent]) -> None:
        """Fail a call that is not failed yet (a nameless one is started as ``""``)."""
        if call.status == _FAILED or call.id is None:
            return
        if not call.started:
            self._start(call, out)
        call.status = _FAILED
        _logger.debug("failing tool call %r: %s", call.id, error.message)
        out.append(_error(call.id, error))

    def _fail_pending(
        self, calls: list[_Call], reason: str, choice: int | None, out: list[AdapterEvent]
    ) -> None:
        """Fail every call still pending: the turn stopped for ``reason`` before they were
        complete (``choice`` is the Chat choice, ``None`` for Responses)."""
        for call in calls:
            if call.status == _PENDING:
                self._fail(
                    call,
                    OpenAITurnCutOff(
                        api=self._api,
                        reason=reason,
                        choice=choice,
                        message=f"the turn stopped ({reason}) before the arguments of tool "
                        f"call {call.id!r} ({call.name}) were complete; its text may be "
                        "truncated",
                    ),
                    out,
                )


# -- Chat Completions ------------------------------------------------------------------

_CHAT_OK: Final = frozenset({"tool_calls", "stop", "function_call"})


class _Choice:
    """Routing state of one choice: calls by server id, by index, the latest, all."""

    __slots__ = ("by_id", "by_index", "calls", "finish", "index", "latest")

    def __init__(self, index: int) -> None:
        self.index = index
        self.by_id: dict[str, _Call] = {}
        self.by_index: dict[int, _Call] = {}
        self.latest: _Call | None = None
        self.calls: list[_Call] = []
        self.finish: str | None = None


class OpenAIChatAdapter(_Emitter):
    """Chat Completions chunks (OpenAI and OpenAI-compatible servers) to tracker events.

    Feed it each ``ChatCompletionChunk`` (from ``client.chat.completions.create(...,
    stream=True)``), each event of ``client.chat.completions.stream(...)`` (``chunk``
    events are unwrapped, the helper's other events ignored), or each dict decoded from
    the SSE ``data:`` lines. Chunks without choices (``include_usage``) are ignored.

    Routing: a fragment in ``choices[i].delta.tool_calls`` goes to the call of choice ``i``
    with the same ``id`` when it carries one (a new ``id`` starts a new call, so servers
    that send ``index: 0`` for every call still work); otherwise to the call with the same
    ``index`` in that choice; otherwise (no ``index`` either) to the latest call of the
    choice. A fragment without ``id`` that carries a ``function.name`` different from the
    routed call's name starts a new call instead (servers sending neither ids nor distinct
    indexes); the same name repeated is ignored. A fragment that routes nowhere and brings
    nothing (no id, no name, no text) is ignored.

    Ids: the server's ``id`` is the tracker id. A call without one gets
    ``call_<choice>_<n>``, ``n`` being the call's 0-based position among the calls of its
    choice (in order of appearance), so the same transcript always yields the same ids.
    Should an id be taken already (a server reusing an id in another choice, or one equal
    to a synthesised id), ``_2``, ``_3``... is appended.

    Readiness comes from the choice's ``finish_reason``: at ``tool_calls``, ``stop`` (or
    the legacy ``function_call``) every pending call of the choice becomes ready; at
    ``length``, ``content_filter`` or anything else they fail with
    :class:`OpenAITurnCutOff` (their text may be truncated). With ``eager=True`` a call
    also becomes ready as soon as the next call of its choice starts, as the official
    client's ``.stream()`` helper does; that gives tools a head start but is unsafe with
    servers that interleave calls: text arriving afterwards fails the call with
    :class:`OpenAILateArguments`.

    A call whose argument text is empty when it becomes ready (an argument-less tool;
    some servers send ``""``) gets the text ``{}``. A call whose name never arrived fails
    with :class:`OpenAIMalformedToolCall` (``field="function.name"``), as does a call whose
    ``function.arguments`` is not a string.

    :meth:`end` emits the turn's ``End``: ``ok`` when every choice finished with an ok
    reason; ``reason`` is the choices' distinct finish reasons joined by ``,`` (or says
    that the stream ended without one, or carried an ``error``). Calls still pending then
    are failed by the tracker (``IncompleteArguments``).

    Args:
        eager: make a call ready when the next call of its choice starts, instead of
            waiting for the ``finish_reason``.
    """

    _api: _API = "chat.completions"

    def __init__(self, *, eager: bool = False) -> None:
        super().__init__()
        self._eager = eager
        self._choices: dict[int, _Choice] = {}
        self._error: str | None = None

    @property
    def eager(self) -> bool:
        """Whether a call becomes ready as soon as the next call of its choice starts."""
        return self._eager

    def _feed_events(self, item: Any) -> list[AdapterEvent]:
        """The tracker events one chunk implies (possibly none).

        Raises:
            TypeError: ``item`` is not a provider item at all (see the module docs).
        """
        if type(item) is not dict and not self._ended:
            fast = self._fast_fragment(item)
            if fast is not None:
                return fast
        get: _Getter = _get if type(item) is dict else getattr
        choices = get(item, "choices", None)
        out: list[AdapterEvent] = []
        if self._ended:
            return out
        if type(choices) is not list:
            return self._other(item, out)
        states = self._choices
        for choice in choices:
            index = get(choice, "index", None)
            if type(index) is not int:
                index = 0  # servers that omit it send a single choice
            state = states.get(index)
            if state is None:
                state = states[index] = _Choice(index)
            delta = get(choice, "delta", None)
            if delta is not None:
                tool_calls = get(delta, "tool_calls", None)
                if tool_calls:
                    if type(tool_calls) is list:
                        for fragment in tool_calls:
                            # The hot path, inline: more text for a started, pending call
                            # found by index. Anything else takes the general route.
                            position = get(fragment, "index", None)
                            if type(position) is int and get(fragment, "id", None) is None:
                                call = state.by_index.get(position)
                                function = get(fragment, "function", None)
                                if (
                                    call is not None
                                    and call.status == _PENDING
                                    and call.started
                                    and function is not None
                                    and get(function, "name", None) is None
                                ):
                                    arguments = get(function, "arguments", None)
                                    if type(arguments) is str:
                                        if arguments:
                                            call.has_text = True
                                            sink = self._lane
                                            if out or sink is None or not sink(call.id, arguments):
                                                out.append(_delta(call.id, arguments))  # type: ignore[arg-type]
                                        continue
                            self._fragment(get, state, fragment, out)
                    else:
                        _logger.debug("ignored tool_calls that is not a list: %r", tool_calls)
            finish = get(choice, "finish_reason", None)
            if finish is not None:
                self._finish(state, finish, out)
        return out

    def _fast_fragment(self, item: Any) -> list[AdapterEvent] | None:
        """The commonest SDK chunk, read with plain attribute access: one choice, no finish
        reason, one tool-call fragment that only carries more arguments for a started,
        pending call found by index. Returns what :meth:`feed` would, or ``None`` for any
        other chunk (including one not shaped like an SDK object), which takes the general
        route."""
        try:
            choices = item.choices
            if type(choices) is not list or len(choices) != 1:
                return None
            choice = choices[0]
            if choice.finish_reason is not None:
                return None
            tool_calls = choice.delta.tool_calls
            if type(tool_calls) is not list or len(tool_calls) != 1:
                return None
            fragment = tool_calls[0]
            position = fragment.index
            if type(position) is not int or fragment.id is not None:
                return None
            index = choice.index
            state = self._choices.get(index if type(index) is int else 0)
            if state is None:
                return None
            call = state.by_index.get(position)
            function = fragment.function
            if (
                call is None
                or call.status != _PENDING
                or not call.started
                or function is None
                or function.name is not None
            ):
                return None
            arguments = function.arguments
            if type(arguments) is not str or not arguments:
                return None
        except AttributeError:
            return None
        call.has_text = True
        call_id: Any = call.id
        sink = self._lane
        if sink is not None and sink(call_id, arguments):
            return []
        return [_delta(call_id, arguments)]

    def _end_events(self) -> list[AdapterEvent]:
        """The turn's ``End`` (see the class docs); ``[]`` if called again."""
        if self._ended:
            return []
        self._ended = True
        states = [self._choices[index] for index in sorted(self._choices)]
        reasons: list[str] = []
        ok = bool(states)
        for state in states:
            finish = state.finish
            if finish is None:
                ok = False
                finish = f"no finish_reason for choice {state.index}"
            elif finish not in _CHAT_OK:
                ok = False
            if finish not in reasons:
                reasons.append(finish)
        if self._error is not None:
            ok = False
            reasons.insert(0, self._error)
        reason = ",".join(reasons) if reasons else "stream ended without any choice"
        return [_end(ok, reason)]

    # -- internals --------------------------------------------------------------------

    def _other(self, item: Any, out: list[AdapterEvent]) -> list[AdapterEvent]:
        """An item without a ``choices`` list: a helper event, usage, an error, junk."""
        kind = _get(item, "type")
        if kind == "chunk":  # the .stream() helper's ChunkEvent
            chunk = _get(item, "chunk")
            return [] if chunk is None else self.feed(chunk)
        if type(kind) is str:  # the helper's content.delta, tool_calls.*, ... events
            return out
        _check_item(item)
        error = _get(item, "error")
        if error is not None and self._error is None:
            message = _get(error, "message")
            code = _get(error, "code")
            text = message if type(message) is str else repr(error)
            self._error = f"error: {text:.200}"
            reason = f"error: {code}" if type(code) is str and code else "error"
            for state in self._choices.values():
                self._cut_off(state, reason, out)
        return out

    def _fragment(
        self, get: _Getter, state: _Choice, fragment: Any, out: list[AdapterEvent]
    ) -> None:
        """Route one ``tool_calls[j]`` fragment and emit what it implies."""
        call_id = get(fragment, "id", None)
        index = get(fragment, "index", None)
        function = get(fragment, "function", None)
        if function is not None:
            name = get(function, "name", None)
            arguments = get(function, "arguments", None)
        else:
            name = arguments = None
        if type(name) is not str or not name:
            name = None
        if type(index) is not int:
            index = None
        if type(call_id) is str and call_id:
            call = state.by_id.get(call_id)
            if call is None:
                call = self._new_call(state, call_id, name, out)
                state.by_id[call_id] = call
            if index is not None:
                state.by_index[index] = call
        else:
            call = state.latest if index is None else state.by_index.get(index)
            if call is None or (name is not None and call.name and name != call.name):
                if call is None and name is None and not arguments:
                    _logger.debug("ignored a tool call fragment that routes nowhere: %r", fragment)
                    return
                call = self._new_call(state, None, name, out)
                if index is not None:
                    state.by_index[index] = call
        if not call.started:
            if call.name is None and name is not None:
                call.name = name
            if call.name is not None:
                self._start(call, out)
        if arguments:
            if type(arguments) is str and call.status == _PENDING:
                if call.started:  # the hot path: one more fragment of a started call
                    call.has_text = True
                    out.append(_delta(call.id, arguments))  # type: ignore[arg-type]
                else:
                    call.has_text = True
                    call.parts.append(arguments)
            elif type(arguments) is not str:
                self._fail(
                    call,
                    OpenAIMalformedToolCall(
                        api="chat.completions",
                        field="function.arguments",
                        message=f"function.arguments of tool call {call.id!r} is a "
                        f"{type(arguments).__name__}, not a string: {arguments!r:.200}",
                    ),
                    out,
                )
            elif call.status == _READY:
                self._fail(
                    call,
                    OpenAILateArguments(
                        api="chat.completions",
                        fragment=arguments,
                        message=f"argument text for tool call {call.id!r} ({call.name}) "
                        "arrived after it was made ready (eager mode; this server "
                        "interleaves calls)",
                    ),
                    out,
                )

    def _new_call(
        self, state: _Choice, server_id: str | None, name: str | None, out: list[AdapterEvent]
    ) -> _Call:
        if self._eager:
            for previous in state.calls:
                if previous.status == _PENDING:
                    self._ready(previous, out)
        candidate = server_id if _usable_id(server_id) else None
        candidate = candidate or f"call_{state.index}_{len(state.calls)}"
        call = _Call(self._unique(candidate), name, False)
        state.calls.append(call)
        state.latest = call
        if state.finish is not None:
            _logger.debug("tool call %r starts after its choice finished", call.id)
        return call

    def _finish(self, state: _Choice, finish: Any, out: list[AdapterEvent]) -> None:
        if state.finish is not None:
            return  # a repeated finish_reason changes nothing
        if type(finish) is not str or not finish:
            finish = f"invalid finish_reason {finish!r:.60}"
        state.finish = finish
        if finish in _CHAT_OK:
            for call in state.calls:
                self._ready(call, out)
        else:
            self._cut_off(state, finish, out)

    def _cut_off(self, state: _Choice, reason: str, out: list[AdapterEvent]) -> None:
        self._fail_pending(state.calls, reason, state.index, out)


# -- Responses ---------------------------------------------------------------------------

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
      (made unique with ``_2``, ``_3``... if taken).
    - ``response.function_call_arguments.delta`` appends to the call whose item ``id``
      is the event's ``item_id`` (or, without one, whose ``output_index`` matches). A
      delta for an item never announced is kept until the item's name and ``call_id``
      arrive (in ``response.output_item.done`` or ``response.completed``).
    - ``response.function_call_arguments.done``, ``response.output_item.done`` and
      ``response.completed`` carry the final ``arguments``; the first of them makes the
      call ready, so servers that send the arguments only at the end work too. If the
      final text extends the streamed text, the missing suffix is appended; if it
      disagrees otherwise, the call fails with :class:`OpenAIArgumentsMismatch` rather
      than run with text nobody saw (also when a later event contradicts the text a
      call was made ready with). An absent or empty final ``arguments`` says nothing: it
      is not compared, and it makes the call ready only if some text streamed (or at
      ``response.completed``), since such servers may send the arguments later. A call
      whose text is still empty when it becomes ready gets ``{}``.
    - ``response.completed`` makes every call still pending ready and ends the turn ok
      (``End(reason="completed")``). ``response.incomplete`` (reason
      ``incomplete: <incomplete_details.reason>``), ``response.failed`` (``failed:
      <error.code>``) and an ``error`` event (``error: <code>``) fail the pending calls
      with :class:`OpenAITurnCutOff` and end the turn not ok. Other events are ignored.

    :meth:`end` emits ``End(ok=False)`` if none of those arrived (``[]`` otherwise).
    """

    _api: _API = "responses"

    def __init__(self) -> None:
        super().__init__()
        self._by_item: dict[str, _Call] = {}
        self._by_call_id: dict[str, _Call] = {}
        self._by_output: dict[int, _Call] = {}
        self._calls: list[_Call] = []

    def _feed_events(self, item: Any) -> list[AdapterEvent]:
        """The tracker events one stream event implies (possibly none).

        Raises:
            TypeError: ``item`` is not a provider item at all (see the module docs).
        """
        # Only the item's own fields are read here (nested ones go through ``_get``), so a
        # dict item can use ``dict.get`` itself.
        get: _Getter = _dict_get if type(item) is dict else getattr
        kind = get(item, "type", None)
        if self._ended:
            return []
        if kind == _ARGS_DELTA:  # the hot path
            fragment = get(item, "delta", None)
            if type(fragment) is str and fragment:
                item_id = get(item, "item_id", None)
                call = self._by_item.get(item_id) if type(item_id) is str else None
                if call is None:
                    call = self._route(item_id, get(item, "output_index", None), True)
                if call is not None and call.status == _PENDING:
                    call.has_text = True
                    call.parts.append(fragment)  # kept: the final arguments are compared
                    if call.started:
                        call_id: Any = call.id
                        sink = self._lane
                        if sink is not None and sink(call_id, fragment):
                            return []
                        return [_delta(call_id, fragment)]
            return []
        out: list[AdapterEvent] = []
        if kind == _ITEM_ADDED:
            self._item(_get(item, "item"), _get(item, "output_index"), None, out)
        elif kind == _ARGS_DONE:
            call = self._route(_get(item, "item_id"), _get(item, "output_index"), False)
            if call is not None:
                name = _get(item, "name")
                if not call.name and type(name) is str and name:
                    call.name = name
                self._settle(call, _get(item, "arguments"), _ARGS_DONE, out)
        elif kind == _ITEM_DONE:
            self._item(_get(item, "item"), _get(item, "output_index"), _ITEM_DONE, out)
        elif kind == _COMPLETED:
            self._completed(_get(item, "response"), out)
        elif kind == "response.incomplete" or kind == "response.failed":
            self._stopped(kind, _get(item, "response"), out)
        elif kind == "error":
            code = _get(item, "code")
            message = _get(item, "message")
            detail = code if type(code) is str and code else message
            self._cut_off(f"error: {detail}" if type(detail) is str else "error", out)
        elif kind is None:
            _check_item(item)
        return out

    def _end_events(self) -> list[AdapterEvent]:
        """``End(ok=False)`` if the stream ended before a terminal event, else ``[]``."""
        if self._ended:
            return []
        self._ended = True
        return [_end(False, "stream ended before response.completed")]

    # -- internals --------------------------------------------------------------------

    def _route(self, item_id: Any, output_index: Any, create: bool) -> _Call | None:
        """The call an event with ``item_id`` / ``output_index`` is about."""
        call = None
        if type(item_id) is str:
            call = self._by_item.get(item_id)
        if call is None and type(output_index) is int:
            call = self._by_output.get(output_index)
        if call is None:
            if not create or type(item_id) is not str or not item_id:
                _logger.debug("ignored an event for unknown item %r", item_id)
                return None
            call = _Call(None, None, True)  # deltas before the item: wait for its name
            self._by_item[item_id] = call
            if type(output_index) is int:
                self._by_output[output_index] = call
            self._calls.append(call)
        return call

    def _item(
        self, item: Any, output_index: Any, source: str | None, out: list[AdapterEvent]
    ) -> _Call | None:
        """A ``function_call`` output item: start its call, and settle it if ``source``."""
        if item is None or _get(item, "type") != "function_call":
            return None
        item_id = _get(item, "id")
        call_id = _get(item, "call_id")
        name = _get(item, "name")
        item_id = item_id if type(item_id) is str and item_id else None
        call_id = call_id if type(call_id) is str and call_id else None
        output_index = output_index if type(output_index) is int else None
        call = None
        if item_id is not None:
            call = self._by_item.get(item_id)
        if call is None and call_id is not None:
            call = self._by_call_id.get(call_id)
        if call is None and source is not None and output_index is not None:
            call = self._by_output.get(output_index)
        if call is None:
            call = _Call(None, None, True)
            self._calls.append(call)
        elif source is None and call.started:
            return call  # a repeated output_item.added
        if item_id is not None:
            self._by_item.setdefault(item_id, call)
        if call_id is not None:
            self._by_call_id.setdefault(call_id, call)
        if output_index is not None:
            self._by_output.setdefault(output_index, call)
        if not call.name and type(name) is str and name:
            call.name = name
        if call.id is None:
            if _usable_id(call_id):
                call.id = self._unique(call_id)
            elif _usable_id(item_id):
                call.id = self._unique(item_id)
            elif output_index is not None:
                call.id = self._unique(f"call_{output_index}")
            else:
                call.id = self._unique(f"call_{len(self._calls) - 1}")
        if not call.started and call.name:
            self._start(call, out)
        arguments = _get(item, "arguments")
        if source is None:
            # output_item.added: usually "", but some servers send the whole item here.
            if type(arguments) is str and arguments and not call.has_text:
                self._append(call, arguments, out)
        else:
            self._settle(call, arguments, source, out)
        return call

    def _settle(self, call: _Call, final: Any, source: str, out: list[AdapterEvent]) -> None:
        """Reconcile the streamed text with the final ``arguments``, then make it ready."""
        if call.status == _FAILED:
            return
        if final is not None and type(final) is not str:
            if call.id is not None:
                self._fail(
                    call,
                    OpenAIMalformedToolCall(
                        api="responses",
                        field="arguments",
                        message=f"the final arguments of tool call {call.id!r} in {source} "
                        f"are a {type(final).__name__}, not a string: {final!r:.200}",
                    ),
                    out,
                )
            return
        if not final:
            # Absent or "": says nothing. Ready now only if text streamed (or at the very
            # end): servers that send the arguments only later must get the chance to.
            if call.id is not None and (call.has_text or source == _COMPLETED):
                self._ready(call, out)
            return
        streamed = call.text()
        if final != streamed:
            if call.status == _PENDING and final.startswith(streamed):
                self._append(call, final[len(streamed) :], out)
            elif call.id is None:
                return  # not announced yet: its item will carry the arguments again
            else:
                self._fail(
                    call,
                    OpenAIArgumentsMismatch(
                        api="responses",
                        streamed=streamed,
                        final=final,
                        source=source,
                        message=f"the final arguments of tool call {call.id!r} "
                        f"({call.name}) in {source} disagree with the text "
                        f"{'streamed' if call.status == _PENDING else 'it was made ready with'}"
                        f" ({len(streamed)} characters, {len(final)} final; the streamed "
                        "text is not a prefix of the final one)",
                    ),
                    out,
                )
                return
        if call.id is not None:
            self._ready(call, out)

    def _completed(self, response: Any, out: list[AdapterEvent]) -> None:
        output = _get(response, "output")
        if type(output) is list:
            for position, item in enumerate(output):
                self._item(item, position, _COMPLETED, out)
        for call in self._calls:
            if call.status == _PENDING and call.id is not None:
                self._ready(call, out)
        self._ended = True
        out.append(_end(True, "completed"))

    def _stopped(self, kind: str, response: Any, out: list[AdapterEvent]) -> None:
        if kind == "response.incomplete":
            detail = _get(_get(response, "incomplete_details"), "reason")
            reason = f"incomplete: {detail}" if type(detail) is str else "incomplete"
        else:
            error = _get(response, "error")
            detail = _get(error, "code")
            if type(detail) is not str:
                detail = _get(error, "message")
            reason = f"failed: {detail}" if type(detail) is str else "failed"
        self._cut_off(reason, out)

    def _cut_off(self, reason: str, out: list[AdapterEvent]) -> None:
        self._fail_pending(self._calls, reason, None, out)
        self._ended = True
        out.append(_end(False, reason))
