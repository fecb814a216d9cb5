"""Tools: plain Python functions, their argument validation and their provider definitions.

A tool is any function, sync or async. Its name is the function's ``__name__``, its
description the docstring's text before the first section (``Args:``, ``Returns:``...), and
its parameters come from the signature: annotations (``int``, ``list[str]``, pydantic models,
``Annotated[str, Field(description=...)]``, ``Literal``...), defaults for optional ones, and
per-parameter descriptions from a Google-style ``Args:`` section (or ``:param name:`` lines).
From that signature :class:`Tool` builds, once, a pydantic model that validates a call's
arguments and gives the JSON Schema the providers need.

:func:`tool` wraps a function to set options (name, description, eager, timeout); the
functions ``openai_chat_tools``, ``openai_responses_tools``, ``anthropic_tools`` and
``gemini_tools`` render one list of tools in each provider's request format::

    @tool(eager=True)
    async def search(query: str, limit: int = 5) -> list[str]:
        \"\"\"Search the web.

        Args:
            query: what to look for.
            limit: at most this many results.
        \"\"\"

    client.chat.completions.create(..., tools=openai_chat_tools([search, send_mail]))
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from typing import (
    Annotated,
    Any,
    Generic,
    ParamSpec,
    TypeAlias,
    TypeVar,
    get_args,
    get_origin,
    overload,
)

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

__all__ = [
    "Tool",
    "ToolsInput",
    "anthropic_tools",
    "gemini_tools",
    "openai_chat_tools",
    "openai_responses_tools",
    "tool",
    "tools_by_name",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Tool(Generic[_P, _R]):
    """A function prepared for tool calls: its name, description, options and validator.

    Build one with :func:`tool` (or ``Tool(fn)``); the argument model and JSON Schema are
    built once, here. A ``Tool`` is callable like the function it wraps, so decorating a
    function with ``@tool`` does not change how your own code calls it.

    Args:
        function: the tool, a sync or async callable.
        name: the name the model calls it by (default: ``function.__name__``). Providers
            accept 1-64 letters, digits, ``_`` and ``-``.
        description: what the tool does, for the model (default: from the docstring).
        eager: ``True`` to run the tool the moment its call is ready, ``False`` to wait
            until the turn is known to have ended normally, ``None`` (default) to use the
            runner's default (gated).
        timeout: seconds this tool may run per call (default: the runner's ``call_timeout``).

    Raises:
        ValueError: the name is not a valid tool name, or ``timeout`` is not positive.
        TypeError: the signature cannot be turned into an argument model.
    """

    __slots__ = (
        "_arguments",
        "_description",
        "_eager",
        "_function",
        "_is_async",
        "_name",
        "_parameters",
        "_positional",
        "_schema",
        "_timeout",
        "_var_keyword",
    )

    def __init__(
        self,
        function: Callable[_P, _R],
        *,
        name: str | None = None,
        description: str | None = None,
        eager: bool | None = None,
        timeout: float | None = None,
    ) -> None:
        if isinstance(function, Tool):
            raise TypeError("function is already a Tool; use tool(existing, ...) to change it")
        tool_name = name if name is not None else getattr(function, "__name__", None)
        if not isinstance(tool_name, str) or not _NAME.match(tool_name):
            raise ValueError(
                f"invalid tool name {tool_name!r}: use 1-64 letters, digits, '_' or '-' "
                "(pass name=... for lambdas and callables without a usable __name__)"
            )
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        summary, param_docs = _parse_docstring(inspect.getdoc(function))
        self._function = function
        self._name = tool_name
        self._description = summary if description is None else description
        self._eager = eager
        self._timeout = timeout
        self._is_async = _is_async_callable(function)
        model, parameters, positional, var_keyword = _build_arguments(
            function, tool_name, param_docs
        )
        self._arguments = model
        self._parameters = parameters
        self._positional = positional
        self._var_keyword = var_keyword
        self._schema = _clean_schema(model.model_json_schema(by_alias=True, mode="validation"))

    # -- read-only attributes -----------------------------------------------------------

    @property
    def function(self) -> Callable[_P, _R]:
        """The wrapped function."""
        return self._function

    @property
    def name(self) -> str:
        """The tool's name, as the model calls it."""
        return self._name

    @property
    def description(self) -> str:
        """What the tool does, for the model (may be empty)."""
        return self._description

    @property
    def eager(self) -> bool | None:
        """``True`` eager, ``False`` gated, ``None`` the runner's default."""
        return self._eager

    @property
    def timeout(self) -> float | None:
        """Seconds the tool may run per call, or ``None`` for the runner's default."""
        return self._timeout

    @property
    def is_async(self) -> bool:
        """Whether the tool is awaited on the event loop (else it runs in a worker thread)."""
        return self._is_async

    @property
    def arguments_model(self) -> type[BaseModel]:
        """The pydantic model that validates the argument object (built once)."""
        return self._arguments

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the argument object (a fresh copy on each access)."""
        return copy.deepcopy(self._schema)

    # -- use ----------------------------------------------------------------------------

    def bind(self, arguments: object) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Validate a call's parsed arguments; return ``(args, kwargs)`` for the function.

        Raises:
            pydantic.ValidationError: the arguments do not fit the signature (``loc`` of
                each error uses the parameter names).
        """
        validated = self._arguments.model_validate(arguments)
        values = validated.__dict__
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for index, parameter in enumerate(self._parameters):
            value = values[f"p{index}"]
            if index < self._positional:
                args.append(value)
            else:
                kwargs[parameter] = value
        if self._var_keyword and validated.model_extra:
            kwargs.update(validated.model_extra)
        return tuple(args), kwargs

    def with_options(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        eager: bool | None = None,
        timeout: float | None = None,
    ) -> Tool[_P, _R]:
        """A copy of this tool with the given options changed (``None`` keeps the current)."""
        return Tool(
            self._function,
            name=self._name if name is None else name,
            description=self._description if description is None else description,
            eager=self._eager if eager is None else eager,
            timeout=self._timeout if timeout is None else timeout,
        )

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Call the wrapped function directly (no validation)."""
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        mode = {True: "eager", False: "gated", None: "default"}[self._eager]
        return f"<Tool {self._name!r} ({'async' if self._is_async else 'sync'}, {mode})>"


ToolsInput: TypeAlias = (
    Iterable[Callable[..., Any] | Tool[..., Any]]
    | Mapping[str, Callable[..., Any] | Tool[..., Any]]
)
"""Tools as accepted everywhere: an iterable of functions/:class:`Tool` (named by their own
names) or a mapping ``name -> function or Tool`` (the key is the name)."""


@overload
def tool(
    function: Callable[_P, _R],
    *,
    name: str | None = None,
    description: str | None = None,
    eager: bool | None = None,
    timeout: float | None = None,
) -> Tool[_P, _R]: ...


@overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    eager: bool | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[_P, _R]], Tool[_P, _R]]: ...


def tool(
    function: Callable[_P, _R] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    eager: bool | None = None,
    timeout: float | None = None,
) -> Tool[_P, _R] | Callable[[Callable[_P, _R]], Tool[_P, _R]]:
    """Declare a tool and its options; usable as ``tool(fn, ...)``, ``@tool`` or ``@tool(...)``.

    Args:
        function: the function (omit it to get a decorator).
        name: the tool's name (default: the function's ``__name__``).
        description: the tool's description (default: from the docstring).
        eager: ``True`` for a read-only or idempotent tool that may start as soon as its
            call is ready; ``False`` for a gated tool that runs only once the turn ended
            normally; ``None`` (default) for the runner's default, which is gated.
        timeout: seconds each call of this tool may run (overrides the runner's
            ``call_timeout``).

    Returns:
        A :class:`Tool` (or a decorator making one). Given a :class:`Tool`, returns a copy
        with the options changed.
    """

    def make(fn: Callable[_P, _R]) -> Tool[_P, _R]:
        if isinstance(fn, Tool):
            existing: Tool[_P, _R] = fn
            return existing.with_options(
                name=name, description=description, eager=eager, timeout=timeout
            )
        return Tool(fn, name=name, description=description, eager=eager, timeout=timeout)

    if function is None:
        return make
    return make(function)


def tools_by_name(tools: ToolsInput) -> dict[str, Tool[..., Any]]:
    """Normalise tools to ``{name: Tool}``, building a :class:`Tool` for plain functions.

    Raises:
        ValueError: two tools have the same name, or a name is invalid.
        TypeError: an entry is not callable.
    """
    result: dict[str, Tool[..., Any]] = {}
    if isinstance(tools, Mapping):
        items: Iterable[tuple[str | None, Any]] = tools.items()
    else:
        items = ((None, entry) for entry in tools)
    for key, entry in items:
        if not callable(entry):
            raise TypeError(f"a tool must be callable, not {type(entry).__name__}: {entry!r}")
        if isinstance(entry, Tool):
            spec: Tool[..., Any] = (
                entry if key in (None, entry.name) else entry.with_options(name=key)
            )
        else:
            spec = Tool(entry, name=key)
        if spec.name in result:
            raise ValueError(f"two tools are named {spec.name!r}")
        result[spec.name] = spec
    return result


# -- provider tool definitions ------------------------------------------------------------


def openai_chat_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """OpenAI Chat Completions ``tools``: ``{"type": "function", "function": {...}}`` each.

    Valid ``openai.types.chat.ChatCompletionToolParam`` values.
    """
    out: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        function: dict[str, Any] = {"name": spec.name}
        if spec.description:
            function["description"] = spec.description
        function["parameters"] = spec.parameters
        out.append({"type": "function", "function": function})
    return out


def openai_responses_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """OpenAI Responses ``tools``: ``{"type": "function", "name": ..., "parameters": ...}``.

    ``strict`` is ``False`` (strict mode needs every property required). Valid
    ``openai.types.responses.FunctionToolParam`` values.
    """
    out: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        entry: dict[str, Any] = {"type": "function", "name": spec.name}
        if spec.description:
            entry["description"] = spec.description
        entry["parameters"] = spec.parameters
        entry["strict"] = False
        out.append(entry)
    return out


def anthropic_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Anthropic Messages ``tools``: ``{"name", "description", "input_schema"}`` each.

    Valid ``anthropic.types.ToolParam`` values.
    """
    out: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        entry: dict[str, Any] = {"name": spec.name}
        if spec.description:
            entry["description"] = spec.description
        entry["input_schema"] = spec.parameters
        out.append(entry)
    return out


def gemini_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Gemini ``tools``: one tool holding a function declaration per function.

    Returns ``[{"function_declarations": [{"name", "description",
    "parameters_json_schema"}, ...]}]``, valid ``google.genai.types.Tool`` values (the
    JSON Schema goes in ``parameters_json_schema``, which accepts ``$ref``/``$defs``).
    """
    declarations: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        entry: dict[str, Any] = {"name": spec.name}
        if spec.description:
            entry["description"] = spec.description
        entry["parameters_json_schema"] = spec.parameters
        declarations.append(entry)
    return [{"function_declarations": declarations}]


# -- internals ------------------------------------------------------------------------------


def _is_async_callable(function: object) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004 (an object with async __call__)
    return call is not None and inspect.iscoroutinefunction(call)


def _build_arguments(
    function: Callable[..., Any], name: str, docs: Mapping[str, str]
) -> tuple[type[BaseModel], tuple[str, ...], int, bool]:
    """The argument model, the parameter names, how many are positional-only, and whether
    extra keys are passed through as ``**kwargs``.

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
    return model, tuple(names), positional, var_keyword


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
