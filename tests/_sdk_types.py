"""Checking what the library returns against the provider SDKs' request types (not a test
module): the tool definitions and the feedback messages must be sendable as they are."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter


def materialize(value: Any) -> Any:
    """Consume pydantic's lazy ``Iterable`` validators, so every item is validated."""
    if isinstance(value, dict):
        return {key: materialize(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, Iterator)):
        return [materialize(item) for item in value]
    return value


@functools.cache
def adapter(annotation: Any) -> TypeAdapter[Any]:
    """One ``TypeAdapter`` per SDK type (building one for a big union takes a while)."""
    return TypeAdapter(annotation)


def check_typed(annotation: Any, value: Any) -> None:
    """``value`` validates as ``annotation`` and no key is dropped on the way."""
    validated = materialize(adapter(annotation).validate_python(value))
    assert validated == materialize(value)
