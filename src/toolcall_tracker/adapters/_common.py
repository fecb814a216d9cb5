"""Helpers shared by the adapters (private).

- :func:`_get`: read one field of a provider item that is either the official SDK's typed
  object (an attribute) or the plain dict decoded from the provider's JSON (a key, in
  snake_case or the camelCase some wire formats use).
- :class:`IdMinter`: the ids one stream has used; mints stable, unique ids (within
  ``Limits.max_id_chars``) for calls that arrive without one.
- :func:`_json_text`: compact JSON text for an argument object that arrived whole;
  :func:`_json_written` gives its parse too, for the machine to take.
- :func:`_usable_id` and :func:`_tool_name`: provider ids and names checked against the
  limits of the sink the adapter writes into.
- :class:`DecodeError` and :data:`READ_ERRORS`: what an adapter may take for an item it
  cannot read (and ignore, or fail that item's call with); anything else propagates.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final, TypeGuard

from pydantic import BaseModel
from pydantic_core import to_json

from .._json import parse_json
from .._support import bounded_repr as _bounded_repr
from ..limits import Limits

logger: Final = logging.getLogger("toolcall_tracker.adapters")
"""Adapters log the provider items they ignore as malformed here, at DEBUG."""


class DecodeError(Exception):
    """A provider item's own field access raised (a hostile property, a mapping whose
    ``get`` raises): :func:`_get` raises this, the original as its ``__cause__``."""


READ_ERRORS: Final = (DecodeError, KeyError, TypeError, ValueError, IndexError, RecursionError)
"""The errors an adapter's decoding of a provider item may take for *that item's* fault.

:class:`DecodeError` is what reading a field raised (:func:`_get`); ``KeyError``,
``TypeError``, ``ValueError``, ``IndexError`` and ``RecursionError`` are what Python's own
operations raise on a value of the wrong shape (iterating a number, a format spec on an
object, a cycle). Anything else (``NameError``, ``AttributeError``, ``AssertionError``...)
is a defect of the adapter itself and propagates, as does whatever the sink raised
(``_sinkguard.SinkRaised``, a ``BaseException``). Catch exactly this tuple around decoding.
"""


_IS_MAPPING: dict[type, bool] = {}
"""Per item class: read fields by key (a mapping) or by attribute (an SDK object)."""


def _get(item: Any, name: str, camel: str | None = None) -> Any:
    """``item.name`` for an object, ``item[name]`` (or ``item[camel]``) for a mapping.

    Returns ``None`` when the field is absent (or ``item`` is ``None``). Never raises for
    a missing field.

    Raises:
        DecodeError: reading the field raised (a property, ``__getattr__`` or ``get`` of
            the item's own class); the adapters catch it at their boundary
            (:data:`READ_ERRORS`).
    """
    kind = type(item)
    if kind is not dict:
        is_mapping = _IS_MAPPING.get(kind)
        if is_mapping is None:
            is_mapping = _IS_MAPPING[kind] = issubclass(kind, Mapping) and not issubclass(
                kind, BaseModel
            )
        if not is_mapping:
            try:
                return getattr(item, name, None)
            except Exception as exc:
                raise DecodeError(f"{kind.__name__}.{name} could not be read") from exc
    try:
        value = item.get(name)
        if value is None and camel is not None:
            value = item.get(camel)
    except Exception as exc:
        raise DecodeError(f"{kind.__name__}[{name!r}] could not be read") from exc
    return value


def _plain(value: Any) -> Any:
    """A JSON-ready copy of ``value``: pydantic models (SDK types) become dicts."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


def _json_text(value: Any) -> str | None:
    """Compact JSON text of ``value`` (no spaces, non-ASCII characters as they are), or
    ``None``.

    ``None`` means ``value`` cannot be written as JSON (a non-finite number, an object
    of unknown type, a cycle); the caller fails the call.
    """
    written = _json_written(value)
    return None if written is None else written[0]


NOT_PARSED: Final[Any] = object()
"""The second item of :func:`_json_written`'s answer when the text was not parsed."""


def _json_written(value: Any) -> tuple[str, Any] | None:
    """:func:`_json_text` of ``value`` with that text's parse by ``parse_json``
    (``NOT_PARSED`` if it was not parsed), or ``None``: it cannot be written as JSON.

    pydantic-core writes plain JSON values three times as fast as ``json.dumps``, in the
    same text but for the exponent of small numbers (``1e-7``, not ``1e-07``), and every
    call's text is parsed anyway. So its text is taken when parsing it gives back a value
    equal to ``value``, which leaves out what it writes and ``json.dumps`` refuses or
    writes otherwise (a date, a set, ``NaN``, a key that is not a string, a tuple); the
    parse goes with it, for a machine to take at ``ready`` (see
    :meth:`AdapterCallTable.append_parsed`). Anything else takes ``json.dumps``, which decides.
    """
    plain = _plain(value)
    try:
        text = to_json(plain).decode()
        parsed = parse_json(text)
        if type(parsed) is type(plain) and parsed == plain:
            return text, parsed
    except Exception:  # pure computation on the value (no sink): json.dumps decides
        pass
    try:
        text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return text, NOT_PARSED


def _usable_id(value: Any, max_chars: int) -> TypeGuard[str]:
    """Whether a provider-given call id can be the tracker id: a non-empty ``str`` of at
    most ``max_chars`` characters (the sink's ``Limits.max_id_chars``). Adapters treat any
    other id as missing (they synthesise one, or ignore the item where the id is all that
    routes it), so a hostile id fails nothing but its own call and never makes the tracker
    raise mid-stream."""
    return type(value) is str and 0 < len(value) <= max_chars


_CUT: Final = "...(cut)"


def _tool_name(name: str, max_chars: int) -> str:
    """``name``, or, when it is longer than ``max_chars`` (``Limits.max_name_chars``), its
    start followed by ``...(cut)``: a name no tool can have, so the call is kept (and fails
    when it is looked up) instead of making the tracker raise."""
    if len(name) <= max_chars:
        return name
    keep = max_chars - len(_CUT)
    return name[:keep] + _CUT if keep > 0 else _CUT[:max_chars]


class IdMinter:
    """The ids one stream has used; mints unique ids for calls that lack one.

    The minted id is the base the adapter derives from the call's position (documented per
    adapter); if the stream already used it, ``<sep>2``, ``<sep>3``... is appended (the
    smallest suffix still free), so replaying a stream gives the same ids and no id is
    handed out twice. An id is never longer than ``Limits.max_id_chars`` (the base is cut,
    the suffix kept); when no suffix fits at all, :meth:`mint` returns ``None``.

    Bounded like the machine's own memory of ids: the latest ``Limits.max_calls +
    Limits.remember_forgotten`` ids are remembered (as many as the machine can still
    track or remember as forgotten); an older one is forgotten here too.
    """

    __slots__ = ("_next", "_sep", "_used")

    def __init__(self, sep: str = "-") -> None:
        self._used: dict[str, None] = {}  # oldest first
        self._next: dict[str, int] = {}  # per base: the smallest suffix that may be free
        self._sep = sep

    def claim(self, call_id: str, limits: Limits) -> bool:
        """Record a provider-given id; ``False`` if this stream already used it."""
        if call_id in self._used:
            return False
        self._remember(call_id, limits)
        return True

    def mint(self, base: str, limits: Limits) -> str | None:
        """A new id derived from ``base``, recorded as used; ``None`` if none fits.

        Linear over a stream: the next suffix to try is remembered per base.
        """
        used = self._used
        max_chars = limits.max_id_chars
        candidate = base[:max_chars]
        if candidate in used:
            suffix = self._next.get(base, 2)
            while True:
                tail = f"{self._sep}{suffix}"
                if len(tail) > max_chars:
                    return None  # every id that fits is taken: the limit is too small
                candidate = base[: max_chars - len(tail)] + tail
                suffix += 1
                if candidate not in used:
                    break
            if len(self._next) >= limits.max_calls:
                self._next.clear()  # a hint only: the search stays correct without it
            self._next[base] = suffix
        self._remember(candidate, limits)
        return candidate

    def _remember(self, call_id: str, limits: Limits) -> None:
        used = self._used
        used[call_id] = None
        bound = limits.max_calls + limits.remember_forgotten
        while len(used) > bound:
            del used[next(iter(used))]


def _short(value: object, limit: int = 80) -> str:
    """A bounded ``repr`` for error messages (never raises): the core's, cut at 80."""
    return _bounded_repr(value, limit)
