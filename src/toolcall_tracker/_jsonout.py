"""Writing values out: one rule for the values JSON cannot hold, on every output path.

The core accepts lone surrogates, NaN, huge numbers and arbitrary result objects, so the code
that builds the next request (and anything else that writes a value out) must never raise on
them. Three helpers apply one set of rules:

- :func:`_json_text` ``(value) -> str``: strict JSON text. ``json.loads(text,
  parse_constant=reject)`` always succeeds and the text holds no raw lone surrogate, so
  ``text.encode("utf-8")`` always works.
- :func:`_jsonable` ``(value) -> Any``: the same value as plain JSON data (``dict`` with
  ``str`` keys, ``list``, ``str``, ``int``, finite ``float``, ``bool``, ``None``) for an SDK
  or a serialiser that writes it itself: ``json.dumps(v, ensure_ascii=False,
  allow_nan=False).encode("utf-8")`` always works (the SDKs write requests that way).
- :func:`_plain_text` ``(s) -> str``: a string that is not JSON (a name, an id, message
  text) made safe to encode as UTF-8.

The rules:

============================  ===================================================================
value                         written as
============================  ===================================================================
lone surrogate in JSON text   a ``\\uXXXX`` escape (valid UTF-8; ``json.loads`` gives it back)
lone surrogate elsewhere      U+FFFD (plain strings, and strings inside :func:`_jsonable` data)
NaN, +/-infinity              ``null``, as ``JSON.stringify`` does
``int`` of any size           the exact integer in JSON text; in :func:`_jsonable` data an
                              integer past ``sys.get_int_max_str_digits()`` (4,300 digits by
                              default) becomes its digits as a string, since Python's JSON
                              writers (and so the SDKs) refuse to write it
``bytes``, ``bytearray``      the text they hold as UTF-8; invalid UTF-8 is decoded with
                              ``errors="replace"`` (each bad byte becomes U+FFFD)
``tuple``, ``set``...         a list (a set in its iteration order)
non-``str`` dict keys         pydantic's key text (``1`` -> ``"1"``, ``None`` -> ``"None"``)
pydantic models, dataclasses, as pydantic serialises them (``model_dump(mode="json")``); if that
dates, enums, ``Decimal``...  fails, a dataclass field by field, anything else like any object
any other object              ``str(value)``; if ``str`` raises, ``"<TypeName>"``
a container inside itself     the string ``"<cycle>"`` where it repeats
nesting past 255 levels       the string ``"<too deep>"`` for the deeper part
============================  ===================================================================

Fast path: pydantic-core writes the value in Rust (``to_json``); only a value it refuses (a
lone surrogate, a cycle, invalid UTF-8 bytes, nesting past its limit, a ``str`` that raises)
or one whose text holds ``NaN``/``Infinity`` (a model configured to write them) goes through
the Python walk below, which applies the same rules.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from typing import Any

from pydantic_core import from_json, to_json, to_jsonable_python

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_DEPTH = 255
_CYCLE = "<cycle>"
_TOO_DEEP = "<too deep>"
_encode_string = json.encoder.encode_basestring  # C; keeps non-ASCII (and surrogates) raw


def _json_text(value: Any) -> str:
    """``value`` as strict, compact JSON text; never raises.

    Strict: ``json.loads(text, parse_constant=reject)`` succeeds (no ``NaN``/``Infinity``)
    and the text holds no raw lone surrogate (a lone surrogate inside a string is written as
    a ``\\uXXXX`` escape, so ``text.encode("utf-8")`` works and ``json.loads`` gives the
    surrogate back). Non-ASCII characters are written as they are, not escaped. Anything
    JSON cannot hold follows the rules in this module's docstring: NaN and infinities are
    ``null``, integers stay exact, ``bytes`` are UTF-8 text (invalid bytes replaced), models
    and dataclasses as pydantic dumps them, any other object its ``str`` (or
    ``"<TypeName>"``), a cycle ``"<cycle>"``.

    Use it wherever the library writes JSON for someone else to read (tool results, error
    values, event streams, ``--json`` output). A ``str`` is written as a JSON string; send
    text as it is with :func:`_plain_text` instead.
    """
    try:
        data = to_json(value, inf_nan_mode="null", bytes_mode="utf8", fallback=_fallback)
    except Exception:  # a surrogate, a cycle, bad bytes, too deep, a raising __str__...
        return _slow_text(value)
    if b"NaN" in data or b"Infinity" in data:  # perhaps a model configured to write them
        return _slow_text(value)
    return data.decode()


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data that any JSON writer accepts; never raises.

    Returns ``dict`` (``str`` keys), ``list``, ``str``, ``int``, finite ``float``, ``bool``
    or ``None``, built anew. Lone surrogates in strings (keys too) become U+FFFD, because the
    data is handed to a serialiser that may write raw UTF-8 (the ``openai`` and
    ``anthropic`` SDKs do); the other values follow the rules in this module's docstring,
    so ``json.loads(_json_text(v))`` equals ``_jsonable(v)`` when ``v`` holds no surrogate.
    """
    try:
        data = to_json(value, inf_nan_mode="null", bytes_mode="utf8", fallback=_fallback)
        if b"NaN" not in data and b"Infinity" not in data and not _long_number(data):
            # Written cleanly, so it holds no surrogate, cycle or bad byte: read the text
            # back. (Not ``to_jsonable_python``: its Python form keeps a float NaN inside a
            # pydantic model, which a JSON writer such as botocore's then writes as NaN.)
            return from_json(data)
    except Exception:
        pass
    try:
        return _walk(value, True, 0, set(), False)
    except Exception:  # RecursionError when called with the stack already deep
        return _plain_text(_fallback(value))


def _plain_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, for strings that are not JSON.

    Names, ids and message text handed to an SDK: those are written as raw UTF-8, which
    cannot hold a surrogate. Returns ``text`` itself when it has none (the common case).
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _escape_surrogates(json_text: str) -> str:
    """JSON text (or text meant to be JSON, such as a model's argument text) with each raw
    lone surrogate written as a ``\\uXXXX`` escape, so it is valid UTF-8 and a surrogate
    inside a JSON string keeps its value."""
    if json_text.isascii():
        return json_text
    try:
        json_text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape_one, json_text)
    return json_text


# -- the slow path -----------------------------------------------------------------------------


def _escape_one(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def _type_name(value: object) -> str:
    try:
        name = type(value).__name__
    except Exception:
        return "object"
    return name if isinstance(name, str) else "object"


def _fallback(value: object) -> str:
    """The text of an object JSON cannot hold: its ``str``, else ``<TypeName>``."""
    try:
        text = str(value)
    except Exception:  # includes RecursionError from a self-referencing __str__
        return f"<{_type_name(value)}>"
    return str.__str__(text)


def _slow_text(value: Any) -> str:
    try:
        parts: list[str] = []
        _write(_walk(value, False, 0, set(), False), parts)
        text = "".join(parts)
    except Exception:  # RecursionError when called with the stack already deep
        text = _encode_string(_fallback(value))
    return _escape_surrogates(text)


def _walk(value: Any, plain: bool, depth: int, active: set[int], delegated: bool) -> Any:
    """``value`` as plain JSON data by the module's rules; strings keep their surrogates
    unless ``plain``. ``active`` holds the ids of the containers being walked (cycles);
    ``delegated`` is set inside pydantic's output, which is never handed back to it."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        text = str.__str__(value)
        return _plain_text(text) if plain else text
    if isinstance(value, int):
        number = int.__int__(value)
        return _int_digits(number) if plain and _too_many_digits(number) else number
    if isinstance(value, float):
        real = float.__float__(value)
        return real if math.isfinite(real) else None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if depth >= _MAX_DEPTH:
            return _TOO_DEEP
        key = id(value)
        if key in active:
            return _CYCLE
        active.add(key)
        try:
            if isinstance(value, dict):
                return {
                    _key(name, plain): _walk(item, plain, depth + 1, active, delegated)
                    for name, item in list(value.items())
                }
            return [_walk(item, plain, depth + 1, active, delegated) for item in list(value)]
        except Exception:  # a container whose own methods raise; a RecursionError
            text = _fallback(value)
            return _plain_text(text) if plain else text
        finally:
            active.discard(key)
    if not delegated:
        try:
            dumped = to_jsonable_python(
                value, inf_nan_mode="null", bytes_mode="utf8", fallback=_fallback
            )
        except Exception:  # a cycle, bad bytes or a raising serialiser inside the object
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                fields = {
                    field.name: getattr(value, field.name, None)
                    for field in dataclasses.fields(value)
                }
                return _walk(fields, plain, depth, active, False)
        else:
            return _walk(dumped, plain, depth, active, True)
    text = _fallback(value)
    return _plain_text(text) if plain else text


def _key(name: Any, plain: bool) -> str:
    """A dict key as text: a ``str`` as it is, anything else as pydantic writes the key."""
    if isinstance(name, str):
        text = str.__str__(name)
    else:
        try:
            converted = next(iter(to_jsonable_python({name: None}, fallback=_fallback)))
        except Exception:
            converted = None
        text = str.__str__(converted) if isinstance(converted, str) else _fallback(name)
    return _plain_text(text) if plain else text


def _write(value: Any, out: list[str]) -> None:
    """Append the JSON text of plain data from :func:`_walk` (surrogates still raw)."""
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_string(value))
    elif isinstance(value, int):
        out.append(_int_text(value))
    elif isinstance(value, float):
        out.append(float.__repr__(value))
    elif isinstance(value, list):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:  # a dict with str keys
        out.append("{")
        for index, (name, item) in enumerate(value.items()):
            if index:
                out.append(",")
            out.append(_encode_string(name))
            out.append(":")
            _write(item, out)
        out.append("}")


def _int_text(number: int) -> str:
    try:
        return int.__repr__(number)
    except ValueError:  # past sys.get_int_max_str_digits()
        return _int_digits(number)


def _int_digits(number: int) -> str:
    """The decimal digits of any integer (pydantic-core has no digit limit)."""
    return to_json(number).decode()


def _digit_limit() -> int:
    get = getattr(sys, "get_int_max_str_digits", None)  # Python 3.10.7 and later
    return get() if get is not None else 0


def _too_many_digits(number: int) -> bool:
    """Whether ``str(number)`` would raise (past the interpreter's digit limit)."""
    limit = _digit_limit()
    if not limit or number.bit_length() <= limit * 3:  # fewer than ``limit`` digits
        return False
    try:
        int.__repr__(number)
    except ValueError:
        return True
    return False


_LONG_NUMBERS: dict[int, re.Pattern[bytes]] = {}


def _long_number(data: bytes) -> bool:
    """Whether JSON text may hold an integer past the digit limit (a run of more digits)."""
    limit = _digit_limit()
    if not limit or len(data) <= limit:
        return False
    pattern = _LONG_NUMBERS.get(limit)
    if pattern is None:
        pattern = _LONG_NUMBERS[limit] = re.compile(rb"[0-9]{%d}" % (limit + 1))
    return pattern.search(data) is not None
