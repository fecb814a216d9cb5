"""Reading raw AWS event-stream bodies (``application/vnd.amazon.eventstream``).

Bedrock's ``ConverseStream`` answers with a binary body of messages, each::

    prelude:  total length (4 bytes, big-endian), headers length (4), CRC32 of those 8 (4)
    headers:  name length (1), name, value type (1), value ...
    payload:  the event's JSON
    trailer:  CRC32 of everything before it (4)

Each ``event`` message becomes the dict boto3 yields, ``{<:event-type>: payload}``; an
``exception`` message becomes ``{<:exception-type, first letter lowered>: payload}`` (the
Bedrock adapter ends the turn not ok on keys ending in ``Exception``); an ``error`` message
becomes ``{"internalServerException": {"message": <:error-code: :error-message>}}``.

Reading is bounded: one message may be at most :data:`MAX_MESSAGE_BYTES` long, and every
length and CRC is checked before the message is used. Any problem is an
:class:`~._input.InputError` naming the message and its byte offset.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any, Final

from ._input import InputError, Item, loads
from ._text import json_kind

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest event-stream message, in bytes (AWS's own limit is 16 MiB)."""

PRELUDE_BYTES: Final = 12
_MIN_MESSAGE: Final = PRELUDE_BYTES + 4  # prelude and trailer, no headers, no payload
_INT: Final = struct.Struct(">I")
_FIXED: Final = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}  # value type -> bytes


def looks_eventstream(head: bytes) -> bool:
    """Whether ``head`` (the input's first bytes) starts with a valid event-stream prelude."""
    if len(head) < PRELUDE_BYTES:
        return False
    total, headers, crc = _INT.unpack_from(head, 0)[0], _INT.unpack_from(head, 4)[0], _crc(head)
    return (
        _MIN_MESSAGE <= total <= MAX_MESSAGE_BYTES
        and headers <= total - _MIN_MESSAGE
        and zlib.crc32(head[:8]) == crc
    )


def _crc(prelude: bytes) -> int:
    """The prelude's CRC field."""
    value: int = _INT.unpack_from(prelude, 8)[0]
    return value


def read_messages(read: Callable[[int], bytes]) -> Iterator[Item]:
    """The items of an event-stream body, read with ``read(n)`` (fewer bytes: the end).

    Raises:
        InputError: a message is cut off, too long, fails its CRC, or its payload is not a
            JSON object.
    """
    offset = 0
    number = 0
    while True:
        prelude = read(PRELUDE_BYTES)
        if not prelude:
            return
        where = f"event-stream message {number + 1} (byte {offset})"
        if len(prelude) < PRELUDE_BYTES:
            raise InputError(f"{where}: cut off in its prelude")
        if not looks_eventstream(prelude):
            raise InputError(f"{where}: a bad prelude (length or CRC does not match)")
        total, headers_len = _INT.unpack_from(prelude, 0)[0], _INT.unpack_from(prelude, 4)[0]
        rest = read(total - PRELUDE_BYTES)
        if len(rest) < total - PRELUDE_BYTES:
            raise InputError(f"{where}: cut off ({total} bytes announced)")
        body, crc = rest[:-4], _INT.unpack_from(rest, len(rest) - 4)[0]
        if zlib.crc32(body, zlib.crc32(prelude)) != crc:
            raise InputError(f"{where}: the message CRC does not match")
        headers = _headers(body[:headers_len], where)
        payload = body[headers_len:]
        number += 1
        offset += total
        yield Item(number, None, _event(headers, payload, where), chars=total)


def _headers(data: bytes, where: str) -> dict[str, Any]:
    """A message's headers (strings and bytes decoded; other values kept as bytes)."""
    headers: dict[str, Any] = {}
    pos = 0
    try:
        while pos < len(data):
            size = data[pos]
            name = data[pos + 1 : pos + 1 + size].decode("utf-8")
            kind = data[pos + 1 + size]
            pos += size + 2
            if kind in (6, 7):
                length = int.from_bytes(data[pos : pos + 2], "big")
                value: Any = data[pos + 2 : pos + 2 + length]
                if len(value) < length:
                    raise IndexError
                pos += 2 + length
                if kind == 7:
                    value = value.decode("utf-8")
            elif kind in _FIXED:
                value = data[pos : pos + _FIXED[kind]]
                pos += _FIXED[kind]
            else:
                raise InputError(f"{where}: unknown header value type {kind}")
            if pos > len(data):
                raise IndexError
            headers[name] = value
    except (IndexError, UnicodeDecodeError):
        raise InputError(f"{where}: malformed headers") from None
    return headers


def _event(headers: dict[str, Any], payload: bytes, where: str) -> dict[str, Any]:
    """The boto3-style event dict of one message."""
    kind = headers.get(":message-type", "event")
    if kind == "error":
        code, message = headers.get(":error-code", "error"), headers.get(":error-message", "")
        return {"internalServerException": {"message": f"{code}: {message}"}}
    try:
        value = loads(payload.decode("utf-8")) if payload.strip() else {}
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise InputError(f"{where}: the payload is not JSON ({problem})") from None
    if not isinstance(value, dict):
        raise InputError(f"{where}: the payload is {json_kind(value)}, not a JSON object")
    name = headers.get(":exception-type" if kind == "exception" else ":event-type")
    if not isinstance(name, str) or not name:
        raise InputError(
            f"{where}: no {':exception-type' if kind == 'exception' else ':event-type'} header"
        )
    if kind == "exception":
        name = name[:1].lower() + name[1:]
    return {name: value}
