"""Record a provider stream as timed JSON Lines, the recordings ``toolcall-tracker replay``
reads (``--speed`` plays them at their recorded pace).

:func:`record` wraps a stream, sync or async, and passes every item through unchanged
while it writes one line per item::

    {"t": 0.0, "item": {...the item's wire JSON...}}
    {"t": 0.183, "item": {...}}

``t`` is seconds since the first item (so the model's latency before it is not recorded).
An item's wire JSON is what the provider sent: a ``dict`` as it is, an SDK object (the
``openai``, ``anthropic``, ``google-genai`` pydantic models) as its
``model_dump(by_alias=True, exclude_unset=True)`` with bytes in standard base64 (see
:func:`wire_json`), anything else by the library's JSON output rules (NaN as ``null``,
lone surrogates as U+FFFD: a recording never fails to write).

- **Size cap.** The file never grows past ``max_bytes``: the item that would cross it is
  not written, and a last line ``{"truncated": true, "t": ..., "items": n, "max_bytes": m}``
  says so (``n`` items were written); the stream itself goes on, unrecorded.
- **Redaction.** ``redact`` lists paths in the items' JSON, dot-separated, ``*`` matching
  any key or list index (``"message.content"``, ``"choices.*.delta.content"``,
  ``"usage"``); each value found there is written as ``"[redacted]"``. The items your code
  receives are never changed.
- **Closing.** The file is flushed and closed when the stream ends, raises, or the
  consumer stops early (``break``, a cancellation), and the wrapped stream is closed too
  (``aclose()`` / ``close()``, if it has one). A file object you pass stays open (flushed).
  A stream without items leaves an empty file.

Writes are small and buffered; on the event loop they are ordinary blocking writes, like
logging's.
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import IO, Any, Final, TypeVar, overload

import anyio

from ._jsonout import _jsonable

__all__ = ["REDACTED", "DEFAULT_MAX_BYTES", "record"]

REDACTED: Final = "[redacted]"
"""What a redacted value is written as."""

DEFAULT_MAX_BYTES: Final = 50 * 1024 * 1024
"""The default cap of a recording's size (50 MiB)."""

_Item = TypeVar("_Item")


@overload
def record(
    stream: AsyncIterable[_Item],
    destination: str | os.PathLike[str] | IO[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    redact: Sequence[str] = (),
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[_Item]: ...


@overload
def record(
    stream: Iterable[_Item],
    destination: str | os.PathLike[str] | IO[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    redact: Sequence[str] = (),
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[_Item]: ...


def record(
    stream: AsyncIterable[_Item] | Iterable[_Item],
    destination: str | os.PathLike[str] | IO[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    redact: Sequence[str] = (),
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[_Item] | Iterator[_Item]:
    """Pass ``stream``'s items through, writing each as a timed JSON line (module docs).

    Args:
        stream: the provider's stream: an async iterable (``await client...create(...,
            stream=True)``) or a sync one (boto3's event stream, a list). The same kind
            comes back.
        destination: a path (created or truncated, UTF-8) or a text file open for writing.
        max_bytes: the most bytes the recording may take, its ``truncated`` line included
            (at least 256).
        redact: JSON paths whose values are written as ``"[redacted]"``.
        clock: seconds, monotonic (a test may pass its own).

    Returns:
        An iterator of the same items, of the stream's kind (async or sync). Nothing is
        opened until the first item is asked for.

    Raises:
        TypeError: ``stream`` is not iterable (or is an un-awaited coroutine).
        ValueError: ``max_bytes`` is below 256, or a redaction path is empty.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 256:
        raise ValueError(f"max_bytes must be an int of at least 256, not {max_bytes!r}")
    paths = [_parse_path(path) for path in redact]
    if inspect.iscoroutine(stream):
        raise TypeError("record() got a coroutine: await the call that makes the stream first")
    if isinstance(stream, AsyncIterable):
        return _record_async(stream, _Writer(destination, max_bytes, paths, clock))
    if isinstance(stream, Iterable) and not isinstance(stream, str | bytes):
        return _record_sync(stream, _Writer(destination, max_bytes, paths, clock))
    raise TypeError(f"record() needs a stream (an iterable), not {type(stream).__name__}")


async def _record_async(stream: AsyncIterable[_Item], writer: _Writer) -> AsyncIterator[_Item]:
    iterator = aiter(stream)
    try:
        async for item in iterator:
            writer.write(item)
            yield item
    finally:
        try:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()
        finally:
            writer.close()


def _record_sync(stream: Iterable[_Item], writer: _Writer) -> Iterator[_Item]:
    iterator = iter(stream)
    try:
        for item in iterator:
            writer.write(item)
            yield item
    finally:
        try:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
        finally:
            writer.close()


class _Writer:
    """The recording's file: opened at the first item, capped, closed once."""

    __slots__ = (
        "_clock",
        "_closed",
        "_count",
        "_destination",
        "_file",
        "_full",
        "_max",
        "_owned",
        "_paths",
        "_size",
        "_start",
    )

    def __init__(
        self,
        destination: str | os.PathLike[str] | IO[str],
        max_bytes: int,
        paths: list[tuple[str, ...]],
        clock: Callable[[], float],
    ) -> None:
        self._destination = destination
        self._max = max_bytes
        self._paths = paths
        self._clock = clock
        self._file: IO[str] | None = None
        self._owned = False
        self._start: float | None = None
        self._size = 0
        self._count = 0
        self._full = False
        self._closed = False

    def write(self, item: Any) -> None:
        if self._full:
            return
        now = self._clock()
        if self._start is None:
            self._start = now
            self._open()
        t = round(max(0.0, now - self._start), 6)
        data = wire_json(item)
        for path in self._paths:
            data = _redact(data, path)
        line = _line({"t": t, "item": data})
        size = len(line.encode("utf-8"))
        # Room is kept for the ``truncated`` line as a later item would write it: with one
        # more item counted and a later ``t`` (_LATEST_T: as long as any ``t`` is written).
        room = _line(
            {"truncated": True, "t": _LATEST_T, "items": self._count + 1, "max_bytes": self._max}
        )
        if self._size + size + len(room) > self._max:
            self._full = True
            self._emit(
                _line({"truncated": True, "t": t, "items": self._count, "max_bytes": self._max})
            )
            return
        self._emit(line)
        self._size += size
        self._count += 1

    def _open(self) -> None:
        target = self._destination
        if isinstance(target, str | os.PathLike):
            self._file = open(target, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
            self._owned = True
        else:
            self._file = target

    def _emit(self, line: str) -> None:
        assert self._file is not None
        self._file.write(line)

    def close(self) -> None:
        if self._start is None and not self._closed:  # a stream without items: empty file
            self._open()
        self._closed = True
        file, self._file = self._file, None
        if file is None:
            return
        if self._owned:
            file.close()
        else:
            file.flush()


_LATEST_T: Final = 999_999_999.999999
"""A ``t`` whose JSON is at least as long as any a recording writes (under 31 years, six
decimals): what the room kept for the ``truncated`` line is measured with."""


def wire_json(item: Any) -> Any:
    """An item's wire JSON: a mapping as it is, an SDK (pydantic) object as the JSON it was
    parsed from (by alias, unset fields left out), anything else by the output rules.

    An SDK object is dumped in Python mode, quietly (the SDKs' streams build their objects
    without validation, so a newer event's fields do not fit the declared types and
    pydantic would warn on every item), and its bytes are written as standard base64, as
    the providers send them (google-genai's JSON mode writes the URL-safe alphabet: a
    Gemini ``thoughtSignature`` would not be the one received)."""
    dump = getattr(item, "model_dump", None)
    if callable(dump) and not isinstance(item, type):
        try:
            data = dump(mode="python", by_alias=True, exclude_unset=True, warnings=False)
            return _jsonable(_base64_bytes(data))
        except Exception:
            pass
    return _jsonable(item)


def _base64_bytes(data: Any) -> Any:
    """``data`` (a model's Python dump) with every ``bytes`` value as standard base64."""
    if isinstance(data, bytes | bytearray):
        return base64.b64encode(data).decode("ascii")
    if isinstance(data, dict):
        return {key: _base64_bytes(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_base64_bytes(value) for value in data]
    return data


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def _parse_path(path: str) -> tuple[str, ...]:
    if not isinstance(path, str) or not path.strip("."):
        raise ValueError(f"a redaction path is dot-separated keys, not {path!r}")
    parts = tuple(path.split("."))
    if any(not part for part in parts):
        raise ValueError(f"redaction path {path!r} has an empty key")
    return parts


def _redact(data: Any, path: tuple[str, ...]) -> Any:
    """``data`` with the values at ``path`` replaced (a copy along the path only)."""
    if not path:
        return REDACTED
    key, rest = path[0], path[1:]
    if isinstance(data, dict):
        if key == "*":
            return {name: _redact(value, rest) for name, value in data.items()}
        if key in data:
            return {**data, key: _redact(data[key], rest)}
        return data
    if isinstance(data, list):
        if key == "*":
            return [_redact(value, rest) for value in data]
        if key.isdigit() and int(key) < len(data):
            index = int(key)
            return [*data[:index], _redact(data[index], rest), *data[index + 1 :]]
    return data
