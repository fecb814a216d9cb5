"""Approvals across requests: the pending state, decisions, signing and the finished-call store.

A turn whose calls await a human's decision when :meth:`ToolRunner.run` returns leaves a
:class:`PendingApprovals`: the turn's nonce and, per call, its id, tool, exact argument text
and a token. The token is an HMAC (SHA-256) over ``[nonce, id, tool, args_text]`` with the
runner's ``approval_secret``; the state's ``signature`` is an HMAC over the nonce and every
call's id, tool, argument text and token. So:

- a client that changes an argument, an id or a tool name breaks the signature;
- a decision carries its call's token, so it cannot be replayed against another call (other
  id or arguments) or another turn (other nonce), and nobody without the secret can make
  one for a call it was not given;
- a state signed with another key, or unsigned, is refused by a runner that has a secret.

Without a secret the tokens and signature are plain SHA-256 digests: they catch mistakes
(a decision sent back with the wrong call), not forgery. Set a secret in production.

The ``arguments`` field is for display only (a UI shows it); the runner re-parses
``args_text``, which the signature covers.

Refusing to run a finished call twice (a resume retried after a crash) needs server-side
state: :class:`FinishedCalls` is that store, keyed by ``"<nonce>:<call id>"``;
:class:`InMemoryFinishedCalls` is the default (per process, forgotten on restart).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..calls import ToolCall
from ..errors import ApprovalRefused

__all__ = [
    "ApprovalDecision",
    "FinishedCalls",
    "InMemoryFinishedCalls",
    "PendingApproval",
    "PendingApprovals",
    "merge_calls",
]


class PendingApproval(BaseModel):
    """One call waiting for a human's decision (also what an in-process request carries).

    Attributes:
        call_id: the call's id.
        tool: the tool's name.
        args_text: the argument JSON text exactly as the model sent it.
        arguments: the parsed arguments, for display (the runner uses ``args_text``).
        token: binds a decision to this call, its exact arguments and its turn.
    """

    model_config = ConfigDict(frozen=True)

    call_id: str
    tool: str
    args_text: str
    arguments: Any = None
    token: str

    def approve(self, arguments: Any = None) -> ApprovalDecision:
        """A decision approving this call, optionally with edited ``arguments``."""
        return ApprovalDecision(
            call_id=self.call_id, token=self.token, approved=True, arguments=arguments
        )

    def deny(self, reason: str = "denied") -> ApprovalDecision:
        """A decision denying this call; ``reason`` is shown to the model."""
        return ApprovalDecision(
            call_id=self.call_id, token=self.token, approved=False, reason=reason
        )


class ApprovalDecision(BaseModel):
    """A human's decision on one pending call, sent back to resume it.

    Attributes:
        call_id: the call decided.
        token: the pending call's ``token``, unchanged.
        approved: run it (``True``) or deny it (``False``).
        arguments: edited arguments to run it with (``None``: as the model sent them).
            They are validated again; the call's own ``args`` never change.
        reason: why it was denied (shown to the model).
    """

    model_config = ConfigDict(frozen=True)

    call_id: str
    token: str
    approved: bool
    arguments: Any = None
    reason: str | None = None


class PendingApprovals(BaseModel):
    """The calls of a turn still awaiting approval when ``run()`` returned; JSON round-trips.

    Send it to the client (``model_dump_json()``) and take it back with the decisions
    (``PendingApprovals.model_validate_json(text)``), then
    ``await runner.resume(pending, decisions)``.

    Attributes:
        nonce: the turn's nonce (random, per turn).
        calls: the pending calls, in the order they asked.
        signature: HMAC-SHA256 (hex) over the nonce and the calls (a plain digest when the
            runner has no secret).
    """

    model_config = ConfigDict(frozen=True)

    nonce: str
    calls: tuple[PendingApproval, ...] = ()
    signature: str = ""

    def get(self, call_id: str) -> PendingApproval | None:
        """The pending call with this id, or ``None``."""
        return next((call for call in self.calls if call.call_id == call_id), None)

    def approve(self, call_id: str, arguments: Any = None) -> ApprovalDecision:
        """A decision approving ``call_id`` (``KeyError`` if it is not pending here)."""
        return self._call(call_id).approve(arguments)

    def deny(self, call_id: str, reason: str = "denied") -> ApprovalDecision:
        """A decision denying ``call_id`` (``KeyError`` if it is not pending here)."""
        return self._call(call_id).deny(reason)

    @property
    def ids(self) -> list[str]:
        """The pending calls' ids, in order."""
        return [call.call_id for call in self.calls]

    def _call(self, call_id: str) -> PendingApproval:
        call = self.get(call_id)
        if call is None:
            raise KeyError(f"call {call_id!r} is not pending approval here")
        return call


@runtime_checkable
class FinishedCalls(Protocol):
    """The server-side record of calls a resume has already acted on (run or denied).

    ``add`` is an atomic test-and-set: record ``key`` and return ``True``, or return
    ``False`` if it was already recorded (for a database: an insert that fails on a
    duplicate key). A resume records a call before its tool starts, so a call is run at
    most once even if the server crashes and the client retries.
    """

    async def add(self, key: str) -> bool:
        """Record ``key``; ``False`` if it was recorded already."""
        ...


class InMemoryFinishedCalls:
    """The default :class:`FinishedCalls`: a set in this process (lost on restart).

    Args:
        limit: remember at most this many keys (the oldest are forgotten first).
    """

    def __init__(self, limit: int = 100_000) -> None:
        self._keys: dict[str, None] = {}
        self._limit = limit

    async def add(self, key: str) -> bool:
        """Record ``key``; ``False`` if it was recorded already."""
        if key in self._keys:
            return False
        self._keys[key] = None
        while len(self._keys) > self._limit:
            del self._keys[next(iter(self._keys))]
        return True

    def __contains__(self, key: object) -> bool:
        return key in self._keys


def merge_calls(earlier: Iterable[ToolCall], later: Iterable[ToolCall]) -> list[ToolCall]:
    """``earlier`` with each call replaced by the call of the same id in ``later``.

    Use it to feed back a whole turn after resuming some of its calls:
    ``merge_calls(first_run_calls, resumed_calls)`` keeps the order the model made them.
    Calls of ``later`` that ``earlier`` does not have are appended.
    """
    newer = {call.id: call for call in later}
    merged = [newer.pop(call.id, call) for call in earlier]
    merged.extend(newer.values())
    return merged


# -- signing (private) --------------------------------------------------------------------


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _mac(key: bytes | None, value: Any) -> str:
    if key is None:
        return hashlib.sha256(_canonical(value)).hexdigest()
    return hmac.new(key, _canonical(value), hashlib.sha256).hexdigest()


def _token(key: bytes | None, nonce: str, call_id: str, tool: str, args_text: str) -> str:
    return _mac(key, ["call", nonce, call_id, tool, args_text])


def _signature(key: bytes | None, nonce: str, calls: Sequence[PendingApproval]) -> str:
    body = [[call.call_id, call.tool, call.args_text, call.token] for call in calls]
    return _mac(key, ["pending", nonce, body])


def _pending_call(key: bytes | None, nonce: str, call: ToolCall) -> PendingApproval:
    return PendingApproval(
        call_id=call.id,
        tool=call.name,
        args_text=call.args_text,
        arguments=call.args,
        token=_token(key, nonce, call.id, call.name, call.args_text),
    )


def _pending(key: bytes | None, nonce: str, calls: Sequence[PendingApproval]) -> PendingApprovals:
    return PendingApprovals(
        nonce=nonce, calls=tuple(calls), signature=_signature(key, nonce, calls)
    )


def _verify(
    key: bytes | None, pending: PendingApprovals, decisions: Iterable[ApprovalDecision]
) -> dict[str, ApprovalDecision]:
    """Check the state's signature and every decision's binding; the decisions by call id.

    Raises:
        ApprovalRefused: anything does not verify (the message says what).
    """
    what = "the approval secret" if key is not None else "its digest (no approval secret set)"
    expected = _signature(key, pending.nonce, pending.calls)
    if not hmac.compare_digest(expected, pending.signature):
        raise ApprovalRefused(
            "the pending approvals do not verify against "
            f"{what}: they were changed (arguments, ids or tools), signed with another key, "
            "or not signed; nothing was run"
        )
    by_id: dict[str, PendingApproval] = {}
    for call in pending.calls:
        token = _token(key, pending.nonce, call.call_id, call.tool, call.args_text)
        if not hmac.compare_digest(token, call.token) or call.call_id in by_id:
            raise ApprovalRefused(f"pending call {call.call_id!r} does not verify; nothing was run")
        by_id[call.call_id] = call
    decided: dict[str, ApprovalDecision] = {}
    for decision in decisions:
        match = by_id.get(decision.call_id)
        if match is None:
            raise ApprovalRefused(
                f"the decision for call {decision.call_id!r} names no call pending in this "
                f"turn (pending: {', '.join(map(repr, by_id)) or 'none'}); nothing was run"
            )
        if not hmac.compare_digest(match.token, decision.token):
            raise ApprovalRefused(
                f"the decision for call {decision.call_id!r} is not bound to that call's "
                "arguments in this turn (a decision replayed from another call or turn, or a "
                "made-up token); nothing was run"
            )
        if decision.call_id in decided:
            raise ApprovalRefused(f"two decisions for call {decision.call_id!r}; nothing was run")
        decided[decision.call_id] = decision
    return decided
