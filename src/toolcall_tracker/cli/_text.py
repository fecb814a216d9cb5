"""Text helpers shared by the command line's modules: escaping, truncation, previews.

Everything taken from the input (ids, names, arguments, reasons) goes through
:func:`clean` before it is printed, so a hostile stream cannot drive the terminal.
"""

from __future__ import annotations

import json
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
