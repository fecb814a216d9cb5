"""The wire protocol: the events a model stream is made of.

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
from typing import Annotated, Any, Literal, TypeAlias, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ._support import bounded_repr as _short
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
    # validation_alias, not alias: type checkers then see ``Delta(args_text_delta=...)`` as
    # the constructor's keyword (plain mypy, no plugin); both names validate at run time.
    args_text_delta: str = Field(
        validation_alias="argsTextDelta", serialization_alias="argsTextDelta"
    )


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
