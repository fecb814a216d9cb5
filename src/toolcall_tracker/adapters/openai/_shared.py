"""What the two OpenAI adapters share (private): error values, item access, call records.

- The error values (:class:`OpenAICallFailure` and its subclasses), re-exported by
  :mod:`~toolcall_tracker.adapters.openai_chat`, :mod:`~toolcall_tracker.adapters.openai_responses`
  and the :mod:`~toolcall_tracker.adapters.openai` compatibility module.
- :func:`_get` / :func:`_check_item`: field access on SDK objects and dicts.
- :class:`_Call`: the adapter's record of one call, a record of the adapters' call table
  (:mod:`._calls`) with what OpenAI adds to it.
- :class:`_Emitter`: both adapters on the call table. They route their calls themselves
  (Chat by choice, id and index; Responses by item id, call id and output index), and the
  table does the rest, each rule once: ids (``RULES["openai_chat"]`` /
  ``RULES["openai_responses"]``: minted ``call_...`` ids, a reused id suffixed ``_2``),
  the start with its name cut to the limits, the one fast path for more text, ``{}`` for
  a call with no text, ``ready``, failures and the end. A call's text is read back from
  the sink (``args_text``; a copy only for a sink without it). What OpenAI adds: a call
  whose name has not arrived holds its text until it does, at most
  ``Limits.max_args_chars`` characters for all such calls together, and at most
  ``Limits.max_calls`` such calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias

from pydantic import BaseModel

from ..._json import _ArgumentsError, parse_json
from ...failures import CallFailure, MalformedStreamItem
from ...limits import Limits
from .._calls import RULES, AdapterCall, AdapterCallTable
from .._protocol import SinkAdapter

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


class OpenAIMalformedToolCall(OpenAICallFailure, MalformedStreamItem):
    """A field the call needs was unusable; ``field`` names it (``"function.arguments"``).

    Also the value of a call whose argument text, sent before its name, outgrew
    ``Limits.max_args_chars`` while it waited for the name (``field`` is then the name's).
    """

    kind: Literal["malformed_tool_call"] = "malformed_tool_call"
    field: str


class OpenAIArgumentsMismatch(OpenAICallFailure):
    """(Responses) The final ``arguments`` disagree with the streamed fragments.

    ``streamed_chars`` is the length of the text the fragments built (the text itself is
    the call's ``args_text``), ``final`` what
    ``source`` (the event type that carried it) says. A ``final`` that merely extends the
    streamed text is not a mismatch: the missing suffix is appended instead.
    """

    kind: Literal["arguments_mismatch"] = "arguments_mismatch"
    streamed_chars: int
    final: str
    source: str


class OpenAILateArguments(OpenAICallFailure):
    """(Chat) Argument text arrived for a call that was already ready.

    The call was made ready when the next call of its choice started (its text was then a
    complete JSON value) or at its choice's ``finish_reason``; the server then sent more
    text for it (it interleaves calls). The call fails; a tool that already started got
    the text the call was made ready with, never the late text. ``fragment`` is the first
    late fragment.
    """

    kind: Literal["late_arguments"] = "late_arguments"
    fragment: str


# -- item access -----------------------------------------------------------------------


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """Field ``key`` of a mapping (a plain dict, or any other ``Mapping``) or of an SDK
    object; ``default`` when absent.

    This is the one accessor. On the hot path an adapter picks it once per item: an
    item that is a mapping is read with it all the way down (it copes with any nested
    value), an SDK object with the built-in ``getattr`` (which is what this does for
    non-mappings, minus the call overhead).
    """
    if type(obj) is dict or _is_mapping(obj):
        return obj.get(key, default)
    return getattr(obj, key, default)


_MAPPING_TYPES: dict[type, bool] = {}


def _is_mapping(obj: object) -> bool:
    """Whether ``obj`` is read by key: a ``Mapping`` (``OrderedDict``, a ``MappingProxy``...)
    that is not a pydantic model (SDK objects are read by attribute)."""
    kind = type(obj)
    known = _MAPPING_TYPES.get(kind)
    if known is None:
        known = _MAPPING_TYPES[kind] = issubclass(kind, Mapping) and not issubclass(kind, BaseModel)
    return known


_Getter: TypeAlias = Callable[[Any, str, Any], Any]
_dict_get: Final[_Getter] = dict.get

_NOT_ITEMS: Final = (str, bytes, bytearray, int, float, list, tuple)


class _NotAnItem(TypeError):
    """What :func:`_check_item` raises: the value is no provider item at all (never what a
    sink raised), so the adapters that never raise may catch exactly this."""


def _check_item(item: object) -> None:
    """Raise ``TypeError`` for a value that cannot be a provider item at all."""
    if item is None or (type(item) is not dict and isinstance(item, _NOT_ITEMS)):
        raise _NotAnItem(
            f"expected an OpenAI stream item (an SDK object or a dict decoded from the SSE "
            f"JSON), got {type(item).__name__}: {item!r:.80}"
        )


# -- call records ----------------------------------------------------------------------

_PENDING, _READY, _FAILED, _HELD = 0, 1, 2, 3
"""Call statuses. ``_HELD`` (Chat only): still pending, but the next call of its choice
has started and it was not made ready then; it waits for the ``finish_reason``."""
_HOLD_PARTS: Final = 256
_INCOMPLETE: Final = object()  # _complete_json's answer for text that may still grow


def _complete_json(text: str) -> Any:
    """The value of ``text`` if it is one complete JSON value that no more text could
    extend: it parses (by the machine's rules) and is not a bare number (``12`` may still
    become ``123``); else ``_INCOMPLETE``."""
    try:
        value = parse_json(text)
    except _ArgumentsError:
        return _INCOMPLETE
    return _INCOMPLETE if type(value) is int or type(value) is float else value


class _JsonEnd:
    """Tells whether streamed text has completed one JSON object or array, without keeping
    it: bracket depth, and whether the scan is inside a string (or just after a ``\\``).

    Used only for Chat calls that arrived with neither id nor index, where a repeated name
    after a complete value can only mean a new call to the same tool.
    """

    __slots__ = ("_depth", "_escape", "_in_string", "complete", "started")

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escape = False
        self.started = False
        self.complete = False

    def add(self, text: str) -> None:
        """Scan ``text`` after what came before."""
        if self.complete:
            return
        depth, in_string, escape = self._depth, self._in_string, self._escape
        for char in text:
            if in_string:
                if escape:
                    escape = False
                elif char == "\\":
                    escape = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{" or char == "[":
                depth += 1
                self.started = True
            elif char == "}" or char == "]":
                depth -= 1
                if depth <= 0 and self.started:
                    self.complete = True
                    break
        self._depth, self._in_string, self._escape = depth, in_string, escape


class _Call(AdapterCall):
    """The adapter's record of one call: a call-table record, plus what OpenAI adds.

    ``status``: the OpenAI status (``_PENDING``, ``_READY``, ``_FAILED``, ``_HELD``); the
    table's ``open`` / ``streaming`` / ``finished`` follow it. ``started`` says whether
    ``Start`` was written; until then (the name has not arrived, ``name`` is ``""``)
    fragments wait in ``parts`` (``held`` characters), unless they outgrew the limits
    (``dropped``). ``chars`` counts the characters of the fragments the general path took
    (the fast path's need no count: the sink enforces ``Limits.max_args_chars``, and the
    fast path takes only calls that have text); ``has_text``: any non-empty fragment
    arrived. ``custom`` (Responses): a custom tool's call, whose free-text input is written
    as a JSON string. ``retired`` (Chat): the record was dropped from its choice's live
    calls, only its routes remain (see ``_openai_routes``).
    """

    __slots__ = (
        "chars",
        "custom",
        "dropped",
        "has_text",
        "held",
        "parts",
        "retired",
        "scan",
        "started",
        "status",
        "waiting",
    )

    def __init__(self, key: Any, call_id: str, name: str | None) -> None:
        super().__init__(key, call_id, name or "", False)
        self.started = False
        self.status = _PENDING
        self.parts: list[str] = []
        self.held = 0
        self.chars = 0
        self.has_text = False
        self.dropped = False
        self.waiting = False  # counted among the calls waiting for a name
        self.custom = False
        self.scan: _JsonEnd | None = None  # (Chat) set for a call with neither id nor index
        self.retired = False  # (Chat) no longer among its choice's live calls (_openai_routes)


def _failure_of(api: _API) -> Callable[[AdapterCall, str, str], OpenAICallFailure]:
    """The call table's failure factory for ``api`` (the table fails no OpenAI call on its
    own; the adapters pass their error values)."""

    def failure(record: AdapterCall, why: str, event_type: str) -> OpenAICallFailure:
        message = f"tool call {record.call_id!r}: {why}"
        return OpenAIMalformedToolCall(api=api, field=event_type, message=message)

    return failure


_FAILURES: Final[dict[str, Callable[[AdapterCall, str, str], OpenAICallFailure]]] = {
    "chat.completions": _failure_of("chat.completions"),
    "responses": _failure_of("responses"),
}


class _Emitter(SinkAdapter):
    """Both adapters on the call table (see the module doc): ids, starting, appending,
    readying, failing, the end; and a name that arrives after the text."""

    _api: _API
    _rules_name: str

    def __init__(self, *, limits: Limits | None = None) -> None:
        super().__init__(limits=limits)
        # The table's failure factory is the API's, not a bound method: that would make
        # adapter and table a reference cycle, and every turn (adapter, records, the
        # machine they write into) would wait for the garbage collector.
        failure = _FAILURES[self._api]
        self._table = self._calls = AdapterCallTable(RULES[self._rules_name], failure, self._sink)
        self._waiting = 0  # calls holding text until their name arrives
        self._held = 0  # the characters they hold, all together

    def _admit(self, call: _Call) -> bool:
        """Count a call created without a name; ``False`` if ``Limits.max_calls`` such
        calls already wait (the call is then not tracked)."""
        if call.name:
            return True
        if self._waiting >= self._limits.max_calls:
            _logger.debug("ignored tool call %r: too many calls wait for their name", call.call_id)
            return False
        self._waiting += 1
        call.waiting = True
        return True

    def _start(self, call: _Call) -> None:
        """Write ``Start`` (and the text that waited for it), once id and name are known."""
        call.started = True
        if call.waiting:
            call.waiting = False
            self._waiting -= 1
        self._calls.begin(call)
        if call.dropped:
            self._fail(
                call,
                OpenAIMalformedToolCall(
                    api=self._api,
                    field=self._name_field(),
                    message=f"tool call {call.call_id!r} received {call.chars} characters of "
                    "argument text before its name, more than Limits.max_args_chars "
                    f"({self._limits.max_args_chars}) allows to wait; the text was discarded",
                ),
            )
        elif call.parts:
            text = "".join(call.parts)
            self._held -= call.held
            call.parts = []
            call.held = 0
            self._calls.append(call, text, self._calls_event())
            self._streaming(call)

    def _append(self, call: _Call, fragment: str) -> None:
        """Append a non-empty fragment to a pending call."""
        call.has_text = True
        size = len(fragment)
        call.chars += size
        scan = call.scan
        if scan is not None:
            scan.add(fragment)
        limit = self._limits.max_args_chars
        if call.started:
            self._calls.append(call, fragment, self._calls_event())
            if call.chars > limit:
                self._stop(call, _FAILED)  # the sink failed it (ArgumentsTooLarge)
            else:
                self._streaming(call)
        elif not call.dropped:
            if call.chars > limit or self._held + size > limit:
                _logger.debug(
                    "tool call %r: argument text waiting for its name outgrew the limits; "
                    "discarded",
                    call.call_id,
                )
                self._held -= call.held
                call.parts = []
                call.held = 0
                call.dropped = True
                return
            parts = call.parts
            parts.append(fragment)
            call.held += size
            self._held += size
            if len(parts) >= _HOLD_PARTS:
                call.parts = ["".join(parts)]

    @staticmethod
    def _streaming(call: _Call) -> None:
        """The table's fast path takes a call's text only while it is ``_PENDING``."""
        if call.status != _PENDING:
            call.streaming = False

    @staticmethod
    def _resume(call: _Call) -> None:
        """A ``_HELD`` call is plain pending again: the fast path may take its text."""
        call.status = _PENDING
        call.streaming = call.open and not call.empty and call.copy is None

    @staticmethod
    def _stop(call: _Call, status: int) -> None:
        """``call`` is no longer pending, without a write (``_HELD``, or failed by the sink)."""
        call.status = status
        call.streaming = False
        if status == _FAILED:
            call.open = False
            call.finished = True

    def _ready(self, call: _Call) -> None:
        """Make a pending call ready: empty text becomes ``{}``; a nameless call fails."""
        if call.status != _PENDING and call.status != _HELD:
            return
        if not call.name:
            self._fail(
                call,
                OpenAIMalformedToolCall(
                    api=self._api,
                    field=self._name_field(),
                    message=f"tool call {call.call_id!r} never received a function name",
                ),
            )
            return
        if not call.started:
            self._start(call)
            if call.status != _PENDING:
                return
        if call.custom:  # a custom tool's free text: one JSON string
            self._append(call, '"' if call.has_text else '""')
            if call.status == _FAILED:
                return
        call.status = _READY
        self._calls.ready(call, self._calls_event())

    def _fail(self, call: _Call, error: OpenAICallFailure) -> None:
        """Fail a call that is not failed yet (a nameless one is started as ``""``)."""
        if call.status == _FAILED:
            return
        if not call.started:
            self._start(call)
            if call.status == _FAILED:
                return
        call.status = _FAILED
        _logger.debug("failing tool call %r: %s", call.call_id, error.message)
        self._calls.finish(call, error)

    def _fail_pending(self, calls: list[_Call], reason: str, choice: int | None) -> None:
        """Fail every call still pending: the turn stopped for ``reason`` before they were
        complete (``choice`` is the Chat choice, ``None`` for Responses)."""
        for call in calls:
            if call.status == _PENDING or call.status == _HELD:
                self._fail(
                    call,
                    OpenAITurnCutOff(
                        api=self._api,
                        reason=reason,
                        choice=choice,
                        message=f"the turn stopped ({reason}) before the arguments of tool "
                        f"call {call.call_id!r} ({call.name}) were complete; its text may be "
                        "truncated",
                    ),
                )

    def _calls_event(self) -> str:
        """The event type that carries fragments, for the table's error values."""
        return RULES[self._rules_name].delta_event

    def _name_field(self) -> str:
        return "function.name" if self._api == "chat.completions" else "name"


_SERVER_RUN: Final = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "tool_search_call",
    }
)
"""Output items the server runs itself: nothing for the client to answer."""


def report_untracked(item: Any, item_type: str) -> None:
    """An output item of the Responses API that looks like a call but is none the adapter tracks:
    logged at DEBUG if the server runs it, else at WARNING (never dropped silently)."""
    if item_type in _SERVER_RUN:
        _logger.debug("ignored a %s item: the server runs it", item_type)
        return
    _logger.warning(
        "ignored a %s output item (call_id %.80r): only function_call and "
        "custom_tool_call items are tracked; answer it yourself",
        item_type,
        _get(item, "call_id"),
    )
