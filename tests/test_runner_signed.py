"""The signed pending state names its turn and its key: the turn id (``run(turn_id=...)``),
the continuation of a handed-out state (``run(continues=...)``), key rotation
(:class:`ApprovalKeys`), the previous format (``"pending/2"``), and delimiter injection
into ids, names, arguments and turn ids (the class of vercel/ai#17493).

Every async test runs on asyncio and trio, bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from _runner_helpers import by_id, call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import (
    ApprovalRefused,
    End,
    Limits,
    RunControl,
    Status,
    ToolCall,
    ToolCallTracker,
    ToolRunner,
    tool,
)
from toolcall_tracker._keys import call_key
from toolcall_tracker.runner import (
    ApprovalKeys,
    InMemoryOutcomeStore,
    PendingApproval,
    PendingApprovals,
)
from toolcall_tracker.runner._pending import _signature, _Signer

pytestmark = pytest.mark.anyio

SECRET = b"a resume test secret (32 bytes)"  # the golden state's key
K1 = b"the first key of the rotation...."
K2 = b"the second key of the rotation..."
K9 = b"a key nobody ever signed with...."

# A state of the previous format ("pending/2": no turn_id, no key_id), made by the previous
# version (at ea9eb34) with SECRET: it must keep verifying until it expires (2099).
GOLDEN_OLD = (
    '{"nonce":"old-nonce-1","calls":[{"call_id":"a","tool":"transfer","args_text":'
    '"{\\"to\\": \\"x\\", \\"amount\\": 1}","token":'
    '"1dd63168fae954d000ced6c7ccbabf0d635e91adac2f32beba326244772a139d",'
    '"arguments":{"to":"x","amount":1}},{"call_id":"=?b64?Yu2ggA==","tool":"transfer",'
    '"args_text":"{\\"to\\": \\"y\\", \\"amount\\": 2}","token":'
    '"1769ebb658aa5d861282d5393d1226fffdb878886aaf779c33a62fcf4a44dd57",'
    '"arguments":{"to":"y","amount":2}}],"expires_at":"2099-01-01T00:00:00Z",'
    '"limits":{"max_args_chars":8388608,"max_calls":10000,"max_id_chars":256,'
    '"max_name_chars":256,"remember_forgotten":4096},"end":{"type":"end",'
    '"reason":"tool_calls","ok":true},'
    '"signature":"04ef346bea878d916c8e2d2c58f6924b66ede5b0179ebaf307f0b5769b01245d"}'
)


class Ledger:
    """A gated transfer tool needing approval, an eager lookup that needs none, what ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, int]] = []
        self.looked: list[str] = []

        async def transfer(to: str, amount: int) -> str:
            self.ran.append((to, amount))
            return f"sent {amount} to {to}"

        async def lookup(q: str) -> str:
            self.looked.append(q)
            return f"found {q}"

        self.tools = [
            tool(transfer, needs_approval=True),
            tool(lookup, eager=True),
        ]

    def runner(self, secret: Any = SECRET, **options: Any) -> ToolRunner:
        return ToolRunner(self.tools, approval_secret=secret, **options)


def pay(to: str, amount: int) -> dict[str, Any]:
    return {"to": to, "amount": amount}


def turn(*calls: tuple[str, dict[str, Any]], lookup: bool = False) -> list[dict[str, Any]]:
    out = [e for call_id, args in calls for e in call_events(call_id, "transfer", args)]
    if lookup:
        out += call_events("look", "lookup", {"q": "weather"})
    return [*out, {"type": "end", "reason": "tool_calls"}]


async def deferred(
    runner: ToolRunner, items: list[dict[str, Any]], **run: Any
) -> tuple[list[ToolCall], PendingApprovals, list[PendingApproval]]:
    """One deferred run: its calls, the state it left, the requests it published."""
    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker()
    asked: list[PendingApproval] = []

    async def watch() -> None:
        async for request in control.approval_requests():
            asked.append(request)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, from_list(items))
        tg.start_soon(watch)
        calls = await runner.run(tracker, control=control, **run)
    assert control.pending is not None
    return calls, control.pending, asked


def resign(signer: _Signer, state: PendingApprovals, **update: Any) -> PendingApprovals:
    """``state`` with ``update`` applied and signed again under ``signer``'s current key."""
    changed = state.model_copy(update={**update, "signature": ""})
    return changed.model_copy(update={"signature": _signature(signer.key, changed)})


# -- the turn id -----------------------------------------------------------------------------


async def test_every_new_state_names_its_turn(anyio_backend: str) -> None:
    ledger = Ledger()
    store = InMemoryOutcomeStore()
    runner = ledger.runner(outcome_store=store)
    with anyio.fail_after(DEADLINE):
        _, plain, _ = await deferred(runner, turn(("a", pay("x", 1))))
        _, named, _ = await deferred(runner, turn(("a", pay("x", 1))), turn_id="turn:7")
        assert plain.turn_id == plain.nonce == plain.turn_key  # the nonce names the turn
        assert named.turn_id == named.turn_key == "turn:7"
        assert named.nonce != named.turn_id
        assert plain.key_id is None
        assert named.key_id is None
        back = PendingApprovals.model_validate_json(named.model_dump_json())
        assert back == named
        calls = by_id(await runner.resume(back, [back.approve("a")]))
        assert calls["a"].result == "sent 1 to x"
        # the store key derives from the turn id, not from the nonce
        recorded = await store.get(call_key("turn:7", "a", "transfer", named.calls[0].args_text))
        assert recorded is not None
        assert recorded.result == "sent 1 to x"
        assert await store.get(f"{named.nonce}:a") is None
        nonce_key = call_key(named.nonce, "a", "transfer", named.calls[0].args_text)
        assert await store.get(nonce_key) is None
    assert ledger.ran == [("x", 1)]


async def test_a_turn_id_with_a_lone_surrogate_round_trips(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(runner, turn(("a", pay("x", 1))), turn_id="t\ud800")
        text = state.model_dump_json()
        text.encode("utf-8")
        back = PendingApprovals.model_validate_json(text)
        assert back.turn_id == "t\ud800"
        assert back == state
        await runner.resume(back, [back.approve("a")])
    assert ledger.ran == [("x", 1)]


@pytest.mark.parametrize(("turn_id", "error"), [("", ValueError), (7, TypeError)])
async def test_a_bad_turn_id_is_refused_before_anything_runs(
    anyio_backend: str, turn_id: Any, error: type[Exception]
) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(turn(lookup=True)))
            with pytest.raises(error, match="turn_id"):
                await runner.run(tracker, turn_id=turn_id)
    assert ledger.looked == []


async def test_removing_or_changing_the_turn_or_key_id_breaks_the_signature(
    anyio_backend: str,
) -> None:
    """No downgrade: a "pending/3" state stripped of its turn id (and key id) is checked as
    a "pending/2" one, and fails."""
    ledger = Ledger()
    runner = ledger.runner(ApprovalKeys(current=("k1", K1)))
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(runner, turn(("a", pay("x", 1))), turn_id="turn-1")
        assert state.key_id == "k1"
        forged = [
            {"turn_id": None, "key_id": None},  # looks like the previous format
            {"turn_id": None},
            {"turn_id": "turn-2"},
            {"turn_id": state.nonce},
            {"key_id": None},
        ]
        for update in forged:
            data = json.loads(state.model_copy(update=update).model_dump_json())
            bad = PendingApprovals.model_validate(data)
            with pytest.raises(ApprovalRefused, match="do not verify"):
                await runner.resume(bad, [state.approve("a")])
    assert ledger.ran == []


async def test_a_default_turn_id_cannot_be_stripped_either(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(runner, turn(("a", pay("x", 1))))
        stripped = state.model_copy(update={"turn_id": None})
        assert stripped.turn_key == state.turn_key  # the same store key, still refused
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await runner.resume(stripped, [state.approve("a")])
    assert ledger.ran == []


# -- the previous format ("pending/2") -------------------------------------------------------


async def test_a_state_of_the_previous_version_still_verifies_and_resumes(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    store = InMemoryOutcomeStore()
    runner = ledger.runner(outcome_store=store)
    with anyio.fail_after(DEADLINE):
        old = PendingApprovals.model_validate_json(GOLDEN_OLD)
        assert old.turn_id is None
        assert old.key_id is None
        assert old.turn_key == "old-nonce-1"  # its turn is its nonce, as its keys were
        control = RunControl()
        calls = by_id(await runner.resume(old, [old.approve("a")], control=control))
        assert calls["a"].result == "sent 1 to x"
        recorded = await store.get("old-nonce-1:a")  # the key the previous version claimed
        assert recorded is not None
        assert recorded.result == "sent 1 to x"
        # what stays pending comes back in the new format, for the same turn key
        left = control.pending
        assert left is not None
        assert left.ids == ["b\ud800"]
        assert (left.nonce, left.turn_id, left.expires_at) == (
            old.nonce,
            old.nonce,
            old.expires_at,
        )
        assert left.calls[0].token == old.calls[1].token  # same key, same nonce
        # and both the old state and the new one resume it, once
        first = by_id(await runner.resume(left, [left.approve("b\ud800")]))
        again = by_id(await runner.resume(old, [old.approve("b\ud800")]))
        assert first["b\ud800"].result == again["b\ud800"].result == "sent 2 to y"
    assert ledger.ran == [("x", 1), ("y", 2)]


async def test_a_previous_format_state_verifies_against_previous_keys_too(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    with anyio.fail_after(DEADLINE):
        old = PendingApprovals.model_validate_json(GOLDEN_OLD)
        as_current = ledger.runner(ApprovalKeys(current=("k0", SECRET)))
        await as_current.resume(old, [old.approve("a")])
        as_previous = ledger.runner(ApprovalKeys(current=("k1", K1), previous={"k0": SECRET}))
        await as_previous.resume(old, [old.approve("b\ud800")])
        # a key that is neither: no key id to name, the signature does not verify
        other = ledger.runner(ApprovalKeys(current=("k1", K1), retired={"k0"}))
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await other.resume(old, [old.approve("a")])
    assert ledger.ran == [("x", 1), ("y", 2)]


async def test_a_previous_format_state_expires_as_before(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    signer = _Signer(SECRET)
    old = PendingApprovals.model_validate_json(GOLDEN_OLD)
    past = datetime.now(timezone.utc) - timedelta(seconds=1)
    expired = resign(signer, old, expires_at=past)
    assert expired.turn_id is None  # still the previous format
    with anyio.fail_after(DEADLINE), pytest.raises(ApprovalRefused, match="expired"):
        await runner.resume(expired, [expired.approve("a")])
    assert ledger.ran == []


# -- key rotation ----------------------------------------------------------------------------


async def test_rotating_keys_keeps_handed_out_states_and_refuses_retired_ones(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    store = InMemoryOutcomeStore()
    old_keys = ApprovalKeys(current=("k1", K1))
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(
            ledger.runner(old_keys, outcome_store=store),
            turn(("a", pay("x", 1)), ("b", pay("y", 2))),
        )
        assert state.key_id == "k1"
        rotated = old_keys.rotate("k2", K2)
        assert rotated == ApprovalKeys(current=("k2", K2), previous={"k1": K1})
        runner = ledger.runner(rotated, outcome_store=store)
        control = RunControl()
        calls = by_id(await runner.resume(state, [state.approve("a")], control=control))
        assert calls["a"].result == "sent 1 to x"
        # what stays pending is re-signed with the current key (tokens too), same turn
        left = control.pending
        assert left is not None
        assert left.key_id == "k2"
        assert left.ids == ["b"]
        assert (left.nonce, left.turn_id, left.expires_at) == (
            state.nonce,
            state.turn_id,
            state.expires_at,
        )
        assert left.calls[0].token != state.calls[1].token
        # a k1 decision is not a k2 decision
        with pytest.raises(ApprovalRefused, match="not bound"):
            await runner.resume(left, [state.approve("b")])
        # k1 retired: refused, saying so, for the original state and for nothing else
        retired = ledger.runner(rotated.retire("k1"), outcome_store=store)
        assert retired.outcome_store is store
        with pytest.raises(ApprovalRefused, match=r"retired key 'k1'.*ask the model again"):
            await retired.resume(state, [state.approve("b")])
        assert ledger.ran == [("x", 1)]
        calls = by_id(await retired.resume(left, [left.approve("b")]))
        assert calls["b"].result == "sent 2 to y"
    assert ledger.ran == [("x", 1), ("y", 2)]


async def test_a_state_naming_an_unknown_key_is_refused_saying_so(anyio_backend: str) -> None:
    ledger = Ledger()
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(
            ledger.runner(ApprovalKeys(current=("k1", K1))), turn(("a", pay("x", 1)))
        )
        for secret in (ApprovalKeys(current=("k9", K9), previous={"k2": K2}), K1):
            runner = ledger.runner(secret)
            with pytest.raises(ApprovalRefused, match="key 'k1', which this runner does not"):
                await runner.resume(state, [state.approve("a")])
        # a hostile key id: refused, the message cut short
        data = json.loads(state.model_dump_json())
        data["key_id"] = "\u0000" * 10_000
        hostile = PendingApprovals.model_validate(data)
        with pytest.raises(ApprovalRefused, match="does not know") as caught:
            await ledger.runner(K1).resume(hostile, [state.approve("a")])
        assert len(str(caught.value)) < 500
        # the key id changed to another known key: the signature breaks
        both = ledger.runner(ApprovalKeys(current=("k2", K2), previous={"k1": K1}))
        moved = state.model_copy(update={"key_id": "k2"})
        with pytest.raises(ApprovalRefused, match="do not verify"):
            await both.resume(moved, [state.approve("a")])
    assert ledger.ran == []


async def test_moving_from_a_plain_secret_to_approval_keys_refuses_nothing(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(
            ledger.runner(K1), turn(("a", pay("x", 1)), ("b", pay("y", 2)))
        )
        assert state.key_id is None
        as_current = ledger.runner(ApprovalKeys(current=("k1", K1)))
        await as_current.resume(state, [state.approve("a")])
        as_previous = ledger.runner(ApprovalKeys(current=("k2", K2), previous={"k1": K1}))
        await as_previous.resume(state, [state.approve("b")])
    assert ledger.ran == [("x", 1), ("y", 2)]


def test_approval_keys_is_a_frozen_value_that_never_shows_a_secret() -> None:
    keys = ApprovalKeys(
        current=("2026-12", "a current secret, 16+ bytes"),
        previous={"2026-06": b"a previous secret, 16+ bytes"},
        retired={"2025-12"},
    )
    assert keys.current == ("2026-12", b"a current secret, 16+ bytes")
    assert keys.current_id == "2026-12"
    assert dict(keys.previous) == {"2026-06": b"a previous secret, 16+ bytes"}
    assert keys.retired == frozenset({"2025-12"})
    assert "secret" not in repr(keys)
    assert "2026-06" in repr(keys)
    assert keys == ApprovalKeys(
        ("2026-12", b"a current secret, 16+ bytes"),
        [("2026-06", "a previous secret, 16+ bytes")],
        ["2025-12"],
    )
    assert len({keys, keys.rotate("x", K1).retire("2026-12").retire("2026-06")}) == 2
    with pytest.raises(AttributeError, match="immutable"):
        keys.retired = frozenset()  # type: ignore[misc]
    with pytest.raises(TypeError):
        keys.previous["x"] = K1  # type: ignore[index]
    with pytest.raises(KeyError, match="rotate the current key first"):
        keys.retire("2026-12")
    rotated = keys.rotate("2027-06", K2).retire("2026-06")
    assert rotated.current_id == "2027-06"
    assert set(rotated.previous) == {"2026-12"}
    assert rotated.retired == {"2025-12", "2026-06"}


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: ApprovalKeys(current=("", K1)), ValueError, "not a key id"),
        (lambda: ApprovalKeys(current=("a b", K1)), ValueError, "not a key id"),
        (lambda: ApprovalKeys(current=("x" * 65, K1)), ValueError, "not a key id"),
        (lambda: ApprovalKeys(current=("clé", K1)), ValueError, "not a key id"),
        (lambda: ApprovalKeys(current=("k\n", K1)), ValueError, "not a key id"),
        (lambda: ApprovalKeys(current=(1, K1)), TypeError, "str key id"),  # type: ignore[arg-type]
        (lambda: ApprovalKeys(current=K1), TypeError, "pair"),  # type: ignore[arg-type]
        (lambda: ApprovalKeys(current=("k1", b"short")), ValueError, r"secrets\.token_hex"),
        (lambda: ApprovalKeys(current=("k1", "")), ValueError, "empty"),
        (lambda: ApprovalKeys(current=("k1", 5)), TypeError, "bytes or str"),  # type: ignore[arg-type]
        (
            lambda: ApprovalKeys(current=("k1", K1), previous={"k2": b"short"}),
            ValueError,
            "previous key 'k2'",
        ),
        (
            lambda: ApprovalKeys(current=("k1", K1), previous={"k1": K2}),
            ValueError,
            "appears twice",
        ),
        (
            lambda: ApprovalKeys(current=("k1", K1), previous={"k2": K2}, retired={"k2"}),
            ValueError,
            "both retired and in use",
        ),
        (lambda: ApprovalKeys(current=("k1", K1), retired="k0"), TypeError, "retired={'k0'}"),
        (lambda: ApprovalKeys(current=("k1", K1), retired={""}), ValueError, "not a key id"),
        (lambda: ApprovalKeys(current=("k1", K1)).rotate("k1", K2), ValueError, "twice"),
    ],
)
def test_approval_keys_are_validated_with_the_fix(
    build: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build()


# -- the continuation ------------------------------------------------------------------------


async def test_a_run_that_continues_a_state_leaves_the_same_state(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner(ApprovalKeys(current=("k1", K1)))
    items = turn(("a", pay("x", 1)), ("b", pay("y", 2)))
    with anyio.fail_after(DEADLINE):
        _, first, _ = await deferred(runner, items, turn_id="turn-1")
        # another process, the same turn, the same calls: the same state, to the signature
        _, again, asked = await deferred(runner, items, turn_id="turn-1", continues=first)
        assert again == first
        assert again.model_dump_json() == first.model_dump_json()
        assert [(r.call_id, r.token) for r in asked] == [(c.call_id, c.token) for c in first.calls]
        # the turn id can be left out: the state's is taken
        _, third, _ = await deferred(runner, items, continues=first)
        assert third == first
    assert ledger.ran == []


async def test_a_continued_turn_runs_each_approved_call_once(anyio_backend: str) -> None:
    """The client's state and the one a restore hands out are one decision."""
    ledger = Ledger()
    store = InMemoryOutcomeStore()
    runner = ledger.runner(outcome_store=store)
    items = turn(("a", pay("x", 1)))
    with anyio.fail_after(DEADLINE):
        _, client_state, _ = await deferred(runner, items, turn_id="turn-1")
        _, restored_state, _ = await deferred(
            runner, items, turn_id="turn-1", continues=client_state
        )
        first = by_id(await runner.resume(client_state, [client_state.approve("a")]))
        second = by_id(await runner.resume(restored_state, [restored_state.approve("a")]))
    assert first["a"].result == second["a"].result == "sent 1 to x"
    assert ledger.ran == [("x", 1)]


async def test_a_continued_state_with_a_call_decided_elsewhere_keeps_the_rest(
    anyio_backend: str,
) -> None:
    """A restore whose run finds one call of the state gone (decided, say) leaves the others
    under the state's nonce, turn and expiry: the same tokens, one valid subset."""
    ledger = Ledger()
    runner = ledger.runner()
    with anyio.fail_after(DEADLINE):
        _, first, _ = await deferred(
            runner, turn(("a", pay("x", 1)), ("b", pay("y", 2))), turn_id="turn-1"
        )
        _, rest, _ = await deferred(runner, turn(("b", pay("y", 2))), continues=first)
        assert (rest.nonce, rest.turn_id, rest.expires_at) == (
            first.nonce,
            first.turn_id,
            first.expires_at,
        )
        assert rest.calls == first.calls[1:]
        decision = first.approve("b")  # the client's decision verifies against either
        await runner.resume(rest, [decision])
    assert ledger.ran == [("y", 2)]


async def test_continuing_after_a_rotation_keeps_the_turn_under_the_new_key(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    store = InMemoryOutcomeStore()
    items = turn(("a", pay("x", 1)))
    with anyio.fail_after(DEADLINE):
        _, first, _ = await deferred(
            ledger.runner(ApprovalKeys(current=("k1", K1)), outcome_store=store),
            items,
            turn_id="turn-1",
        )
        runner = ledger.runner(
            ApprovalKeys(current=("k2", K2), previous={"k1": K1}), outcome_store=store
        )
        _, again, _ = await deferred(runner, items, turn_id="turn-1", continues=first)
        assert (again.nonce, again.turn_id, again.expires_at, again.key_id) == (
            first.nonce,
            first.turn_id,
            first.expires_at,
            "k2",
        )
        await runner.resume(first, [first.approve("a")])
        calls = by_id(await runner.resume(again, [again.approve("a")]))  # the same key
        assert calls["a"].result == "sent 1 to x"
    assert ledger.ran == [("x", 1)]


async def test_a_tampered_or_stale_continuation_is_refused_before_anything_runs(
    anyio_backend: str,
) -> None:
    ledger = Ledger()
    keys = ApprovalKeys(current=("k1", K1))
    runner = ledger.runner(keys)
    items = turn(("a", pay("x", 1)), lookup=True)
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(runner, turn(("a", pay("x", 1))), turn_id="turn-1")
        call = state.calls[0].model_copy(update={"args_text": '{"to": "x", "amount": 9}'})
        signer = _Signer(K1)
        past = datetime.now(timezone.utc) - timedelta(seconds=1)
        bad = [
            (state.model_copy(update={"calls": (call,)}), "do not verify"),
            (state.model_copy(update={"turn_id": "turn-2"}), "do not verify"),
            (state.model_copy(update={"signature": "0" * 64}), "do not verify"),
            (resign(signer, state, key_id=None, expires_at=past), "expired"),
        ]
        retired = ledger.runner(keys.rotate("k2", K2).retire("k1"))
        for runner_, pending, match in [(runner, p, m) for p, m in bad] + [
            (retired, state, "retired key 'k1'")
        ]:
            tracker = ToolCallTracker()
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, from_list(items))
                with pytest.raises(ApprovalRefused, match=match):
                    await runner_.run(tracker, control=RunControl(), continues=pending)
            look = tracker.get("look")
            assert look is not None
            assert look.status is Status.RUNNING
        # a state of another turn: a ValueError, nothing run either
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(items))
            with pytest.raises(ValueError, match="state of turn 'turn-1', not of turn 'turn-2'"):
                await runner.run(tracker, turn_id="turn-2", continues=state)
        with pytest.raises(TypeError, match="continues must be"):
            await runner.run(ToolCallTracker(), continues=state.model_dump())  # type: ignore[arg-type]
    assert ledger.ran == []
    assert ledger.looked == []


async def test_a_previous_format_state_continues_under_its_nonce(anyio_backend: str) -> None:
    ledger = Ledger()
    runner = ledger.runner()
    old = PendingApprovals.model_validate_json(GOLDEN_OLD)
    items = turn(("a", pay("x", 1)))
    with anyio.fail_after(DEADLINE):
        _, again, asked = await deferred(runner, items, continues=old)
        assert (again.nonce, again.turn_id, again.expires_at) == (
            old.nonce,
            old.nonce,
            old.expires_at,
        )
        assert asked[0].token == again.calls[0].token == old.calls[0].token
        _, same, _ = await deferred(runner, items, turn_id="old-nonce-1", continues=old)
        assert same == again
        tracker = ToolCallTracker()
        with pytest.raises(ValueError, match="not of turn 'turn-1'"):
            await runner.run(tracker, turn_id="turn-1", continues=old)


# -- delimiter injection (vercel/ai#17493) ---------------------------------------------------

FAR = datetime(2099, 1, 1, tzinfo=timezone.utc)
NASTY = [":", "|", '"', ",", "\n", "\u0000", "\ud800", "\udfff", "=?b64?", "\\", "[", "]", "{"]
PARTS = st.lists(
    st.sampled_from([*NASTY, "a", "b", "c", "call", "pending/3", '","']), max_size=6
).map("".join)
TRIPLE = st.tuples(PARTS, PARTS, PARTS)

# Pairs that a naive "join with a delimiter" would confuse: (id, tool, args) each.
CONFUSABLE = [
    (("a:b", "c", "{}"), ("a", "b:c", "{}")),
    (("a|b", "c", "{}"), ("a", "b|c", "{}")),
    (("a", "b,c", "{}"), ("a,b", "c", "{}")),
    (('a"', '"b', "{}"), ("a", '""b', "{}")),
    (('a","b', "c", "{}"), ("a", 'b","c', "{}")),
    (("a\nb", "c", "{}"), ("a", "b\nc", "{}")),
    (("a\u0000b", "c", "{}"), ("a", "b\u0000c", "{}")),
    (("a\ud800", "c", "{}"), ("a=?b64?7aCA", "c", "{}")),  # the marker form of the same bytes
    (("=?b64?YQ==", "c", "{}"), ("a", "c", "{}")),  # a marker-looking id is a plain id
    (("a", "c", '{"x": "1"}'), ("a", 'c", "{\\"x', '1"}')),  # JSON-looking text
    (("a", "c", '["call", "n"]'), ("a", "c", '["call","n"]')),
]


def _calls(*triples: tuple[str, str, str]) -> list[ToolCall]:
    return [ToolCall(id=i, name=n, args_text=t, args=None) for i, n, t in triples]


def _state(
    signer: _Signer, nonce: str, turn_id: str, *triples: tuple[str, str, str]
) -> PendingApprovals:
    calls = [signer.call(nonce, call) for call in _calls(*triples)]
    return signer.pending(nonce, calls, Limits(), End(), FAR, turn_id)


@pytest.mark.parametrize(("one", "two"), CONFUSABLE)
def test_confusable_calls_never_share_a_token_or_a_signature(
    one: tuple[str, str, str], two: tuple[str, str, str]
) -> None:
    signer = _Signer(SECRET)
    a, b = _state(signer, "n", "t", one), _state(signer, "n", "t", two)
    assert a.calls[0].token != b.calls[0].token
    assert a.signature != b.signature
    # a decision for one never verifies against the other (nor its token under its id)
    for mine, other in ((a, b), (b, a)):
        decision = mine.approve(mine.calls[0].call_id)
        with pytest.raises(ApprovalRefused):
            signer.verify(other, [decision])
        moved = decision.model_copy(update={"call_id": other.calls[0].call_id})
        with pytest.raises(ApprovalRefused, match="not bound"):
            signer.verify(other, [moved])
        assert signer.verify(mine, [decision]) == {mine.calls[0].call_id: decision}
    # and the wire form keeps them apart
    for state in (a, b):
        assert PendingApprovals.model_validate_json(state.model_dump_json()) == state


@pytest.mark.parametrize(
    ("one", "two"),
    [
        (("n:t", "x"), ("n", "t:x")),  # (nonce, turn id) pairs a join would confuse
        (("n", "t|x"), ("n|t", "x")),
        (("n", '"t"'), ("n", "t")),
        (("n", "t\u0000"), ("n", "t")),
        (("n", "t\ud800"), ("n", "t=?b64?7aCA")),
        (("n", "n"), ("n", "N")),
    ],
)
def test_confusable_turns_never_share_a_signature(
    one: tuple[str, str], two: tuple[str, str]
) -> None:
    signer = _Signer(SECRET)
    call = ("a", "c", "{}")
    a, b = _state(signer, *one, call), _state(signer, *two, call)
    assert a.signature != b.signature
    swapped = a.model_copy(update={"nonce": b.nonce, "turn_id": b.turn_id})
    with pytest.raises(ApprovalRefused, match="do not verify"):
        signer.verify(swapped, [])


@settings(max_examples=300, deadline=None)
@given(one=TRIPLE, two=TRIPLE, turns=st.tuples(PARTS, PARTS, PARTS, PARTS))
def test_no_two_distinct_calls_or_turns_share_a_token_or_a_signature(
    one: tuple[str, str, str], two: tuple[str, str, str], turns: tuple[str, str, str, str]
) -> None:
    nonce_a, turn_a, nonce_b, turn_b = turns
    assume(nonce_a and nonce_b)
    signer = _Signer(SECRET)
    a = _state(signer, nonce_a, turn_a or nonce_a, one)
    b = _state(signer, nonce_b, turn_b or nonce_b, two)
    same_call = (nonce_a, *one) == (nonce_b, *two)
    same_state = same_call and a.turn_id == b.turn_id
    assert (a.calls[0].token == b.calls[0].token) == same_call
    assert (a.signature == b.signature) == same_state
    if not same_call:
        decision = a.approve(one[0]).model_copy(update={"call_id": two[0]})
        with pytest.raises(ApprovalRefused):
            signer.verify(b, [decision])
    back = PendingApprovals.model_validate_json(a.model_dump_json())
    assert back == a
    assert signer.verify(back, [back.approve(one[0])])


async def test_injected_ids_in_one_turn_are_two_calls_end_to_end(anyio_backend: str) -> None:
    """Call ids that a joined token would confuse, in one real turn: each decision runs its
    own call, and a decision moved to the other id is refused."""
    ledger = Ledger()
    runner = ledger.runner()
    ids = ['a:b"', "a", 'a:b",', "a\u0000", "=?b64?YQ==", "\ud800"]
    items = turn(*((call_id, pay(f"to{i}", i)) for i, call_id in enumerate(ids)))
    with anyio.fail_after(DEADLINE):
        _, state, _ = await deferred(runner, items, turn_id='t:a"|\n')
        back = PendingApprovals.model_validate_json(state.model_dump_json())
        assert back.ids == ids
        assert back.turn_id == 't:a"|\n'
        for here, there in itertools.pairwise(ids):
            moved = back.approve(here).model_copy(update={"call_id": there})
            with pytest.raises(ApprovalRefused, match="not bound"):
                await runner.resume(back, [moved])
        assert ledger.ran == []
        calls = by_id(await runner.resume(back, [back.approve(i) for i in ids]))
    assert {i: calls[i].result for i in ids} == {
        call_id: f"sent {i} to to{i}" for i, call_id in enumerate(ids)
    }
    assert sorted(ledger.ran) == sorted((f"to{i}", i) for i in range(len(ids)))


async def test_a_runner_without_a_secret_continues_its_own_digest_states(
    anyio_backend: str,
) -> None:
    """Without a secret the digest is checked (it catches corruption, not forgery)."""
    ledger = Ledger()
    runner = ledger.runner(None)
    items = turn(("a", pay("x", 1)))
    with anyio.fail_after(DEADLINE):
        _, first, _ = await deferred(runner, items, turn_id="turn-1")
        _, again, _ = await deferred(runner, items, continues=first)
        assert again == first
        broken = first.model_copy(update={"turn_id": "turn-2"})
        with pytest.raises(ApprovalRefused, match="no approval secret set"):
            await runner.run(ToolCallTracker(), continues=broken)
    assert ledger.ran == []
