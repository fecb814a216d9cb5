"""From a function to a tool's argument model: signature, docstring and JSON Schema.

Private machinery of :mod:`toolcall_tracker.tools`: :func:`_build_arguments` turns a
signature into a pydantic model, :func:`_parse_docstring` reads the description and the
per-parameter docs, :func:`_json_schema` renders the model's JSON Schema for the providers.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from ._jsonout import _jsonable, _type_name
from ._toolcontext import ToolContext


def _is_async_callable(function: object) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004 (an object with async __call__)
    return call is not None and inspect.iscoroutinefunction(call)


def _build_arguments(
    function: Callable[..., Any], name: str, docs: Mapping[str, str]
) -> tuple[type[BaseModel], tuple[str, ...], int, bool, str | None]:
    """The argument model, the parameter names, how many are positional-only, whether
    extra keys are passed through as ``**kwargs``, and the name of the parameter annotated
    ``ToolContext`` (left out of the model), if any.

    Fields are named ``p0``, ``p1``... with the parameter names as aliases, so a parameter
    called ``schema`` or ``model_config`` cannot clash with pydantic's own attributes.
    """
    try:
        signature = inspect.signature(function, eval_str=True)
    except NameError:  # a forward reference pydantic may still resolve from the module
        signature = inspect.signature(function)
    except ValueError as exc:
        raise TypeError(f"cannot read the signature of tool {name!r}: {exc}") from None
    fields: dict[str, Any] = {}
    names: list[str] = []
    positional = 0
    var_keyword = False
    context: str | None = None
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            continue  # *args cannot be filled from an argument object
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            positional += 1
        annotation = (
            Any if parameter.annotation is inspect.Parameter.empty else parameter.annotation
        )
        if _is_context(annotation):
            context = _context_parameter(parameter, name, context)
            continue
        options: dict[str, Any] = {"alias": parameter.name}
        if parameter.name in docs and not _has_description(annotation):
            options["description"] = docs[parameter.name]
        if parameter.default is not inspect.Parameter.empty:
            options["default"] = parameter.default
        info = Field(**options)
        fields[f"p{len(names)}"] = (annotation, info)
        names.append(parameter.name)
    config = ConfigDict(extra="allow" if var_keyword else "forbid")
    module = getattr(function, "__module__", None)
    try:
        model: type[BaseModel] = create_model(
            f"{name}_arguments", __config__=config, __module__=module or __name__, **fields
        )
    except Exception as exc:  # pydantic cannot build a schema for an annotation
        raise TypeError(f"cannot build an argument model for tool {name!r}: {exc}") from exc
    return model, tuple(names), positional, var_keyword, context


_CONTEXT_TEXT = re.compile(r"(?:\w+\.)*ToolContext\b")


def _is_context(annotation: object) -> bool:
    """Whether a parameter asks for the :class:`ToolContext` (``ToolContext``,
    ``ToolContext[Deps]``, ``ToolContext | None``, or such an annotation left as a string)."""
    if isinstance(annotation, str):
        return _CONTEXT_TEXT.match(annotation.strip()) is not None
    if annotation is ToolContext or get_origin(annotation) is ToolContext:
        return True
    if get_origin(annotation) in (Union, UnionType):  # ``ToolContext | None = None``
        return any(_is_context(arg) for arg in get_args(annotation) if arg is not type(None))
    return False


def _context_parameter(parameter: inspect.Parameter, name: str, seen: str | None) -> str:
    if seen is not None:
        raise TypeError(
            f"tool {name!r} declares two ToolContext parameters ({seen!r} and "
            f"{parameter.name!r}): declare one"
        )
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise TypeError(
            f"tool {name!r}: the ToolContext parameter {parameter.name!r} is positional-only; "
            "the runner passes it by name, so declare it as an ordinary or keyword-only "
            "parameter"
        )
    return parameter.name


def _has_description(annotation: object) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    return any(
        isinstance(meta, FieldInfo) and meta.description is not None
        for meta in get_args(annotation)[1:]
    )


_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Yields?|"
    r"Raises|Examples?|Notes?|Attributes|See Also|Warnings?|Todo)\s*:\s*$"
)
_ARG_SECTIONS = {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_REST_FIELD = re.compile(r"^:\w+")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (text before the first section) and per-parameter descriptions.

    Understands Google-style sections (``Args:`` with ``name: text`` or
    ``name (type): text`` entries, continuation lines indented deeper) and reST
    ``:param name: text`` lines.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent = -1
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        header = _SECTION.match(line) if indent == 0 else None
        if header:
            section, current, entry_indent = header[1], None, -1
            continue
        rest = _REST_PARAM.match(stripped)
        if rest:
            section, current = ":param", rest[1]
            params[current] = rest[2].strip()
            continue
        if _REST_FIELD.match(stripped):  # :returns:, :raises X:, :type x: ...
            section, current = "", None
            continue
        if section is None:
            summary.append(line)
            continue
        if section == ":param":
            if stripped and current is not None and indent > 0:
                params[current] = f"{params[current]} {stripped}".strip()
            elif stripped:
                section, current = "", None
            continue
        if section not in _ARG_SECTIONS or not stripped:
            continue
        match = _ARG_LINE.match(stripped)
        if match and (entry_indent < 0 or indent <= entry_indent):
            entry_indent = indent
            current = match[1]
            params[current] = match[2].strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(summary).strip(), params


_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


def _clean_schema(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` keywords (noise for a model), keeping everything
    else; property names are never mistaken for keywords."""
    if isinstance(schema, list):
        return [_clean_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _clean_schema(sub) for name, sub in value.items()}
        elif key in ("default", "const", "enum", "examples"):
            cleaned[key] = value
        else:
            cleaned[key] = _clean_schema(value)
    return cleaned


class _SafeDefaults(GenerateJsonSchema):
    """pydantic's schema generator, except that a default it cannot handle never raises.

    pydantic leaves a default it cannot encode out of the schema, with a warning; but it
    formats the default with ``str`` for that warning (and sorts a set default), so a
    default whose ``__str__`` or ``__lt__`` raises escaped. Such a default is left out too.
    """

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        try:
            return super().default_schema(schema)
        except Exception:
            self.emit_warning(
                "non-serializable-default",
                f"Default value of type {_type_name(schema.get('default'))} is not JSON "
                "serializable; excluding default from JSON schema",
            )
            return self.generate_inner(schema["schema"])


def _json_schema(model: type[BaseModel]) -> Any:
    """The argument model's JSON Schema as the providers get it: no generated titles, and
    JSON-ready by the output rules (a NaN default is ``null``, a lone surrogate in a
    description is U+FFFD...), so no SDK refuses to send it."""
    schema = model.model_json_schema(
        by_alias=True, mode="validation", schema_generator=_SafeDefaults
    )
    return _jsonable(_clean_schema(schema))
