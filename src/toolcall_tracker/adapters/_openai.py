"""What the two OpenAI adapters share (private): error values, item access, call records.

- The error values (:class:`OpenAICallFailure` and its subclasses), re-exported by
  :mod:`~toolcall_tracker.adapters.openai_chat`, :mod:`~toolcall_tracker.adapters.openai_responses`
  and the :mod:`~toolcall_tracker.adapters.openai` compatibility module.
- :func:`_get` / :func:`_check_item`: field access on SDK objects and dicts.
- :class:`_Call`: the adapter's record of one call. A Responses call compares its final
  arguments with the text the sink already holds (``args_text``, on a machine or tracker);
  only written into a sink that holds no text does it keep a copy, within the limits.
- :class:`_Emitter`: starting, appending, readying and failing calls through the sink,
  under the sink's limits: a call whose name has not arrived holds its text until it does,
  at most ``Limits.max_args_chars`` characters for all such calls together, and at most
  ``Limits.max_calls`` such calls.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias

from pydantic import BaseModel

from .._json import _ArgumentsError, parse_json
from ..errors import CallFailure
from ..limits import Limits
from ._base import SinkAdapter
from ._common import IdMinter, _tool_name

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


def _keep(call: _Call, fragment: str, limit: int) -> None:
    """Keep ``fragment`` in ``call.text`` (which must not be ``None``); the text is dropped
    once it outgrows ``limit`` (the sink fails such a call). The OpenAI Chat hot path
    inlines this."""
    text = call.text
    assert text is not None
    call.kept += text.write(fragment)
    if call.kept > limit:
        call.text = None


def _complete_json(text: str) -> bool:
    """Whether ``text`` is one complete JSON value that no more text could extend: it
    parses (by the machine's rules) and is not a bare number (``12`` may still become
    ``123``)."""
    try:
        value = parse_json(text)
    except _ArgumentsError:
        return False
    return type(value) is not int and type(value) is not float


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


class _Call:
    """The adapter's record of one call.

    ``started`` says whether ``Start`` was written; until then (the name has not arrived)
    fragments wait in ``parts`` (``held`` characters), unless they outgrew the limits
    (``dropped``). ``size`` counts every character of the call's text. ``custom``
    (Responses): a custom tool's call, whose free-text input is written as a JSON string.
    ``has_text``: any non-empty fragment arrived. ``text``: the call's text so far,
    ``kept`` characters, at most ``Limits.max_args_chars`` (``None`` once dropped or
    released); kept by Chat for the latest call of a choice that may make calls ready
    early (read once, when the next call starts), and by Responses when its sink holds no
    text (read when final arguments arrive).
    """

    __slots__ = (
        "custom",
        "dropped",
        "has_text",
        "held",
        "id",
        "kept",
        "name",
        "parts",
        "scan",
        "size",
        "started",
        "status",
        "text",
        "waiting",
    )

    def __init__(self, call_id: str, name: str | None, keep: bool) -> None:
        self.id = call_id
        self.name = name
        self.started = False
        self.status = _PENDING
        self.has_text = False
        self.parts: list[str] = []
        self.held = 0
        self.size = 0
        self.dropped = False
        self.waiting = False  # counted among the calls waiting for a name
        self.custom = False
        self.scan: _JsonEnd | None = None  # (Chat) set for a call with neither id nor index
        self.text: io.StringIO | None = io.StringIO() if keep else None
        self.kept = 0


class _Emitter(SinkAdapter):
    """What both adapters share: unique ids, starting, appending, readying, failing."""

    _api: _API
    _copies_text = False
    """(Responses) ``_Call.text`` is a copy of the call's text, kept (for a sink that holds
    none) to compare with final arguments that may still arrive after ``ready``."""

    def __init__(self, *, limits: Limits | None = None) -> None:
        super().__init__(limits=limits)
        self._ids = IdMinter("_")
        self._ended = False
        self._waiting = 0  # calls holding text until their name arrives
        self._held = 0  # the characters they hold, all together

    def _unique(self, candidate: str) -> str | None:
        """``candidate``, or ``candidate_2``, ``_3``... if another call already has it;
        ``None`` (logged at WARNING) when no such id fits ``Limits.max_id_chars``."""
        minted = self._ids.mint(candidate, self._limits)
        if minted is None:
            _logger.warning(
                "ignored a tool call: no id fits Limits.max_id_chars (%d)",
                self._limits.max_id_chars,
            )
        return minted

    def _admit(self, call: _Call) -> bool:
        """Count a call created without a name; ``False`` if ``Limits.max_calls`` such
        calls already wait (the call is then not tracked)."""
        if call.name:
            return True
        if self._waiting >= self._limits.max_calls:
            _logger.debug("ignored tool call %r: too many calls wait for their name", call.id)
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
        sink = self._sink
        sink.write_start(call.id, _tool_name(call.name or "", self._limits.max_name_chars))
        if call.dropped:
            self._fail(
                call,
                OpenAIMalformedToolCall(
                    api=self._api,
                    field=self._name_field(),
                    message=f"tool call {call.id!r} received {call.size} characters of "
                    "argument text before its name, more than Limits.max_args_chars "
                    f"({self._limits.max_args_chars}) allows to wait; the text was discarded",
                ),
            )
        elif call.parts:
            text = "".join(call.parts)
            self._held -= call.held
            call.parts = []
            call.held = 0
            sink.write_delta(call.id, text)

    def _append(self, call: _Call, fragment: str) -> None:
        """Append a non-empty fragment to a pending call."""
        call.has_text = True
        size = len(fragment)
        call.size += size
        scan = call.scan
        if scan is not None:
            scan.add(fragment)
        if call.text is not None:
            _keep(call, fragment, self._limits.max_args_chars)
        limit = self._limits.max_args_chars
        if call.started:
            self._sink.write_delta(call.id, fragment)
            if call.size > limit:
                call.status = _FAILED  # the sink failed it (ArgumentsTooLarge)
        elif not call.dropped:
            if call.size > limit or self._held + size > limit:
                _logger.debug(
                    "tool call %r: argument text waiting for its name outgrew the limits; "
                    "discarded",
                    call.id,
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

    def _ready(self, call: _Call) -> None:
        """Make a pending call ready: empty text becomes ``{}``; a nameless call fails."""
        if call.status != _PENDING and call.status != _HELD:
            return
        if not self._copies_text:
            call.text = None  # (Chat) read only while the call may become ready early
        if not call.name:
            self._fail(
                call,
                OpenAIMalformedToolCall(
                    api=self._api,
                    field=self._name_field(),
                    message=f"tool call {call.id!r} never received a function name",
                ),
            )
            return
        if not call.started:
            self._start(call)
            if call.status != _PENDING:
                return
        if call.custom:  # a custom tool's free text: one JSON string
            self._append(call, '"' if call.has_text else '""')
        elif not call.has_text:
            self._append(call, "{}")
        call.status = _READY
        self._sink.write_ready(call.id)

    def _fail(self, call: _Call, error: OpenAICallFailure) -> None:
        """Fail a call that is not failed yet (a nameless one is started as ``""``)."""
        if call.status == _FAILED:
            return
        call.text = None
        if not call.started:
            self._start(call)
            if call.status == _FAILED:
                return
        call.status = _FAILED
        _logger.debug("failing tool call %r: %s", call.id, error.message)
        self._sink.write_error(call.id, error)

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
                        f"call {call.id!r} ({call.name}) were complete; its text may be "
                        "truncated",
                    ),
                )

    def _name_field(self) -> str:
        return "function.name" if self._api == "chat.completions" else "name"
