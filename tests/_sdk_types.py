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


@functools.cache
def _converse_shape() -> Any:
    import pytest

    session = pytest.importorskip("botocore.session")
    model = session.get_session().get_service_model("bedrock-runtime")
    return model.operation_model("Converse").input_shape


def check_converse(messages: Any = (), tools: Any = None) -> None:
    """``messages`` (and ``tools``, the ``toolConfig["tools"]``) make a valid Bedrock
    ``Converse`` request by botocore's own model of it (skips without botocore)."""
    import botocore.validate

    params: dict[str, Any] = {"modelId": "model", "messages": list(messages)}
    if tools is not None:
        params["toolConfig"] = {"tools": tools}
    report = botocore.validate.ParamValidator().validate(params, _converse_shape())
    assert not report.has_errors(), report.generate_report()


def check_cohere(annotation_name: str, value: Any) -> None:
    """``value`` validates as the ``cohere`` SDK's type of that name (``ChatMessageV2``,
    ``ToolV2``) and dumps back unchanged: no key dropped (skips without cohere)."""
    import pytest

    cohere = pytest.importorskip("cohere")
    validated = adapter(getattr(cohere, annotation_name)).validate_python(value)
    assert validated.model_dump(mode="json", exclude_none=True) == value
