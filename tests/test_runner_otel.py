"""OpenTelemetry: one ``execute_tool`` span per executed call (GenAI semantic conventions),
checked with the SDK's in-memory exporter on both backends.

Timings are proven by ordering (the stream waits for the tool to start before it ends),
never by sleeps.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolCallTracker, ToolRunner, run_tools, tool

pytestmark = pytest.mark.anyio


class Traced:
    """A tracer provider of its own, exporting to memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")

    def spans(self, prefix: str = "execute_tool") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def by_call(self) -> dict[str, ReadableSpan]:
        return {str(attributes(s)["gen_ai.tool.call.id"]): s for s in self.spans()}


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def events_of(span: ReadableSpan) -> list[tuple[str, dict[str, Any], int]]:
    return [(e.name, dict(e.attributes or {}), e.timestamp) for e in span.events]


def names(events: Iterable[tuple[str, dict[str, Any], int]]) -> list[str]:
    return [name for name, _, _ in events]


async def run_turn(
    runner: ToolRunner,
    source: Any,
    control: RunControl | None = None,
    tracker: ToolCallTracker | None = None,
) -> ToolCallTracker:
    tracker = tracker or ToolCallTracker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, source)
        await runner.run(tracker, control=control)
    return tracker


async def add(a: int, b: int) -> int:
    return a + b


async def boom(x: int) -> int:
    raise KeyError(x)


def turn(*calls: tuple[str, str, Any], ok: bool = True) -> list[dict[str, Any]]:
    events = [event for call in calls for event in call_events(*call)]
    return [*events, {"type": "end", "ok": ok, "reason": None if ok else "length"}]


# -- names, attributes, errors ------------------------------------------------------------


async def test_one_span_per_executed_call_with_the_genai_attributes(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        runner = ToolRunner([add, boom], eager=True, tracer_provider=traced.provider)
        tracker = await run_turn(runner, from_list(turn(("a", "add", {"a": 1, "b": 2}))))
    (span,) = traced.spans()
    assert span.name == "execute_tool add"
    found = attributes(span)
    assert {key: found[key] for key in found if key.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "a",
        "gen_ai.tool.type": "function",
    }
    assert set(found) - {key for key in found if key.startswith("gen_ai.")} == {
        "toolcall_tracker.call.streaming_duration",
        "toolcall_tracker.call.wait_duration",
        "toolcall_tracker.call.head_start",
        "toolcall_tracker.call.finished_before_stream_end",
    }
    assert found["toolcall_tracker.call.streaming_duration"] >= 0
    assert found["toolcall_tracker.call.wait_duration"] >= 0
    assert span.status.status_code is StatusCode.UNSET
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "toolcall_tracker"
    # Not opted in: no content.
    assert "gen_ai.tool.call.arguments" not in attributes(span)
    assert "gen_ai.tool.call.result" not in attributes(span)
    # The span is the tool's run, on the timeline's clock mapped to epoch nanoseconds.
    timeline = tracker.timeline("a")
    assert timeline is not None
    assert timeline.tool_started is not None
    assert timeline.tool_finished is not None
    assert span.start_time is not None
    assert span.end_time is not None
    ran = (timeline.tool_finished - timeline.tool_started) * 1e9
    assert span.end_time - span.start_time == pytest.approx(ran, abs=1_000)


async def test_a_failed_tool_sets_error_type_and_the_error_status(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):

        async def slow() -> None:
            await anyio.sleep_forever()

        runner = ToolRunner(
            [boom, tool(slow, timeout=0.01)], eager=True, tracer_provider=traced.provider
        )
        await run_turn(runner, from_list(turn(("a", "boom", {"x": 1}), ("b", "slow", {}))))
    spans = traced.by_call()
    assert spans["a"].name == "execute_tool boom"
    assert attributes(spans["a"])["error.type"] == "KeyError"
    assert spans["a"].status.status_code is StatusCode.ERROR
    assert spans["a"].status.description == "tool_exception: KeyError"  # no content: no text
    assert attributes(spans["b"])["error.type"] == "timeout"
    assert spans["b"].status.status_code is StatusCode.ERROR


async def test_without_content_recording_the_status_carries_no_exception_text(
    anyio_backend: str,
) -> None:
    card = "4111 1111 1111 1111"

    async def charge() -> None:
        raise ValueError(f"card {card} declined")

    for record_content in (False, True):
        traced = Traced()
        with anyio.fail_after(DEADLINE):
            runner = ToolRunner(
                [charge],
                eager=True,
                tracer_provider=traced.provider,
                record_content=record_content,
            )
            await run_turn(runner, from_list(turn(("a", "charge", {}))))
        (span,) = traced.spans()
        assert span.status.status_code is StatusCode.ERROR
        everything = repr(
            (span.status.description, dict(span.attributes or {}), span.events, span.name)
        )
        if record_content:
            assert card in (span.status.description or "")
        else:
            assert span.status.description == "tool_exception: ValueError"
            assert card not in everything


async def test_arguments_and_results_are_recorded_only_when_opted_in(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        runner = ToolRunner(
            [add, boom], eager=True, tracer_provider=traced.provider, record_content=True
        )
        events = turn(("a", "add", {"a": 1, "b": 2}), ("b", "boom", {"x": 3}))
        await run_turn(runner, from_list(events))
    spans = traced.by_call()
    assert attributes(spans["a"])["gen_ai.tool.call.arguments"] == '{"a":1,"b":2}'
    assert attributes(spans["a"])["gen_ai.tool.call.result"] == "3"
    assert attributes(spans["b"])["gen_ai.tool.call.arguments"] == '{"x":3}'
    assert "gen_ai.tool.call.result" not in attributes(spans["b"])  # it failed


async def test_a_call_cancelled_while_its_tool_runs_ends_its_span_as_cancelled(
    anyio_backend: str,
) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        control = RunControl()
        started = anyio.Event()

        async def slow() -> None:
            started.set()
            await anyio.sleep_forever()

        async def cancel_when_started() -> None:
            await started.wait()
            assert control.cancel("a", "user left")

        runner = ToolRunner([slow], eager=True, tracer_provider=traced.provider)
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_started)
            await run_turn(runner, from_list(turn(("a", "slow", {}))), control)
    (span,) = traced.spans()
    assert attributes(span)["error.type"] == "cancelled"
    assert span.status.status_code is StatusCode.ERROR
    assert span.end_time is not None
    assert span.start_time is not None
    assert span.end_time >= span.start_time


# -- calls whose tool never ran -------------------------------------------------------------


async def test_calls_whose_tool_never_ran_get_no_span_only_an_event_on_the_parent(
    anyio_backend: str,
) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        runner = ToolRunner([add], tracer_provider=traced.provider)  # gated
        events = [
            *call_events("a", "add", {"a": 1, "b": 2}),  # gated, the turn ends not ok
            *call_events("b", "nope", {}),  # unknown tool
            *call_events("c", "add", {"a": "x"}),  # validation
            *call_events("d", "add", "{not json"),  # the arguments never parsed
            {"type": "end", "ok": False, "reason": "length"},
        ]
        with traced.tracer.start_as_current_span("turn"):
            await run_turn(runner, from_list(events))
    assert traced.spans() == []
    (parent,) = traced.spans("turn")
    not_run = [
        (a, t) for name, a, t in events_of(parent) if name == "toolcall_tracker.tool_not_run"
    ]
    assert {a["gen_ai.tool.call.id"]: a["error.type"] for a, _ in not_run} == {
        "a": "not_executed",
        "b": "unknown_tool",
        "c": "validation",
        "d": "invalid_arguments",
    }
    assert all(a["toolcall_tracker.call.status"] == "error" for a, _ in not_run)
    assert {a["gen_ai.tool.name"] for a, _ in not_run} == {"add", "nope"}


async def test_without_a_parent_span_a_call_never_run_leaves_no_trace(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        runner = ToolRunner([add], tracer_provider=traced.provider)
        await run_turn(runner, from_list(turn(("a", "nope", {}))))
    assert traced.exporter.get_finished_spans() == ()


# -- the stream's timings -----------------------------------------------------------------


async def test_stream_timings_and_the_head_start_of_a_tool_that_overlapped_the_stream(
    anyio_backend: str,
) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        started, release = anyio.Event(), anyio.Event()

        async def fetch() -> str:
            started.set()
            await release.wait()  # runs until after the stream has ended
            return "page"

        async def stream() -> AsyncIterator[dict[str, Any]]:
            for event in call_events("a", "fetch", {}):
                yield event
            await started.wait()  # the tool runs while the stream is still open
            for event in call_events("b", "add", {"a": 1, "b": 1}):
                yield event
            yield {"type": "end"}

        async def release_after_end(tracker: ToolCallTracker) -> None:
            await tracker.wait_end()
            release.set()

        runner = ToolRunner([tool(fetch, eager=True), add], tracer_provider=traced.provider)
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(release_after_end, tracker)
            await run_turn(runner, stream(), tracker=tracker)
    spans = traced.by_call()
    eager, gated = spans["a"], spans["b"]
    assert names(events_of(eager)) == [
        "toolcall_tracker.announced",
        "toolcall_tracker.ready",
        "toolcall_tracker.tool_started",
        "toolcall_tracker.stream_ended",
    ]
    times = {name: at for name, _, at in events_of(eager)}
    assert times["toolcall_tracker.announced"] <= times["toolcall_tracker.ready"]
    assert times["toolcall_tracker.tool_started"] == eager.start_time
    # Head start: from the tool's start to the end of the stream, which came later.
    head_start = attributes(eager)["toolcall_tracker.call.head_start"]
    gap = times["toolcall_tracker.stream_ended"] - times["toolcall_tracker.tool_started"]
    assert head_start > 0
    assert head_start * 1e9 == pytest.approx(gap, abs=1_000)
    assert attributes(eager)["toolcall_tracker.call.finished_before_stream_end"] is False
    ended = dict(events_of(eager)[3][1])
    assert ended == {"toolcall_tracker.ok": True}
    # A gated tool starts after the end: no head start.
    assert attributes(gated)["toolcall_tracker.call.head_start"] == 0.0
    assert "toolcall_tracker.stream_ended" in names(events_of(gated))
    assert gated.start_time is not None
    assert eager.start_time is not None
    assert gated.start_time > times["toolcall_tracker.stream_ended"]
    # The stream's timeline, mapped: "b" was announced after "a"'s tool started.
    b_announced = {name: at for name, _, at in events_of(gated)}["toolcall_tracker.announced"]
    assert b_announced >= eager.start_time


async def test_a_tool_that_finished_before_the_stream_ended(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):

        async def stream(tracker: ToolCallTracker) -> AsyncIterator[dict[str, Any]]:
            for event in call_events("a", "add", {"a": 1, "b": 1}):
                yield event
            while tracker.status("a") is Status.RUNNING:
                await anyio.lowlevel.checkpoint()
            yield {"type": "end"}

        runner = ToolRunner([add], eager=True, tracer_provider=traced.provider)
        tracker = ToolCallTracker()
        await run_turn(runner, stream(tracker), tracker=tracker)
    (span,) = traced.spans()
    assert attributes(span)["toolcall_tracker.call.finished_before_stream_end"] is True
    assert span.start_time is not None
    assert span.end_time is not None
    ran = attributes(span)["toolcall_tracker.call.head_start"] * 1e9
    assert ran == pytest.approx(span.end_time - span.start_time, abs=1_000)
    assert "toolcall_tracker.stream_ended" not in names(events_of(span))


# -- context: parents and children -----------------------------------------------------------


async def test_spans_are_children_of_the_current_span_and_parents_of_the_tools_spans(
    anyio_backend: str,
) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):

        async def inner_async() -> str:
            with traced.tracer.start_as_current_span("inside async"):
                return "x"

        def inner_sync() -> str:  # in a worker thread
            with traced.tracer.start_as_current_span("inside sync"):
                return "y"

        runner = ToolRunner(
            [inner_async, inner_sync],
            eager=True,
            max_concurrency=1,
            tracer_provider=traced.provider,
        )
        events = turn(("a", "inner_async", {}), ("b", "inner_sync", {}), ("c", "inner_async", {}))
        with traced.tracer.start_as_current_span("turn") as turn_span:
            await run_turn(runner, from_list(events))
    spans = traced.by_call()
    turn_id = turn_span.get_span_context().span_id
    for call_span in spans.values():  # never each other's children
        assert call_span.parent is not None
        assert call_span.parent.span_id == turn_id
    inside = {s.name: s for s in traced.exporter.get_finished_spans() if s.name.startswith("in")}
    sync_parent = inside["inside sync"].parent
    assert sync_parent is not None
    assert sync_parent.span_id == spans["b"].context.span_id
    async_parents = {
        s.parent.span_id for s in traced.exporter.get_finished_spans() if s.name == "inside async"
    }
    assert async_parents == {spans["a"].context.span_id, spans["c"].context.span_id}


# -- approvals and ignored events ------------------------------------------------------------


async def test_approvals_become_span_events(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        control = RunControl()

        async def decide() -> None:
            async for request in control.approval_requests():
                if request.call_id == "a":
                    control.approve("a", arguments={"a": 5, "b": 5})
                else:
                    control.deny(request.call_id, reason="not today")

        runner = ToolRunner(
            [tool(add, needs_approval=True)],
            eager=True,
            tracer_provider=traced.provider,
            record_content=True,
        )
        events = turn(("a", "add", {"a": 1, "b": 2}), ("b", "add", {"a": 3, "b": 4}))
        with traced.tracer.start_as_current_span("turn"):
            async with anyio.create_task_group() as tg:
                tg.start_soon(decide)
                await run_turn(runner, from_list(events), control)
                tg.cancel_scope.cancel()
    (span,) = traced.spans()
    steps = [name for name in names(events_of(span)) if name != "toolcall_tracker.stream_ended"]
    assert steps == [
        "toolcall_tracker.announced",
        "toolcall_tracker.ready",
        "toolcall_tracker.approval_requested",
        "toolcall_tracker.approval_decided",
        "toolcall_tracker.tool_started",
    ]
    times = [at for _, _, at in events_of(span)]
    assert times == sorted(times)
    decided = {name: a for name, a, _ in events_of(span)}["toolcall_tracker.approval_decided"]
    assert decided == {"toolcall_tracker.approved": True, "toolcall_tracker.edited": True}
    assert attributes(span)["gen_ai.tool.call.arguments"] == '{"a":5,"b":5}'  # as edited
    assert attributes(span)["gen_ai.tool.call.result"] == "10"
    (parent,) = traced.spans("turn")
    on_parent = [(name, a) for name, a, _ in events_of(parent)]
    assert on_parent == [
        ("toolcall_tracker.approval_requested", {"gen_ai.tool.call.id": "b"}),
        (
            "toolcall_tracker.approval_decided",
            {
                "toolcall_tracker.approved": False,
                "toolcall_tracker.edited": False,
                "toolcall_tracker.reason": "not today",
                "gen_ai.tool.call.id": "b",
            },
        ),
        (
            "toolcall_tracker.tool_not_run",
            {
                "gen_ai.tool.call.id": "b",
                "gen_ai.tool.name": "add",
                "toolcall_tracker.call.status": "error",
                "error.type": "approval_denied",
            },
        ),
    ]


async def test_ignored_events_become_span_events(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        started, release = anyio.Event(), anyio.Event()

        async def fetch() -> str:
            started.set()
            await release.wait()
            return "page"

        async def stream() -> AsyncIterator[dict[str, Any]]:
            for event in call_events("a", "fetch", {}):
                yield event
            await started.wait()
            yield {"type": "delta", "id": "a", "argsTextDelta": "late"}  # not pending
            yield {"type": "delta", "id": "zz", "argsTextDelta": "{}"}  # unknown id
            yield {"type": "end"}
            release.set()

        runner = ToolRunner([fetch], eager=True, tracer_provider=traced.provider)
        with traced.tracer.start_as_current_span("turn"):
            await run_turn(runner, stream())
    (span,) = traced.spans()
    ignored = [a for name, a, _ in events_of(span) if name == "toolcall_tracker.event_ignored"]
    assert ignored == [
        {
            "toolcall_tracker.reason": "not_pending",
            "toolcall_tracker.event.type": "delta",
            "gen_ai.tool.call.id": "a",
        }
    ]
    (parent,) = traced.spans("turn")
    on_parent = [a for name, a, _ in events_of(parent) if name == "toolcall_tracker.event_ignored"]
    assert on_parent == [
        {
            "toolcall_tracker.reason": "unknown_id",
            "toolcall_tracker.event.type": "delta",
            "gen_ai.tool.call.id": "zz",
        }
    ]


async def test_run_tools_takes_the_provider_too(anyio_backend: str) -> None:
    traced = Traced()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(turn(("a", "add", {"a": 1, "b": 1}))))
            await run_tools(tracker, [add], tracer_provider=traced.provider, record_content=True)
    (span,) = traced.spans()
    assert attributes(span)["gen_ai.tool.call.result"] == "2"


# -- the global provider, and no opentelemetry at all ----------------------------------------


def run_isolated(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


PROGRAM = """
    import anyio
    from toolcall_tracker import ToolCallTracker, ToolRunner

    async def add(a: int, b: int) -> int:
        return a + b

    async def main() -> list:
        runner = ToolRunner([add], eager=True)  # built before any provider is configured
        {configure}
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, iter_events())
            return await runner.run(tracker)

    async def iter_events():
        for event in [
            {{"type": "start", "id": "a", "name": "add"}},
            {{"type": "delta", "id": "a", "argsTextDelta": '{{"a": 1, "b": 2}}'}},
            {{"type": "ready", "id": "a"}},
            {{"type": "end"}},
        ]:
            yield event

    calls = anyio.run(main)
    assert calls[0].result == 3, calls
"""


def test_the_globally_configured_provider_is_used_with_no_set_up() -> None:
    configure = """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
        global exporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    """
    program = textwrap.dedent(PROGRAM).format(
        configure=textwrap.indent(textwrap.dedent(configure), " " * 4).strip()
    )
    out = run_isolated(program + "\nprint([s.name for s in exporter.get_finished_spans()])\n")
    assert out == "['execute_tool add']"


def test_without_opentelemetry_nothing_is_imported() -> None:
    blocker = """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Block())
    """
    program = textwrap.dedent(blocker) + textwrap.dedent(PROGRAM).format(configure="pass")
    out = run_isolated(
        program
        + "\nimport sys\n"
        + "print(sorted(m for m in sys.modules if 'opentelemetry' in m or m.endswith('_otel')))\n"
    )
    assert out == "[]"


def test_installed_but_unconfigured_imports_only_the_api() -> None:
    program = textwrap.dedent(PROGRAM).format(configure="pass")
    out = run_isolated(program + "\nimport sys\nprint('opentelemetry.sdk' in sys.modules)\n")
    assert out == "False"
