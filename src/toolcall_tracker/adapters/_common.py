"""Helpers shared by the Anthropic, Gemini and AI SDK adapters (private).

- :func:`_get`: read one field of a provider item that is either the official SDK's typed
  object (an attribute) or the plain dict decoded from the provider's JSON (a key, in
  snake_case or the camelCase some wire formats use).
- :class:`_IdMinter`: remembers the call ids a stream has used and synthesises stable,
  unique ids for calls that arrive without one.
- :func:`_json_text`: compact JSON text for an argument object that arrived whole.
- Event constructors (:func:`_delta` is the hot path, one per streamed fragment): each
  builds exactly the instance ``model_construct`` builds (same ``__dict__``, same
  fields-set, equal and hashing alike), several times faster, through the core's
  ``events._construct``. The adapters check the values first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final, TypeGuard

from pydantic import BaseModel

from .._support import bounded_repr as _bounded_repr
from .._support import construct as _construct
from ..events import Delta, End, Error, Ready, Result, Start
from ..limits import DEFAULT_LIMITS

logger: Final = logging.getLogger("toolcall_tracker.adapters")
"""Adapters log the provider items they ignore as malformed here, at DEBUG."""


_IS_MAPPING: dict[type, bool] = {}
"""Per item class: read fields by key (a mapping) or by attribute (an SDK object)."""


def _get(item: Any, name: str, camel: str | None = None) -> Any:
    """``item.name`` for an object, ``item[name]`` (or ``item[camel]``) for a mapping.

    Returns ``None`` when the field is absent (or ``item`` is ``None``). Never raises for
    a missing field; an object whose attribute access itself raises still raises, and the
    adapters catch that at their outer boundary.
    """
    kind = type(item)
    if kind is not dict:
        is_mapping = _IS_MAPPING.get(kind)
        if is_mapping is None:
            is_mapping = _IS_MAPPING[kind] = issubclass(kind, Mapping) and not issubclass(
                kind, BaseModel
            )
        if not is_mapping:
            return getattr(item, name, None)
    value = item.get(name)
    if value is None and camel is not None:
        value = item.get(camel)
    return value


def _plain(value: Any) -> Any:
    """A JSON-ready copy of ``value``: pydantic models (SDK types) become dicts."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


def _json_text(value: Any) -> str | None:
    """Compact JSON text of ``value`` (as ``JSON.stringify`` writes it), or ``None``.

    ``None`` means ``value`` cannot be written as JSON (a non-finite number, an object
    of unknown type, a cycle); the caller fails the call.
    """
    try:
        return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


_MAX_ID: Final = DEFAULT_LIMITS.max_id_chars


def _usable_id(value: Any) -> TypeGuard[str]:
    """Whether a provider-given call id can be the tracker id: a non-empty ``str`` within
    the default ``Limits.max_id_chars``. Adapters treat any other id as missing (they
    synthesise one, or ignore the item where the id is all that routes it), so a hostile
    id fails nothing but its own call and never makes the tracker raise mid-stream."""
    return type(value) is str and 0 < len(value) <= _MAX_ID


class _IdMinter:
    """The ids one stream has used; synthesises unique ids for calls that lack one.

    Rule: the synthetic id is the base the adapter derives from the call's position in
    the stream (documented per adapter); if a call of this stream already uses that id,
    ``-2``, ``-3``, ... is appended, the smallest suffix still free. Replaying the same
    stream therefore gives the same ids, and an id is never handed out twice.
    """

    __slots__ = ("_used",)

    def __init__(self) -> None:
        self._used: set[str] = set()

    def claim(self, call_id: str) -> bool:
        """Record a provider-given id; ``False`` if this stream already used it."""
        if call_id in self._used:
            return False
        self._used.add(call_id)
        return True

    def mint(self, base: str) -> str:
        """A new id derived from ``base`` (see the class docstring), recorded as used."""
        candidate = base
        suffix = 2
        while candidate in self._used:
            candidate = f"{base}-{suffix}"
            suffix += 1
        self._used.add(candidate)
        return candidate


def _delta(call_id: str, text: str) -> Delta:
    """``Delta.model_construct(id=call_id, args_text_delta=text)``, fast (hot path)."""
    return _construct(
        Delta, {"type": "delta", "id": call_id, "args_text_delta": text}, {"id", "args_text_delta"}
    )


def _start(call_id: str, name: str) -> Start:
    if len(name) > _MAX_NAME:  # hostile: keep the call, with a name no tool can have
        name = name[: _MAX_NAME - len(_CUT)] + _CUT
    return _construct(Start, {"type": "start", "id": call_id, "name": name}, {"id", "name"})


_MAX_NAME: Final = DEFAULT_LIMITS.max_name_chars
_CUT: Final = "...(cut)"


def _ready(call_id: str) -> Ready:
    return _construct(Ready, {"type": "ready", "id": call_id}, {"id"})


def _error(call_id: str, error: Any) -> Error:
    return _construct(Error, {"type": "error", "id": call_id, "error": error}, {"id", "error"})


def _result(call_id: str, value: Any) -> Result:
    return _construct(Result, {"type": "result", "id": call_id, "result": value}, {"id", "result"})


def _end(ok: bool, reason: str | None) -> End:
    return _construct(End, {"type": "end", "reason": reason, "ok": ok}, {"ok", "reason"})


def _short(value: object, limit: int = 80) -> str:
    """A bounded ``repr`` for error messages (never raises): the core's, cut at 80."""
    return _bounded_repr(value, limit)
