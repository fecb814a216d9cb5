"""The ``toolcall-tracker`` command line: replay and visualise recorded streams.

Commands::

    toolcall-tracker replay FILE [--format FORMAT] [--events] [--json]
    toolcall-tracker validate FILE... [--format FORMAT]

``replay`` reads a recorded stream, feeds every item through the provider's adapter (or,
for the ``seed`` format, applies the protocol events directly) into a
:func:`~toolcall_tracker.tool_call_streaming_state_machine`, and prints a table of the
calls, how the turn ended and the events the machine ignored (with their reasons).
``--events`` adds a timeline: one line per tracker event, with the stream item it came
from and a column per call showing which calls were open at that point. ``--json`` prints
one JSON document instead, for scripts.

``validate`` replays each file quietly and fails if any call ended in ``error``, the turn
did not end ok, or any event was ignored: a check for CI.

Input files (``-`` reads standard input) hold one of:

- a server-sent-event transcript as the providers send it (``event:`` / ``data:`` lines,
  blank lines between events, ``:`` comments); ``data: [DONE]`` ends the stream, as it
  does for the official clients;
- JSON Lines, one item per line;
- a JSON array of items (or a single JSON object, one item).

Every item is a JSON object. ``--format auto`` (the default) recognises the format from
the items' shapes: ``seed`` (the protocol's own ``start``/``delta``/``ready``/``result``/
``error``/``end`` events), ``openai-chat`` (Chat Completions chunks), ``openai-responses``
(Responses API events), ``anthropic`` (Messages stream events), ``gemini``
(``GenerateContentResponse`` chunks) or ``ai-sdk`` (Vercel AI SDK UI message parts).

A ``seed`` stream that does not end with an ``end`` event ends the turn normally when it
is exhausted, as :meth:`ToolCallTracker.consume <toolcall_tracker.ToolCallTracker.consume>`
does; a provider stream ends as its adapter's ``end()`` says.

Exit codes: ``0`` every call succeeded (or is still running) and the turn ended ok
(``validate``: and nothing was ignored); ``1`` a call failed or the turn did not end ok
(``replay`` prints its report anyway; ``validate``: or an event was ignored); ``2`` a usage
error, or an input that cannot be read (missing, not UTF-8 text, not JSON, not a stream of
JSON objects, an invalid ``seed`` event). Input never causes a traceback: problems are
reported on standard error in one line naming the file and the line or item.

Text taken from the input (ids, names, arguments) is printed with control and other
non-printable characters escaped, so a hostile stream cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from . import __version__
from .adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    GeminiAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
)
from .calls import Status, ToolCall
from .errors import InvalidEvent
from .events import Delta, End, Error, Ready, Result, Start, parse_event
from .machine import ToolCallStateMachine, tool_call_streaming_state_machine
from .reducer import IgnoreReason

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "FORMATS", "main"]

EXIT_OK: Final = 0
"""Every call succeeded (or is running) and the turn ended ok."""
EXIT_FAILED: Final = 1
"""A call ended in ``error`` or the turn did not end ok (``validate``: or an event was ignored)."""
EXIT_USAGE: Final = 2
"""A usage error, or an input that cannot be read."""

FORMATS: Final = ("seed", "openai-chat", "openai-responses", "anthropic", "gemini", "ai-sdk")
"""The stream formats ``--format`` accepts (besides ``auto``)."""

_ADAPTERS: Final[dict[str, Callable[[], Any]]] = {
    "openai-chat": OpenAIChatAdapter,
    "openai-responses": OpenAIResponsesAdapter,
    "anthropic": AnthropicAdapter,
    "gemini": GeminiAdapter,
    "ai-sdk": AISDKAdapter,
}

_PROG: Final = "toolcall-tracker"
_MAX_COLUMNS: Final = 12  # call columns in the --events timeline; later calls get none
_ID_WIDTH: Final = 32
_NAME_WIDTH: Final = 24
_SUMMARY_WIDTH: Final = 72
_EVENT_WIDTH: Final = 46
_PREVIEW_WIDTH: Final = 28
_DETECT_ITEMS: Final = 1000  # items --format auto looks at


class _InputError(Exception):
    """The input cannot be replayed; the message says why (exit code 2)."""


# -- reading the input ------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    """One stream item: its 1-based position, the line it starts on (if known), its JSON."""

    number: int
    line: int | None
    value: dict[str, Any]

    def where(self) -> str:
        """``item 3 (line 7)``: where the item is, for messages."""
        return f"item {self.number}" + ("" if self.line is None else f" (line {self.line})")


_NEWLINE: Final = re.compile(r"\r\n|\r|\n")
_SSE_FIELD: Final = re.compile(r"(?:data|event|id|retry)(?::|$)")
_SSE_IGNORED_FIELDS: Final = frozenset({"event", "id", "retry"})


def _read(path: str) -> str:
    """The text of ``path`` (``-``: standard input), decoded as UTF-8."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as file:
                data = file.read()
    except OSError as exc:
        raise _InputError(f"cannot read the file: {exc.strerror or exc}") from None
    except (AttributeError, ValueError) as exc:  # a standard input without bytes
        raise _InputError(f"cannot read standard input: {exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _InputError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "(is this a binary file?)"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise _InputError(f"not a text file: a NUL character at offset {nul}")
    return text


def _reject_constant(name: str) -> Any:
    """``parse_constant`` for :func:`json.loads`: ``NaN`` and ``Infinity`` are not JSON."""
    raise ValueError(f"{name} is not valid JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def _loads(text: str) -> Any:
    """Strict JSON: like :func:`json.loads`, without the ``NaN``/``Infinity`` extension.

    Raises:
        json.JSONDecodeError: not JSON (with a position).
        ValueError: a ``NaN``/``Infinity`` literal, or an integer too long to convert.
        RecursionError: nested too deeply.
    """
    return _DECODER.decode(text)


def _json_problem(exc: Exception) -> str:
    """A short description of why :func:`_loads` refused a text."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0]  # not the advice to call sys.set_int_max_str_digits()


def _load_items(text: str) -> tuple[str, list[_Item]]:
    """Split ``text`` into stream items; returns ``(container, items)``.

    ``container`` is ``"sse"``, ``"jsonl"`` or ``"json"``.
    """
    start = text.lstrip()
    if not start:
        raise _InputError("the file is empty")
    first = start[0]
    if first == "[":
        return "json", _load_document(text)
    if first == "{":
        return _load_json_lines(text)
    lines = _NEWLINE.split(text)
    head = next(line for line in lines if line.strip())
    if head.startswith(":") or _SSE_FIELD.match(head):
        return "sse", _load_sse(lines)
    raise _InputError(
        "not a recorded stream: expected server-sent events (data: lines), JSON Lines or a "
        f"JSON array, but the first line is {_preview_text(head, 40)}"
    )


def _load_document(text: str) -> list[_Item]:
    """Items from a whole-file JSON document: an array of objects, or one object."""
    try:
        value = _loads(text)
    except json.JSONDecodeError as exc:
        raise _InputError(
            f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise _InputError(f"invalid JSON: {_json_problem(exc)}") from None
    values = value if isinstance(value, list) else [value]
    return [_item(number, None, element) for number, element in enumerate(values, 1)]


def _load_json_lines(text: str) -> tuple[str, list[_Item]]:
    """Items from JSON Lines, or from one multi-line JSON object if line 1 is not JSON."""
    items: list[_Item] = []
    for lineno, line in enumerate(_NEWLINE.split(text), 1):
        if not line.strip():
            continue
        try:
            value = _loads(line)
        except json.JSONDecodeError as exc:
            if not items:  # not JSON Lines: maybe one pretty-printed object
                return "json", _load_document(text)
            raise _InputError(
                f"line {lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
            ) from None
        except (ValueError, RecursionError) as exc:
            raise _InputError(f"line {lineno}: invalid JSON: {_json_problem(exc)}") from None
        items.append(_item(len(items) + 1, lineno, value))
    return "jsonl", items


def _load_sse(lines: list[str]) -> list[_Item]:
    """Items from a server-sent-event transcript: each event's ``data`` as JSON."""
    items: list[_Item] = []
    data: list[str] = []
    data_at: list[tuple[int, int]] = []  # per data line: (line number, prefix length)

    def dispatch() -> bool:
        """Turn the buffered ``data`` lines into an item; ``False`` at ``[DONE]``."""
        payload = "\n".join(data)
        at = list(data_at)
        data.clear()
        data_at.clear()
        if not payload.strip():
            return True
        if payload.strip() == "[DONE]":
            return False
        try:
            value = _loads(payload)
        except json.JSONDecodeError as exc:
            lineno, prefix = at[min(exc.lineno, len(at)) - 1]
            column = exc.colno + prefix  # each data line is one line of the payload
            raise _InputError(
                f"line {lineno}, column {column}: invalid JSON in the SSE data: {exc.msg}"
            ) from None
        except (ValueError, RecursionError) as exc:
            raise _InputError(
                f"line {at[0][0]}: invalid JSON in the SSE data: {_json_problem(exc)}"
            ) from None
        items.append(_item(len(items) + 1, at[0][0], value))
        return True

    for lineno, line in enumerate(lines, 1):
        if not line:
            if data and not dispatch():
                return items
            continue
        if line.startswith(":"):  # a comment (keep-alive)
            continue
        name, colon, value = line.partition(":")
        prefix = len(name) + len(colon)
        if value.startswith(" "):
            value = value[1:]
            prefix += 1
        if name == "data":
            data.append(value)
            data_at.append((lineno, prefix))
        elif name not in _SSE_IGNORED_FIELDS:
            raise _InputError(
                f"line {lineno}: not a server-sent-event line: {_preview_text(line, 40)}"
            )
    if data:  # a transcript without the final blank line
        dispatch()
    return items


def _item(number: int, line: int | None, value: Any) -> _Item:
    """An :class:`_Item`, checking that ``value`` is a JSON object."""
    item = _Item(number, line, value)
    if not isinstance(value, dict):
        raise _InputError(
            f"{item.where()}: a stream item must be a JSON object, not "
            f"{_json_kind(value)}: {_preview(value, 40)}"
        )
    return item


def _json_kind(value: object) -> str:
    """The JSON name of a decoded value's type (``an array``, ``a string``...)."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


# -- recognising the format ---------------------------------------------------------------

_SEED_TYPES: Final = frozenset({"start", "delta", "ready", "result", "error", "end"})
_ANTHROPIC_TYPES: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_AI_SDK_PREFIXES: Final = (
    "tool-input-",
    "tool-output-",
    "text-",
    "reasoning-",
    "source-",
    "data-",
    "start-step",
    "finish-step",
)
_AI_SDK_TYPES: Final = frozenset({"finish", "abort", "file", "message-metadata"})
_GEMINI_KEYS: Final = (
    "candidates",
    "promptFeedback",
    "prompt_feedback",
    "usageMetadata",
    "usage_metadata",
)


def _item_format(value: dict[str, Any]) -> str | None:
    """The format one item's shape is distinctive of, or ``None`` if it says nothing."""
    if isinstance(value.get("choices"), list) or value.get("object") == "chat.completion.chunk":
        return "openai-chat"
    if any(key in value for key in _GEMINI_KEYS):
        return "gemini"
    kind = value.get("type")
    if not isinstance(kind, str):
        return None
    if kind.startswith("response."):
        return "openai-responses"
    if kind in _ANTHROPIC_TYPES:
        return "anthropic"
    if kind.startswith(_AI_SDK_PREFIXES) or kind in _AI_SDK_TYPES:
        return "ai-sdk"
    if kind in _SEED_TYPES and _looks_seed(kind, value):
        return "seed"
    return None


def _looks_seed(kind: str, value: dict[str, Any]) -> bool:
    """Whether an item of a seed ``type`` has the seed event's fields.

    Other formats reuse some of these type names (``start`` and ``error`` in the AI SDK,
    ``error`` in the Anthropic and Responses streams) with other fields.
    """
    if kind == "end":
        return set(value) <= {"type", "ok", "reason"}
    if not isinstance(value.get("id"), str):
        return False
    if kind == "start":
        return isinstance(value.get("name"), str)
    if kind == "delta":
        return "argsTextDelta" in value or "args_text_delta" in value
    if kind == "ready":
        return set(value) <= {"type", "id"}
    return kind in value  # result / error


def _detect(items: list[_Item]) -> str:
    """The format most items are distinctive of (``--format auto``).

    Only the first :data:`_DETECT_ITEMS` items are looked at: a stream has one format.
    """
    votes: dict[str, int] = {}
    for item in items[:_DETECT_ITEMS]:
        found = _item_format(item.value)
        if found is not None:
            votes[found] = votes.get(found, 0) + 1
    if not votes:
        raise _InputError(
            "cannot recognise the stream's format from its items; pass --format "
            f"({', '.join(FORMATS)})"
        )
    ranked = sorted(votes.items(), key=lambda vote: -vote[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        raise _InputError(
            f"the items fit {ranked[0][0]} and {ranked[1][0]} equally well; pass --format"
        )
    return ranked[0][0]


# -- replaying ------------------------------------------------------------------------------


@dataclass
class _Step:
    """One tracker event as it was applied (for ``--events``).

    ``status`` is the status, after the event, of the call the event is about (``None``
    for ``end`` or an id that never started); ``cells`` is the timeline row: per call
    column, the call's status after the event.
    """

    item: int | None  # None: the end of the stream (the adapter's end(), or exhaustion)
    event: Any
    ignored: IgnoreReason | None = None
    status: Status | None = None
    cells: tuple[Status | None, ...] = ()


@dataclass
class _Replay:
    """Everything one replay produced."""

    path: str
    container: str
    format: str
    detected: bool
    items: int
    machine: ToolCallStateMachine
    events: int = 0
    ignored: list[tuple[int | None, Any, IgnoreReason]] = field(default_factory=list)
    steps: list[_Step] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)

    @property
    def calls(self) -> list[ToolCall]:
        """The calls, in the order their ``start`` arrived."""
        return self.machine.list()

    @property
    def end(self) -> End:
        """How the turn ended (every replay ends it)."""
        end = self.machine.end
        return End(ok=False, reason="the turn never ended") if end is None else end

    @property
    def failed(self) -> list[ToolCall]:
        """The calls that ended in ``error``."""
        return [call for call in self.calls if call.status == Status.ERROR]

    @property
    def ok(self) -> bool:
        """No call failed and the turn ended ok."""
        return self.end.ok and not self.failed


class _Timeline:
    """Follows the status of each call cheaply while events are applied (``--events``).

    Reading a pending call's snapshot joins its argument text, so doing that after every
    fragment would be quadratic. The status of a call changes only as the transition
    table says, so the machine is asked only after events that can change it: ``ready``,
    ``result`` and ``error`` (after which the snapshot is cached), a fragment that takes
    the text past ``Limits.max_args_chars``, and ``end`` (for the calls still pending).
    """

    def __init__(self, replay: _Replay) -> None:
        self._replay = replay
        self._machine = replay.machine
        self._status: dict[str, Status] = {}
        self._chars: dict[str, int] = {}
        self._limit = replay.machine.limits.max_args_chars

    def record(self, item: int | None, event: Any, ignored: IgnoreReason | None) -> None:
        """Note how ``event`` (already applied) changed the calls, as one timeline row."""
        if ignored is None:
            self._follow(event)
        call_id = getattr(event, "id", None)
        status = self._status.get(call_id) if isinstance(call_id, str) else None
        cells = tuple(self._status.get(column) for column in self._replay.columns)
        self._replay.steps.append(_Step(item, event, ignored, status, cells))

    def _follow(self, event: Any) -> None:
        """Update the statuses after an event that was not ignored."""
        if isinstance(event, End):
            for pending in [key for key, value in self._status.items() if value == "pending"]:
                self._refresh(pending)
            return
        call_id = getattr(event, "id", None)
        if not isinstance(call_id, str):
            return
        if isinstance(event, Start):
            if call_id not in self._status and self._machine.get(call_id) is not None:
                self._status[call_id] = Status.PENDING
                self._chars[call_id] = 0
                if len(self._replay.columns) < _MAX_COLUMNS:
                    self._replay.columns.append(call_id)
        elif isinstance(event, Delta):
            if self._status.get(call_id) == Status.PENDING:
                self._chars[call_id] += len(event.args_text_delta)
                if self._chars[call_id] > self._limit:
                    self._refresh(call_id)
        elif call_id in self._status:
            self._refresh(call_id)

    def _refresh(self, call_id: str) -> None:
        """Ask the machine for the call's status (cheap once it is no longer pending)."""
        call = self._machine.get(call_id)
        if call is not None:
            self._status[call_id] = call.status


def _replay(path: str, fmt: str, *, timeline: bool) -> _Replay:
    """Read ``path`` and replay it through a fresh machine."""
    container, items = _load_items(_read(path))
    detected = fmt == "auto"
    if detected:
        fmt = _detect(items)
    just_ignored: list[tuple[Any, IgnoreReason]] = []

    def on_ignored(event: Any, reason: IgnoreReason) -> None:
        just_ignored.append((event, reason))

    machine = tool_call_streaming_state_machine(on_ignored=on_ignored)
    replay = _Replay(path, container, fmt, detected, len(items), machine)
    follower = _Timeline(replay) if timeline else None

    def apply(item: _Item | None, event: Any) -> None:
        """Apply one event (a model, or a seed item as it was read) and record it."""
        number = None if item is None else item.number
        try:
            machine.apply(event)
        except InvalidEvent as exc:
            where = "at the end of the stream" if item is None else item.where()
            raise _InputError(f"{where}: {_clean(str(exc))}") from None
        replay.events += 1
        ignored: IgnoreReason | None = None
        if just_ignored:
            event, ignored = just_ignored[-1]  # the machine hands over the parsed model
            just_ignored.clear()
            replay.ignored.append((number, event, ignored))
        if follower is not None:
            if isinstance(event, dict):  # a seed item that applied: show it as a model
                event = parse_event(event) or event
            follower.record(number, event, ignored)

    if fmt == "seed":
        for item in items:
            apply(item, item.value)
        if machine.end is None:
            apply(None, End(ok=True, reason="source exhausted"))
        return replay

    adapter = _ADAPTERS[fmt]()
    for item in items:
        try:
            events = adapter.feed(item.value)
        except Exception as exc:  # adapters never raise on JSON objects; be safe anyway
            raise _InputError(
                f"{item.where()}: the {fmt} adapter could not read it "
                f"({type(exc).__name__}: {_clean(str(exc))})"
            ) from None
        for event in events:
            apply(item, event)
    for event in adapter.end():
        apply(None, event)
    return replay


# -- rendering ------------------------------------------------------------------------------


def _clean(text: str) -> str:
    """``text`` with every non-printable character escaped (``\\n``, ``\\x1b``, ``\\u202e``)."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable():
            out.append(char)
        else:
            escaped = repr(char)[1:-1]
            if escaped == char:  # printable to repr (a space separator): escape it anyway
                escaped = f"\\u{ord(char):04x}"
            out.append(escaped)
    return "".join(out)


def _truncate(text: str, width: int) -> str:
    """``text``, cut to ``width`` characters with ``...`` if longer."""
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def _preview_text(text: str, width: int) -> str:
    """A string, quoted and escaped as Python writes it (``'{"q": 1'``), and truncated."""
    return _truncate(_clean(repr(text[: width * 2])), width)


def _compact_json(value: Any) -> str:
    """Compact JSON of ``value`` (models as their JSON), or a ``repr`` if it has none."""
    try:
        plain = _jsonable(value)
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(value)
        except Exception:
            return f"<{type(value).__name__}>"


def _preview(value: Any, width: int) -> str:
    """A one-line, escaped, truncated preview of a JSON-ish value."""
    if isinstance(value, str):
        return _preview_text(value, width)
    return _truncate(_clean(_compact_json(value)), width)


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (pydantic models dumped by alias; the rest as text).

    Raises:
        ValueError: it cannot be made JSON (nested too deeply, say).
    """
    return to_jsonable_python(
        value, by_alias=True, inf_nan_mode="null", serialize_unknown=True, fallback=repr
    )


def _error_summary(error: Any) -> str:
    """``kind: message`` for a structured error value, else its compact JSON."""
    kind = getattr(error, "kind", None)
    message = getattr(error, "message", None)
    if isinstance(error, dict):
        kind, message = error.get("kind"), error.get("message")
    if isinstance(message, str):
        return f"{kind}: {message}" if isinstance(kind, str) else message
    return _compact_json(error)


def _call_summary(call: ToolCall) -> str:
    """What the calls table says about a call: its arguments, result or error."""
    if call.status == Status.ERROR:
        return _clean(_error_summary(call.error))
    if call.status == Status.PENDING:
        return _clean(_compact_json(call.args_text))
    args = _compact_json(call.args)
    if call.status == Status.DONE:
        return _clean(f"{args} -> {_compact_json(call.result)}")
    return _clean(args)


def _count(number: int, noun: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _end_text(end: End) -> str:
    """``ok (tool_use)`` / ``NOT ok (max_tokens)``."""
    reason = "" if end.reason is None else f" ({_clean(end.reason)})"
    return ("ok" if end.ok else "NOT ok") + reason


def _label(call_id: str, columns: dict[str, int]) -> str:
    """``#2`` for a call that has a timeline column, else its (escaped) id."""
    column = columns.get(call_id)
    if column is not None:
        return f"#{column + 1}"
    return _truncate(_clean(call_id), 24)


def _describe(event: Any, columns: dict[str, int]) -> str:
    """One event, in a few words, for the timeline."""
    if isinstance(event, Start):
        return f"start  {_label(event.id, columns)} {_truncate(_clean(event.name), 24)}"
    if isinstance(event, Delta):
        fragment = _preview_text(event.args_text_delta, _PREVIEW_WIDTH)
        return f"delta  {_label(event.id, columns)} +{fragment}"
    if isinstance(event, Ready):
        return f"ready  {_label(event.id, columns)}"
    if isinstance(event, Result):
        return f"result {_label(event.id, columns)} {_preview(event.result, _PREVIEW_WIDTH)}"
    if isinstance(event, Error):
        summary = _truncate(_clean(_error_summary(event.error)), _PREVIEW_WIDTH)
        return f"error  {_label(event.id, columns)} {summary}"
    if isinstance(event, End):
        return f"end    {_end_text(event)}"
    kind = event.get("type") if isinstance(event, dict) else None
    return f"{_preview(kind, 16)} (unknown type)"


def _cell(status: Status | None, before: Status | None, target: bool) -> str:
    """One timeline cell: blank before the call, ``.`` once it has finished.

    The call the event is about is in brackets; a status shows in full while the call is
    open and on the row where it finished.
    """
    if status is None:
        return ""
    finished = status in (Status.DONE, Status.ERROR)
    if target:
        return f"[{status.value}]"
    if finished and before == status:
        return " ."
    return f" {status.value}"


def _render_timeline(replay: _Replay) -> list[str]:
    """The ``--events`` section: a legend of the calls, then one line per tracker event."""
    columns = {call_id: index for index, call_id in enumerate(replay.columns)}
    lines = [
        "timeline: one line per tracker event, numbered by the stream item it came from",
        "(eof: the end of the stream); a column per call, [status]: the call the event is about",
    ]
    calls = {call.id: call for call in replay.calls}
    ids = [_truncate(_clean(call_id), _ID_WIDTH) for call_id in replay.columns]
    id_width = max((len(text) for text in ids), default=0)
    for index, call_id in enumerate(replay.columns):
        name = calls[call_id].name if call_id in calls else "?"
        label = f"#{index + 1}"
        lines.append(
            f"  {label:<4} {ids[index]:<{id_width}}  {_truncate(_clean(name), _NAME_WIDTH)}"
        )
    hidden = len(calls) - len(replay.columns)
    if hidden > 0:
        lines.append(f"  (+{hidden} more calls without a column; they are named by id)")
    rows: list[tuple[str, str, list[str]]] = []
    before: tuple[Status | None, ...] = ()
    for step in replay.steps:
        text = _truncate(_describe(step.event, columns), _EVENT_WIDTH)
        if step.ignored is not None:
            text += f"  (ignored: {step.ignored.value})"
        target = getattr(step.event, "id", None)
        cells = []
        for index, status in enumerate(step.cells):
            prior = before[index] if index < len(before) else None
            cells.append(_cell(status, prior, replay.columns[index] == target))
        before = step.cells
        item = "eof" if step.item is None else str(step.item)
        rows.append((item, text, cells))
    if not rows:
        lines.append("  (no tracker events)")
        return lines
    item_width = max(4, *(len(row[0]) for row in rows))
    text_width = max(5, *(len(row[1]) for row in rows))
    header = ["#" + str(index + 1) for index in range(len(replay.columns))]
    lines.append("")
    lines.append(_join_row(f"{'item':>{item_width}}", f"{'event':<{text_width}}", header))
    for item, text, cells in rows:
        lines.append(_join_row(f"{item:>{item_width}}", f"{text:<{text_width}}", cells))
    return lines


def _join_row(item: str, text: str, cells: Sequence[str]) -> str:
    """One timeline line: item, event, then the call cells (each 10 wide)."""
    line = f"  {item}  {text}  " + "".join(f"{cell:<10}" for cell in cells)
    return line.rstrip()


def _render_calls(replay: _Replay) -> list[str]:
    """The calls table."""
    calls = replay.calls
    if not calls:
        return ["calls: none"]
    rows = [
        (
            _truncate(_clean(call.id), _ID_WIDTH),
            _truncate(_clean(call.name), _NAME_WIDTH),
            call.status.value,
            _truncate(_call_summary(call), _SUMMARY_WIDTH),
        )
        for call in calls
    ]
    header = ("id", "name", "status", "args / error")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(3)]
    lines = [f"calls ({len(calls)}):"]
    for row in [header, *rows]:
        lines.append(
            "  "
            + "  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[3]
        )
    return lines


def _render_ignored(replay: _Replay) -> list[str]:
    """The ignored events, one line each with its reason."""
    if not replay.ignored:
        return ["ignored: none"]
    lines = [f"ignored ({len(replay.ignored)}):"]
    for item, event, reason in replay.ignored:
        where = "at the end" if item is None else f"item {item}"
        lines.append(f"  {where:<10} {reason.value:<17} {_describe(event, {})}")
    return lines


def _render_report(replay: _Replay, *, events: bool) -> list[str]:
    """The whole human-readable ``replay`` report."""
    how = "detected" if replay.detected else "given"
    lines = [
        f"{_clean(replay.path)}: {replay.format} ({how}), {_count(replay.items, 'item')} "
        f"({replay.container}), {_count(replay.events, 'tracker event')}",
        "",
    ]
    if events:
        lines += [*_render_timeline(replay), ""]
    lines += _render_calls(replay)
    lines += ["", f"turn: {_end_text(replay.end)}", ""]
    lines += _render_ignored(replay)
    failed = len(replay.failed)
    verdict = "ok" if replay.ok else "FAILED"
    reasons = []
    if failed:
        reasons.append(f"{_count(failed, 'call')} failed")
    if not replay.end.ok:
        reasons.append("the turn did not end ok")
    lines += ["", f"result: {verdict}" + (f" ({', '.join(reasons)})" if reasons else "")]
    return lines


def _event_json(event: Any) -> Any:
    """An event as plain JSON (its wire shape), whatever it holds."""
    try:
        if isinstance(event, BaseModel):
            return event.model_dump(mode="json", by_alias=True, warnings=False)
        return _jsonable(event)
    except (TypeError, ValueError, RecursionError):
        return {"unserialisable": _truncate(_compact_json(event), 200)}


def _call_json(call: ToolCall) -> Any:
    """A call as ``model_dump(mode="json", by_alias=True)``, with a fallback for odd values."""
    try:
        return call.model_dump(mode="json", by_alias=True)
    except (TypeError, ValueError, RecursionError):
        return {
            "id": call.id,
            "name": call.name,
            "argsText": call.args_text,
            "status": call.status.value,
            "unserialisable": _truncate(_call_summary(call), 200),
        }


def _render_json(replay: _Replay, *, events: bool) -> str:
    """The ``--json`` document."""
    end = replay.end
    document: dict[str, Any] = {
        "file": replay.path,
        "format": replay.format,
        "detected": replay.detected,
        "container": replay.container,
        "items": replay.items,
        "events": replay.events,
        "ok": replay.ok,
        "calls": [_call_json(call) for call in replay.calls],
        "end": {"ok": end.ok, "reason": end.reason},
        "ignored": [
            {"item": item, "reason": reason.value, "event": _event_json(event)}
            for item, event, reason in replay.ignored
        ],
    }
    if events:
        document["timeline"] = [
            {
                "item": step.item,
                "event": _event_json(step.event),
                "ignored": None if step.ignored is None else step.ignored.value,
                "status": None if step.status is None else step.status.value,
            }
            for step in replay.steps
        ]
    try:
        return json.dumps(document, ensure_ascii=True, indent=2, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # a value the fallbacks let through
        document["calls"] = [
            {**_call_json(call), "args": None, "result": None, "error": _call_summary(call)}
            for call in replay.calls
        ]
        document["ignored"] = [
            {"item": item, "reason": reason.value, "event": _describe(event, {})}
            for item, event, reason in replay.ignored
        ]
        document.pop("timeline", None)
        return json.dumps(document, ensure_ascii=True, indent=2, default=str)


# -- commands -------------------------------------------------------------------------------


def _write(stream: IO[str], text: str) -> None:
    """Write ``text``, escaping what the stream's encoding cannot represent."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _fail(path: str, message: str) -> None:
    """Report an unreadable input on standard error."""
    _write(sys.stderr, f"{_PROG}: error: {_clean(path)}: {message}\n")


def _cmd_replay(args: argparse.Namespace) -> int:
    """``replay FILE``: print the report (or the JSON document) of one stream."""
    path: str = args.file
    try:
        replay = _replay(path, args.format, timeline=args.events)
    except _InputError as exc:
        _fail(path, str(exc))
        return EXIT_USAGE
    if args.json:
        _write(sys.stdout, _render_json(replay, events=args.events) + "\n")
    else:
        _write(sys.stdout, "\n".join(_render_report(replay, events=args.events)) + "\n")
    return EXIT_OK if replay.ok else EXIT_FAILED


def _cmd_validate(args: argparse.Namespace) -> int:
    """``validate FILE...``: one line per file (and per problem); the worst exit code."""
    worst = EXIT_OK
    for path in args.files:
        try:
            replay = _replay(path, args.format, timeline=False)
        except _InputError as exc:
            _fail(path, str(exc))
            worst = EXIT_USAGE
            continue
        problems = [
            f"call {_clean(call.id)} ({_clean(call.name)}) failed: "
            f"{_truncate(_call_summary(call), _SUMMARY_WIDTH)}"
            for call in replay.failed
        ]
        if not replay.end.ok:
            problems.append(f"the turn did not end ok: {_end_text(replay.end)}")
        problems += [
            f"{'at the end' if item is None else f'item {item}'}: ignored "
            f"({reason.value}): {_describe(event, {})}"
            for item, event, reason in replay.ignored
        ]
        calls = len(replay.calls)
        if problems:
            lines = [f"FAIL {_clean(path)}: {replay.format}, {_count(len(problems), 'problem')}"]
            lines += [f"  {problem}" for problem in problems]
            worst = max(worst, EXIT_FAILED)
        else:
            summary = f"{replay.format}, {_count(calls, 'call')}, turn ended ok"
            lines = [f"ok   {_clean(path)}: {summary}"]
        _write(sys.stdout, "\n".join(lines) + "\n")
    return worst


def _parser() -> argparse.ArgumentParser:
    """The argument parser of the command line."""
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Replay and visualise recorded LLM tool-call streams.",
        epilog="Exit codes: 0 ok; 1 a call failed or the turn did not end ok (validate: or "
        "an event was ignored); 2 usage error or unreadable input.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    formats = ["auto", *FORMATS]
    format_help = "the stream's format (default: auto, recognised from the items)"

    replay = commands.add_parser(
        "replay",
        help="replay a recorded stream and print its calls",
        description="Replay a recorded stream (SSE transcript, JSON Lines or a JSON array) "
        "through the state machine and print the calls, the turn's end and the ignored "
        "events.",
    )
    replay.add_argument("file", metavar="FILE", help="the recorded stream ('-': stdin)")
    replay.add_argument("--format", choices=formats, default="auto", help=format_help)
    replay.add_argument(
        "--events",
        action="store_true",
        help="also print a timeline: each tracker event, its item, and the calls' states",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON document instead")
    replay.set_defaults(handler=_cmd_replay)

    validate = commands.add_parser(
        "validate",
        help="fail if a call failed, the turn did not end ok or an event was ignored",
        description="Replay each stream and exit 1 if any call ended in error, a turn did "
        "not end ok or any event was ignored (2 if a file cannot be read).",
    )
    validate.add_argument("files", metavar="FILE", nargs="+", help="recorded streams")
    validate.add_argument("--format", choices=formats, default="auto", help=format_help)
    validate.set_defaults(handler=_cmd_validate)
    return parser


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    See the module documentation for the commands and the exit codes. Never raises for
    bad input or bad arguments: it reports them on standard error and returns 2.
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # e.g. piped into `head`
        _silence_stdout()
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
