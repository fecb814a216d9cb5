"""Strict JSON parsing with the acceptance rules of ECMAScript's ``JSON.parse``.

Accepted: any JSON value (objects, arrays, strings, numbers, ``true``/``false``/``null``),
surrounded by JSON whitespace (space, tab, line feed, carriage return) only; duplicate keys
(the last one wins); ``\\uXXXX`` escapes of lone surrogates (``JSON.parse`` keeps them too).

Rejected: empty text, ``NaN``/``Infinity`` and other non-JSON literals, raw control
characters inside strings, a byte-order mark, trailing data, malformed escapes, nesting too
deep for the interpreter, and integers with more digits than Python converts by default
(4,300; ``sys.set_int_max_str_digits`` governs it). Numbers that overflow a double become
``inf`` exactly as ``JSON.parse`` gives ``Infinity``.

Fast path: pydantic-core's ``from_json`` (already a dependency via pydantic). If it refuses a
text, the standard library's strict decoder decides, so a text ``from_json`` rejects for its
own reasons (nesting deeper than 200, lone surrogate escapes) still parses when it is valid
JSON, and a real error gets a precise position.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_core import from_json

from .failures import InvalidArguments


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_decoder = json.JSONDecoder(strict=True, parse_constant=_reject_constant)


def parse_json(text: str) -> Any:
    """Parse ``text`` as JSON.

    Returns the parsed value. Raises :class:`_ArgumentsError` carrying an
    :class:`~toolcall_tracker.failures.InvalidArguments` value when it is not valid JSON.
    """
    try:
        return from_json(text, allow_inf_nan=False)
    except (ValueError, TypeError) as fast_error:  # TypeError: a raw lone surrogate
        return _parse_slow(text, str(fast_error))


class _ArgumentsError(Exception):
    def __init__(self, value: InvalidArguments) -> None:
        super().__init__(value.message)
        self.value = value


_FAST_WHERE = re.compile(r"at line (\d+) column (\d+)$")


def _position(text: str, line: int, byte_column: int) -> tuple[int, int]:
    """pydantic-core's 1-based (line, UTF-8 byte column) as (character offset, column)."""
    start = 0
    for _ in range(line - 1):
        newline = text.find("\n", start)
        if newline < 0:
            break
        start = newline + 1
    end = text.find("\n", start)
    line_text = text[start:] if end < 0 else text[start:end]
    prefix = line_text.encode("utf-8", "surrogatepass")[: max(0, byte_column - 1)]
    column = len(prefix.decode("utf-8", "ignore")) + 1
    return min(start + column - 1, len(text)), column


def _parse_slow(text: str, fast_error: str) -> Any:
    if not text.strip(" \t\n\r"):
        raise _ArgumentsError(
            InvalidArguments(
                message="the argument text is empty or only whitespace, which is not JSON",
                position=len(text),
                line=text.count("\n") + 1,
                column=len(text) - text.rfind("\n"),
            )
        )
    try:
        return _decoder.decode(text)
    except json.JSONDecodeError as exc:
        what = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg
        raise _ArgumentsError(
            InvalidArguments(
                message=f"invalid JSON: {what} at line {exc.lineno} column {exc.colno}",
                position=exc.pos,
                line=exc.lineno,
                column=exc.colno,
            )
        ) from None
    except RecursionError:
        raise _ArgumentsError(
            InvalidArguments(
                message="invalid JSON: nested too deeply to parse", position=0, line=1, column=1
            )
        ) from None
    except ValueError as exc:  # NaN/Infinity, integers over the digit limit
        # The standard decoder does not say where these are; pydantic-core's message does.
        where = _FAST_WHERE.search(fast_error)
        line, byte_column = (int(where[1]), int(where[2])) if where else (1, 1)
        position, column = _position(text, line, byte_column)
        raise _ArgumentsError(
            InvalidArguments(
                message=f"invalid JSON: {exc} (near line {line} column {column})",
                position=position,
                line=line,
                column=column,
            )
        ) from None
