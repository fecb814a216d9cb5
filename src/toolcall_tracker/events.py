"""The wire protocol: the events a model stream is made of, and the call snapshots.

Six event types make up a stream. Five concern one tool call each, named by ``id``:

==========  =====================================  ==========================================
``type``    fields                                 meaning
==========  =====================================  ==========================================
``start``   ``id``, ``name``                       a call to tool ``name`` is announced
``delta``   ``id``, ``argsTextDelta``              a fragment of the call's argument JSON
``ready``   ``id``                                 the arguments are complete: parse them
``result``  ``id``, ``result``                     the tool returned ``result``
``error``   ``id``, ``error``                      the call failed with ``error``
``end``     ``reason`` (optional), ``ok``          the model's turn is over (stream level)
==========  =====================================  ==========================================

Every place that accepts an event accepts either one of the models below or a plain
mapping in the wire shape (``{"type": "delta", "id": "t1", "argsTextDelta": "{\\"q\\":"}``;
the snake_case field name ``args_text_delta`` works too). :func:`parse_event` is the one
function that turns such input into a model, raising :class:`~toolcall_tracker.InvalidEvent`
for anything malformed.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Annotated, Any, Literal, TypeAlias, TypeVar, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import InvalidEvent

__all__ = [
    "Delta",
    "End",
    "Error",
    "Event",
    "EventInput",
    "Ready",
    "Result",
    "Start",
    "Status",
    "ToolCall",
    "parse_event",
]

_EVENT_CONFIG = ConfigDict(frozen=True, strict=True, populate_by_name=True, extra="ignore")


def _non_empty(value: str) -> str:
    if not value:
        raise ValueError("an id should have at least 1 character")
    return value


# Not Field(min_length=1): that makes pydantic-core convert the text to UTF-8 and refuse a
# lone surrogate, which every other text field (and the hand-checked fast paths) accepts.
_Id = Annotated[
    str,
    AfterValidator(_non_empty),
    Field(description="The call's id, unique within a stream."),
]


class Start(BaseModel):
    """A tool call is announced: ``{"type": "start", "id": ..., "name": ...}``."""

    model_config = _EVENT_CONFIG
    type: Literal["start"] = "start"
    id: _Id
    name: str = Field(description="The name of the tool being called.")


class Delta(BaseModel):
    """A fragment of a call's argument JSON text, appended in arrival order."""

    model_config = _EVENT_CONFIG
    type: Literal["delta"] = "delta"
    id: _Id
    args_text_delta: str = Field(alias="argsTextDelta")


class Ready(BaseModel):
    """The call's arguments are complete: the accumulated text is parsed as JSON."""

    model_config = _EVENT_CONFIG
    type: Literal["ready"] = "ready"
    id: _Id


class Result(BaseModel):
    """The tool ran and returned ``result`` (any value)."""

    model_config = _EVENT_CONFIG
    type: Literal["result"] = "result"
    id: _Id
    result: Any


class Error(BaseModel):
    """The call failed; ``error`` (any value) says why."""

    model_config = _EVENT_CONFIG
    type: Literal["error"] = "error"
    id: _Id
    error: Any


class End(BaseModel):
    """The model's turn is over (a stream-level event, no ``id``).

    ``ok`` says whether the turn ended normally (``finish_reason`` ``tool_calls``/``stop``,
    ``stop_reason`` ``tool_use``/``end_turn``) or was cut short (``length``,
    ``content_filter``, ``max_tokens``, a source that raised, a cancelled consumer).
    """

    model_config = _EVENT_CONFIG
    type: Literal["end"] = "end"
    reason: str | None = None
    ok: bool = True


Event: TypeAlias = Annotated[
    Union[Start, Delta, Ready, Result, Error, End],  # noqa: UP007 (a runtime union is needed)
    Field(discriminator="type"),
]
"""Any of the six event models, discriminated by ``type``."""

EventInput: TypeAlias = Union[Start, Delta, Ready, Result, Error, End, Mapping[str, Any]]  # noqa: UP007
"""What :meth:`apply` accepts: an event model or a mapping in the wire shape."""

_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)
_EVENT_MODELS = (Start, Delta, Ready, Result, Error, End)
_KNOWN_TYPES = frozenset({"start", "delta", "ready", "result", "error", "end"})


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"][1:] if p != "function-after")
        where = f"field {loc!r}" if loc else "the event"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_event(event: object) -> Start | Delta | Ready | Result | Error | End | None:
    """Turn ``event`` (a model or a wire-shape mapping) into an event model.

    Returns ``None`` for a mapping whose ``type`` is a string this library does not know
    (forward compatibility: such events are ignored and reported, not raised).

    Raises:
        InvalidEvent: ``event`` is not a mapping or a model, or it is malformed (missing
            ``id``, a fragment that is not a string, ...). The message names the problem.
    """
    if isinstance(event, _EVENT_MODELS):
        return event
    if not isinstance(event, Mapping):
        raise InvalidEvent(
            f"an event must be an event model or a mapping, not {type(event).__name__}: "
            f"{_short(event)}",
            event,
        )
    try:
        kind = event.get("type")
        fields = dict(event)
    except Exception as exc:  # a hostile Mapping: its own methods raise
        raise InvalidEvent(
            f"the event mapping could not be read ({type(exc).__name__}: {_short(exc)}): "
            f"{_short(event)}",
            event,
        ) from None
    if not isinstance(kind, str):
        raise InvalidEvent(
            f"an event mapping needs a string 'type' (one of {sorted(_KNOWN_TYPES)}), "
            f"got {_short(kind)}: {_short(event)}",
            event,
        )
    if kind not in _KNOWN_TYPES:
        return None
    return _validate(kind, fields, event)


def _validate(
    kind: str, fields: dict[str, Any], event: object
) -> Start | Delta | Ready | Result | Error | End:
    try:
        parsed: Start | Delta | Ready | Result | Error | End = _EVENT_ADAPTER.validate_python(
            fields
        )
        return parsed
    except ValidationError as exc:
        raise InvalidEvent(f"invalid {kind!r} event: {_describe(exc)}", event) from None


def _short(value: object, limit: int = 120) -> str:
    """A bounded ``repr`` for messages and logs; never raises."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real problem
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_new = object.__new__
_set_attribute = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_ModelT = TypeVar("_ModelT", bound=BaseModel)


def _construct(cls: type[_ModelT], values: dict[str, Any], fields_set: set[str]) -> _ModelT:
    """``cls.model_construct(...)`` for values already known to be valid, several times faster.

    ``values`` must hold every field (defaults included), exactly as ``model_construct``
    would store them; ``fields_set`` the fields given explicitly. The instance is equal to,
    and hashes like, the one ``model_construct`` builds. For the library's own hot paths
    (snapshots, events built by adapters), never for input from outside.
    """
    instance: _ModelT = _new(cls)
    _set_attribute(instance, "__dict__", values)
    _set_fields_set(instance, fields_set)
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


_MISSING: Any = object()
_PAYLOAD_FIELD: dict[str, str | None] = {
    "start": "name",
    "delta": "args_text_delta",
    "ready": None,
    "result": "result",
    "error": "error",
}


def _decode(event: object) -> tuple[str, Any, Any] | None:
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
    model = parse_event(event)
    if model is None:
        return None
    if isinstance(model, End):
        if not (type(model.ok) is bool and (model.reason is None or type(model.reason) is str)):
            _revalidate(model)
        return "end", None, model
    kind, call_id = model.type, getattr(model, "id", None)
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
    _validate(kind, model.model_dump(warnings=False), model)
    raise InvalidEvent(f"invalid {kind!r} event: {_short(model)}", model)  # pragma: no cover


class Status(str, Enum):
    """Where a call is in its life: ``pending -> running -> done``, or ``error``.

    Members compare equal to their string values (``Status.RUNNING == "running"``).
    """

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class ToolCall(BaseModel):
    """An immutable snapshot of one call.

    ``args`` is set once the arguments parsed (status ``running`` or ``done``);
    ``result`` once the call is ``done``; ``error`` once it is ``error``.
    ``call.model_dump(by_alias=True)`` gives the wire shape (camelCase ``argsText``).
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    id: str
    name: str
    args_text: str = Field("", alias="argsText")
    args: Any = None
    status: Status = Status.PENDING
    result: Any = None
    error: Any = None
