"""Arguments checked against an MCP tool's JSON Schema (private).

The ``mcp`` package depends on ``jsonschema``, so the ``[mcp]`` extra brings it: a call's
arguments are checked with the validator of the schema's own draft, compiled once per tool.
Failures are raised as a pydantic ``ValidationError`` (one line per problem, with its path),
which is what the runner reports as a ``validation`` failure for every tool. A schema the
validator cannot use (not a schema, or one it cannot compile) does not break anything: the
arguments must then only be an object, and the reason is logged once.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

logger: Final = logging.getLogger("toolcall_tracker.mcp")

_OBJECT: Final = {"type": "object"}


def compile_schema(schema: Any, tool: str) -> Any:
    """A ``jsonschema`` validator for ``schema`` (an object-only one if it is unusable)."""
    from jsonschema.validators import validator_for

    try:
        if not isinstance(schema, dict):
            raise TypeError(f"the schema is a {type(schema).__name__}, not an object")
        cls = validator_for(schema)
        cls.check_schema(schema)
        return cls(copy.deepcopy(schema))
    except Exception as exc:  # a server's schema is hostile input: never fatal
        logger.warning(
            "MCP tool %r: unusable input schema (%s); only an object is required",
            tool,
            type(exc).__name__,
        )
        return validator_for(_OBJECT)(_OBJECT)


def check(validator: Any, arguments: Any, tool: str) -> None:
    """Raise a ``ValidationError`` listing what in ``arguments`` the schema rejects."""
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        lines = [_line(list(e.absolute_path), e.message, e.validator, e.instance) for e in errors]
    except Exception as exc:  # a schema the validator chokes on (a cycle, deep nesting)
        lines = [
            _line(
                [], f"the arguments could not be checked: {type(exc).__name__}", "schema", arguments
            )
        ]
    if lines:
        raise ValidationError.from_exception_data(tool, lines)


def _line(path: list[Any], message: str, keyword: Any, value: Any) -> InitErrorDetails:
    kind = f"json_schema_{keyword}" if isinstance(keyword, str) else "json_schema"
    return InitErrorDetails(
        type=PydanticCustomError(kind, "{message}", {"message": _short(message)}),
        loc=tuple(p if isinstance(p, (int, str)) else str(p) for p in path),
        input=value,
    )


def _short(message: str, limit: int = 300) -> str:
    """A message of at most ``limit`` characters (jsonschema quotes the rejected value)."""
    return message if len(message) <= limit else message[: limit - 3] + "..."
