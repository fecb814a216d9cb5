"""Resume across requests: the outcome store protocol, the signed pending state (expiry,
limits, end, secrets, malformed input, the wire form) and a resume that tells the truth.

Every async test runs on asyncio and trio, bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from _runner_helpers import by_id, call_events, from_list
from _stores import FlakyStore, OldStore
from conftest import DEADLINE
from toolcall_tracker import (
    ApprovalDecision,
    ApprovalRefused,
    CallOutcome,
    Claim,
    End,
    InMemoryOutcomeStore,
    InvalidEvent,
    Limits,
    NotExecuted,
    OutcomeInDoubt,
    OutcomeStore,
    PendingApprovals,
    RunControl,
    Status,
    ToolCall,
    ToolCallTracker,
    ToolRunner,
    merge_calls,
    tool,
)
from toolcall_tracker.failures import ApprovalDenied, CallCancelled, ClaimFailed, ToolRaised
from toolcall_tracker.runner._pending import _Signer

pytestmark = pytest.mark.anyio

SECRET = b"a resume test secret (32 bytes)"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)


class Ledger:
    """A gated transfer tool needing approval, and what ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, int]] = []

        async def transfer(to: str, amount: int) -> str:
            self.ran.append((to, amount))
            return f"sent {amount} to {to}"

        self.transfer = transfer

    def runner(self, *, eager: bool = False, **options: Any) -> ToolRunner:
        options.setdefault("approval_secret", SECRET)
        return ToolRunner([tool(self.transfer, eager=eager, needs_approval=True)], **options)


def events(*calls: tuple[str, Any], end: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out = [e for call_id, args in calls for e in call_events(call_id, "transfer", args)]
    return [*out, end if end is not None else {"type": "end"}]


async def deferred(
    runner: ToolRunner, items: list[dict[str, Any]], limits: Limits | None = None
) -> tuple[list[ToolCall], PendingApprovals]:
    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker(limits=limits)
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, from_list(items))
        calls = await runner.run(tracker, control=control)
    assert control.pending is not None
    return calls, control.pending


def pay(to: str, amount: int) -> dict[str, Any]:
    return {"to": to, "amount": amount}


# -- the store protocol ---------------------------------------------------------------------


async def test_in_memory_store_claims_once_and_returns_the_recorded_outcome(
    anyio_backend: str,
) -> None:
    store = InMemoryOutcomeStore()
    assert isinstance(store, OutcomeStore)
    until = datetime.now(timezone.utc) + timedelta(hours=1)
    with anyio.fail_after(DEADLINE):
        assert await store.claim("n:a", expires_at=until) == Claim(won=True)
        assert await store.claim("n:a", expires_at=until) == Claim(won=False, outcome=None)
        assert await store.get("n:a") is None
        outcome = CallOutcome.of({"x": float("nan")}, None)
        await store.record("n:a", outcome)
        assert await store.claim("n:a", expires_at=until) == Claim(won=False, outcome=outcome)
        assert await store.get("n:a") == outcome
    assert outcome.result == {"x": None}  # plain JSON, under the one output rule


async def test_in_memory_store_evicts_by_expiry_never_by_count(anyio_backend: str) -> None:
    now = [NOW]
    store = InMemoryOutcomeStore(clock=lambda: now[0])
    with anyio.fail_after(DEADLINE):
        for i in range(5000):
            assert (await store.claim(f"n:{i}", expires_at=NOW + timedelta(hours=1))).won
        assert (await store.claim("n:late", expires_at=NOW + timedelta(hours=3))).won
        assert len(store) == 5001  # no count limit: every live key is kept
        assert not (await store.claim("n:0", expires_at=NOW + timedelta(hours=1))).won
        now[0] = NOW + timedelta(hours=2)
        assert await store.get("n:0") is None
        assert len(store) == 1  # the expired ones are gone, the live one kept
        assert not (await store.claim("n:late", expires_at=NOW + timedelta(hours=3))).won


def test_call_outcome_round_trips_failures_by_kind() -> None:
    denied = ApprovalDenied(message="no", tool="t", reason="no")
    outcome = CallOutcome.of(None, denied)
    back = CallOutcome.model_validate_json(outcome.model_dump_json())
    assert back.kind == "failure"
    assert back.call_failure() == denied
    unknown = CallOutcome(kind="failure", failure={"kind": "from_the_future", "message": "m"})
    failure = unknown.call_failure()
    assert failure is not None
    assert (failure.kind, failure.message) == ("from_the_future", "m")
    assert CallOutcome.of([1, "\ud800"], None).result == [1, "\ufffd"]


def test_deprecated_finished_calls_names_warn_and_still_work() -> None:
    import toolcall_tracker
    import toolcall_tracker.runner as runner_module

    for module in (toolcall_tracker, runner_module):
        with pytest.warns(DeprecationWarning, match="OutcomeStore"):
            protocol = module.FinishedCalls
        with pytest.warns(DeprecationWarning, match="InMemoryOutcomeStore"):
            old_class = module.InMemoryFinishedCalls
        with pytest.warns(DeprecationWarning, match="evicts by expiry"):
            old = old_class()
        assert anyio.run(old.add, "k") is True
        assert anyio.run(old.add, "k") is False
        assert "k" in old
        assert isinstance(old, protocol)

    with pytest.warns(DeprecationWarning, match="FinishedCalls store"):
        runner = ToolRunner([], finished_calls=OldStore())
    with pytest.warns(DeprecationWarning, match="outcome_store"):
        assert runner.finished_calls is runner.outcome_store
    with pytest.warns(DeprecationWarning, match="outcome_store="):
        ToolRunner([], finished_calls=InMemoryOutcomeStore())
    with pytest.raises(TypeError, match="InMemoryOutcomeStore"):
        ToolRunner([], outcome_store=object())  # type: ignore[arg-type]


async def test_an_old_finished_calls_store_still_prevents_a_second_run(anyio_backend: str) -> None:
    ledger = Ledger()
    with pytest.warns(DeprecationWarning, match="FinishedCalls store"):
        runner = ledger.runner(finished_calls=OldStore())
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1))))
        first = by_id(await runner.resume(pending, [pending.approve("a")]))
        again = by_id(await runner.resume(pending, [pending.approve("a")]))
    assert first["a"].result == "sent 1 to x"
    assert isinstance(again["a"].error, OutcomeInDoubt)  # the old store keeps no outcome
    assert ledger.ran == [("x", 1)]


# -- claim before the run, record after --------------------------------------------------------


async def test_a_resume_claims_each_call_before_running_it_and_records_after(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    store = FlakyStore()
    runner = ledger.runner(outcome_store=store, max_concurrency=1)
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1)), ("b", pay("y", 2))))
        calls = by_id(await runner.resume(pending, [pending.approve("a"), pending.approve("b")]))
    assert [c.status for c in calls.values()] == [Status.DONE, Status.DONE]
    assert store.log == [("claim", "a"), ("record", "a"), ("claim", "b"), ("record", "b")]


async def test_a_failed_claim_leaves_the_call_decidable(anyio_backend: str) -> None:
    """The store fails on the second key: the first call still runs, the second does not
    and is not lost: a later resume runs it (and does not run the first again)."""
    ledger = Ledger()
    store = FlakyStore()
    store.fail_claim.add("b")
    runner = ledger.runner(outcome_store=store)
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1)), ("b", pay("y", 2))))
        decisions = [pending.approve("a"), pending.approve("b")]
        first = by_id(await runner.resume(pending, decisions))
        error = first["b"].error
        assert isinstance(error, ClaimFailed)
        assert error.exception == "ConnectionError"
        assert ledger.ran == [("x", 1)]
        store.fail_claim.clear()
        second = by_id(await runner.resume(pending, decisions))
    assert second["a"].result == "sent 1 to x"  # the recorded outcome, not a second run
    assert second["b"].result == "sent 2 to y"
    assert ledger.ran == [("x", 1), ("y", 2)]


async def test_a_failed_outcome_write_leaves_the_call_in_doubt_never_rerun(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    store = FlakyStore()
    store.fail_record.add("a")
    runner = ledger.runner(outcome_store=store)
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1))))
        first = by_id(await runner.resume(pending, [pending.approve("a")]))
        again = by_id(await runner.resume(pending, [pending.approve("a")]))
    assert first["a"].result == "sent 1 to x"  # it ran: this response says so
    error = again["a"].error
    assert isinstance(error, OutcomeInDoubt)
    assert "never recorded" in error.message
    assert ledger.ran == [("x", 1)]


async def test_a_denied_call_cannot_be_approved_by_a_later_resume(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1))))
        first = by_id(await runner.resume(pending, [pending.deny("a", "no")]))
        later = by_id(await runner.resume(pending, [pending.approve("a")]))
    for calls in (first, later):
        error = calls["a"].error
        assert isinstance(error, ApprovalDenied)
        assert error.reason == "no"
    assert ledger.ran == []


async def test_a_denial_whose_claim_fails_is_claim_failed_not_denied(anyio_backend: str) -> None:
    """An earlier resume ran the call; a later denial cannot reach the store: the answer is
    ``claim_failed``, never "denied" (which would tell the model it did not run)."""
    ledger = Ledger()
    store = FlakyStore()
    runner = ledger.runner(outcome_store=store)
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1))))
        await runner.resume(pending, [pending.approve("a")])
        store.fail_claim.add("a")
        calls = by_id(await runner.resume(pending, [pending.deny("a", "no")]))
    assert isinstance(calls["a"].error, ClaimFailed)
    assert ledger.ran == [("x", 1)]


# -- the signed state ---------------------------------------------------------------------------


async def test_pending_state_carries_expiry_limits_and_end(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner(approval_ttl=timedelta(hours=2))
    limits = Limits(max_id_chars=300)
    before = datetime.now(timezone.utc)
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(
            runner, events(("a", pay("x", 1)), end={"type": "end", "reason": "stop"}), limits
        )
    assert pending.limits == limits
    assert pending.end == End(reason="stop", ok=True)
    assert pending.expires_at.tzinfo is not None
    window = pending.expires_at - before
    assert timedelta(hours=2) - timedelta(seconds=2) <= window <= timedelta(hours=2, seconds=2)
    assert ToolRunner([]).outcome_store is not None


async def test_a_replay_after_expiry_is_refused(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1))))
        signer = _Signer(SECRET)
        past = datetime.now(timezone.utc) - timedelta(seconds=1)
        expired = signer.pending(pending.nonce, pending.calls, pending.limits, pending.end, past)
        with pytest.raises(ApprovalRefused, match="expired"):
            await runner.resume(expired, [expired.approve("a")])
        # moving the expiry forward by hand breaks the signature
        data = expired.model_dump(mode="json")
        data["expires_at"] = (datetime.now(timezone.utc) + timedelta(days=9)).isoformat()
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await runner.resume(PendingApprovals.model_validate(data), [expired.approve("a")])
    assert ledger.ran == []


@pytest.mark.parametrize("secret", [b"", "", b"fifteen bytes!!", "x" * 15])
def test_weak_approval_secrets_are_refused_with_the_fix(secret: bytes | str) -> None:
    with pytest.raises(ValueError, match=r"secrets\.token_hex"):
        ToolRunner([], approval_secret=secret)


def test_a_sixteen_byte_secret_is_accepted_and_a_wrong_type_is_named() -> None:
    ToolRunner([], approval_secret=b"sixteen bytes!!!")
    with pytest.raises(TypeError, match="bytes or str"):
        ToolRunner([], approval_secret=12345678901234567890)  # type: ignore[arg-type]


MALFORMED = ["", "é" * 64, "\ud800" * 64, "0" * 63, "0" * 65, "Z" * 64, "A" * 64, "garbage"]


@pytest.mark.parametrize("bad", MALFORMED)
async def test_malformed_tokens_and_signatures_are_refused_not_type_errors(
    anyio_backend: str, bad: str
) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1))))
        decision = pending.approve("a")
        bad_signature = pending.model_copy(update={"signature": bad})
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await runner.resume(bad_signature, [decision])
        bad_decision = decision.model_copy(update={"token": bad})
        with pytest.raises(ApprovalRefused, match="not bound"):
            await runner.resume(pending, [bad_decision])
        call = pending.calls[0].model_copy(update={"token": bad})
        bad_call = pending.model_copy(update={"calls": (call,)})
        with pytest.raises(ApprovalRefused):
            await runner.resume(bad_call, [decision])
    assert ledger.ran == []


@settings(max_examples=200, deadline=None)
@given(
    signature=st.text(),
    token=st.text(),
    decision_token=st.text(),
    call_id=st.one_of(st.just("a"), st.text()),
)
def test_any_malformed_token_or_signature_is_approval_refused(
    signature: str, token: str, decision_token: str, call_id: str
) -> None:
    signer = _Signer(SECRET)
    call = ToolCall(id="a", name="t", args_text="{}", args={})
    state = signer.pending("n", [signer.call("n", call)], Limits(), End())
    good = state.approve("a")
    forged_call = state.calls[0].model_copy(update={"token": token})
    attempts = [
        (state.model_copy(update={"signature": signature}), [good]),
        (state.model_copy(update={"calls": (forged_call,)}), [good]),
        (state, [good.model_copy(update={"token": decision_token, "call_id": call_id})]),
    ]
    for pending, decisions in attempts:
        try:
            signer.verify(pending, decisions)
        except ApprovalRefused:
            continue
        # only the genuine values verify
        assert pending.signature == state.signature
        assert pending.calls == state.calls
        assert decisions[0].token == good.token
        assert decisions[0].call_id == "a"


def test_a_decision_that_is_not_a_decision_is_refused() -> None:
    signer = _Signer(SECRET)
    call = ToolCall(id="a", name="t", args_text="{}", args={})
    state = signer.pending("n", [signer.call("n", call)], Limits(), End())
    weird = state.approve("a").model_copy(update={"call_id": ["a"]})
    for bad in (weird, {"call_id": "a", "token": "x"}):
        with pytest.raises(ApprovalRefused, match="ApprovalDecision"):
            signer.verify(state, [bad])  # type: ignore[list-item]


async def test_resume_refuses_unsigned_states_unless_allowed(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner(approval_secret=None)
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("a", pay("x", 1))))
        with pytest.raises(ApprovalRefused, match="allow_unsigned=True"):
            await runner.resume(pending, [pending.approve("a")])
        assert ledger.ran == []
        calls = by_id(await runner.resume(pending, [pending.approve("a")], allow_unsigned=True))
    assert calls["a"].result == "sent 1 to x"


def test_pending_arguments_are_a_copy() -> None:
    signer = _Signer(SECRET)
    call = ToolCall(id="a", name="t", args_text='{"card": "4111"}', args={"card": "4111"})
    request = signer.call("nonce", call)
    shown = request.arguments
    assert shown == {"card": "4111"}
    assert shown is not call.args
    shown["card"] = "redacted"
    assert request.arguments == {"card": "4111"}
    assert call.args == {"card": "4111"}


# -- the wire form (hypothesis) ------------------------------------------------------------


ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    call_id=st.one_of(ANY_TEXT, st.just("=?b64?not base64"), st.just("\ud800")),
    name=ANY_TEXT,
    value=ANY_TEXT,
    reason=st.none() | ANY_TEXT,
    ok=st.booleans(),
)
def test_pending_state_round_trips_every_string_the_core_accepts(
    call_id: str, name: str, value: str, reason: str | None, ok: bool
) -> None:
    tracker = ToolCallTracker(limits=Limits(max_id_chars=64))
    args_text = json.dumps({"v": value}, ensure_ascii=False)  # raw surrogates stay raw
    try:
        tracker.write_start(call_id, name)
        tracker.write_delta(call_id, args_text)
        tracker.write_ready(call_id)
    except InvalidEvent:
        assume(False)
    call = tracker.get(call_id)
    assert call is not None
    assume(call.status is Status.RUNNING)
    signer = _Signer(SECRET)
    end = End(reason=reason, ok=ok)
    state = signer.pending("nonce", [signer.call("nonce", call)], tracker.limits, end)
    text = state.model_dump_json()
    text.encode("utf-8")  # valid UTF-8: no raw lone surrogate
    back = PendingApprovals.model_validate_json(text)
    assert back == state
    assert back.calls[0].call_id == call_id
    assert back.calls[0].args_text == args_text
    assert back.end == end
    decision = ApprovalDecision.model_validate_json(back.approve(call_id).model_dump_json())
    assert signer.verify(back, [decision]) == {call_id: decision}
    # and through plain JSON data (a web framework parsing the body first)
    assert PendingApprovals.model_validate(json.loads(text)) == state


async def test_a_call_id_with_a_lone_surrogate_resumes_from_json(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    call_id = "call_\ud83d"
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events((call_id, pay("\udcff", 3))))
        text = pending.model_dump_json()
        state = PendingApprovals.model_validate_json(text)
        decision = ApprovalDecision.model_validate_json(state.approve(call_id).model_dump_json())
        calls = by_id(await runner.resume(state, [decision]))
    assert calls[call_id].result == "sent 3 to \udcff"
    assert ledger.ran == [("\udcff", 3)]


# -- resume tells the truth ------------------------------------------------------------------


async def test_a_gated_tool_of_a_cut_off_turn_never_runs_on_resume(anyio_backend: str) -> None:
    """A state whose turn ended with ``length`` (as an async ``needs_approval`` can leave
    one): the approved gated call ends ``not_executed``, nothing runs, nothing is claimed."""
    ledger = Ledger()
    store = FlakyStore()
    runner = ledger.runner(outcome_store=store)
    with anyio.fail_after(DEADLINE):
        _, ok_pending = await deferred(runner, events(("a", pay("x", 1))))
        signer = _Signer(SECRET)
        cut = End(reason="length", ok=False)
        pending = signer.pending(ok_pending.nonce, ok_pending.calls, ok_pending.limits, cut)
        control = RunControl()
        edited = pending.approve("a", pay("x", 2))
        calls = by_id(await runner.resume(pending, [edited], control=control))
    assert control.notes() == {}  # approved with edits, never ran: no "it ran with" note
    error = calls["a"].error
    assert isinstance(error, NotExecuted)
    assert error.reason == "length"
    assert ledger.ran == []
    assert store.log == []  # never claimed: nothing ran


async def test_an_async_predicate_after_a_cut_off_turn_never_runs_its_tool(
    anyio_backend: str,
) -> None:
    ran: list[int] = []

    async def needs(call: ToolCall) -> bool:
        await anyio.lowlevel.checkpoint()
        return True

    def send(n: int) -> int:
        ran.append(n)
        return n

    runner = ToolRunner([tool(send, needs_approval=needs)], approval_secret=SECRET)
    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker()
    cut = [*call_events("a", "send", {"n": 1}), {"type": "end", "reason": "length", "ok": False}]
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(cut))
            first = by_id(await runner.run(tracker, control=control))
        pending = control.pending
        if pending is not None:  # the run left it pending: resume must not run it
            resumed = by_id(await runner.resume(pending, [pending.approve("a")]))
            error = resumed["a"].error
            assert isinstance(error, NotExecuted)
            assert error.reason == "length"
        else:
            assert first["a"].status is Status.ERROR
    assert ran == []


async def test_resume_replays_under_the_turns_own_limits(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    long_id = "x" * 400
    limits = Limits(max_id_chars=512, max_args_chars=9 * 1024 * 1024)
    big = "y" * (8 * 1024 * 1024 + 10)
    with anyio.fail_after(DEADLINE * 4):
        _, pending = await deferred(
            runner, events((long_id, pay("z", 1)), ("big", pay(big, 2))), limits
        )
        calls = by_id(
            await runner.resume(pending, [pending.approve(long_id), pending.approve("big")])
        )
    assert calls[long_id].result == "sent 1 to z"
    assert calls["big"].status is Status.DONE
    assert sorted(amount for _, amount in ledger.ran) == [1, 2]  # both ran (concurrently)


async def test_an_edited_call_that_never_ran_gets_no_note(anyio_backend: str) -> None:
    """Approved with edited arguments, then not executed (the turn was cut off) or cancelled
    at the gate: no note says it ran. The one that ran gets its note."""
    ledger = Ledger()
    runner = ledger.runner()
    control = RunControl()
    tracker = ToolCallTracker()
    send, stop = anyio.create_memory_object_stream[dict[str, Any]](10)

    async def decide() -> None:
        seen = 0
        async for request in control.approval_requests():
            seen += 1
            assert control.approve(request.call_id, pay("edited", 9))
            if seen == 2:
                assert control.cancel("b", "changed my mind")
                await send.send({"type": "end", "reason": "length", "ok": False})
                await send.aclose()

    async def source() -> Any:
        for item in events(("a", pay("x", 1)), ("b", pay("y", 2)), end={})[:-1]:
            yield item
        async with stop:
            async for item in stop:
                yield item

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            tg.start_soon(decide)
            calls = by_id(await runner.run(tracker, control=control))
    assert isinstance(calls["a"].error, NotExecuted)
    assert isinstance(calls["b"].error, CallCancelled)
    assert control.notes() == {}
    assert ledger.ran == []

    # the same edit on a call that runs (in a resume) is noted
    with anyio.fail_after(DEADLINE):
        _, pending = await deferred(runner, events(("c", pay("x", 1))))
        again = RunControl()
        await runner.resume(pending, [pending.approve("c", pay("edited", 9))], control=again)
    assert list(again.notes()) == ["c"]
    assert "it ran with" in again.notes()["c"]


# -- merge_calls ---------------------------------------------------------------------------------


def test_merge_calls_keeps_real_outcomes() -> None:
    done = ToolCall(id="a", name="t", status=Status.DONE, result=1)
    raised = ToolCall(
        id="b",
        name="t",
        status=Status.ERROR,
        error=ToolRaised(message="m", tool="t", exception="E"),
    )
    pending = ToolCall(id="c", name="t")
    placeholder = NotExecuted(message="m", tool="t", reason="already_finished")
    doubt = OutcomeInDoubt(message="m", tool="t")
    later = [
        ToolCall(id="a", name="t", status=Status.ERROR, error=placeholder),
        ToolCall(id="b", name="t", status=Status.ERROR, error=doubt),
        ToolCall(id="c", name="t", status=Status.DONE, result=3),
        ToolCall(id="d", name="t", status=Status.DONE, result=4),
    ]
    merged = by_id(merge_calls([done, raised, pending], later))
    assert merged["a"] is done
    assert merged["b"] is raised
    assert merged["c"].result == 3  # a pending call takes its real outcome
    assert list(merged) == ["a", "b", "c", "d"]
    # a real outcome replaces a placeholder
    not_run = ToolCall(id="a", name="t", status=Status.ERROR, error=placeholder)
    assert merge_calls([not_run], [done]) == [done]


def test_no_warning_from_the_public_names() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import toolcall_tracker

        for name in toolcall_tracker.__all__:
            getattr(toolcall_tracker, name)
