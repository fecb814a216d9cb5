"""Small helpers the library's modules share (private).

- :func:`bounded_repr`: a ``repr`` for messages and logs that is bounded and never raises.
- :func:`construct`: ``Model.model_construct(...)`` for values already known to be valid,
  several times faster (snapshots, adapter events).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel


def bounded_repr(value: object, limit: int = 120) -> str:
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


def construct(cls: type[_ModelT], values: dict[str, Any], fields_set: set[str]) -> _ModelT:
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
