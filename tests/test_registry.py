"""The provider registry: one declaration per format, read by everything that lists formats.

A toy provider added through the registry alone (``register``: no other edit) appears in
the command line's ``--format`` and ``--format auto``, in its replay, in the library's
wrong-adapter check, in ``provider_tools`` and in ``provider_messages``. The built-in
declarations are checked for consistency: every reference resolves, every adapter has
one declaration, every pip extra exists.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib

from toolcall_tracker import Status, ToolCall, tool_call_streaming_state_machine
from toolcall_tracker import adapters as adapters_module
from toolcall_tracker._registry import Provider, for_adapter, formats, get, providers, register
from toolcall_tracker.adapters import OpenAIChatAdapter, apply_stream
from toolcall_tracker.cli import main
from toolcall_tracker.events import Delta, End, Ready, Start
from toolcall_tracker.feedback import anthropic_messages, provider_messages
from toolcall_tracker.tools import anthropic_tools, provider_tools, tools_by_name

ROOT = Path(__file__).parents[1]


# -- the toy provider: everything a provider declares, in this test module ----------------


class ToyAdapter:
    """Reads ``{"toy": "call", "id", "name", "args"}`` items: one whole call each."""

    def __init__(self) -> None:
        self._ended = False

    def feed(self, item: dict[str, Any]) -> list[Any]:
        if item.get("toy") != "call":
            return []
        call_id = item["id"]
        return [
            Start(id=call_id, name=item["name"]),
            Delta(id=call_id, args_text_delta=item["args"]),
            Ready(id=call_id),
        ]

    def end(self) -> list[Any]:
        return [End(ok=True, reason="toy stream exhausted")]


def toy_tools(tools: Any) -> list[dict[str, Any]]:
    return [{"toy_tool": name} for name in tools_by_name(tools)]


def toy_messages(calls: Any, **options: Any) -> list[dict[str, Any]]:
    return [{"toy_result": call.id, "value": call.result, **options} for call in calls]


def _recognise(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("toy"), str)


TOY = Provider(
    format="toy",
    title="toy items",
    one="a toy item",
    recognise=_recognise,
    adapter=f"{__name__}:ToyAdapter",
    tools=f"{__name__}:toy_tools",
    messages=f"{__name__}:toy_messages",
    extra=None,
    rank=1000,
)

TOY_ITEMS = [
    {"toy": "hello"},
    {"toy": "call", "id": "t1", "name": "add", "args": '{"a": 1, "b": 2}'},
]


@pytest.fixture
def toy() -> Iterator[Provider]:
    remove = register(TOY)
    try:
        yield TOY
    finally:
        remove()
    assert "toy" not in formats()


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_the_toy_is_a_format_of_the_command_line(
    toy: Provider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "toy.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in TOY_ITEMS), encoding="utf-8")
    for given in ("toy", "auto"):  # --format toy, and recognised by --format auto
        code = main(["replay", "--json", "--format", given, str(path)])
        document = json.loads(capsys.readouterr().out)
        assert code == 0
        assert document["format"] == "toy"
        assert [(c["name"], c["args"]) for c in document["calls"]] == [("add", {"a": 1, "b": 2})]
        assert document["end"]["reason"] == "toy stream exhausted"
    main(["replay", "--help"])
    assert "toy" in capsys.readouterr().out


def test_the_toy_has_tool_definitions_and_result_messages(toy: Provider) -> None:
    assert provider_tools("toy", [add]) == [{"toy_tool": "add"}]
    call = ToolCall(id="t1", name="add", status=Status.DONE, args={"a": 1}, result=3)
    assert provider_messages("toy", [call], include_calls=False) == [
        {"toy_result": "t1", "value": 3, "include_calls": False}
    ]


def test_the_library_recognises_toy_items_through_another_adapter(
    toy: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    machine = tool_call_streaming_state_machine()
    with caplog.at_level(logging.WARNING, logger="toolcall_tracker"):
        apply_stream(machine, TOY_ITEMS, OpenAIChatAdapter())
    reason = "these items look like toy items; use ToyAdapter"
    assert [record.getMessage() for record in caplog.records] == [reason]
    assert machine.end is not None
    assert machine.end.reason == reason
    assert for_adapter(ToyAdapter()) is toy


def test_a_format_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered already"):
        register(get("anthropic"))


# -- the built-in declarations ---------------------------------------------------------


def test_format_names_are_unique_and_listed_in_order() -> None:
    names = formats()
    assert len(names) == len(set(names))
    assert names[:3] == ["events", "openai-chat", "openai-responses"]


@pytest.mark.parametrize("provider", providers(), ids=lambda provider: provider.format)
def test_every_declaration_resolves(provider: Provider) -> None:
    for what in ("adapter", "tools", "messages"):
        if getattr(provider, what) is not None:
            assert callable(provider.load(what))
    if provider.adapter is not None:
        adapter = provider.load("adapter")
        assert getattr(adapters_module, adapter.__name__) is adapter  # its public home
        assert for_adapter(adapter()) is provider
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert provider.extra is None or provider.extra in extras


def test_every_public_adapter_is_declared() -> None:
    declared = {p.adapter_name for p in providers() if p.adapter is not None}
    public = {n for n in adapters_module.__all__ if n.endswith("Adapter") and n != "Adapter"}
    assert public == declared


def test_provider_tools_and_messages_are_the_named_functions() -> None:
    assert provider_tools("anthropic", [add]) == anthropic_tools([add])
    call = ToolCall(id="t1", name="add", status=Status.DONE, args={"a": 1, "b": 2}, result=3)
    assert provider_messages("anthropic", [call]) == anthropic_messages([call])
    with pytest.raises(ValueError, match="unknown format 'nope'; the formats are: events, "):
        provider_tools("nope", [add])
    with pytest.raises(ValueError, match="the ai-sdk format has no tool definitions"):
        provider_tools("ai-sdk", [add])
    with pytest.raises(ValueError, match="the events format has no result messages"):
        provider_messages("events", [call])
    with pytest.raises(ValueError, match="the seed format has no result messages"):
        provider_messages("seed", [call])  # the events format's old name still names it


def test_the_providers_page_lists_every_format_with_its_adapter() -> None:
    page = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    for provider in providers():
        if provider.adapter is None:
            continue
        row = next(
            (line for line in page.splitlines() if line.startswith(f"| `{provider.format}` |")),
            None,
        )
        assert row is not None, f"docs/providers.md has no row for {provider.format}"
        assert f"`{provider.adapter_name}`" in row
        for ref in (provider.tools, provider.messages):
            if ref is not None:
                assert f"`{ref.rpartition(':')[2]}`" in row
        if provider.extra is not None:
            assert f"`{provider.extra}`" in row


# -- the import-time budget ------------------------------------------------------------------

_READ_THE_REGISTRY = """
import sys
before = set(sys.modules)
from toolcall_tracker._registry import formats, get, providers
formats(); get("anthropic"); [p.recognise({"type": "ping"}) for p in providers()]
import toolcall_tracker.adapters
new = sorted(set(sys.modules) - before)
print(len(new))
print(" ".join(m for m in new if m.startswith("toolcall_tracker")))
print(" ".join(m for m in new if m.split(".")[0] in {
    "pydantic", "pydantic_core", "anyio", "openai", "anthropic", "google", "boto3",
    "botocore", "cohere", "mistralai", "ollama", "litellm"}))
"""

IMPORT_BUDGET = 100
"""How many modules reading the registry may import in all (measured: 71 on CPython
3.11, almost all of them the standard library's ``importlib`` and ``pkgutil``)."""


def test_reading_the_registry_imports_only_the_declarations() -> None:
    """Listing the formats, finding one and recognising an item import the registry, the
    ``adapters`` package and each provider home's ``__init__`` (its declaration), and
    nothing else of this library: no adapter, no pydantic model, no SDK, no anyio."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _READ_THE_REGISTRY],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    count, ours, heavy = [*done.stdout.splitlines(), "", "", ""][:3]
    homes = {p.adapter.split(":")[0].rsplit(".", 1)[0] for p in providers() if p.adapter}
    allowed = {
        "toolcall_tracker",
        "toolcall_tracker._moved",
        "toolcall_tracker._registry",
        "toolcall_tracker.adapters",
        "toolcall_tracker.adapters.ai_sdk._lines",  # the v4 line syntax its declaration reads
        *(f"toolcall_tracker{home}" for home in homes),
    }
    assert set(ours.split()) <= allowed, set(ours.split()) - allowed
    assert heavy == ""
    assert int(count) <= IMPORT_BUDGET


def test_every_provider_home_lists_what_it_loads_lazily() -> None:
    """A home's ``__all__`` is exactly what its ``__getattr__`` serves, and each name
    resolves (a missing or misspelt entry in either fails here)."""
    import importlib

    homes = {p.adapter.split(":")[0].rsplit(".", 1)[0] for p in providers() if p.adapter}
    assert len(homes) == 8
    for home in sorted(homes):
        module = importlib.import_module(f"toolcall_tracker{home}")
        for name in module.__all__:
            assert getattr(module, name) is not None, (home, name)
        assert set(module.__all__) <= set(dir(module))
        with pytest.raises(AttributeError):
            module.no_such_name  # noqa: B018


def test_the_events_format_keeps_its_old_name_seed() -> None:
    """``seed`` was the events format's first name: the registry and ``--format`` still
    take it, and it is the same declaration; no listing shows it."""
    assert get("seed") is get("events")
    assert "seed" not in formats()
