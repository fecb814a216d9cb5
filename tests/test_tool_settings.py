"""``ToolSettings``: a tool's options as one frozen value, shared by every way to set them.

``tool()``, ``Tool(...)``, ``Tool.with_options`` and ``McpTool`` all build (or replace) one
:class:`ToolSettings`, so a value is checked once, with one error, whichever way it came;
and their keyword arguments are the value's fields, so a new field shows up in all of them
or these tests fail.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

import pytest

from toolcall_tracker import Tool, tool
from toolcall_tracker.mcp._call import Target
from toolcall_tracker.mcp._tool import McpTool
from toolcall_tracker.tools import ToolSettings

FIELDS = [field.name for field in dataclasses.fields(ToolSettings)]


def lookup(key: str, limit: int = 3) -> list[str]:
    """Look a key up.

    Args:
        key: what to look up.
        limit: at most this many.
    """
    return [key] * limit


def mcp_tool(name: str = "echo", **options: Any) -> McpTool:
    target = Target(None, "srv", "echo", name)  # type: ignore[arg-type]
    return McpTool(target, {"type": "object"}, "Echo.", **options)


def keywords(function: Callable[..., Any]) -> dict[str, Any]:
    """The keyword-only parameters of ``function`` and their defaults."""
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }


# -- one value, frozen ----------------------------------------------------------------


def test_a_tool_exposes_its_settings_as_one_frozen_value() -> None:
    spec = tool(lookup, timeout=5, eager=True, idempotent=True)
    settings = spec.settings
    assert isinstance(settings, ToolSettings)
    assert settings == ToolSettings(
        name="lookup", description="Look a key up.", eager=True, timeout=5, idempotent=True
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.timeout = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        spec.timeout = 1  # type: ignore[misc]
    assert spec.settings is settings  # the same value, not a copy per access
    hash(settings)  # frozen: usable as a key


@pytest.mark.parametrize("spec", [tool(lookup, sequential=True), mcp_tool(timeout=2)])
def test_every_field_is_also_a_read_only_attribute_of_the_tool(spec: Tool[..., Any]) -> None:
    for name in FIELDS:
        assert getattr(spec, name) == getattr(spec.settings, name), name


def test_the_fields_are_the_keyword_arguments_of_tool() -> None:
    """A tool's settings, given back to ``Tool``/``tool()``, make a tool with the same."""
    model = tool(lookup, name="find", timeout=1.5, needs_approval=True, max_concurrency=2)
    values = {name: getattr(model.settings, name) for name in FIELDS}
    assert Tool(lookup, **values).settings == model.settings
    assert tool(lookup, **values).settings == model.settings
    assert dataclasses.replace(model.settings) == model.settings


def test_sequential_and_a_cap_of_one_are_one_setting() -> None:
    one = ToolSettings(name="a", max_concurrency=1)
    assert one.sequential
    assert one == ToolSettings(name="a", sequential=True)
    assert ToolSettings(name="a", sequential=True).max_concurrency == 1
    assert ToolSettings(name="a", sequential=1, idempotent="yes").sequential is True  # type: ignore[arg-type]
    assert ToolSettings(name="a", idempotent="yes").idempotent is True  # type: ignore[arg-type]
    assert not ToolSettings(name="a", max_concurrency=2).sequential


# -- with_options: a new tool, everything else shared ---------------------------------


def test_with_options_returns_a_new_tool_sharing_everything_else() -> None:
    base = tool(lookup, eager=True, timeout=3, needs_approval=True, idempotent=True)
    changed = base.with_options(timeout=9)
    assert changed is not base
    assert type(changed) is Tool
    assert changed.settings == dataclasses.replace(base.settings, timeout=9)
    assert base.timeout == 3  # the original is left as it was
    assert changed.function is base.function
    assert changed.parameters == base.parameters
    assert changed.arguments_model.model_json_schema() == base.arguments_model.model_json_schema()
    assert changed.bind({"key": "k"}) == base.bind({"key": "k"})
    assert (changed.is_async, changed.is_generator) == (base.is_async, base.is_generator)
    assert base.with_options().settings == base.settings  # nothing given: nothing changed
    assert tool(base, timeout=9).settings == changed.settings  # tool(existing, ...) too


def test_with_options_keeps_an_mcp_tool_an_mcp_tool() -> None:
    made = mcp_tool(timeout=4)
    renamed = made.with_options(name="echo2", sequential=True)
    assert isinstance(renamed, McpTool)
    assert renamed.settings == dataclasses.replace(made.settings, name="echo2", sequential=True)
    assert (renamed.name, renamed.mcp_name, renamed.server) == ("echo2", "echo", "srv")
    assert made.name == "echo"  # the original keeps its target
    assert renamed.parameters == made.parameters
    assert renamed.bind({"x": 1}) == made.bind({"x": 1})


@pytest.mark.parametrize(
    ("start", "options", "cap"),
    [
        ({"sequential": True}, {"eager": True}, 1),  # neither given: kept
        ({"max_concurrency": 3}, {}, 3),
        ({"max_concurrency": 3}, {"sequential": True}, 1),
        ({"sequential": True}, {"max_concurrency": 3}, 3),  # a new cap replaces sequential
        ({"sequential": True}, {"sequential": False}, None),
        ({"max_concurrency": 3}, {"sequential": False}, None),  # given one, the other's default
        ({}, {"max_concurrency": 1}, 1),
        ({}, {"sequential": False, "max_concurrency": 2}, 2),
    ],
)
def test_with_options_sets_the_cap_from_whichever_of_the_two_is_given(
    start: dict[str, Any], options: dict[str, Any], cap: int | None
) -> None:
    changed = tool(lookup, **start).with_options(**options)
    assert changed.max_concurrency == cap
    assert changed.sequential is (cap == 1)


# -- one check, one error, from every way in ------------------------------------------

BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"name": "has space"}, ValueError, "invalid tool name"),
    ({"name": "x" * 65}, ValueError, "invalid tool name"),
    ({"timeout": 0}, ValueError, "timeout must be a positive number"),
    ({"timeout": float("nan")}, ValueError, "timeout must be a positive number"),
    ({"max_concurrency": 0}, ValueError, "max_concurrency must be a positive int"),
    ({"max_concurrency": True}, ValueError, "max_concurrency must be a positive int"),
    ({"max_concurrency": 1.5}, ValueError, "max_concurrency must be a positive int"),
    ({"sequential": True, "max_concurrency": 2}, ValueError, "sequential=True runs one call"),
    ({"needs_approval": "yes"}, TypeError, "needs_approval must be a bool or a callable"),
]
"""One invalid value per checked field. ``description``, ``eager`` and ``idempotent`` have
no check (``idempotent`` and ``sequential`` are made bools)."""


def raised(make: Callable[[], object]) -> Exception:
    try:
        make()
    except Exception as error:  # which kind is what the test checks
        return error
    pytest.fail("no error raised")


@pytest.mark.parametrize(("options", "kind", "message"), BAD)
def test_an_invalid_value_raises_the_same_error_whichever_way_it_is_given(
    options: dict[str, Any], kind: type[Exception], message: str
) -> None:
    existing = tool(lookup)
    mcp_options = {key: value for key, value in options.items() if key != "name"}
    ways: dict[str, Callable[[], object]] = {
        "ToolSettings": lambda: ToolSettings(**{"name": "lookup", **options}),
        "Tool": lambda: Tool(lookup, **options),
        "tool": lambda: tool(lookup, **options),
        "@tool(...)": lambda: tool(**options)(lookup),
        "with_options": lambda: existing.with_options(**options),
        "tool(existing)": lambda: tool(existing, **options),
        "McpTool": lambda: mcp_tool(options.get("name", "echo"), **mcp_options),
        "McpTool.with_options": lambda: mcp_tool().with_options(**options),
    }
    errors = {way: raised(make) for way, make in ways.items()}
    for way, error in errors.items():
        assert type(error) is kind, way
        assert message in str(error), way
    assert len({str(error) for error in errors.values()}) == 1, errors


@pytest.mark.parametrize(
    ("bad", "fix"),
    [
        ({"timeout": -1}, "None: the runner's call_timeout"),
        ({"max_concurrency": 0}, "None: only the runner's cap"),
        ({"sequential": True, "max_concurrency": 4}, "pass one of the two"),
        ({"name": "a b"}, "pass name=..."),
    ],
)
def test_an_error_names_the_fix(bad: dict[str, Any], fix: str) -> None:
    assert fix in str(raised(lambda: tool(lookup, **bad)))


# -- a new field shows up everywhere --------------------------------------------------


def test_with_options_takes_exactly_the_fields_each_defaulting_to_keep() -> None:
    assert list(keywords(Tool.with_options)) == FIELDS
    assert set(keywords(McpTool.with_options)) == set(FIELDS)
    assert set(keywords(Tool.with_options).values()) == {None}


def test_tool_takes_exactly_the_fields_each_defaulting_to_none() -> None:
    assert list(keywords(tool)) == FIELDS
    assert set(keywords(tool).values()) == {None}
    if sys.version_info >= (3, 11):
        overloads = typing.get_overloads(tool)
        assert len(overloads) == 2
        for overload in overloads:
            assert keywords(overload) == keywords(tool)


def test_tool_class_takes_exactly_the_fields_with_the_values_defaults() -> None:
    assert list(keywords(Tool.__init__)) == FIELDS
    defaults = {field.name: field.default for field in dataclasses.fields(ToolSettings)}
    derived = {"name", "description"}  # None: from the function and its docstring
    init = keywords(Tool.__init__)
    assert {key: init[key] for key in derived} == dict.fromkeys(derived)
    assert {key: value for key, value in init.items() if key not in derived} == {
        key: value for key, value in defaults.items() if key not in derived
    }
    assert defaults["name"] is dataclasses.MISSING  # a value always has a name


def test_mcp_tool_takes_every_field_its_target_and_listing_do_not_give() -> None:
    signature = inspect.signature(McpTool.__init__).parameters
    assert "description" in signature  # from the server's listing; the name from its target
    assert set(keywords(McpTool.__init__)) == set(FIELDS) - {"name", "description"}
    init = keywords(Tool.__init__)
    assert {key: init[key] for key in keywords(McpTool.__init__)} == keywords(McpTool.__init__)


def test_every_field_is_documented() -> None:
    """Each field has its own docstring in the source (what the reference renders)."""
    source = inspect.getsource(ToolSettings)
    for name in FIELDS:
        after = source.split(f"\n    {name}: ", 1)[1].split("\n", 1)[1]
        assert after.lstrip().startswith('"""'), name
