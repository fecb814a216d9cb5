"""Approvals across requests: the signed pending state, decisions and signing (private).

A turn whose calls await a human's decision when :meth:`ToolRunner.run` returns leaves a
:class:`PendingApprovals`: the turn's nonce, when the state expires (``expires_at``, UTC),
the turn's :class:`~toolcall_tracker.Limits` and its ``End``, and per call its id, tool,
exact argument text and a token. The token is an HMAC (SHA-256) over ``[nonce, id, tool,
args_text]`` with the runner's ``approval_secret``; the state's ``signature`` is an HMAC
over everything else. So:

- a client that changes an argument, an id, a tool name, the expiry, the limits or the end
  breaks the signature;
- a decision carries its call's token, so it cannot be replayed against another call (other
  id or arguments) or another turn (other nonce), and nobody without the secret can make
  one for a call it was not given;
- a state signed with another key, unsigned, expired, or with a malformed token or
  signature is refused (``ApprovalRefused``, never another exception).

Without a secret the tokens and signature are plain SHA-256 digests: they catch mistakes,
not forgery, and ``resume`` refuses them unless told ``allow_unsigned=True``. A secret
shorter than 16 bytes (an empty one: an unset environment variable) is refused.

The wire form: the strings the core accepts include lone surrogates, which JSON text cannot
carry as such. The call ids, tool names and argument texts are written in JSON as they are
when they can be, and otherwise (or when they start with the marker) as the marker
``=?b64?`` followed by the base64 of their UTF-8 (``surrogatepass``) bytes; reading takes
either form. The signature covers the values, so it covers the encoded form too (decoding
is one-to-one). ``model_dump_json()`` -> ``model_validate_json()`` round-trips every state.

The ``arguments`` of a pending call are for display only (a UI shows them): they are parsed
from ``args_text`` on each access (a fresh copy), and written out under the library's one
output rule. The runner re-parses ``args_text``, which the signature covers.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Final

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    computed_field,
    field_serializer,
    field_validator,
)

from .._json import _ArgumentsError, parse_json
from .._jsonout import _jsonable
from ..calls import Status, ToolCall
from ..errors import ApprovalRefused
from ..events import End
from ..limits import DEFAULT_LIMITS, Limits

__all__ = [
    "ApprovalDecision",
    "PendingApproval",
    "PendingApprovals",
    "merge_calls",
]

DEFAULT_APPROVAL_TTL: Final = timedelta(hours=24)
"""How long a pending state can be resumed, by default."""

MIN_SECRET_BYTES: Final = 16

_MARK: Final = "=?b64?"
_HEX64: Final = re.compile(r"[0-9a-f]{64}\Z")


def _wire(value: str) -> str:
    """``value`` as JSON text can carry it (see the module docstring)."""
    if value.startswith(_MARK) or _has_surrogate(value):
        raw = value.encode("utf-8", "surrogatepass")
        return _MARK + base64.b64encode(raw).decode("ascii")
    return value


def _unwire(value: Any) -> Any:
    """The string a wire form stands for (other values are left to pydantic)."""
    if not isinstance(value, str) or not value.startswith(_MARK):
        return value
    try:
        raw = base64.b64decode(value[len(_MARK) :].encode("ascii"), validate=True)
        return raw.decode("utf-8", "surrogatepass")
    except (UnicodeError, binascii.Error, ValueError) as exc:
        raise ValueError(f"malformed encoded string ({_MARK}...): {exc}") from None


def _has_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


WireStr = Annotated[str, BeforeValidator(_unwire), PlainSerializer(_wire, return_type=str)]
"""A ``str`` field that round-trips through JSON, lone surrogates included. Input in either
form is read (so a value starting with the marker is taken as encoded: pass such a value
through ``_wire`` first)."""


class PendingApproval(BaseModel):
    """One call waiting for a human's decision (also what an in-process request carries).

    Attributes:
        call_id: the call's id.
        tool: the tool's name.
        args_text: the argument JSON text exactly as the model sent it.
        arguments: the parsed arguments, for display (parsed from ``args_text`` on each
            access, so changing them changes nothing; the runner uses ``args_text``).
        token: binds a decision to this call, its exact arguments and its turn.
    """

    model_config = ConfigDict(frozen=True)

    call_id: WireStr
    tool: WireStr
    args_text: WireStr
    token: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def arguments(self) -> Any:
        """The parsed arguments (a fresh copy; ``None`` if the text is not JSON)."""
        try:
            return parse_json(self.args_text)
        except _ArgumentsError:
            return None

    @field_serializer("arguments")
    def _arguments_out(self, value: Any) -> Any:
        return _jsonable(value)

    def approve(self, arguments: Any = None) -> ApprovalDecision:
        """A decision approving this call, optionally with edited ``arguments``."""
        return ApprovalDecision(
            call_id=_wire(self.call_id), token=self.token, approved=True, arguments=arguments
        )

    def deny(self, reason: str = "denied") -> ApprovalDecision:
        """A decision denying this call; ``reason`` is shown to the model."""
        return ApprovalDecision(
            call_id=_wire(self.call_id), token=self.token, approved=False, reason=reason
        )


class ApprovalDecision(BaseModel):
    """A human's decision on one pending call, sent back to resume it.

    Attributes:
        call_id: the call decided (same wire form as :attr:`PendingApproval.call_id`).
        token: the pending call's ``token``, unchanged.
        approved: run it (``True``) or deny it (``False``).
        arguments: edited arguments to run it with (``None``: as the model sent them).
            They are validated again; the call's own ``args`` never change.
        reason: why it was denied (shown to the model).
    """

    model_config = ConfigDict(frozen=True)

    call_id: WireStr
    token: str
    approved: bool
    arguments: Any = None
    reason: str | None = None


class PendingApprovals(BaseModel):
    """The calls of a turn still awaiting approval when ``run()`` returned; JSON round-trips.

    Send it to the client (``model_dump_json()``) and take it back with the decisions
    (``PendingApprovals.model_validate_json(text)``), then
    ``await runner.resume(pending, decisions)`` before ``expires_at``.

    Attributes:
        nonce: the turn's nonce (random, per turn).
        calls: the pending calls, in the order they asked.
        expires_at: when the state stops being resumable (UTC; by default 24 hours after
            the run returned: ``ToolRunner(approval_ttl=...)``).
        limits: the turn's :class:`~toolcall_tracker.Limits` (resume replays under them).
        end: how the turn ended (its ``End`` event; ``None`` if it never ended). Resume
            replays it: a gated tool of a turn cut off (``ok=False``) never runs.
        signature: HMAC-SHA256 (hex) over all of the above (a plain digest when the
            runner has no secret).
    """

    model_config = ConfigDict(frozen=True)

    nonce: str
    calls: tuple[PendingApproval, ...] = ()
    expires_at: AwareDatetime
    limits: Limits = DEFAULT_LIMITS
    end: End | None = None
    signature: str = ""

    @field_serializer("end")
    def _end_out(self, end: End | None) -> Any:
        if end is None:
            return None
        return {"type": "end", "reason": _wire_opt(end.reason), "ok": end.ok}

    @field_validator("end", mode="before")
    @classmethod
    def _end_in(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("reason"), str):
            return {**value, "reason": _unwire(value["reason"])}
        return value

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


def _wire_opt(value: str | None) -> str | None:
    return None if value is None else _wire(value)


def merge_calls(earlier: Iterable[ToolCall], later: Iterable[ToolCall]) -> list[ToolCall]:
    """``earlier`` with each call replaced by the call of the same id in ``later``.

    Use it to feed back a whole turn after resuming some of its calls:
    ``merge_calls(first_run_calls, resumed_calls)`` keeps the order the model made them.
    Calls of ``later`` that ``earlier`` does not have are appended.

    A real outcome is never replaced by a placeholder: a call that finished in ``earlier``
    (``done``, or an ``error`` other than a not-run one) is kept when ``later`` only says
    it was not run there (``not_executed``, e.g. ``already_finished``, or ``in_doubt``).
    """
    newer = {call.id: call for call in later}
    merged: list[ToolCall] = []
    for call in earlier:
        new = newer.pop(call.id, None)
        if new is None or (_real_outcome(call) and not _real_outcome(new)):
            merged.append(call)
        else:
            merged.append(new)
    merged.extend(newer.values())
    return merged


_NOT_RUN_KINDS: Final = frozenset({"not_executed", "in_doubt"})


def _real_outcome(call: ToolCall) -> bool:
    """Whether ``call`` finished with something other than a "not run here" placeholder."""
    if call.status is Status.DONE:
        return True
    if call.status is not Status.ERROR:
        return False
    return getattr(call.error, "kind", None) not in _NOT_RUN_KINDS


# -- secrets and signing (private) ---------------------------------------------------------


def _secret_key(secret: bytes | str | None) -> bytes | None:
    """The approval secret as the HMAC key, or ``None``; refuses a weak one.

    Raises:
        ValueError: empty, or shorter than 16 bytes.
        TypeError: neither ``bytes`` nor ``str``.
    """
    if secret is None:
        return None
    if isinstance(secret, str):
        key = secret.encode("utf-8", "surrogatepass")
    elif isinstance(secret, (bytes, bytearray)):
        key = bytes(secret)
    else:
        raise TypeError(f"approval_secret must be bytes or str, not {type(secret).__name__}")
    fix = (
        'generate one with `python -c "import secrets; print(secrets.token_hex(32))"`, '
        "keep it in your secret store and pass it to every server that may resume"
    )
    if not key:
        raise ValueError(
            "approval_secret is empty (an unset environment variable read with "
            f".get(KEY, '')?); an empty key would let anybody forge approvals: {fix}"
        )
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(
            f"approval_secret is {len(key)} bytes; it must be at least {MIN_SECRET_BYTES}: {fix}"
        )
    return key


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _mac(key: bytes | None, value: Any) -> str:
    if key is None:
        return hashlib.sha256(_canonical(value)).hexdigest()
    return hmac.new(key, _canonical(value), hashlib.sha256).hexdigest()


def _token(key: bytes | None, nonce: str, call_id: str, tool: str, args_text: str) -> str:
    return _mac(key, ["call", nonce, call_id, tool, args_text])


def _signature(key: bytes | None, state: PendingApprovals) -> str:
    body = [[call.call_id, call.tool, call.args_text, call.token] for call in state.calls]
    end = state.end
    return _mac(
        key,
        [
            "pending/2",
            state.nonce,
            state.expires_at.astimezone(timezone.utc).isoformat(),
            asdict(state.limits),
            None if end is None else [end.ok, end.reason],
            body,
        ],
    )


def _same(expected: str, given: object) -> bool:
    """``given`` is the well-formed digest ``expected`` (constant time; never raises)."""
    if not isinstance(given, str) or _HEX64.match(given) is None:
        return False
    return hmac.compare_digest(expected.encode("ascii"), given.encode("ascii"))


class _Signer:
    """Makes and checks the signed pending states of one runner."""

    __slots__ = ("key", "ttl")

    def __init__(self, key: bytes | None, ttl: timedelta = DEFAULT_APPROVAL_TTL) -> None:
        self.key = key
        self.ttl = ttl

    def call(self, nonce: str, call: ToolCall) -> PendingApproval:
        """The pending request of ``call`` in the turn ``nonce``."""
        return PendingApproval.model_construct(
            call_id=call.id,
            tool=call.name,
            args_text=call.args_text,
            token=_token(self.key, nonce, call.id, call.name, call.args_text),
        )

    def pending(
        self,
        nonce: str,
        calls: Sequence[PendingApproval],
        limits: Limits,
        end: End | None,
        expires_at: datetime | None = None,
    ) -> PendingApprovals:
        """The signed state of ``calls`` (expiring after the runner's ttl by default)."""
        if expires_at is None:
            expires_at = datetime.now(timezone.utc).replace(microsecond=0) + self.ttl
        state = PendingApprovals.model_construct(
            nonce=nonce,
            calls=tuple(calls),
            expires_at=expires_at,
            limits=limits,
            end=end,
            signature="",
        )
        return state.model_copy(update={"signature": _signature(self.key, state)})

    def verify(
        self,
        pending: PendingApprovals,
        decisions: Iterable[ApprovalDecision],
        now: datetime | None = None,
    ) -> dict[str, ApprovalDecision]:
        """Check the state (signature, expiry) and every decision's binding; the decisions
        by call id.

        Raises:
            ApprovalRefused: anything does not verify (the message says what).
        """
        key = self.key
        what = "the approval secret" if key is not None else "its digest (no approval secret set)"
        try:
            expected = _signature(key, pending)
        except (AttributeError, TypeError, ValueError):  # a model_construct()ed wreck
            expected = ""
        if not expected or not _same(expected, pending.signature):
            raise ApprovalRefused(
                "the pending approvals do not verify against "
                f"{what}: they were changed (arguments, ids, tools, expiry, limits or end), "
                "signed with another key, not signed, or the signature is malformed; "
                "nothing was run"
            )
        now = now if now is not None else datetime.now(timezone.utc)
        try:
            expired = now >= pending.expires_at
        except TypeError:  # a naive datetime slipped past validation
            expired = True
        if expired:
            raise ApprovalRefused(
                f"the pending approvals expired at {pending.expires_at.isoformat()}; a "
                "turn cannot be resumed after its expiry (ask the model again); nothing was run"
            )
        by_id: dict[str, PendingApproval] = {}
        for call in pending.calls:
            token = _token(key, pending.nonce, call.call_id, call.tool, call.args_text)
            if not isinstance(call.call_id, str):  # pragma: no cover (signed: a str)
                raise ApprovalRefused("a pending call's id is not a string; nothing was run")
            if not _same(token, call.token) or call.call_id in by_id:
                raise ApprovalRefused(
                    f"pending call {call.call_id!r} does not verify; nothing was run"
                )
            by_id[call.call_id] = call
        decided: dict[str, ApprovalDecision] = {}
        for decision in decisions:
            if not isinstance(decision, ApprovalDecision) or not isinstance(decision.call_id, str):
                raise ApprovalRefused(
                    f"a decision must be an ApprovalDecision (pending.approve(id) or "
                    f"pending.deny(id, reason)), not {type(decision).__name__} with call id "
                    f"{getattr(decision, 'call_id', None)!r}; nothing was run"
                )
            match = by_id.get(decision.call_id)
            if match is None:
                raise ApprovalRefused(
                    f"the decision for call {decision.call_id!r} names no call pending in "
                    f"this turn (pending: {', '.join(map(repr, by_id)) or 'none'}); "
                    "nothing was run"
                )
            if not _same(match.token, decision.token):
                raise ApprovalRefused(
                    f"the decision for call {decision.call_id!r} is not bound to that call's "
                    "arguments in this turn (a decision replayed from another call or turn, "
                    "a made-up or malformed token); nothing was run"
                )
            if decision.call_id in decided:
                raise ApprovalRefused(
                    f"two decisions for call {decision.call_id!r}; nothing was run"
                )
            decided[decision.call_id] = decision
        return decided
