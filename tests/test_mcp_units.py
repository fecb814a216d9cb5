"""The MCP tools' pure parts: names for the providers, and the schema check (no server)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolcall_tracker.errors import FailCall
from toolcall_tracker.failures import CallFailure, McpFailed
from toolcall_tracker.mcp._names import assign, sanitise

VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("search", "search"),
        ("math.add", "math_add"),
        ("files/read file", "files_read_file"),
        ("1st", "_1st"),
        ("-x", "_-x"),
        ("", "_"),
        ("é", "_"),
    ],
)
def test_sanitise(name: str, expected: str) -> None:
    assert sanitise(name) == expected


def test_long_names_stay_distinct() -> None:
    a, b = sanitise("x" * 70 + "a"), sanitise("x" * 70 + "b")
    assert len(a) == len(b) == 64
    assert a != b
    assert VALID.fullmatch(a)


@given(st.dictionaries(st.text(max_size=8), st.lists(st.text(max_size=80), unique=True)))
def test_assigned_names_are_valid_and_unique(listing: dict[str, list[str]]) -> None:
    names = assign(listing)
    assert set(names) == {(server, name) for server, tools in listing.items() for name in tools}
    assert all(VALID.fullmatch(n) for n in names.values())
    assert len(set(names.values())) == len(names)


def test_a_clash_prefixes_every_owner_and_leaves_the_rest() -> None:
    names = assign({"files": ["search", "read"], "web": ["search", "fetch"]})
    assert names == {
        ("files", "search"): "files_search",
        ("files", "read"): "read",
        ("web", "search"): "web_search",
        ("web", "fetch"): "fetch",
    }


def test_two_names_of_one_server_that_sanitise_alike_are_numbered() -> None:
    assert assign({"s": ["a.b", "a b"]}) == {("s", "a.b"): "a_b", ("s", "a b"): "a_b_2"}


def test_fail_call_takes_a_failure_only() -> None:
    failure = McpFailed(
        message="m", tool="t", server="s", mcp_tool="t", reason="disconnected", code=-32000
    )
    assert FailCall(failure).failure is failure
    assert isinstance(failure, CallFailure)
    with pytest.raises(TypeError, match="CallFailure"):
        FailCall("not a failure")  # type: ignore[arg-type]


jsonschema = pytest.importorskip("jsonschema")
from toolcall_tracker.mcp._schema import check, compile_schema  # noqa: E402


def test_each_problem_is_a_line_with_its_path() -> None:
    validator = compile_schema(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "q": {},
                "tags": {"items": {"type": "string"}},
            },
            "required": ["n", "q"],
            "additionalProperties": False,
        },
        "t",
    )
    with pytest.raises(ValidationError) as raised:
        check(validator, {"n": "1", "tags": ["a", 2], "extra": 0}, "t")
    errors = {(e["loc"], e["type"]) for e in raised.value.errors()}
    assert errors == {
        ((), "json_schema_required"),
        ((), "json_schema_additionalProperties"),
        (("n",), "json_schema_type"),
        (("tags", 1), "json_schema_type"),
    }
    check(validator, {"n": 1, "q": None, "tags": ["a"]}, "t")  # valid: no error


@pytest.mark.parametrize("schema", [["not", "a", "schema"], {"type": 12}, None])
def test_an_unusable_schema_requires_an_object_only(schema: object) -> None:
    validator = compile_schema(schema, "t")
    check(validator, {"anything": 1}, "t")
    with pytest.raises(ValidationError):
        check(validator, [1], "t")


def test_a_schema_the_validator_chokes_on_fails_the_arguments_not_the_caller() -> None:
    nested: object = 1
    for _ in range(5000):
        nested = [nested]
    deep = compile_schema({"items": {"$ref": "#"}}, "t")
    with pytest.raises(ValidationError, match="could not be checked"):
        check(deep, nested, "t")
    dangling = compile_schema({"$ref": "#/nowhere"}, "t")  # compiles; fails when used
    with pytest.raises(ValidationError, match="could not be checked"):
        check(dangling, {}, "t")


def test_long_messages_are_cut() -> None:
    validator = compile_schema({"type": "integer"}, "t")
    with pytest.raises(ValidationError) as raised:
        check(validator, "x" * 10_000, "t")
    assert len(raised.value.errors()[0]["msg"]) == 300


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@given(
    st.lists(
        st.one_of(st.integers(0, 200).map(lambda n: ("put", n)), st.just(("take", 0))),
        max_size=300,
    )
)
def test_progress_queue_keeps_the_latest_updates_in_order(
    backend: str, steps: list[tuple[str, int]]
) -> None:
    """A model of the queue between the session's task and the generator: a deque that
    keeps the latest PROGRESS_BUFFER updates; nothing is taken after close."""
    import anyio

    from toolcall_tracker.mcp._call import PROGRESS_BUFFER, _Updates

    async def main() -> None:
        updates = _Updates()
        model: list[float] = []
        taken: list[float] = []
        iterator = updates.__aiter__()
        for op, n in steps:
            if op == "put":
                await updates.put(n, None, None)
                model = [*model, float(n)][-PROGRESS_BUFFER:]
            elif model:
                taken.append((await iterator.__anext__()).progress)
                assert taken[-1] == model.pop(0)
        updates.close()
        await updates.put(-1, None, None)  # after close: dropped
        rest = [u.progress async for u in iterator]
        assert rest == model

    async def bounded() -> None:
        with anyio.fail_after(5):
            await main()

    anyio.run(bounded, backend=backend)


def test_without_mcp_2_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from toolcall_tracker.mcp import _tool

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "1.26.0")
    with pytest.raises(ImportError, match=r"mcp>=2 \(mcp 1\.26\.0 is installed.*\[mcp\]"):
        _tool.require_mcp()

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(ImportError, match=r"need the mcp package.*toolcall-tracker\[mcp\]"):
        _tool.require_mcp()


def test_with_options_keeps_an_mcp_tool_and_takes_every_option_a_tool_takes() -> None:
    """``tool(mcp_tool, idempotent=True)`` and friends: every ``Tool.with_options`` option."""
    import inspect

    from toolcall_tracker.mcp._call import Target
    from toolcall_tracker.mcp._tool import McpTool
    from toolcall_tracker.tools import Tool

    base = set(inspect.signature(Tool.with_options).parameters)
    assert set(inspect.signature(McpTool.with_options).parameters) == base
    target = Target(None, "srv", "echo", "echo")  # type: ignore[arg-type]
    made = McpTool(target, {"type": "object"}, "Echo.")
    changed = made.with_options(idempotent=True, eager=True, name="echo2")
    assert isinstance(changed, McpTool)
    assert changed.idempotent
    assert changed.eager
    assert changed.name == "echo2"
    assert changed.mcp_name == "echo"


class _ScriptedSession:
    """A stand-in ClientSession whose ``call_tool`` answers as scripted, noting each call."""

    def __init__(self) -> None:
        self.requests = 0
        self.next: str = "ok"

    async def call_tool(self, name: str, arguments: object, progress_callback: object) -> object:
        from mcp import MCPError
        from mcp.types import CallToolResult, TextContent

        self.requests += 1
        if self.next == "closed":
            raise MCPError(code=-32000, message="SSE stream ended without a response")
        if self.next == "error":
            raise MCPError(code=-32602, message="bad params")
        if self.next == "unreadable":
            raise ValueError("not a tools/call result")
        failed = self.next == "is_error"
        return CallToolResult(content=[TextContent(type="text", text=self.next)], is_error=failed)


OUTCOMES = ["ok", "is_error", "error", "unreadable", "closed"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=100, deadline=None)  # the first example imports mcp
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from(OUTCOMES)), max_size=30))
def test_a_closed_connection_fails_only_its_sessions_later_calls(
    backend: str, script: list[tuple[int, str]]
) -> None:
    """A model of the sessions' fates: a call whose answer is a closed connection makes its
    session gone, and from then on that session's calls fail ``disconnected`` without a
    request; the other session's calls, and every other outcome, are as answered."""
    pytest.importorskip("mcp.server.mcpserver", reason="the [mcp] extra needs mcp>=2")
    import anyio

    from toolcall_tracker.mcp._call import Target, call

    sessions = [_ScriptedSession(), _ScriptedSession()]
    targets = [Target(s, f"s{i}", "t", "t") for i, s in enumerate(sessions)]  # type: ignore[arg-type]

    async def outcome(index: int) -> object:
        try:
            return [value async for value in call(targets[index], {})][-1]
        except FailCall as failed:
            return failed.failure

    async def main() -> None:
        gone = [False, False]
        requests = [0, 0]
        for index, answer in script:
            sessions[index].next = answer
            got = await outcome(index)
            if gone[index]:
                assert isinstance(got, McpFailed)
                assert got.reason == "disconnected"
                assert "the request was not sent" in got.message
                continue
            requests[index] += 1
            expected = {
                "ok": None,
                "is_error": "tool_error",
                "error": "protocol_error",
                "unreadable": "protocol_error",
                "closed": "disconnected",
            }[answer]
            if expected is None:
                assert got == "ok"
            else:
                assert isinstance(got, McpFailed)
                assert (got.reason, got.server) == (expected, f"s{index}")
            gone[index] = answer == "closed"
        assert [s.requests for s in sessions] == requests

    async def bounded() -> None:
        with anyio.fail_after(5):
            await main()

    anyio.run(bounded, backend=backend)
