"""The OpenAI Chat Completions adapter: :class:`OpenAIChatAdapter`.

A sans-IO translator (see :mod:`toolcall_tracker.adapters`)::

    stream = await client.chat.completions.create(..., stream=True)
    await tracker.consume(adapt(stream, OpenAIChatAdapter()))

An item may be the official SDK's ``ChatCompletionChunk`` (or what the SDK's ``.stream()``
helper yields) or the plain ``dict`` decoded from the SSE ``data:`` JSON. This module never
imports ``openai``.

Robustness: a malformed item never raises out of ``feed``. A fragment that can be pinned
to a call but is unusable (arguments that are not a string, say) fails that call with an
``Error`` event whose value is one of the :class:`OpenAICallFailure` models; anything that
cannot be pinned to a call is ignored (and logged at DEBUG on the
``toolcall_tracker.adapters.openai`` logger). The one exception: ``feed`` raises
:class:`TypeError` for a value that is not a provider item at all (``None``, a string or
bytes, a number, a list or tuple), which means the wrong stream was plugged in (raw SSE
lines, say). Items fed once the turn is over (after ``end()``) are ignored and return
``[]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ...limits import Limits
from .._common import _usable_id
from ._routes import _Choice, _Routes
from ._shared import (
    _FAILED,
    _HELD,
    _INCOMPLETE,
    _MAPPING_TYPES,
    _PENDING,
    _READY,
    OpenAICallFailure,
    OpenAILateArguments,
    OpenAIMalformedToolCall,
    OpenAITurnCutOff,
    _Call,
    _check_item,
    _complete_json,
    _Emitter,
    _get,
    _Getter,
    _is_mapping,
    _JsonEnd,
    _logger,
)

__all__ = [
    "OpenAICallFailure",
    "OpenAIChatAdapter",
    "OpenAILateArguments",
    "OpenAIMalformedToolCall",
    "OpenAITurnCutOff",
]

_CHAT_OK: Final = frozenset({"tool_calls", "stop", "function_call"})


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
    choice. Two exceptions: a fragment with a new ``id`` but an empty or missing name, at
    the ``index`` of a call not failed, continues that call, which keeps its first id
    (servers that send a fresh id on every fragment); and a fragment without ``id`` that
    carries a ``function.name`` different from the routed call's name starts a new call
    (servers sending neither ids nor distinct indexes), as does the same name again when
    the fragment has neither ``id`` nor ``index`` and the routed call's text is already a
    complete JSON value (two calls to one tool); otherwise a repeated name is ignored. A
    fragment that routes nowhere and brings nothing (no id, no name, no text) is ignored.

    Ids: the server's ``id`` is the tracker id. A call without one gets
    ``call_<choice>_<n>``, ``n`` being the call's 0-based position among the calls of its
    choice (in order of appearance), so the same transcript always yields the same ids.
    Should an id be taken already (a server reusing an id in another choice, or one equal
    to a synthesised id), ``_2``, ``_3``... is appended.

    Readiness (``eager=True``, the default): a call becomes ready as soon as the stream
    shows it complete. OpenAI sends one call at a time, so the next call of the same choice
    starting is that signal: the previous call becomes ready then, provided it is named and
    its text so far is one complete JSON value (the text is kept for that check only while
    the call is the choice's latest, within ``max_args_chars``, and parsed once, when the
    next call starts). Parseability alone never makes a call ready. A call with no argument
    text, or text that is not a complete JSON value, waits for the ``finish_reason``, as
    does the last call of a choice. A choice whose fragments turn out to be interleaved (a
    name or text for a call after the next one started) switches to waiting for the
    ``finish_reason``; text for a call already made ready fails it with
    :class:`OpenAILateArguments` (a tool that started keeps what it got). With
    ``eager=False`` every call waits for the ``finish_reason``. No mode makes a call ready
    early with no text.

    At the ``finish_reason`` ``tool_calls``, ``stop`` (or the legacy ``function_call``)
    every pending call of the choice becomes ready; at ``length``, ``content_filter`` or
    anything else they fail with :class:`OpenAITurnCutOff` (their text may be truncated).

    A call whose argument text is empty when it becomes ready (an argument-less tool;
    some servers send ``""``) gets the text ``{}``. A call whose name never arrived fails
    with :class:`OpenAIMalformedToolCall` (``field="function.name"``), as does a call whose
    ``function.arguments`` is not a string.

    :meth:`end` emits the turn's ``End``: ``ok`` when every choice finished with an ok
    reason; ``reason`` is the choices' distinct finish reasons joined by ``,`` (or says
    that the stream ended without one, or carried an ``error``). Calls still pending then
    are failed by the tracker (``IncompleteArguments``).

    Limits (those of the sink written into; see :class:`~toolcall_tracker.Limits`): an
    ``id`` longer than ``max_id_chars`` is treated as missing, a name longer than
    ``max_name_chars`` is cut to a name no tool can have (``...(cut)``). Text that arrives
    before its call's name waits for it, at most ``max_args_chars`` characters for all
    such calls together and at most ``max_calls`` such calls; a call whose waiting text
    outgrows that fails with :class:`OpenAIMalformedToolCall` once named, and its text is
    discarded.

    Memory: the routing records are bounded by ``max_calls``. The records of calls the sink
    does not hold (never tracked, reported ``too_many_calls``, or forgotten) are dropped,
    their routes kept for a late fragment (the last ``max(remember_forgotten,
    4 * max_calls)``). Through ``feed`` (no sink to ask), the records of calls already
    ready or failed are dropped, and at most ``4 * max_calls`` open calls are kept: a call
    starting beyond that is written and routed but not made ready by its choice's
    ``finish_reason``.

    Args:
        eager: let a call become ready when the next call of its choice starts (safely,
            see above; the default), instead of only at the ``finish_reason``.
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    _api = "chat.completions"
    _rules_name = "openai_chat"

    def __init__(self, *, eager: bool = True, limits: Limits | None = None) -> None:
        super().__init__(limits=limits)
        self._eager = eager
        self._choices: dict[int, _Choice] = {}
        self._routes = _Routes()
        self._error: str | None = None

    @property
    def eager(self) -> bool:
        """Whether a call may become ready as soon as the next call of its choice starts
        (see the class docs), rather than only at the ``finish_reason``."""
        return self._eager

    def _translate(self, item: Any) -> None:
        self._read((item,))

    def _read(self, items: Iterable[Any]) -> None:
        """Write the events each chunk implies (possibly none).

        Raises:
            TypeError: an item is not a provider item at all (see the module docs).
        """
        for item in items:
            if self._calls.ended:
                continue
            cls = type(item)
            if cls is dict:
                if self._fast_dict(item):
                    continue
            elif _MAPPING_TYPES.get(cls) is False or not _is_mapping(item):
                # An SDK chunk. The commonest, read here with plain attribute access (a call
                # less per fragment): one choice, no finish reason, one tool-call fragment that
                # only carries more arguments for a streaming call found by index, which the
                # table's fast path writes. Any other chunk, or one not shaped like an SDK
                # object (a read raises AttributeError), takes the general route.
                call = None
                try:
                    choices = item.choices
                    if type(choices) is list and len(choices) == 1:
                        choice = choices[0]
                        tool_calls = choice.delta.tool_calls
                        if (
                            choice.finish_reason is None
                            and type(tool_calls) is list
                            and len(tool_calls) == 1
                        ):
                            fragment = tool_calls[0]
                            position = fragment.index
                            function = fragment.function
                            if (
                                type(position) is int
                                and fragment.id is None
                                and function is not None
                                and function.name is None
                            ):
                                index = choice.index
                                state = self._choices.get(index if type(index) is int else 0)
                                call = None if state is None else state.by_index.get(position)
                                if call is not None:
                                    arguments = function.arguments
                except AttributeError:
                    call = None
                else:
                    if call is not None and self._calls.more_of(call, arguments):
                        continue
            else:
                item = dict(item)  # an OrderedDict, say: read as the dict it is
            self._chunk(item)

    _translate_all = _read

    def _chunk(self, item: Any) -> None:
        """The general route: each choice of a chunk, its tool-call fragments one by one."""
        get: _Getter = _get if type(item) is dict else getattr
        choices = get(item, "choices", None)
        if type(choices) is not list:
            self._other(item)
            return
        states = self._choices
        more = self._calls.more_of
        for choice in choices:
            index = get(choice, "index", None)
            if type(index) is not int:
                index = 0  # servers that omit it send a single choice
            state = states.get(index)
            if state is None:
                state = states[index] = _Choice(index, self._eager)
            delta = get(choice, "delta", None)
            if delta is not None:
                tool_calls = get(delta, "tool_calls", None)
                if tool_calls:
                    if type(tool_calls) is list:
                        for fragment in tool_calls:
                            # The table's fast path: more text for a streaming call found
                            # by index. Anything else takes the general route.
                            position = get(fragment, "index", None)
                            if type(position) is int and get(fragment, "id", None) is None:
                                call = state.by_index.get(position)
                                function = get(fragment, "function", None)
                                if (
                                    call is not None
                                    and function is not None
                                    and get(function, "name", None) is None
                                    and more(call, get(function, "arguments", None))
                                ):
                                    continue
                            self._fragment(get, state, fragment)
                    else:
                        _logger.debug("ignored tool_calls that is not a list: %.200r", tool_calls)
            finish = get(choice, "finish_reason", None)
            if finish is not None:
                self._finish(state, finish)

    def _fast_dict(self, item: dict[str, Any]) -> bool:
        """:meth:`_read`'s fast path for SDK chunks, for a plain dict chunk. Its levels
        are read with ``get`` without a type check each: a level of another shape raises
        ``AttributeError`` or ``TypeError`` while it is read, and the chunk takes the
        general route."""
        try:
            choices = item.get("choices")
            if type(choices) is not list or len(choices) != 1:
                return False
            choice = choices[0]
            if choice.get("finish_reason") is not None:
                return False
            tool_calls = choice.get("delta").get("tool_calls")
            if type(tool_calls) is not list or len(tool_calls) != 1:
                return False
            fragment = tool_calls[0]
            if fragment.get("id") is not None:
                return False
            function = fragment.get("function")
            position = fragment.get("index")
            if function.get("name") is not None or type(position) is not int:
                return False
            arguments = function.get("arguments")
            index = choice.get("index")
            state = self._choices.get(index if type(index) is int else 0)
        except (AttributeError, TypeError):  # a level of another shape: the general route
            return False
        call = None if state is None else state.by_index.get(position)
        return call is not None and self._calls.more_of(call, arguments)

    def _finish_stream(self) -> None:
        """The turn's ``End`` (see the class docs); nothing if called again."""
        if self._calls.ended:
            return
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
        self._routes.forget()
        self._calls.end(ok, reason)

    # -- internals --------------------------------------------------------------------

    def _other(self, item: Any) -> None:
        """An item without a ``choices`` list: a helper event, usage, an error, junk."""
        kind = _get(item, "type")
        if kind == "chunk":  # the .stream() helper's ChunkEvent
            chunk = _get(item, "chunk")
            if chunk is not None:
                self._translate(chunk)
            return
        if type(kind) is str:  # the helper's content.delta, tool_calls.*, ... events
            return
        _check_item(item)
        error = _get(item, "error")
        if error is not None and self._error is None:
            message = _get(error, "message")
            code = _get(error, "code")
            text = message if type(message) is str else repr(error)
            self._error = f"error: {text:.200}"
            reason = f"error: {code}" if type(code) is str and code else "error"
            for state in self._choices.values():
                state.cuts.append((state.count, False))
                self._fail_pending(state.calls, reason, state.index)

    def _fragment(self, get: _Getter, state: _Choice, fragment: Any) -> None:
        """Route one ``tool_calls[j]`` fragment and write what it implies."""
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
        if not _usable_id(call_id, self._limits.max_id_chars):
            if type(call_id) is str and call_id:
                _logger.debug("tool call id of %d characters treated as missing", len(call_id))
            call_id = None
        call: _Call | None
        routes = self._routes
        if call_id is not None:
            call = state.by_id.get(call_id)
            if call is None and routes.retired:
                call = routes.by_id(state, call_id)
            if call is None:
                call = routes.at(state, index) if index is not None and name is None else None
                if call is not None and call.status != _FAILED:
                    # Same index, a new id, no name: a server that sends a fresh id on
                    # every fragment. A continuation; the call keeps its first id (text
                    # for it once it is ready is late, as below).
                    _logger.debug("tool call %r: a new id on a continuation fragment", call.call_id)
                else:
                    call = self._new_call(state, call_id, name)
                    if call is None:
                        return
                    routes.route_id(state, call_id, call)
            if index is not None and state.by_index.get(index) is not call:
                routes.route_index(state, index, call)
        else:
            if index is None:
                call = state.latest
                if call is not None and call.retired:
                    routes.revive(state, call)
            else:
                call = state.by_index.get(index)
                if call is None and routes.retired:
                    call = routes.at(state, index)
            if call is None or (
                name is not None
                and call.name
                and (
                    name != call.name
                    # The same name again, with neither id nor index, after the call's text
                    # completed a JSON value: a second call to the same tool.
                    or (index is None and call.scan is not None and call.scan.complete)
                )
            ):
                if call is None and name is None and not arguments:
                    _logger.debug(
                        "ignored a tool call fragment that routes nowhere: %.200r", fragment
                    )
                    return
                call = self._new_call(state, None, name)
                if call is None:
                    return
                if index is not None:
                    routes.route_index(state, index, call)
                else:
                    call.scan = _JsonEnd()
        if call is not state.latest and state.early and (name is not None or arguments):
            self._interleaved(state)  # something for a call the next one superseded
        if not call.started:
            if not call.name and name is not None:
                call.name = name
            if call.name:
                self._start(call)
        if arguments:
            if type(arguments) is str and (call.status == _PENDING or call.status == _HELD):
                self._append(call, arguments)
            elif type(arguments) is not str:
                self._fail(
                    call,
                    OpenAIMalformedToolCall(
                        api="chat.completions",
                        field="function.arguments",
                        message=f"function.arguments of tool call {call.call_id!r} is a "
                        f"{type(arguments).__name__}, not a string: {arguments!r:.200}",
                    ),
                )
            elif call.status == _READY:
                self._fail(
                    call,
                    OpenAILateArguments(
                        api="chat.completions",
                        fragment=arguments,
                        message=f"argument text for tool call {call.call_id!r} ({call.name}) "
                        "arrived after it was made ready (this server interleaves calls); "
                        "a tool already started got the text it was made ready with",
                    ),
                )

    def _new_call(self, state: _Choice, server_id: str | None, name: str | None) -> _Call | None:
        key = (state.index, state.count)
        tracker_id = self._calls.claim(key, server_id)
        if tracker_id is None:
            return None
        call = _Call(key, tracker_id, name)
        if not self._admit(call):
            return None
        if state.early:
            previous = state.latest
            if previous is not None and previous.retired:
                self._routes.revive(state, previous)
            if previous is not None and previous.status == _PENDING:
                self._superseded(previous)
        self._routes.add(state, call, self._calls.sink, self._limits)
        state.latest = call
        if state.finish is not None:
            _logger.debug("tool call %r starts after its choice finished", call.call_id)
        return call

    def _superseded(self, call: _Call) -> None:
        """The next call of ``call``'s choice started (one call at a time, and not
        interleaved so far): ``call`` is complete if its text says so too. Ready now if it
        is named and its text is one complete JSON value; else held for the
        ``finish_reason`` (no text, or text that is not complete, is never made ready
        early). The text is parsed once: the parse is handed to the sink."""
        text = self._calls.text(call) if call.started and call.has_text else None
        if text is not None:
            value = _complete_json(text)
            if value is not _INCOMPLETE:
                self._calls.give(call, text, value)
                self._ready(call)
                return
        self._stop(call, _HELD)

    def _interleaved(self, state: _Choice) -> None:
        """``state``'s fragments turn out to be interleaved: from now on its calls become
        ready at the ``finish_reason`` only (the held ones are plain pending again)."""
        _logger.debug("choice %d interleaves its calls: readiness at finish_reason", state.index)
        state.early = False
        for call in state.calls:
            call.copy = None  # read only to make a call ready early
            if call.status == _HELD:
                self._resume(call)

    def _finish(self, state: _Choice, finish: Any) -> None:
        if state.finish is not None:
            return  # a repeated finish_reason changes nothing
        if type(finish) is not str or not finish:
            finish = f"invalid finish_reason {finish!r:.60}"
        state.finish = finish
        state.cuts.append((state.count, finish in _CHAT_OK))
        if finish in _CHAT_OK:
            for call in state.calls:
                self._ready(call)
        else:
            self._fail_pending(state.calls, finish, state.index)
