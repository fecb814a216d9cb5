"""Tools: plain Python functions, their argument validation and their provider definitions.

A tool is any function, sync or async, or an async generator function (each value it
yields is a progress update, the last one its result). Its name is the function's ``__name__``, its
description the docstring's text before the first section (``Args:``, ``Returns:``...), and
its parameters come from the signature: annotations (``int``, ``list[str]``, pydantic models,
``Annotated[str, Field(description=...)]``, ``Literal``...), defaults for optional ones, and
per-parameter descriptions from a Google-style ``Args:`` section (or ``:param name:`` lines).
From that signature :class:`Tool` builds, once, a pydantic model that validates a call's
arguments and gives the JSON Schema the providers need.

:func:`tool` wraps a function to set its options (name, description, eager, timeout,
needs_approval, max_concurrency, sequential, idempotent: the fields of
:class:`ToolSettings`, the one frozen value that holds and checks them); the
functions ``openai_chat_tools``, ``openai_responses_tools``, ``anthropic_tools``,
``gemini_tools``, ``bedrock_tools`` (Bedrock Converse) and ``cohere_tools`` (Cohere v2)
render one list of tools in each provider's request format::

    @tool(eager=True)
    async def search(query: str, limit: int = 5) -> list[str]:
        \"\"\"Search the web.

        Args:
            query: what to look for.
            limit: at most this many results.
        \"\"\"

    client.chat.completions.create(..., tools=openai_chat_tools([search, send_mail]))

A parameter annotated ``ToolContext`` (``ToolContext[Deps]``) is left out of the schema:
the runner passes the call's :class:`ToolContext` there (its id, the run's ``deps``,
progress, a ``cancelled`` flag). A tool raises :class:`ToolRetry` to tell the model how to
fix its call.

A tool name is 1 to 64 ASCII letters, digits, ``_`` or ``-``, starting with a letter or
``_``: the names OpenAI, Anthropic and Gemini all accept, since one list of tools is
rendered for each of them. The renderers never raise on a description or a default that
JSON cannot hold (a lone surrogate becomes U+FFFD, NaN ``null``: the rules of
:mod:`toolcall_tracker.feedback`). The signature and docstring machinery lives in the
private ``_signature`` module.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeAlias, TypeVar, overload

from pydantic import BaseModel

from ._signature import _build_arguments, _is_async_callable, _json_schema, _parse_docstring
from ._toolcontext import ToolContext, ToolRetry
from .calls import ToolCall

if TYPE_CHECKING:  # their home is a provider's package; __getattr__ below loads them
    from .adapters.anthropic._request import anthropic_tools
    from .adapters.bedrock._request import bedrock_tools
    from .adapters.cohere._request import cohere_tools
    from .adapters.gemini._request import gemini_tools
    from .adapters.openai._request import openai_chat_tools, openai_responses_tools

__all__ = [
    "NeedsApproval",
    "Tool",
    "ToolContext",
    "ToolRetry",
    "ToolSettings",
    "ToolsInput",
    "anthropic_tools",
    "bedrock_tools",
    "cohere_tools",
    "gemini_tools",
    "openai_chat_tools",
    "openai_responses_tools",
    "provider_tools",
    "tool",
    "tools_by_name",
]

NeedsApproval: TypeAlias = bool | Callable[[ToolCall], bool | Awaitable[bool]]
"""Whether a tool's calls need a human's approval: ``True``, ``False``, or a function of the
call (sync or async) that decides per call, e.g. ``lambda call: call.args["amount"] > 100``.
It is asked only for calls whose arguments fit the signature."""

_P = ParamSpec("_P")
_R = TypeVar("_R")
_ToolT = TypeVar("_ToolT", bound="Tool[Any, Any]")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
"""A tool name every provider accepts (checked with ``fullmatch``): OpenAI and Anthropic
take ``[a-zA-Z0-9_-]{1,64}``, Gemini also wants a letter or ``_`` first (it would take dots
and colons too, but the others would not)."""


@dataclass(frozen=True, kw_only=True)
class ToolSettings:
    """A tool's settings, as one frozen value (``tool.settings``), checked here, once.

    Its fields are the keyword arguments of :func:`tool`, :class:`Tool` and
    :meth:`Tool.with_options` (and of :class:`~toolcall_tracker.mcp.McpTool`), and each is
    a read-only attribute of the tool too (``tool.timeout``). A tool holds its settings
    resolved: ``name`` and ``description`` are the ones the model sees, whatever their
    default came from. Change them with ``tool(t, timeout=5)`` or ``t.with_options(...)``,
    which give a new tool and leave this one as it is.

    ``sequential`` and ``max_concurrency`` are one setting, the tool's own cap: a
    sequential tool has ``max_concurrency == 1`` and a tool capped at 1 is sequential (the
    value is normalised so, and ``True``-ish ``sequential`` and ``idempotent`` become
    ``True``).

    Raises:
        ValueError: ``name`` is not a valid tool name, ``timeout`` is not positive,
            ``max_concurrency`` is not a positive int, or it contradicts ``sequential``.
        TypeError: ``needs_approval`` is neither a bool nor a callable.
    """

    name: str
    """The name the model calls the tool by: 1 to 64 ASCII letters, digits, ``_`` or
    ``-``, starting with a letter or ``_`` (what OpenAI, Anthropic and Gemini all accept).
    Given none, a tool takes its function's ``__name__``."""

    description: str = ""
    """What the tool does, for the model (may be empty). Given none, a tool takes its
    docstring's text before the first section (``Args:``, ``Returns:``...)."""

    eager: bool | None = None
    """``True`` to run the tool the moment its call is ready (for a read-only or
    idempotent tool), ``False`` to wait until the turn is known to have ended normally
    (gated), ``None`` for the runner's default (gated unless the runner says)."""

    timeout: float | None = None
    """Seconds each call of this tool may run (``None``: the runner's ``call_timeout``)."""

    needs_approval: NeedsApproval = False
    """``True`` if a human must approve every call before the tool runs, or a function of
    the :class:`~toolcall_tracker.ToolCall` (sync or async) returning whether this call
    must be (see the docs' "Human approval")."""

    max_concurrency: int | None = None
    """At most this many calls of this tool run at once per turn, next to the runner's own
    cap (``None``: only the runner's); waiting calls keep their ready order."""

    sequential: bool = False
    """Whether this tool's calls run one at a time, in ready order (the same as
    ``max_concurrency=1``)."""

    idempotent: bool = False
    """``True`` if running a call twice does no harm: a durable turn may then run a call
    again whose earlier run is "in doubt" (claimed, never recorded)."""

    def __post_init__(self) -> None:
        name, cap = self.name, self.max_concurrency
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                f"invalid tool name {name!r}: use 1 to 64 ASCII letters, digits, '_' or "
                "'-', starting with a letter or '_' (what OpenAI, Anthropic and Gemini all "
                "accept; pass name=... for lambdas and callables without a usable __name__)"
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(
                f"timeout must be a positive number of seconds, not {self.timeout!r} "
                "(None: the runner's call_timeout)"
            )
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(
                f"max_concurrency must be a positive int, not {cap!r} (None: only the runner's cap)"
            )
        if self.sequential and cap not in (None, 1):
            raise ValueError(
                f"sequential=True runs one call at a time, not max_concurrency={cap}: "
                "pass one of the two"
            )
        if not isinstance(self.needs_approval, bool) and not callable(self.needs_approval):
            raise TypeError(
                f"needs_approval must be a bool or a callable, not {self.needs_approval!r}"
            )
        sequential = bool(self.sequential) or cap == 1
        object.__setattr__(self, "sequential", sequential)
        object.__setattr__(self, "max_concurrency", 1 if sequential else cap)
        object.__setattr__(self, "idempotent", bool(self.idempotent))


class Tool(Generic[_P, _R]):
    """A function prepared for tool calls: its name, description, options and validator.

    Build one with :func:`tool` (or ``Tool(fn)``); the argument model and JSON Schema are
    built once, here. A ``Tool`` is callable like the function it wraps, so decorating a
    function with ``@tool`` does not change how your own code calls it.

    Each option is a field of :class:`ToolSettings` (``tool.settings``, one frozen value),
    which describes it in full and checks it; each is a read-only attribute here too.

    Args:
        function: the tool, a sync or async callable.
        name: the name the model calls it by (default: ``function.__name__``).
        description: what the tool does, for the model (default: from the docstring).
        eager: ``True`` eager, ``False`` gated, ``None`` (default) the runner's default.
        timeout: seconds this tool may run per call (default: the runner's ``call_timeout``).
        needs_approval: ``True``, ``False`` (default), or a function of the call deciding
            per call whether a human must approve it.
        max_concurrency: at most this many calls of this tool at once per turn.
        sequential: run this tool's calls one at a time (``max_concurrency=1``).
        idempotent: ``True`` if a call whose earlier run is in doubt may run again.

    Raises:
        ValueError: the name is not a valid tool name, ``timeout`` is not positive,
            ``max_concurrency`` is not a positive int, or it contradicts ``sequential``.
        TypeError: ``function`` is already a ``Tool``, ``needs_approval`` is neither a bool
            nor a callable, or the signature cannot be turned into an argument model.
    """

    __slots__ = (
        "_arguments",
        "_context",
        "_fields",
        "_function",
        "_is_async",
        "_is_generator",
        "_positional",
        "_schema",
        "_settings",
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
        needs_approval: NeedsApproval = False,
        max_concurrency: int | None = None,
        sequential: bool = False,
        idempotent: bool = False,
    ) -> None:
        if isinstance(function, Tool):
            raise TypeError("function is already a Tool; use tool(existing, ...) to change it")
        summary, param_docs = _parse_docstring(inspect.getdoc(function))
        # Any: a callable's __name__ may be missing or not a str; ToolSettings says so.
        tool_name: Any = getattr(function, "__name__", None) if name is None else name
        settings = ToolSettings(
            name=tool_name,
            description=summary if description is None else description,
            eager=eager,
            timeout=timeout,
            needs_approval=needs_approval,
            max_concurrency=max_concurrency,
            sequential=sequential,
            idempotent=idempotent,
        )
        self._build(function, settings, param_docs)

    def _build(
        self,
        function: Callable[_P, _R],
        settings: ToolSettings,
        param_docs: Mapping[str, str] | None = None,
    ) -> None:
        """Set everything up from the function and its (checked) settings (``param_docs``:
        the docstring's per-parameter descriptions, read here if not given)."""
        if param_docs is None:
            param_docs = _parse_docstring(inspect.getdoc(function))[1]
        self._function = function
        self._settings = settings
        self._is_generator = inspect.isasyncgenfunction(function) or inspect.isasyncgenfunction(
            getattr(function, "__call__", None)  # noqa: B004 (an object with an async-gen __call__)
        )
        self._is_async = self._is_generator or _is_async_callable(function)
        # The model is named after the tool ("<name>_arguments"): built again per name.
        model, parameters, positional, var_keyword, context = _build_arguments(
            function, settings.name, param_docs
        )
        self._context = context
        self._arguments = model
        self._fields = tuple((name, f"p{index}") for index, name in enumerate(parameters))
        self._positional = positional
        self._var_keyword = var_keyword
        self._schema = _json_schema(model)

    def _with_settings(self: _ToolT, settings: ToolSettings) -> _ToolT:
        """A copy of this tool with other settings (what :meth:`with_options` returns).

        A subclass whose parts depend on the settings (``McpTool``'s target is named after
        the tool) overrides this; its other attributes are copied as they are.
        """
        new = copy.copy(self)
        new._build(self._function, settings)
        return new

    # -- read-only attributes -----------------------------------------------------------

    @property
    def settings(self) -> ToolSettings:
        """The tool's settings, one frozen value (each field is an attribute here too)."""
        return self._settings

    @property
    def function(self) -> Callable[_P, _R]:
        """The wrapped function."""
        return self._function

    @property
    def name(self) -> str:
        """The tool's name, as the model calls it."""
        return self._settings.name

    @property
    def description(self) -> str:
        """What the tool does, for the model (may be empty)."""
        return self._settings.description

    @property
    def eager(self) -> bool | None:
        """``True`` eager, ``False`` gated, ``None`` the runner's default."""
        return self._settings.eager

    @property
    def idempotent(self) -> bool:
        """Whether a call of this tool may run again when an earlier run is in doubt."""
        return self._settings.idempotent

    @property
    def timeout(self) -> float | None:
        """Seconds the tool may run per call, or ``None`` for the runner's default."""
        return self._settings.timeout

    @property
    def needs_approval(self) -> NeedsApproval:
        """``True``/``False``, or the function deciding per call whether a human must approve."""
        return self._settings.needs_approval

    @property
    def is_async(self) -> bool:
        """Whether the tool is awaited on the event loop (else it runs in a worker thread)."""
        return self._is_async

    @property
    def max_concurrency(self) -> int | None:
        """At most this many calls of this tool run at once per turn (``1`` for a
        ``sequential`` tool; ``None``: only the runner's cap)."""
        return self._settings.max_concurrency

    @property
    def sequential(self) -> bool:
        """Whether this tool's calls run one at a time."""
        return self._settings.sequential

    @property
    def is_generator(self) -> bool:
        """Whether the tool is an async generator: each value it yields is progress, the
        last one its result (it runs on the event loop)."""
        return self._is_generator

    @property
    def context_parameter(self) -> str | None:
        """The name of the parameter annotated ``ToolContext`` (the runner passes the
        call's :class:`ToolContext` there; it is not in the schema), or ``None``."""
        return self._context

    @property
    def arguments_model(self) -> type[BaseModel]:
        """The pydantic model that validates the argument object (built once)."""
        return self._arguments

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the argument object (a fresh copy on each access).

        Plain JSON data by the output rules (``toolcall_tracker.feedback.jsonable``): a
        default JSON cannot hold is written as those rules say (NaN as ``None``...), one
        pydantic cannot encode at all is left out, and lone surrogates become U+FFFD.
        """
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
        for index, (parameter, field) in enumerate(self._fields):
            value = values[field]
            if index < self._positional:
                args.append(value)
            else:
                kwargs[parameter] = value
        if self._var_keyword and validated.model_extra:
            kwargs.update(validated.model_extra)
        return tuple(args), kwargs

    def with_options(
        self: _ToolT,
        *,
        name: str | None = None,
        description: str | None = None,
        eager: bool | None = None,
        timeout: float | None = None,
        needs_approval: NeedsApproval | None = None,
        max_concurrency: int | None = None,
        sequential: bool | None = None,
        idempotent: bool | None = None,
    ) -> _ToolT:
        """A copy of this tool with the given options changed (``None`` keeps the current).

        ``sequential`` and ``max_concurrency`` are one setting (the tool's cap): given
        either, the other takes its default, so ``sequential=False`` lifts a sequential
        tool's cap, ``max_concurrency=3`` makes a sequential tool take 3 at once, and
        giving ``sequential=True`` with ``max_concurrency=3`` is the same error as for
        :func:`tool`. The copy is of the same class (an ``McpTool`` stays one).
        """
        given = {
            "name": name,
            "description": description,
            "eager": eager,
            "timeout": timeout,
            "needs_approval": needs_approval,
            "idempotent": idempotent,
        }
        changes: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
        if sequential is not None or max_concurrency is not None:
            changes.update(sequential=bool(sequential), max_concurrency=max_concurrency)
        return self._with_settings(replace(self._settings, **changes))

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Call the wrapped function directly (no validation)."""
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        settings = self._settings
        mode = {True: "eager", False: "gated", None: "default"}[settings.eager]
        kind = "async generator" if self._is_generator else "async" if self._is_async else "sync"
        cap = (
            "" if settings.max_concurrency is None else f", max {settings.max_concurrency} at once"
        )
        return f"<Tool {settings.name!r} ({kind}, {mode}{cap})>"


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
    needs_approval: NeedsApproval | None = None,
    max_concurrency: int | None = None,
    sequential: bool | None = None,
    idempotent: bool | None = None,
) -> Tool[_P, _R]: ...


@overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    eager: bool | None = None,
    timeout: float | None = None,
    needs_approval: NeedsApproval | None = None,
    max_concurrency: int | None = None,
    sequential: bool | None = None,
    idempotent: bool | None = None,
) -> Callable[[Callable[_P, _R]], Tool[_P, _R]]: ...


def tool(
    function: Callable[_P, _R] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    eager: bool | None = None,
    timeout: float | None = None,
    needs_approval: NeedsApproval | None = None,
    max_concurrency: int | None = None,
    sequential: bool | None = None,
    idempotent: bool | None = None,
) -> Tool[_P, _R] | Callable[[Callable[_P, _R]], Tool[_P, _R]]:
    """Declare a tool and its options; usable as ``tool(fn, ...)``, ``@tool`` or ``@tool(...)``.

    The options are the fields of :class:`ToolSettings` (the tool's ``settings``), checked
    there: the same errors as ``Tool(...)`` and :meth:`Tool.with_options`.

    Args:
        function: the function (omit it to get a decorator).
        name: the tool's name (default: the function's ``__name__``).
        description: the tool's description (default: from the docstring).
        eager: ``True`` for a read-only or idempotent tool that may start as soon as its
            call is ready; ``False`` for a gated tool that runs only once the turn ended
            normally; ``None`` (default) for the runner's default, which is gated.
        timeout: seconds each call of this tool may run (overrides the runner's
            ``call_timeout``).
        needs_approval: ``True`` if a human must approve each call before the tool runs, or
            a function of the call (sync or async) deciding per call; ``None`` (default):
            no approval (or, given a :class:`Tool`, keep its setting).
        max_concurrency: at most this many calls of this tool run at once per turn, next
            to the runner's own cap; waiting calls keep their ready order.
        sequential: ``True`` to run this tool's calls one at a time, in ready order.
        idempotent: ``True`` if running a call twice does no harm (a durable turn may run
            a call again whose earlier run is in doubt); ``None``: ``False`` (or, given a
            :class:`Tool`, keep its setting).

    Returns:
        A :class:`Tool` (or a decorator making one). Given a :class:`Tool`, returns a copy
        with the options changed.
    """

    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "eager": eager,
        "timeout": timeout,
        "needs_approval": needs_approval,
        "max_concurrency": max_concurrency,
        "sequential": sequential,
        "idempotent": idempotent,
    }

    def make(fn: Callable[_P, _R]) -> Tool[_P, _R]:
        if isinstance(fn, Tool):
            existing: Tool[_P, _R] = fn
            return existing.with_options(**options)
        # None is "the default" for every option: Tool's own.
        return Tool(fn, **{key: value for key, value in options.items() if value is not None})

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


def provider_tools(fmt: str, tools: ToolsInput) -> list[Any]:
    """The tool definitions of format ``fmt``, by its name (the provider registry's).

    ``provider_tools("anthropic", tools)`` is ``anthropic_tools(tools)``; useful when the
    provider is chosen at run time, e.g. from configuration.

    Raises:
        ValueError: no format has that name, or it has no tool definitions (``ai-sdk``:
            the AI SDK declares tools in TypeScript), or a tool name is invalid.
    """
    from ._registry import get

    provider = get(fmt)
    if provider.tools is None:
        raise ValueError(f"the {fmt} format has no tool definitions")
    render: Any = provider.load("tools")
    return list(render(tools))


def __getattr__(name: str) -> Any:
    """A provider's tool-definition renderer (``anthropic_tools``...), from its home.

    Each lives in its provider's package (``adapters/anthropic/``); the provider registry
    finds it by name, so this module imports no provider until one is used (and the
    providers' modules import this one without a cycle).
    """
    from ._registry import named

    value = named("tools", name)
    globals()[name] = value
    return value
