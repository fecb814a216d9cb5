"""Human approval: in process, across requests (signed pending state), with gating, timeouts
and cancellation, and a hypothesis test over decision orders.

Ordering is proven with events and ``wait_all_tasks_blocked``, never with sleeps.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _runner_helpers import by_id, call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import (
    ApprovalCheckFailed,
    ApprovalDenied,
    ApprovalRefused,
    NotExecuted,
    PendingApprovals,
    RunControl,
    Status,
    ToolCallTracker,
    ToolRaised,
    ToolRunner,
    ValidationFailed,
    merge_calls,
    tool,
)
from toolcall_tracker.feedback import anthropic_messages, gemini_contents, openai_chat_messages

pytestmark = pytest.mark.anyio

SECRET = b"server secret, 16+ bytes"


class Tools:
    """A transfer tool needing approval, a free search tool, a record of what ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, Any]] = []
        self.search_release = anyio.Event()

        async def transfer(to: str, amount: int) -> str:
            self.ran.append(("transfer", (to, amount)))
            return f"sent {amount} to {to}"

        async def search(q: str) -> str:
            self.ran.append(("search", q))
            await self.search_release.wait()
            return f"found {q}"

        self.transfer = transfer
        self.search = search

    def runner(self, *, eager: bool = True, **options: Any) -> ToolRunner:
        return ToolRunner(
            [
                tool(self.transfer, eager=eager, needs_approval=True),
                tool(self.search, eager=True),
            ],
            **options,
        )


def turn_events(*calls: tuple[str, str, Any], end: bool = True) -> list[dict[str, Any]]:
    events = [event for call in calls for event in call_events(*call)]
    return [*events, {"type": "end"}] if end else events


async def test_in_process_approve_edit_and_deny_while_another_call_runs(
    anyio_backend: str,
) -> None:
    tools = Tools()
    runner = tools.runner()
    control = RunControl()
    tracker = ToolCallTracker()
    seen: list[str] = []
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                tracker.consume,
                from_list(
                    turn_events(
                        ("s", "search", {"q": "rates"}),
                        ("a", "transfer", {"to": "ann", "amount": 5}),
                        ("b", "transfer", {"to": "bob", "amount": 500}),
                        ("c", "transfer", {"to": "cy", "amount": 7}),
                    )
                ),
            )

            async def approver() -> None:
                async for request in control.approval_requests():
                    seen.append(request.call_id)
                    if len(seen) == 3:
                        break
                # decide in an order unlike the calls' own, while search still runs
                assert control.deny("b", reason="too much")
                assert control.approve("c", arguments={"to": "cy", "amount": 6})
                assert control.approve("a")
                assert not control.approve("a")  # decided already
                await anyio.wait_all_tasks_blocked()
                assert tracker.status("s") is Status.RUNNING  # untouched meanwhile
                tools.search_release.set()

            tg.start_soon(approver)
            calls = by_id(await runner.run(tracker, control=control))
    assert seen == ["a", "b", "c"]
    assert calls["a"].result == "sent 5 to ann"
    assert calls["c"].result == "sent 6 to cy"
    assert calls["c"].args == {"to": "cy", "amount": 7}  # the model's arguments stay
    assert control.edited == {"c": {"to": "cy", "amount": 6}}
    error = calls["b"].error
    assert isinstance(error, ApprovalDenied)
    assert error.reason == "too much"
    assert ("transfer", ("bob", 500)) not in tools.ran
    assert calls["s"].result == "found rates"
    assert control.pending is None
    # the edit is reported to the model as a note with the result
    messages = openai_chat_messages(calls.values(), notes=control.notes())
    reply = next(m for m in messages if m.get("tool_call_id") == "c")
    assert reply["content"].startswith("sent 6 to cy\n\n(Note: a human edited the arguments")
    assert '{"to":"cy","amount":6}' in reply["content"]
    gemini = gemini_contents(calls.values(), notes=control.notes())
    parts = {p["function_response"]["name"]: p for p in gemini[1]["parts"]}
    assert "note" not in parts["search"]["function_response"]["response"]


async def test_invalid_arguments_are_never_put_to_a_human(anyio_backend: str) -> None:
    tools = Tools()
    control = RunControl()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(turn_events(("a", "transfer", {"to": 1}))))
            calls = by_id(await tools.runner().run(tracker, control=control))
    assert isinstance(calls["a"].error, ValidationFailed)
    assert control.pending is None


async def test_edited_arguments_are_validated_again(anyio_backend: str) -> None:
    tools = Tools()
    control = RunControl()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                tracker.consume, from_list(turn_events(("a", "transfer", {"to": "x", "amount": 1})))
            )

            async def approver() -> None:
                async for request in control.approval_requests():
                    control.approve(request.call_id, arguments={"to": "x", "amount": "lots"})

            tg.start_soon(approver)
            calls = by_id(await tools.runner().run(tracker, control=control))
    error = calls["a"].error
    assert isinstance(error, ValidationFailed)
    assert "edited arguments" in error.message
    assert tools.ran == []


@pytest.mark.parametrize("sync", [True, False])
async def test_a_predicate_decides_per_call(anyio_backend: str, sync: bool) -> None:
    ran: list[int] = []

    def pay(amount: int) -> int:
        ran.append(amount)
        return amount

    async def async_big(call: Any) -> bool:
        await anyio.lowlevel.checkpoint()
        return bool(call.args["amount"] > 100)

    def sync_big(call: Any) -> bool:
        return bool(call.args["amount"] > 100)

    runner = ToolRunner([tool(pay, eager=True, needs_approval=sync_big if sync else async_big)])
    control = RunControl()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                tracker.consume,
                from_list(
                    turn_events(("small", "pay", {"amount": 5}), ("big", "pay", {"amount": 500}))
                ),
            )

            async def approver() -> None:
                async for request in control.approval_requests():
                    assert request.call_id == "big"
                    await tracker.wait_done("small")  # the small one did not wait for anybody
                    control.deny("big", "no")

            tg.start_soon(approver)
            calls = by_id(await runner.run(tracker, control=control))
    assert calls["small"].result == 5
    assert isinstance(calls["big"].error, ApprovalDenied)
    assert ran == [5]


async def test_a_predicate_that_raises_fails_its_call_with_its_own_kind(anyio_backend: str) -> None:
    def boom(call: Any) -> bool:
        raise RuntimeError("no idea")

    def f() -> str:
        return "ran"

    runner = ToolRunner([tool(f, eager=True, needs_approval=boom)])
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(turn_events(("a", "f", {}))))
            calls = by_id(await runner.run(tracker, control=RunControl()))
    error = calls["a"].error
    assert isinstance(error, ApprovalCheckFailed)
    assert error.kind == "approval_check_failed"
    assert error.exception == "RuntimeError"
    assert not isinstance(error, ToolRaised)


async def test_without_a_control_a_call_needing_approval_is_denied(anyio_backend: str) -> None:
    tools = Tools()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                tracker.consume, from_list(turn_events(("a", "transfer", {"to": "x", "amount": 1})))
            )
            calls = by_id(await tools.runner().run(tracker))
    error = calls["a"].error
    assert isinstance(error, ApprovalDenied)
    assert error.reason == "no_approver"
    assert tools.ran == []


# -- gating, timeouts, cancellation ---------------------------------------------------------


@pytest.mark.parametrize("first", ["approval", "end"])
async def test_a_gated_tool_needs_both_the_end_and_its_approval(
    anyio_backend: str, first: str
) -> None:
    tools = Tools()
    runner = tools.runner(eager=False)
    control = RunControl()
    send, receive = anyio.create_memory_object_stream[Any](100)
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, receive)
            tg.start_soon(partial(runner.run, tracker, control=control))
            for event in call_events("a", "transfer", {"to": "x", "amount": 1}):
                await send.send(event)
            await anyio.wait_all_tasks_blocked()
            if first == "approval":
                assert control.approve("a")
                await anyio.wait_all_tasks_blocked()
                assert tools.ran == []  # approved, but the turn has not ended
                await send.send({"type": "end"})
            else:
                await send.send({"type": "end"})
                await anyio.wait_all_tasks_blocked()
                assert tools.ran == []  # the turn ended ok, but nobody approved yet
                assert control.approve("a")
            await send.aclose()
    assert tools.ran == [("transfer", ("x", 1))]


async def test_a_turn_ending_not_ok_fails_a_gated_call_without_asking(anyio_backend: str) -> None:
    tools = Tools()
    control = RunControl()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            events = [
                *call_events("a", "transfer", {"to": "x", "amount": 1}),
                {"type": "end", "ok": False, "reason": "length"},
            ]
            tg.start_soon(tracker.consume, from_list(events))
            calls = by_id(await tools.runner(eager=False).run(tracker, control=control))
    assert isinstance(calls["a"].error, NotExecuted)
    assert control.pending is None
    assert tools.ran == []


async def test_an_approval_still_undecided_at_the_timeout_is_denied(anyio_backend: str) -> None:
    tools = Tools()
    control = RunControl()
    tools.search_release.set()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                tracker.consume,
                from_list(
                    turn_events(
                        ("a", "transfer", {"to": "x", "amount": 1}), ("s", "search", {"q": "q"})
                    )
                ),
            )
            calls = by_id(await tools.runner(timeout=0.05).run(tracker, control=control))
    error = calls["a"].error
    assert isinstance(error, ApprovalDenied)
    assert error.reason == "timeout"
    assert calls["s"].result == "found q"
    assert not control.approve("a")


async def test_cancelling_the_run_during_an_approval_fails_it_cancelled(anyio_backend: str) -> None:
    tools = Tools()
    control = RunControl()
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                tracker.consume, from_list(turn_events(("a", "transfer", {"to": "x", "amount": 1})))
            )
            with anyio.CancelScope() as scope:

                async def stop() -> None:
                    async for _ in control.approval_requests():
                        scope.cancel()

                tg.start_soon(stop)
                await tools.runner().run(tracker, control=control)
    call = tracker.get("a")
    assert call is not None
    assert call.status is Status.ERROR
    assert call.error.kind == "cancelled"
    assert call.error.tool_started is False
    assert not control.running


# -- across requests --------------------------------------------------------------------------


async def first_request(
    runner: ToolRunner, *calls: tuple[str, str, Any]
) -> tuple[list[Any], PendingApprovals]:
    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, from_list(turn_events(*calls)))
        result = await runner.run(tracker, control=control)
    assert control.pending is not None
    return result, control.pending


THREE = (
    ("a", "transfer", {"to": "ann", "amount": 5}),
    ("s", "search", {"q": "q"}),
    ("b", "transfer", {"to": "bob", "amount": 6}),
    ("c", "transfer", {"to": "cy", "amount": 7}),
)


async def test_across_requests_pending_state_round_trips_and_resumes(anyio_backend: str) -> None:
    tools = Tools()
    tools.search_release.set()
    runner = tools.runner(approval_secret=SECRET)
    with anyio.fail_after(DEADLINE):
        calls, pending = await first_request(runner, *THREE)
        # The run returned: the other call finished, the three stay running, pending.
        assert {c.id: c.status.value for c in calls} == {
            "a": "running",
            "s": "done",
            "b": "running",
            "c": "running",
        }
        assert pending.ids == ["a", "b", "c"]
        assert tools.ran == [("search", "q")]
        with pytest.raises(ValueError, match="'a', 'b', 'c' are not finished"):
            anthropic_messages(calls)
        # Request 2: the client sends the state back with decisions, in JSON.
        text = pending.model_dump_json()
        state = PendingApprovals.model_validate_json(text)
        decisions = [state.deny("b", "not bob"), state.approve("c", {"to": "cy", "amount": 1})]
        wire = [json.loads(d.model_dump_json()) for d in decisions]
        control = RunControl()
        resumed = await runner.resume(
            PendingApprovals.model_validate_json(text),
            [type(decisions[0]).model_validate(d) for d in wire],
            control=control,
        )
        assert [c.id for c in resumed] == ["b", "c"]
        assert tools.ran[1:] == [("transfer", ("cy", 1))]
        assert control.pending is not None
        assert control.pending.ids == ["a"]
        merged = merge_calls(calls, resumed)
        with pytest.raises(ValueError, match="'a'"):
            openai_chat_messages(merged)
        # Request 3: the last one, resumed from the re-signed remainder.
        last = await runner.resume(control.pending, [control.pending.approve("a")])
        merged = merge_calls(merged, last)
    assert [c.id for c in merged] == ["a", "s", "b", "c"]
    assert all(c.status in (Status.DONE, Status.ERROR) for c in merged)
    messages = openai_chat_messages(merged, notes=control.notes())
    replies = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert replies["a"] == "sent 5 to ann"
    assert json.loads(replies["b"])["error"]["kind"] == "approval_denied"
    assert "not bob" in replies["b"]
    assert replies["c"].startswith("sent 1 to cy\n\n(Note: a human edited")


async def test_a_resume_retried_after_a_crash_never_runs_a_call_twice(anyio_backend: str) -> None:
    tools = Tools()
    runner = tools.runner(approval_secret=SECRET)
    with anyio.fail_after(DEADLINE):
        _, pending = await first_request(runner, ("a", "transfer", {"to": "x", "amount": 1}))
        decision = pending.approve("a")
        first = by_id(await runner.resume(pending, [decision]))
        # the response was lost: the client retries the very same request
        again = by_id(await runner.resume(pending, [decision]))
        # or tries to turn the approval into something else
        other = by_id(await runner.resume(pending, [pending.deny("a")]))
    assert first["a"].result == "sent 1 to x"
    assert tools.ran == [("transfer", ("x", 1))]
    for calls in (again, other):  # the outcome recorded by the first resume, not run again
        assert calls["a"].status is Status.DONE
        assert calls["a"].result == "sent 1 to x"


async def test_signed_state_refuses_tampering_replay_and_a_wrong_key(anyio_backend: str) -> None:
    tools = Tools()
    runner = tools.runner(approval_secret=SECRET)
    with anyio.fail_after(DEADLINE):
        _, pending = await first_request(
            runner,
            ("a", "transfer", {"to": "x", "amount": 1}),
            ("b", "transfer", {"to": "y", "amount": 2}),
        )
        _, other_turn = await first_request(runner, ("a", "transfer", {"to": "x", "amount": 1}))
        data = pending.model_dump(mode="json")
        # tampered arguments (the token too, recomputed without the key cannot match)
        tampered = json.loads(json.dumps(data))
        tampered["calls"][0]["args_text"] = '{"to": "x", "amount": 1000000}'
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await runner.resume(PendingApprovals.model_validate(tampered), [])
        # a decision replayed against another call of the same turn
        forged = pending.approve("a").model_copy(update={"call_id": "b"})
        with pytest.raises(ApprovalRefused, match="not bound"):
            await runner.resume(pending, [forged])
        # a decision replayed from another turn (same id, same arguments, other nonce)
        with pytest.raises(ApprovalRefused, match="not bound"):
            await runner.resume(pending, [other_turn.approve("a")])
        # a decision for a call that is not pending here
        with pytest.raises(ApprovalRefused, match="names no call"):
            await runner.resume(other_turn, [pending.approve("b")])
        # the right state, read by a runner with another key
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await tools.runner(approval_secret=b"another secret, 16+ bytes").resume(
                pending, [pending.approve("a")]
            )
        # unsigned state given to a runner with a secret
        _, unsigned = await first_request(
            tools.runner(), ("a", "transfer", {"to": "x", "amount": 1})
        )
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await runner.resume(unsigned, [unsigned.approve("a")])
    assert tools.ran == []  # nothing ever ran


# -- decision orders (hypothesis) ---------------------------------------------------------------


CALL_IDS = ["c0", "c1", "c2", "c3"]
DECISION = st.sampled_from(["approve", "edit", "deny", "cancel"])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    order=st.permutations(CALL_IDS),
    verdicts=st.lists(DECISION, min_size=len(CALL_IDS), max_size=len(CALL_IDS)),
    split=st.integers(0, len(CALL_IDS)),
)
def test_any_decision_order_gives_each_call_its_own_outcome(
    anyio_backend: str, order: list[str], verdicts: list[str], split: int
) -> None:
    """In process and across requests (the first ``split`` decisions resumed in one request,
    the rest in a second one), every call ends with its own verdict, whatever the order."""
    verdict = dict(zip(CALL_IDS, verdicts, strict=True))

    async def scenario() -> None:
        for across in (False, True):
            await one_scenario(order, verdict, split, across)

    anyio.run(scenario, backend=anyio_backend)


async def one_scenario(order: list[str], verdict: dict[str, str], split: int, across: bool) -> None:
    ran: list[int] = []

    def pay(n: int) -> int:
        ran.append(n)
        return n

    runner = ToolRunner([tool(pay, eager=True, needs_approval=True)], approval_secret=SECRET)
    specs = [(call_id, "pay", {"n": i}) for i, call_id in enumerate(CALL_IDS)]
    with anyio.fail_after(DEADLINE):
        if not across:
            control = RunControl()
            tracker = ToolCallTracker()

            async def decide() -> None:
                asked = 0
                async for _ in control.approval_requests():
                    asked += 1
                    if asked == len(CALL_IDS):
                        break
                for call_id in order:
                    act(control, call_id, verdict[call_id])

            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, from_list(turn_events(*specs)))
                tg.start_soon(decide)
                outcome = by_id(await runner.run(tracker, control=control))
        else:
            calls, pending = await first_request(runner, *specs)
            decided = [c for c in order if verdict[c] != "cancel"]
            for batch in (decided[:split], decided[split:]):
                decisions = [decision(pending, c, verdict[c]) for c in batch]
                calls = merge_calls(calls, await runner.resume(pending, decisions))
            outcome = by_id(calls)
    for i, call_id in enumerate(CALL_IDS):
        call = outcome[call_id]
        expected = verdict[call_id]
        if expected == "approve":
            assert call.result == i
        elif expected == "edit":
            assert call.result == 100 + i
        elif expected == "deny":
            assert isinstance(call.error, ApprovalDenied)
            assert call.error.reason == f"no {call_id}"
        elif across:  # never decided: still pending
            assert call.status is Status.RUNNING
        else:
            assert call.error.kind == "cancelled"
    assert sorted(ran) == sorted(
        (100 + i if verdict[c] == "edit" else i)
        for i, c in enumerate(CALL_IDS)
        if verdict[c] in ("approve", "edit")
    )


def act(control: RunControl, call_id: str, verdict: str) -> None:
    index = CALL_IDS.index(call_id)
    if verdict == "approve":
        assert control.approve(call_id)
    elif verdict == "edit":
        assert control.approve(call_id, {"n": 100 + index})
    elif verdict == "deny":
        assert control.deny(call_id, f"no {call_id}")
    else:
        assert control.cancel(call_id, "changed my mind")


def decision(pending: PendingApprovals, call_id: str, verdict: str) -> Any:
    index = CALL_IDS.index(call_id)
    if verdict == "approve":
        return pending.approve(call_id)
    if verdict == "edit":
        return pending.approve(call_id, {"n": 100 + index})
    return pending.deny(call_id, f"no {call_id}")
