"""The Gemini adapter: :class:`GeminiAdapter`, for google-genai ``GenerateContentResponse`` chunks.

Feed it the chunks of ``client.aio.models.generate_content_stream(...)`` (typed
``GenerateContentResponse`` objects) or the plain dicts decoded from the REST
``streamGenerateContent`` JSON (camelCase keys) or from ``chunk.model_dump()`` (snake_case)::

    stream = await client.aio.models.generate_content_stream(model=..., contents=..., config=...)
    await tracker.consume(adapt(stream, GeminiAdapter()))

Whole calls. The Gemini API sends each function call whole, in one part
(``candidates[i].content.parts[j].function_call`` with ``name``, ``args`` as an object, and
an ``id`` that may be missing). Each becomes ``Start``, one ``Delta`` with the compact JSON
text of ``args`` (``{}`` when ``args`` is missing or empty) and ``Ready``, in the order the
parts arrive. A chunk may hold several calls, and each candidate has its own.

Streamed arguments (Vertex AI with ``stream_function_call_arguments``). A call then spans
several chunks: the first part has ``name`` and ``will_continue: true``; the next ones have
no name and carry ``partial_args``, each a value (``string_value``, ``number_value``,
``bool_value`` or ``null_value``) at a JSON path (``$.location``, ``$.a.b[0]``); a string
whose ``will_continue`` is true goes on in the next partial arg for the same path; the
part whose ``will_continue`` is not true (often an empty ``function_call: {}``) ends it.
The adapter writes the argument text as the values arrive (``{"location":"Bos`` ...
``ton"}``) and makes the call ready when it stops continuing. Paths must arrive in document
order (they do: the model writes left to right); a path that goes back into an object or
array already left, skips an array index, repeats a key, or does not parse fails the call
with a :class:`GeminiMalformedCall`. A continuation part is recognised by having no name
(or the open call's id); a part naming a new function while a call is still open starts
the new call and fails the open one (``IncompleteArguments``). A candidate that finishes
while its call is open fails that call the same way, with the finish reason.

Ids. A call's tracker id is its ``function_call.id`` when present (and no longer than
``Limits.max_id_chars``; a name longer than ``max_name_chars`` is cut to a name no tool
can have, ``...(cut)``). Otherwise it is
``gemini-call-<candidate>-<n>``: ``<candidate>`` the candidate's ``index`` (its position
in ``candidates`` when absent), ``<n>`` counting that candidate's calls from 0 in arrival
order; if the stream already used that id, ``-2``, ``-3``... is appended. So replaying a
stream gives the same ids, and no two calls share one. A part repeating an id the stream
already used is treated as a retransmission and ignored.

End of the turn: at the end of the stream, ``End(ok=True, reason="STOP")`` if every
candidate finished with ``STOP``; otherwise ``End(ok=False)`` with the first other reason
(``MAX_TOKENS``, ``SAFETY``, ``MALFORMED_FUNCTION_CALL``...), ``"prompt blocked:
<reason>"`` when ``prompt_feedback.block_reason`` is set, or ``"stream ended without a
finish_reason"``.

Text, thought and code parts, and server-side ``tool_call`` parts, are ignored. Nothing
raises out of :meth:`GeminiAdapter.feed`: a part that cannot be read is skipped (and
logged at DEBUG on ``toolcall_tracker.adapters``); a call whose content is malformed fails
with an ``Error`` event. One adapter per model turn.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final, Literal

from ...failures import CallFailure, IncompleteArguments, MalformedStreamItem
from ...limits import Limits
from .._calls import RULES, AdapterCall, AdapterCallTable
from .._common import (
    READ_ERRORS,
    _get,
    _json_written,
    _short,
    logger,
)
from .._protocol import SinkAdapter

__all__ = ["GeminiAdapter", "GeminiMalformedCall"]


class GeminiMalformedCall(MalformedStreamItem):
    """A function call's parts could not be turned into argument JSON.

    ``json_path`` is the offending ``partial_args`` path, when one is to blame.
    """

    kind: Literal["gemini_malformed_call"] = "gemini_malformed_call"
    json_path: str | None = None


class _MalformedArgs(Exception):
    def __init__(self, message: str, json_path: str | None = None) -> None:
        super().__init__(message)
        self.json_path = json_path


_Segment = str | int

_PATH_TOKEN: Final = re.compile(
    r"\.([^\W\d][\w]*)"  # .name
    r"|\[(\d+)\]"  # [0]
    r"|\['((?:[^'\\]|\\.)*)'\]"  # ['name']
    r'|\["((?:[^"\\]|\\.)*)"\]'  # ["name"]
)


def _parse_path(path: Any) -> tuple[_Segment, ...]:
    """``"$.a.b[0]['c d']"`` -> ``("a", "b", 0, "c d")``; raises ``_MalformedArgs``."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise _MalformedArgs(f"a partial arg's json_path must start with '$': {_short(path)}")
    segments: list[_Segment] = []
    pos = 1
    while pos < len(path):
        match = _PATH_TOKEN.match(path, pos)
        if match is None:
            raise _MalformedArgs(f"cannot parse json_path {path!r} at offset {pos}", path)
        name, index, single, double = match.groups()
        if name is not None:
            segments.append(name)
        elif index is not None:
            segments.append(int(index))
        else:
            quoted = (
                single.replace("\\'", "'").replace('"', '\\"') if single is not None else double
            )
            try:
                segments.append(json.loads('"' + quoted + '"'))
            except ValueError:  # a bad escape in a quoted key
                raise _MalformedArgs(
                    f"cannot parse json_path {path!r} at offset {pos}: bad quoted key", path
                ) from None
        pos = match.end()
    return tuple(segments)


class _Frame:
    __slots__ = ("count", "is_array", "keys")

    def __init__(self, is_array: bool) -> None:
        self.is_array = is_array
        self.count = 0
        self.keys: set[str] = set()


def _escape(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


class _ArgsWriter:
    """Writes argument JSON text from ``partial_args`` as they arrive, in document order."""

    __slots__ = ("_open_string", "_path", "_stack", "whole", "wrote")

    def __init__(self) -> None:
        self._stack: list[_Frame] = []
        self._path: list[_Segment] = []
        self._open_string: str | None = None
        self.wrote = False  # any text emitted
        self.whole = False  # the arguments came whole (``args``), not as partial args

    def add(self, part: Any) -> str:
        """The text one partial arg adds (possibly empty); raises ``_MalformedArgs``."""
        raw_path = _get(part, "json_path", "jsonPath")
        continues = _get(part, "will_continue", "willContinue") is True
        kind, value = _value(part, raw_path)
        out: list[str] = []
        if self._open_string is not None:
            if raw_path == self._open_string:
                if kind == "string":
                    out.append(_escape(value))
                elif kind is not None:
                    raise _MalformedArgs(f"a {kind} value continues the string at {raw_path}")
                if not continues:
                    out.append('"')
                    self._open_string = None
                return self._emit(out)
            out.append('"')  # the string ended without saying so: close it
            self._open_string = None
        if kind is None:
            return self._emit(out)
        segments = _parse_path(raw_path)
        if not segments:
            raise _MalformedArgs("a partial arg at the root '$': the arguments are an object")
        if not self._stack:
            if isinstance(segments[0], int):
                raise _MalformedArgs(f"{raw_path}: the arguments are an object, not an array")
            self._stack.append(_Frame(False))
            out.append("{")
        containers = segments[:-1]
        common = 0
        path = self._path
        while (
            common < len(containers) and common < len(path) and containers[common] == path[common]
        ):
            common += 1
        while len(path) > common:
            path.pop()
            out.append("]" if self._stack.pop().is_array else "}")
        for depth in range(common, len(containers)):
            out.append(self._member(containers[depth], raw_path))
            child_is_array = isinstance(segments[depth + 1], int)
            out.append("[" if child_is_array else "{")
            self._stack.append(_Frame(child_is_array))
            path.append(containers[depth])
        out.append(self._member(segments[-1], raw_path))
        if kind == "string":
            out.append('"' + _escape(value))
            if continues:
                self._open_string = raw_path
            else:
                out.append('"')
        else:
            out.append(value)
        return self._emit(out)

    def close(self) -> str:
        """The text that completes the arguments (``{}`` if nothing was written)."""
        if not self._stack:
            return "" if self.wrote else "{}"
        out = ['"'] if self._open_string is not None else []
        self._open_string = None
        while self._stack:
            out.append("]" if self._stack.pop().is_array else "}")
        self._path.clear()
        return "".join(out)

    def _member(self, segment: _Segment, raw_path: Any) -> str:
        frame = self._stack[-1]
        if frame.is_array:
            if not isinstance(segment, int):
                raise _MalformedArgs(f"{raw_path}: key {segment!r} inside an array", raw_path)
            if segment != frame.count:
                raise _MalformedArgs(
                    f"{raw_path}: index {segment} out of order (expected {frame.count})", raw_path
                )
            key = ""
        else:
            if not isinstance(segment, str):
                raise _MalformedArgs(f"{raw_path}: index {segment} inside an object", raw_path)
            if segment in frame.keys:
                raise _MalformedArgs(
                    f"{raw_path}: key {segment!r} was already written (paths out of order)",
                    raw_path,
                )
            frame.keys.add(segment)
            key = json.dumps(segment, ensure_ascii=False) + ":"
        comma = "," if frame.count else ""
        frame.count += 1
        return comma + key

    def _emit(self, out: list[str]) -> str:
        text = "".join(out)
        if text:
            self.wrote = True
        return text


def _value(part: Any, raw_path: Any) -> tuple[str | None, Any]:
    """``(kind, value)`` of a partial arg: the string content, or the JSON text of a scalar."""
    text = _get(part, "string_value", "stringValue")
    if text is not None:
        if not isinstance(text, str):
            raise _MalformedArgs(f"{raw_path}: string_value is not a string", raw_path)
        return "string", text
    number = _get(part, "number_value", "numberValue")
    if number is not None:
        if type(number) is bool or not isinstance(number, int | float):
            raise _MalformedArgs(f"{raw_path}: number_value is not a number", raw_path)
        if isinstance(number, int):
            return "number", str(number)
        if not math.isfinite(number):
            raise _MalformedArgs(f"{raw_path}: number_value {number} is not valid JSON", raw_path)
        if number.is_integer() and abs(number) < 2**53:
            return "number", str(int(number))
        return "number", repr(number)
    flag = _get(part, "bool_value", "boolValue")
    if flag is not None:
        if not isinstance(flag, bool):
            raise _MalformedArgs(f"{raw_path}: bool_value is not a boolean", raw_path)
        return "bool", "true" if flag else "false"
    if _get(part, "null_value", "nullValue") is not None:
        return "null", "null"
    return None, None


class _Open:
    """A candidate's call still receiving parts: its record, writer and size so far."""

    __slots__ = ("record", "size", "writer")

    def __init__(self, record: AdapterCall) -> None:
        self.record = record
        self.size = 0  # characters written; past Limits.max_args_chars the sink failed it
        self.writer: _ArgsWriter | None = _ArgsWriter()


class _Candidate:
    __slots__ = ("count", "finish", "open")

    def __init__(self) -> None:
        self.open: _Open | None = None
        self.count = 0
        self.finish: str | None = None


def _reason(value: Any) -> str | None:
    value = getattr(value, "value", value)  # the typed FinishReason enum
    return value if isinstance(value, str) and value else None


class GeminiAdapter(SinkAdapter):
    """Translate google-genai ``GenerateContentResponse`` chunks into tracker events.

    See the module documentation for the rules (whole calls, streamed ``partial_args``,
    synthetic ids, how the turn ends). ``feed`` never raises.

    Args:
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    def __init__(self, *, limits: Limits | None = None) -> None:
        super().__init__(limits=limits)
        self._candidates: dict[int, _Candidate] = {}
        self._table = self._calls = AdapterCallTable(RULES["gemini"], _unused_failure, self._sink)
        self._blocked: str | None = None

    def _translate(self, item: Any) -> None:
        """Write the events one response chunk implies (possibly none). Only what the sink
        raises propagates; a part that cannot be read is logged and skipped."""
        if self._calls.ended:
            return
        try:
            feedback = _get(item, "prompt_feedback", "promptFeedback")
            if feedback is not None:
                blocked = _reason(_get(feedback, "block_reason", "blockReason"))
                if blocked is not None:
                    self._blocked = blocked
            candidates = _get(item, "candidates")
            if not candidates:
                return
            for position, candidate in enumerate(candidates):
                index = _get(candidate, "index")
                if type(index) is not int:
                    index = position
                state = self._candidates.get(index)
                if state is None:
                    state = self._candidates[index] = _Candidate()
                parts = _get(_get(candidate, "content"), "parts")
                for part in parts or ():
                    try:
                        call = _get(part, "function_call", "functionCall")
                        if call is not None:
                            self._on_call(index, state, call)
                    except READ_ERRORS:
                        logger.debug("gemini: skipped a part that could not be read", exc_info=True)
                reason = _reason(_get(candidate, "finish_reason", "finishReason"))
                if reason is not None:
                    state.finish = reason
                    if state.open is not None:
                        self._cut(state, reason)
        except READ_ERRORS:
            logger.debug(
                "gemini: skipped the rest of a chunk that could not be read", exc_info=True
            )

    def _finish_stream(self) -> None:
        """The turn's ``End`` (see the module documentation for ``ok`` and ``reason``)."""
        calls = self._calls
        if calls.ended:
            return
        if self._blocked is not None:
            calls.end(False, f"prompt blocked: {self._blocked}")
            return
        reasons = [state.finish for state in self._candidates.values()]
        finished = [reason for reason in reasons if reason is not None]
        if not reasons or len(finished) < len(reasons):
            calls.end(False, "stream ended without a finish_reason")
            return
        for reason in finished:
            if reason != "STOP":
                calls.end(False, reason)
                return
        calls.end(True, "STOP")

    # -- internals --------------------------------------------------------------------

    def _on_call(self, index: int, state: _Candidate, call: Any) -> None:
        name = _get(call, "name")
        given_id = _get(call, "id")
        if not isinstance(given_id, str) or not given_id:
            given_id = None
        current = state.open
        if current is not None:
            if not name or given_id == current.record.call_id:
                self._extend(state, current, call)
                return
            self._cut(state, None, why=f"a call to {name!r} began first")
        if not isinstance(name, str) or not name:
            if name is not None or _get(call, "partial_args", "partialArgs") or _get(call, "args"):
                logger.debug("gemini: ignored a function_call without a name: %.200r", call)
            return
        record = self._calls.start((index, state.count), given_id, name, "function_call")
        if record is None:  # a repeated id (a retransmission), or no id fits the limits
            return
        state.count += 1
        state.open = opened = _Open(record)
        self._extend(state, opened, call)

    def _extend(self, state: _Candidate, call: _Open, part: Any) -> None:
        writer = call.writer
        if writer is None:  # too large: the sink failed it; swallow the rest of the call
            if _get(part, "will_continue", "willContinue") is not True:
                state.open = None
            return
        calls = self._calls
        record = call.record
        limit = calls.limits.max_args_chars
        try:
            partials = _get(part, "partial_args", "partialArgs")
            if partials:
                if writer.whole:
                    raise _MalformedArgs("partial_args after the arguments came whole")
                for partial in partials:
                    text = writer.add(partial)
                    if text:
                        calls.append(record, text, "partial_args")
                        call.size += len(text)
                        if call.size > limit:
                            call.writer = None  # the sink failed it (ArgumentsTooLarge)
                            self._extend(state, call, part)
                            return
            args = _get(part, "args")
            if args is not None and not writer.wrote:
                whole = _json_written(args)
                if whole is None:
                    raise _MalformedArgs(f"args cannot be written as JSON: {_short(args)}")
                writer.whole = writer.wrote = True
                calls.append_parsed(record, whole[0], whole[1], "args")
            if _get(part, "will_continue", "willContinue") is True:
                return
            state.open = None
            calls.append(record, "" if writer.whole else writer.close(), "partial_args")
            calls.close(record.key, "function_call")
        except _MalformedArgs as exc:
            state.open = None
            failure = GeminiMalformedCall(
                message=f"call {record.call_id!r} ({record.name}): {exc}", json_path=exc.json_path
            )
            calls.fail(record, str(exc), "function_call", failure)

    def _cut(self, state: _Candidate, reason: str | None, why: str = "") -> None:
        call = state.open
        if call is None:
            return
        state.open = None
        record = call.record
        cause = why or f"the candidate finished ({reason})"
        failure = IncompleteArguments(
            message=f"the arguments of call {record.call_id!r} ({record.name}) never "
            f"completed: {cause}",
            reason=reason,
        )
        self._calls.fail(record, cause, "function_call", failure)


def _unused_failure(record: AdapterCall, why: str, event_type: str) -> CallFailure:
    """Gemini fails calls only with the values it builds itself (malformed partial args,
    incomplete arguments); a name is checked before a call starts."""
    return GeminiMalformedCall(message=f"call {record.call_id!r} ({record.name}): {why}")
