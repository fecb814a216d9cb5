"""Reading an event without building a model: the machine's hot path (private).

And the way back, for the machine's ``write_*`` methods, which take an event's fields
without a model: :func:`wire`, the mapping to validate or show in an error, and
:func:`reported`, the model to report when such an event is ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ._support import bounded_repr as _short
from ._support import construct
from .errors import InvalidEvent
from .events import Delta, End, Error, Ready, Result, Start, parse_event

_MISSING: Any = object()
_PAYLOAD_FIELD: dict[str, str | None] = {
    "start": "name",
    "delta": "args_text_delta",
    "ready": None,
    "result": "result",
    "error": "error",
}


def decode(event: object) -> tuple[str, Any, Any] | None:
    """The hot path of :func:`parse_event`: ``(type, id, payload)`` without building a model.

    ``payload`` is the event's one field (``name``, the fragment, ``result``, ``error``;
    ``None`` for ready; the :class:`End` model itself for end, whose id is ``None``).
    A well-formed plain ``dict`` is checked by hand; anything else, or anything the hand
    check is unsure of, goes through :func:`parse_event`, which is the authority and
    produces the error messages. Returns ``None`` for an unknown ``type``.
    """
    if type(event) is dict:
        kind = event.get("type")
        call_id = event.get("id")
        if type(call_id) is str and call_id:
            if kind == "delta":
                fragment = event.get("argsTextDelta", _MISSING)
                if fragment is _MISSING:
                    fragment = event.get("args_text_delta")
                if type(fragment) is str:
                    return kind, call_id, fragment
            elif kind == "start":
                name = event.get("name")
                if type(name) is str:
                    return kind, call_id, name
            elif kind == "ready":
                return kind, call_id, None
            elif kind == "result" or kind == "error":
                payload = event.get(kind, _MISSING)
                if payload is not _MISSING:
                    return kind, call_id, payload
        elif kind == "end" and "id" not in event:
            ok = event.get("ok", True)
            reason = event.get("reason")
            if type(ok) is bool and (reason is None or type(reason) is str):
                return kind, None, End(ok=ok, reason=reason)
    else:
        spec = _MODEL_FIELD.get(type(event))
        if spec is not None:  # a call's event model, of the class exactly
            kind, name = spec
            values = event.__dict__  # (a model's fields: no property or __getattr__)
            call_id = values.get("id")
            payload = None if name is None else values.get(name, _MISSING)
            if (
                type(call_id) is str
                and call_id
                and values.get("type") == kind  # (model_construct may have set another)
                and payload is not _MISSING
                and (type(payload) is str if kind in _TEXT_PAYLOAD else True)
            ):
                return kind, call_id, payload
    model = parse_event(event)  # (the authority, for anything the checks above doubt)
    if model is None:
        return None
    if isinstance(model, End):
        if not (type(model.ok) is bool and (model.reason is None or type(model.reason) is str)):
            _revalidate(model)
        return "end", None, model
    kind, call_id = model.type, getattr(model, "id", None)
    if type(kind) is not str or kind not in _PAYLOAD_FIELD:  # model_construct broke the type
        _revalidate(model)
    field = _PAYLOAD_FIELD[kind]
    payload = None if field is None else getattr(model, field, _MISSING)
    if payload is _MISSING:  # model_construct left a required field out
        _revalidate(model)
    if not (
        type(call_id) is str
        and call_id
        and (type(payload) is str if kind in _TEXT_PAYLOAD else True)
    ):
        _revalidate(model)
    return kind, call_id, payload


_TEXT_PAYLOAD = frozenset({"start", "delta"})


def _revalidate(model: BaseModel) -> None:
    """A model built without validation (``model_construct``) broke its own types."""
    kind = getattr(model, "type", "?")
    try:
        parse_event(model.model_dump(warnings=False))
    except InvalidEvent as exc:
        raise InvalidEvent(str(exc), model) from None
    raise InvalidEvent(f"invalid {kind!r} event: {_short(model)}", model)  # pragma: no cover


_WIRE_KEY: dict[str, str] = {
    "start": "name",
    "delta": "argsTextDelta",
    "result": "result",
    "error": "error",
}
_MODELS: dict[str, type[BaseModel]] = {
    "start": Start,
    "delta": Delta,
    "ready": Ready,
    "result": Result,
    "error": Error,
}


def wire(kind: str, call_id: Any, payload: Any) -> dict[str, Any]:
    """The wire-shape mapping of a written event (validated by ``apply``, shown in errors)."""
    event: dict[str, Any] = {"type": kind, "id": call_id}
    key = _WIRE_KEY.get(kind)
    if key is not None:
        event[key] = payload
    return event


# Per event model class (exactly: a subclass may redefine anything): its type and the
# field that is its payload.
_MODEL_FIELD: dict[type, tuple[str, str | None]] = {
    model: (kind, _PAYLOAD_FIELD[kind]) for kind, model in _MODELS.items()
}


def reported(event: object, kind: str, call_id: Any, payload: Any) -> Any:
    """What to report for an ignored event: the input itself, or for a written (validated)
    event its model, built only now."""
    if event is not None:
        return event
    if kind == "end":
        return payload
    values: dict[str, Any] = {"type": kind, "id": call_id}
    field = _PAYLOAD_FIELD.get(kind)
    if field is not None:
        values[field] = payload
    return construct(_MODELS[kind], values, set(values) - {"type"})
