"""Reading the command line's input: files, UTF-8 text, SSE, JSON Lines, JSON documents.

The input is read incrementally, in chunks, so memory stays bounded however long (or
endless: ``/dev/zero``) it is:

- every chunk must decode as UTF-8 and hold no NUL character, so a binary file fails on
  its first chunk;
- a server-sent-event transcript and JSON Lines are read line by line; one line, and the
  data of one SSE event, may hold at most :data:`MAX_LINE_CHARS` characters;
- a JSON document (an array of items, or one object) is read whole, up to
  :data:`MAX_DOCUMENT_CHARS` characters;
- the items are produced lazily: the replay reads them as it goes (``--format auto``
  first looks at a bounded number of them, see :mod:`._detect`).

Every problem is an :class:`InputError` whose message names the line or the item.
"""

from __future__ import annotations

import codecs
import io
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Final

from .._registry import providers
from ._text import json_kind, preview, preview_text

CHUNK_BYTES: Final = 64 * 1024
"""Bytes read at a time (more while one long line or document is read)."""
MAX_LINE_CHARS = 16 * 1024 * 1024
"""The longest line, and the most data in one SSE event, in characters."""
MAX_DOCUMENT_CHARS = 64 * 1024 * 1024
"""The largest JSON document (an array of items, or one object), in characters."""

_SSE_LINE_COST: Final = 64  # what one data line counts for against MAX_LINE_CHARS, at least


class InputError(Exception):
    """The input cannot be replayed; the message says why (exit code 2)."""


@dataclass(frozen=True)
class Item:
    """One stream item: its 1-based position, the line it starts on (if known), its JSON
    object (or, for a line protocol, its line of text).

    ``chars`` is the length of its text (``0`` for an item of a JSON document); ``time``
    its recorded time in seconds, for an item recorded as ``{"t": seconds, "item": {...}}``.
    """

    number: int
    line: int | None
    value: dict[str, Any] | str
    chars: int = 0
    time: float | None = None

    def where(self) -> str:
        """``item 3 (line 7)``: where the item is, for messages."""
        return f"item {self.number}" + ("" if self.line is None else f" (line {self.line})")


# -- decoded, checked text ------------------------------------------------------------------

_NEWLINE: Final = re.compile(r"\r\n|\r|\n")
_NON_SPACE: Final = re.compile(r"\S")


class TextReader:
    """The text of a binary stream, decoded as UTF-8 a chunk at a time, read by lines.

    Lines end at ``\\r\\n``, ``\\r`` or ``\\n``. A leading byte order mark is dropped.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._read1 = getattr(stream, "read1", stream.read)
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._buf = ""
        self._pos = 0
        self._bytes = 0  # bytes decoded so far
        self._chars = 0  # characters decoded so far
        self._eof = False
        self._head = b""  # bytes peeked at by head(), not decoded yet
        self.size = _size(stream)
        """The input's size in bytes, if it is a regular file (``None`` otherwise)."""
        self.line = 0
        """The number of lines consumed so far (the last one read is this line)."""

    @property
    def bytes_read(self) -> int:
        """The bytes read from the input so far."""
        return self._bytes

    def _fill(self) -> None:
        """Read and check one more chunk (sets ``_eof`` at the end of the input)."""
        want = max(CHUNK_BYTES, len(self._buf) - self._pos)  # doubles while a line grows
        head, self._head = self._head, b""  # bytes peeked at come first, in the same chunk
        data = head + self._raw(want - len(head), whole=want != CHUNK_BYTES)
        final = not data
        pending = len(self._decoder.getstate()[0])
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            offset = self._bytes - pending + exc.start
            raise InputError(
                f"not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {offset} "
                "(is this a binary file?)"
            ) from None
        if self._bytes == 0 and text.startswith("\ufeff"):
            text = text[1:]
        self._bytes += len(data)
        nul = text.find("\x00")
        if nul >= 0:
            raise InputError(f"not a text file: a NUL character at offset {self._chars + nul}")
        self._chars += len(text)
        self._buf = self._buf[self._pos :] + text
        self._pos = 0
        self._eof = final

    def _raw(self, size: int, *, whole: bool) -> bytes:
        """Up to ``size`` bytes from the input (``whole``: as many as it has, up to it)."""
        try:
            return bytes(self._stream.read(size) if whole else self._read1(size))
        except OSError as exc:
            raise InputError(f"cannot read the file: {exc.strerror or exc}") from None
        except ValueError as exc:  # a closed standard input
            raise InputError(f"cannot read the input: {exc}") from None

    def head(self, size: int) -> bytes:
        """The input's first ``size`` bytes (fewer if it is shorter), left unread.

        Only before any text is read: for recognising a binary body (an AWS event stream).
        """
        while len(self._head) < size:
            data = self._raw(size - len(self._head), whole=True)
            if not data:
                break
            self._head += data
        return self._head[:size]

    def read_bytes(self, size: int) -> bytes:
        """The next ``size`` bytes as they are (fewer at the end), for a binary body."""
        data = self._head[:size]
        self._head = self._head[size:]
        while len(data) < size:
            more = self._raw(size - len(data), whole=True)
            if not more:
                break
            data += more
        self._bytes += len(data)
        return data

    def _take_line(self) -> str | None:
        """The next line if it is buffered whole (consumed), else ``None``."""
        match = _NEWLINE.search(self._buf, self._pos)
        if match is None:
            return None
        if match.group() == "\r" and match.end() == len(self._buf) and not self._eof:
            return None  # maybe the first half of a "\r\n"
        line = self._buf[self._pos : match.start()]
        self._pos = match.end()
        self.line += 1
        if len(line) > MAX_LINE_CHARS:
            raise _line_too_long(self.line)
        return line

    def readline(self) -> str | None:
        """The next line, without its line break; ``None`` at the end of the input.

        Raises:
            InputError: the line is longer than :data:`MAX_LINE_CHARS`, or the text is bad.
        """
        while True:
            line = self._take_line()
            if line is not None:
                return line
            if len(self._buf) - self._pos > MAX_LINE_CHARS:
                raise _line_too_long(self.line + 1)
            if not self._eof:
                self._fill()
                continue
            if self._pos == len(self._buf):
                return None
            line = self._buf[self._pos :]  # the last line, without a line break
            self._buf, self._pos = "", 0
            self.line += 1
            return line

    def first_char(self) -> str | None:
        """The first non-whitespace character ahead (not consumed); ``None`` if none.

        The blank lines before it are consumed (and counted in :attr:`line`).
        """
        while True:
            match = _NON_SPACE.search(self._buf, self._pos)
            if match is not None:
                return match.group()
            while self._take_line() is not None:  # blank lines: drop them
                pass
            if len(self._buf) - self._pos > MAX_LINE_CHARS:
                raise _line_too_long(self.line + 1)
            if self._eof:
                return None
            self._fill()

    def read_rest(self, limit: int) -> str:
        """Everything not read yet, if it is at most ``limit`` characters long.

        Raises:
            InputError: it is longer (the message names :data:`MAX_DOCUMENT_CHARS`).
        """
        while True:
            if len(self._buf) - self._pos > limit:
                raise InputError(
                    f"a JSON document longer than {MAX_DOCUMENT_CHARS:,} characters "
                    "(record long streams as JSON Lines or SSE)"
                )
            if self._eof:
                break
            self._fill()
        text = self._buf[self._pos :]
        self._buf, self._pos = "", 0
        return text


def _size(stream: IO[bytes]) -> int | None:
    """The size of a regular file's stream, else ``None``."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _line_too_long(line: int) -> InputError:
    """The error for a line over :data:`MAX_LINE_CHARS`."""
    return InputError(f"line {line}: longer than {MAX_LINE_CHARS:,} characters")


@contextmanager
def open_input(path: str) -> Iterator[TextReader]:
    """A :class:`TextReader` of ``path`` (``-``: standard input), closed afterwards.

    Raises:
        InputError: the file cannot be opened.
    """
    if path == "-":
        try:
            stream: IO[bytes] = sys.stdin.buffer
        except AttributeError as exc:  # a standard input without bytes
            raise InputError(f"cannot read standard input: {exc}") from None
        yield TextReader(stream)
        return
    try:
        file = open(path, "rb")  # noqa: SIM115 (closed below, after the replay)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}") from None
    with file:
        yield TextReader(file)


# -- JSON -----------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    """``parse_constant`` for :func:`json.loads`: ``NaN`` and ``Infinity`` are not JSON."""
    raise ValueError(f"{name} is not valid JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def loads(text: str) -> Any:
    """Strict JSON: like :func:`json.loads`, without the ``NaN``/``Infinity`` extension.

    Raises:
        json.JSONDecodeError: not JSON (with a position).
        ValueError: a ``NaN``/``Infinity`` literal, or an integer too long to convert.
        RecursionError: nested too deeply.
    """
    return _DECODER.decode(text)


def _json_problem(exc: Exception) -> str:
    """A short description of why :func:`loads` refused a text."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0]  # not the advice to call sys.set_int_max_str_digits()


def _item(number: int, line: int | None, value: Any, chars: int = 0) -> Item:
    """An :class:`Item`, checking that ``value`` is a JSON object.

    A timed item, ``{"t": seconds, "item": {...}}``, is unwrapped: its ``time`` is ``t``.
    """
    time = _recorded_time(value)
    if time is not None:
        value = value["item"]
    item = Item(number, line, value, chars, time)
    if not isinstance(value, dict):
        raise InputError(
            f"{item.where()}: a stream item must be a JSON object, not "
            f"{json_kind(value)}: {preview(value, 40)}"
        )
    return item


def _recorded_time(value: Any) -> float | None:
    """``t`` of a timed item ``{"t": seconds, "item": {...}}``, else ``None``."""
    if not isinstance(value, dict) or len(value) != 2 or not isinstance(value.get("item"), dict):
        return None
    time = value.get("t")
    if isinstance(time, bool) or not isinstance(time, int | float):
        return None
    try:
        time = float(time)
    except OverflowError:
        return None
    return time if math.isfinite(time) and time >= 0 else None


# -- the containers -------------------------------------------------------------------------

_SSE_FIELD: Final = re.compile(r"(?:data|event|id|retry)(?::|$)")
_SSE_IGNORED_FIELDS: Final = frozenset({"event", "id", "retry"})


def read_items(reader: TextReader) -> tuple[str, Iterator[Item]]:
    """The container (``"sse"``, ``"jsonl"``, ``"json"`` or ``"lines"``, the text lines of
    a line protocol such as the AI SDK v4 data stream) and the items, read lazily.

    Raises:
        InputError: the input is empty or not a recorded stream (the items raise it too).
    """
    first = reader.first_char()
    if first is None:
        raise InputError("the file is empty")
    if first == "[":
        return "json", _document(reader, "", reader.line)
    if first == "{":
        return _json_lines(reader)
    head = reader.readline()
    assert head is not None  # first_char() saw text ahead
    if any(p.lines and p.recognise(head) for p in providers()):  # a line protocol's lines
        return "lines", _lines(reader, head)
    if head.startswith(":") or _SSE_FIELD.match(head):
        return "sse", _sse(reader, head)
    raise InputError(
        "not a recorded stream: expected server-sent events (data: lines), JSON Lines or a "
        f"JSON array, but the first line is {preview_text(head, 40)}"
    )


def _lines(reader: TextReader, head: str) -> Iterator[Item]:
    """Items of a line protocol (the AI SDK v4 data stream): each non-blank line, as text."""
    number = 0
    line: str | None = head
    while line is not None:
        if line.strip():
            number += 1
            yield Item(number, reader.line, line, len(line))
        line = reader.readline()


def _document(reader: TextReader, start: str, lines_before: int) -> Iterator[Item]:
    """Items from a whole JSON document (``start`` and the rest of the input).

    ``lines_before`` input lines came before ``start`` (for the error positions).
    """
    text = start + reader.read_rest(MAX_DOCUMENT_CHARS - len(start))
    try:
        value = loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"line {exc.lineno + lines_before}, column {exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"invalid JSON: {_json_problem(exc)}") from None
    del text
    values = value if isinstance(value, list) else [value]
    for number, element in enumerate(values, 1):
        yield _item(number, None, element)


def _json_lines(reader: TextReader) -> tuple[str, Iterator[Item]]:
    """Items from JSON Lines, or from one multi-line JSON object if line 1 is not JSON."""
    line = reader.readline()
    assert line is not None  # first_char() saw text ahead
    lineno = reader.line
    try:
        value = loads(line)
    except json.JSONDecodeError:  # not JSON Lines: maybe one pretty-printed object
        return "json", _document(reader, line + "\n", lineno - 1)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"line {lineno}: invalid JSON: {_json_problem(exc)}") from None
    return "jsonl", _more_json_lines(reader, _item(1, lineno, value, len(line)))


def _more_json_lines(reader: TextReader, first: Item) -> Iterator[Item]:
    """The items of JSON Lines, from the first one (already read)."""
    yield first
    number = 1
    while (line := reader.readline()) is not None:
        if not line.strip():
            continue
        try:
            value = loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"line {reader.line}, column {exc.colno}: invalid JSON: {exc.msg}"
            ) from None
        except (ValueError, RecursionError) as exc:
            raise InputError(f"line {reader.line}: invalid JSON: {_json_problem(exc)}") from None
        number += 1
        yield _item(number, reader.line, value, len(line))


def _sse(reader: TextReader, head: str) -> Iterator[Item]:
    """Items from a server-sent-event transcript: each event's ``data`` as JSON."""
    number = 0
    data: list[str] = []
    data_at: list[tuple[int, int]] = []  # per data line: (line number, prefix length)
    size = 0  # what the event's data lines count for against MAX_LINE_CHARS
    line: str | None = head
    while True:
        if not line:  # a blank line (or the end of the input) ends the event
            if data:
                value = _sse_payload(data, data_at)
                start, chars = data_at[0][0], size
                data, data_at, size = [], [], 0
                if value is _DONE:
                    return
                if value is not _NOTHING:
                    number += 1
                    yield _item(number, start, value, chars)
            if line is None:
                return
        elif not line.startswith(":"):  # not a comment (keep-alive)
            name, colon, value = line.partition(":")
            prefix = len(name) + len(colon)
            if value.startswith(" "):
                value = value[1:]
                prefix += 1
            if name == "data":
                data.append(value)
                data_at.append((reader.line, prefix))
                size += max(len(value) + 1, _SSE_LINE_COST)
                if size > MAX_LINE_CHARS:
                    raise InputError(
                        f"line {reader.line}: an SSE event longer than "
                        f"{MAX_LINE_CHARS:,} characters"
                    )
            elif name not in _SSE_IGNORED_FIELDS:
                raise InputError(
                    f"line {reader.line}: not a server-sent-event line: {preview_text(line, 40)}"
                )
        line = reader.readline()


_DONE: Final = object()  # data: [DONE]
_NOTHING: Final = object()  # an event without data


def _sse_payload(data: list[str], data_at: list[tuple[int, int]]) -> Any:
    """The JSON of one event's ``data`` lines, or :data:`_DONE` / :data:`_NOTHING`."""
    payload = "\n".join(data)
    if not payload.strip():
        return _NOTHING
    if payload.strip() == "[DONE]":
        return _DONE
    try:
        return loads(payload)
    except json.JSONDecodeError as exc:
        lineno, prefix = data_at[min(exc.lineno, len(data_at)) - 1]
        column = exc.colno + prefix  # each data line is one line of the payload
        raise InputError(
            f"line {lineno}, column {column}: invalid JSON in the SSE data: {exc.msg}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(
            f"line {data_at[0][0]}: invalid JSON in the SSE data: {_json_problem(exc)}"
        ) from None
