"""Text helpers shared by the command line's modules: escaping, truncation, previews.

Everything taken from the input (ids, names, arguments, reasons) goes through
:func:`clean` before it is printed, so a hostile stream cannot drive the terminal.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from typing import IO, Any, Final

from pydantic_core import to_jsonable_python

from ..calls import Status, ToolCall
from ..events import Delta, End, Error, Ready, Result, Start

PREVIEW_WIDTH: Final = 28
"""Characters of a value shown in a timeline or ignored-event line."""


def clean(text: str) -> str:
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


def truncate(text: str, width: int) -> str:
    """``text``, cut to ``width`` characters with ``...`` if longer."""
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def preview_text(text: str, width: int) -> str:
    """A string, quoted and escaped as Python writes it (``'{"q": 1'``), and truncated."""
    return truncate(clean(repr(text[: width * 2])), width)


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (pydantic models dumped by alias; the rest as text).

    Raises:
        ValueError: it cannot be made JSON (nested too deeply, say).
    """
    return to_jsonable_python(
        value, by_alias=True, inf_nan_mode="null", serialize_unknown=True, fallback=repr
    )


def compact_json(value: Any) -> str:
    """Compact JSON of ``value`` (models as their JSON), or a ``repr`` if it has none."""
    try:
        plain = jsonable(value)
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(value)
        except Exception:
            return f"<{type(value).__name__}>"


def preview(value: Any, width: int) -> str:
    """A one-line, escaped, truncated preview of a JSON-ish value."""
    if isinstance(value, str):
        return preview_text(value, width)
    return truncate(clean(compact_json(value)), width)


def json_kind(value: object) -> str:
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


def error_summary(error: Any) -> str:
    """``kind: message`` for a structured error value, else its compact JSON."""
    kind = getattr(error, "kind", None)
    message = getattr(error, "message", None)
    if isinstance(error, dict):
        kind, message = error.get("kind"), error.get("message")
    if isinstance(message, str):
        return f"{kind}: {message}" if isinstance(kind, str) else message
    return compact_json(error)


def call_summary(call: ToolCall) -> str:
    """What the calls table says about a call: its arguments, result or error."""
    if call.status == Status.ERROR:
        return clean(error_summary(call.error))
    if call.status == Status.PENDING:
        return clean(compact_json(call.args_text))
    args = compact_json(call.args)
    if call.status == Status.DONE:
        return clean(f"{args} -> {compact_json(call.result)}")
    return clean(args)


def count(number: int, noun: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def end_text(end: End) -> str:
    """``ok (tool_use)`` / ``NOT ok (max_tokens)``."""
    reason = "" if end.reason is None else f" ({clean(end.reason)})"
    return ("ok" if end.ok else "NOT ok") + reason


def label(call_id: str, columns: dict[str, int]) -> str:
    """``#2`` for a call that has a timeline column, else its (escaped) id."""
    column = columns.get(call_id)
    if column is not None:
        return f"#{column + 1}"
    return truncate(clean(call_id), 24)


def describe(event: Any, columns: dict[str, int]) -> str:
    """One event, in a few words (timeline rows, ignored events, ``validate`` problems)."""
    if isinstance(event, Start):
        return f"start  {label(event.id, columns)} {truncate(clean(event.name), 24)}"
    if isinstance(event, Delta):
        fragment = preview_text(event.args_text_delta, PREVIEW_WIDTH)
        return f"delta  {label(event.id, columns)} +{fragment}"
    if isinstance(event, Ready):
        return f"ready  {label(event.id, columns)}"
    if isinstance(event, Result):
        return f"result {label(event.id, columns)} {preview(event.result, PREVIEW_WIDTH)}"
    if isinstance(event, Error):
        summary = truncate(clean(error_summary(event.error)), PREVIEW_WIDTH)
        return f"error  {label(event.id, columns)} {summary}"
    if isinstance(event, End):
        return f"end    {end_text(event)}"
    kind = event.get("type") if isinstance(event, dict) else None
    return f"{preview(kind, 16)} (unknown type)"


def where(item: int | None) -> str:
    """``item 5``, or ``at the end`` for an event from the end of the stream."""
    return "at the end" if item is None else f"item {item}"


def write(stream: IO[str], text: str) -> None:
    """Write ``text``, escaping what the stream's encoding cannot represent."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


MIN_WIDTH: Final = 40
"""The narrowest output the command line lays out for."""
MAX_ERROR_CHARS: Final = 600
"""The most of an error message shown (cut at a word, with ``...``)."""


def terminal_width() -> int:
    """The output's width: ``COLUMNS``, else the terminal's, else 80 (at least 40)."""
    return max(MIN_WIDTH, shutil.get_terminal_size((80, 24)).columns)


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` wrapped at words to ``width`` (``first`` / ``rest``: the lines' indents).

    Only a word longer than a whole line is broken.
    """
    return textwrap.wrap(
        text,
        max(width, len(first) + 10, len(rest or first) + 10),
        initial_indent=first,
        subsequent_indent=first if rest is None else rest,
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [first.rstrip()]


def bounded(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text``, or its first ``limit`` characters cut at a word, with ``...``."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit)
    return text[: cut if cut > 0 else limit].rstrip() + " ..."


def parse_error_position(call: ToolCall) -> int | None:
    """The offset in ``call.args_text`` where its arguments stopped parsing, if they did."""
    error = call.error
    if isinstance(error, dict):
        kind, position = error.get("kind"), error.get("position")
    else:
        kind, position = getattr(error, "kind", None), getattr(error, "position", None)
    if kind != "invalid_arguments" or isinstance(position, bool) or not isinstance(position, int):
        return None
    if not 0 <= position <= len(call.args_text):
        return None
    return position


def excerpt(text: str, position: int, width: int) -> tuple[str, int]:
    """The line of ``text`` around ``position``, escaped and at most ``width`` wide.

    Returns the excerpt and the column (0-based, in the excerpt) of ``position``; ``...``
    marks text left out on either side.
    """
    width = max(width, 20)
    start = text.rfind("\n", 0, position) + 1
    stop = text.find("\n", position)
    stop = len(text) if stop < 0 else stop
    # Escaped text is never more than 10 characters per character: bound the work first.
    before = clean(text[max(start, position - width * 10) : position])
    after = clean(text[position : min(stop, position + width * 10)])
    room_before = max(width // 2, width - len(after) - 3)
    if len(before) > room_before:
        before = "..." + before[len(before) - room_before + 3 :]
    room_after = width - len(before)
    if len(after) > room_after:
        after = after[: max(room_after - 3, 1)] + "..."
    return before + after, len(before)


def summary_text(call: ToolCall, width: int) -> str:
    """A call's arguments and result (a preview, cut to ``width``), or its whole error."""
    if call.status == Status.ERROR:
        return bounded(clean(error_summary(call.error)))
    return truncate(call_summary(call), max(width, 8))


def error_lines(call: ToolCall, width: int, indent: str) -> list[str]:
    """For a call whose arguments did not parse: where, and the text with a caret under it."""
    position = parse_error_position(call)
    if position is None:
        return []
    shown, column = excerpt(call.args_text, position, width - len(indent))
    line = getattr(call.error, "line", None)
    if isinstance(call.error, dict):
        line = call.error.get("line")
    where_text = f"character {position + 1}" + (
        f" (line {line})" if isinstance(line, int) and line > 1 else ""
    )
    return [
        *wrap(f"the arguments stop parsing at {where_text}:", width, indent, indent),
        indent + shown,
        indent + " " * column + "^",
    ]
