"""Approvals across requests: the signed pending state, decisions and signing (private).

A turn whose calls await a human's decision when :meth:`ToolRunner.run` returns leaves a
:class:`PendingApprovals`: the turn's nonce and id (``turn_id``), the id of the key that
signed it (``key_id``), when the state expires (``expires_at``, UTC), the turn's
:class:`~toolcall_tracker.Limits` and its ``End``, and per call its id, tool, exact
argument text and a token. The token is an HMAC (SHA-256) over ``["call", nonce, id, tool,
args_text]`` with the signing key; the state's ``signature`` is an HMAC over everything
else (``["pending/3", key_id, turn_id, nonce, expires_at, limits, end, calls]``). So:

- a client that changes an argument, an id, a tool name, the turn id, the key id, the
  expiry, the limits or the end breaks the signature;
- a decision carries its call's token, so it cannot be replayed against another call (other
  id or arguments) or another turn (other nonce), and nobody without the key can make
  one for a call it was not given;
- a state signed with another key, unsigned, expired, or with a malformed token or
  signature is refused (``ApprovalRefused``, never another exception).

Every MAC input is canonical JSON (sorted keys, no spaces, ASCII with escapes), a list of
tagged fields: two different tuples of strings are two different JSON texts, whatever
``:``, ``|``, quotes, commas, newlines, NULs or lone surrogates the strings hold, so no
choice of ids, names or arguments makes two states (or two calls) share a MAC input.

**Formats.** ``"pending/3"`` (this version) covers ``turn_id`` and ``key_id``. A state of
the previous format (``"pending/2"``: no ``turn_id``, no ``key_id``) still verifies until
it expires; a state that has either field verifies under ``"pending/3"`` only, so removing
them (a downgrade) breaks the signature. A state's :attr:`~PendingApprovals.turn_key` (its
``turn_id``, or its nonce for a previous-format state) names its turn wherever a key is
derived from it (the outcome store's).

**Keys.** ``approval_secret`` is one key (``bytes``/``str``, states carry no key id) or an
:class:`ApprovalKeys`: a current key with its id (signs every new state, whose ``key_id``
names it), previous keys (their states still verify) and retired key ids (their states are
refused, saying so). A state without a key id verifies against the current key and the
previous ones. The tokens of a state are made with the key that signed it.

Without a secret the tokens and signature are plain SHA-256 digests: they catch mistakes,
not forgery, and ``resume`` refuses them unless told ``allow_unsigned=True``. A secret
shorter than 16 bytes (an empty one: an unset environment variable) is refused.

The wire form: the strings the core accepts include lone surrogates, which JSON text cannot
carry as such. The call ids, tool names, argument texts, the nonce, the turn id and the key
id (the runner makes nonces and key ids plain ASCII; a hostile state may not) are written
in JSON as they are when they can be, and otherwise (or when they start with the marker)
as the marker ``=?b64?`` followed by the base64 of their UTF-8 (``surrogatepass``) bytes;
reading takes either form. The signature covers the values, so it covers the encoded form
too (decoding is one-to-one). ``model_dump_json()`` -> ``model_validate_json()``
round-trips every state.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
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
    "ApprovalKeys",
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
        nonce: the turn's nonce (random, per turn): every token is bound to it.
        turn_id: the id of the turn the state belongs to (``run(turn_id=...)``; a durable
            turn's journal id), or the nonce when the run was given none. ``None`` only in
            a state of the previous format. Signed.
        key_id: the id of the :class:`ApprovalKeys` key that signed the state (``None``:
            signed with a plain ``approval_secret``, or none). Signed.
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

    nonce: WireStr
    turn_id: WireStr | None = None
    key_id: WireStr | None = None
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
    def turn_key(self) -> str:
        """The turn this state belongs to, for deriving keys: :attr:`turn_id`, or the
        :attr:`nonce` for a state of the previous format (which named no turn)."""
        return self.turn_id if self.turn_id is not None else self.nonce

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


# -- keys ------------------------------------------------------------------------------------

_KEY_ID: Final = re.compile(r"[!-~]{1,64}\Z")
_SECRET_FIX: Final = (
    'generate one with `python -c "import secrets; print(secrets.token_hex(32))"`, '
    "keep it in your secret store and pass it to every server that may resume"
)


def _key_id(value: object, what: str) -> str:
    """``value``, checked as a key id (1 to 64 printable ASCII characters, no spaces).

    Raises:
        TypeError: not a ``str``.
        ValueError: empty, too long, or with a space or a non-printable character.
    """
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str key id, not {type(value).__name__}")
    if _KEY_ID.match(value) is None:
        raise ValueError(
            f"{what} {_shown(value)} is not a key id: use 1 to 64 printable ASCII "
            "characters without spaces (a date such as '2026-12' does)"
        )
    return value


def _shown(value: object, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (for messages about hostile input)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ApprovalKeys:
    """The keys that sign pending approvals, for rotating them: ``ToolRunner(approval_secret=...)``.

    ::

        keys = ApprovalKeys(
            current=("2026-12", os.environ["APPROVAL_KEY_2026_12"]),  # signs new states
            previous={"2026-06": os.environ["APPROVAL_KEY_2026_06"]},  # still verify
            retired={"2025-12"},                                       # refused, saying so
        )

    Every new state is signed with the current key and carries its id
    (:attr:`PendingApprovals.key_id`). A state signed with a previous key still verifies
    (until it expires); one signed with a retired key is refused with an
    :class:`~toolcall_tracker.ApprovalRefused` that names the key; one naming a key id
    this runner does not know is refused saying so. A state without a key id (signed with
    a plain ``approval_secret``, or by the previous version) verifies against the current
    key and the previous ones, so moving from ``approval_secret=secret`` to
    ``ApprovalKeys(current=("k1", secret))`` refuses nothing.

    The value is immutable and hashable; its ``repr`` shows the key ids, never a secret.

    Args:
        current: ``(key id, secret)``: the key that signs.
        previous: ``{key id: secret}`` (or ``(id, secret)`` pairs): keys whose states still
            verify.
        retired: key ids whose states are refused.

    A key id is 1 to 64 printable ASCII characters without spaces; a secret is ``bytes``
    or ``str`` (UTF-8) of at least 16 bytes. No id may appear twice.

    Raises:
        TypeError: a key id is not a ``str``, a secret neither ``bytes`` nor ``str``,
            ``current`` not a pair, or ``retired`` a bare ``str``.
        ValueError: a key id is malformed or appears twice, or a secret is empty or
            shorter than 16 bytes.
    """

    __slots__ = ("_current", "_previous", "_retired")

    _current: tuple[str, bytes]
    _previous: dict[str, bytes]
    _retired: frozenset[str]

    def __init__(
        self,
        current: tuple[str, bytes | str],
        previous: Mapping[str, bytes | str] | Iterable[tuple[str, bytes | str]] = (),
        retired: Iterable[str] = (),
    ) -> None:
        if not isinstance(current, tuple) or len(current) != 2:
            raise TypeError(
                "ApprovalKeys(current=...) must be a (key id, secret) pair, "
                f"not {type(current).__name__}"
            )
        current_id = _key_id(current[0], "the current key's id")
        seen = {current_id}
        pairs = previous.items() if isinstance(previous, Mapping) else previous
        olds: dict[str, bytes] = {}
        for pair in pairs:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(
                    "ApprovalKeys(previous=...) must map key ids to secrets, "
                    f"not hold {type(pair).__name__}"
                )
            old_id = _key_id(pair[0], "a previous key's id")
            if old_id in seen:
                raise ValueError(f"key id {old_id!r} appears twice in ApprovalKeys")
            seen.add(old_id)
            olds[old_id] = _checked_key(pair[1], f"previous key {old_id!r}")
        if isinstance(retired, (str, bytes)):
            raise TypeError(
                "ApprovalKeys(retired=...) must be a set of key ids, not a bare "
                f"{type(retired).__name__} (write retired={{{retired!r}}})"
            )
        gone: set[str] = set()
        for value in retired:
            gone_id = _key_id(value, "a retired key's id")
            if gone_id in seen:
                raise ValueError(
                    f"key id {gone_id!r} is both retired and in use in ApprovalKeys: "
                    "a retired key must not sign or verify"
                )
            gone.add(gone_id)
        set_ = object.__setattr__
        set_(self, "_current", (current_id, _checked_key(current[1], f"key {current_id!r}")))
        set_(self, "_previous", olds)
        set_(self, "_retired", frozenset(gone))

    @property
    def current(self) -> tuple[str, bytes]:
        """``(key id, secret)`` of the key that signs (the secret as ``bytes``)."""
        return self._current

    @property
    def current_id(self) -> str:
        """The id of the key that signs."""
        return self._current[0]

    @property
    def previous(self) -> Mapping[str, bytes]:
        """``{key id: secret}`` of the keys whose states still verify (read-only)."""
        return MappingProxyType(self._previous)

    @property
    def retired(self) -> frozenset[str]:
        """The ids of the keys whose states are refused."""
        return self._retired

    def rotate(self, key_id: str, secret: bytes | str) -> ApprovalKeys:
        """These keys with ``(key_id, secret)`` current and the current key previous."""
        return ApprovalKeys(
            (key_id, secret), {**self._previous, self._current[0]: self._current[1]}, self._retired
        )

    def retire(self, key_id: str) -> ApprovalKeys:
        """These keys with the previous key ``key_id`` retired (its secret dropped).

        Raises:
            KeyError: ``key_id`` is not a previous key (the current key cannot be retired:
                :meth:`rotate` first).
        """
        if key_id not in self._previous:
            raise KeyError(
                f"{key_id!r} is not a previous key of these ApprovalKeys "
                f"(previous: {sorted(self._previous)}; rotate the current key first)"
            )
        rest = {k: v for k, v in self._previous.items() if k != key_id}
        return ApprovalKeys(self._current, rest, self._retired | {key_id})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ApprovalKeys is immutable: build a new one (rotate, retire)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ApprovalKeys is immutable: build a new one (rotate, retire)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ApprovalKeys):
            return NotImplemented
        return (self._current, self._previous, self._retired) == (
            other._current,
            other._previous,
            other._retired,
        )

    def __hash__(self) -> int:
        return hash((self._current, frozenset(self._previous.items()), self._retired))

    def __repr__(self) -> str:
        return (
            f"ApprovalKeys(current={self._current[0]!r}, previous={sorted(self._previous)!r}, "
            f"retired={sorted(self._retired)!r})"
        )


def _checked_key(secret: object, what: str = "approval_secret") -> bytes:
    """``secret`` as an HMAC key; refuses a weak one.

    Raises:
        ValueError: empty, or shorter than 16 bytes.
        TypeError: neither ``bytes`` nor ``str``.
    """
    if isinstance(secret, str):
        key = secret.encode("utf-8", "surrogatepass")
    elif isinstance(secret, (bytes, bytearray)):
        key = bytes(secret)
    else:
        raise TypeError(f"{what} must be bytes or str, not {type(secret).__name__}")
    if not key:
        raise ValueError(
            f"{what} is empty (an unset environment variable read with "
            f".get(KEY, '')?); an empty key would let anybody forge approvals: {_SECRET_FIX}"
        )
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(
            f"{what} is {len(key)} bytes; it must be at least {MIN_SECRET_BYTES}: {_SECRET_FIX}"
        )
    return key


def _secret_key(secret: ApprovalKeys | bytes | str | None) -> ApprovalKeys | bytes | None:
    """The approval secret as the signer's key(s), or ``None``; refuses a weak one.

    Raises:
        ValueError: empty, or shorter than 16 bytes.
        TypeError: neither ``bytes``, ``str`` nor :class:`ApprovalKeys`.
    """
    if secret is None or isinstance(secret, ApprovalKeys):
        return secret
    if not isinstance(secret, (str, bytes, bytearray)):
        raise TypeError(
            f"approval_secret must be bytes or str (or ApprovalKeys), not {type(secret).__name__}"
        )
    return _checked_key(secret)


# -- signing (private) ----------------------------------------------------------------------

_FORMAT: Final = "pending/3"
_OLD_FORMAT: Final = "pending/2"  # the previous version's: no turn id, no key id


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _mac(key: bytes | None, value: Any) -> str:
    if key is None:
        return hashlib.sha256(_canonical(value)).hexdigest()
    return hmac.new(key, _canonical(value), hashlib.sha256).hexdigest()


def _token(key: bytes | None, nonce: str, call_id: str, tool: str, args_text: str) -> str:
    return _mac(key, ["call", nonce, call_id, tool, args_text])


def _is_old(state: PendingApprovals) -> bool:
    """Whether ``state`` is of the previous format (no turn id, no key id)."""
    return state.turn_id is None and state.key_id is None


def _signature(key: bytes | None, state: PendingApprovals) -> str:
    body = [[call.call_id, call.tool, call.args_text, call.token] for call in state.calls]
    end = state.end
    fields = [
        state.nonce,
        state.expires_at.astimezone(timezone.utc).isoformat(),
        asdict(state.limits),
        None if end is None else [end.ok, end.reason],
        body,
    ]
    if _is_old(state):
        return _mac(key, [_OLD_FORMAT, *fields])
    return _mac(key, [_FORMAT, state.key_id, state.turn_id, *fields])


def _same(expected: str, given: object) -> bool:
    """``given`` is the well-formed digest ``expected`` (constant time; never raises)."""
    if not isinstance(given, str) or _HEX64.match(given) is None:
        return False
    return hmac.compare_digest(expected.encode("ascii"), given.encode("ascii"))


class _Signer:
    """Makes and checks the signed pending states of one runner.

    Args:
        keys: the runner's key (``bytes``), keys (:class:`ApprovalKeys`) or ``None`` (plain
            digests).
        ttl: how long a new state stays resumable.
    """

    __slots__ = ("_named", "_retired", "_unnamed", "key", "key_id", "ttl")

    def __init__(
        self, keys: ApprovalKeys | bytes | None, ttl: timedelta = DEFAULT_APPROVAL_TTL
    ) -> None:
        self.ttl = ttl
        if isinstance(keys, ApprovalKeys):
            self.key_id: str | None = keys.current_id
            self.key: bytes | None = keys.current[1]
            self._named: dict[str, bytes] = {keys.current_id: self.key, **keys.previous}
            self._retired: frozenset[str] = keys.retired
        else:
            self.key_id, self.key = None, keys
            self._named, self._retired = {}, frozenset()
        # A state without a key id: the current key, then the previous ones.
        self._unnamed: tuple[bytes | None, ...] = (
            tuple(self._named.values()) if self._named else (self.key,)
        )

    def request(self, nonce: str, call_id: str, tool: str, args_text: str) -> PendingApproval:
        """The pending request of a call in the turn ``nonce``, under the current key."""
        return PendingApproval.model_construct(
            call_id=call_id,
            tool=tool,
            args_text=args_text,
            token=_token(self.key, nonce, call_id, tool, args_text),
        )

    def call(self, nonce: str, call: ToolCall) -> PendingApproval:
        """The pending request of ``call`` in the turn ``nonce``."""
        return self.request(nonce, call.id, call.name, call.args_text)

    def pending(
        self,
        nonce: str,
        calls: Sequence[PendingApproval],
        limits: Limits,
        end: End | None,
        expires_at: datetime | None = None,
        turn_id: str | None = None,
    ) -> PendingApprovals:
        """The signed state of ``calls`` (requests made with :meth:`call` or
        :meth:`request`) under the current key, expiring after the runner's ttl by
        default, of the turn ``turn_id`` (default: ``nonce``)."""
        if expires_at is None:
            expires_at = datetime.now(timezone.utc).replace(microsecond=0) + self.ttl
        state = PendingApprovals.model_construct(
            nonce=nonce,
            turn_id=nonce if turn_id is None else turn_id,
            key_id=self.key_id,
            calls=tuple(calls),
            expires_at=expires_at,
            limits=limits,
            end=end,
            signature="",
        )
        return state.model_copy(update={"signature": _signature(self.key, state)})

    def _keys_of(self, pending: PendingApprovals) -> tuple[bytes | None, ...]:
        """The keys ``pending`` may be signed with, by its key id.

        Raises:
            ApprovalRefused: the key id is retired, unknown, or not a string.
        """
        key_id = pending.key_id
        if key_id is None:
            return self._unnamed
        if not isinstance(key_id, str):  # a model_construct()ed wreck
            raise ApprovalRefused("the pending approvals' key id is not a string; nothing was run")
        if key_id in self._retired:
            raise ApprovalRefused(
                f"the pending approvals were signed with retired key {_shown(key_id)}: they "
                "can no longer be resumed (ask the model again); nothing was run"
            )
        key = self._named.get(key_id)
        if key is None:
            known = ", ".join(map(repr, self._named)) or "none: approval_secret has no key ids"
            raise ApprovalRefused(
                f"the pending approvals were signed with key {_shown(key_id)}, which this "
                f"runner does not know (its keys: {known}); give every server the same "
                "ApprovalKeys, with that key current or previous; nothing was run"
            )
        return (key,)

    def check(self, pending: PendingApprovals, now: datetime | None = None) -> bytes | None:
        """Check the state's key id, signature and expiry; the key that signed it.

        Raises:
            ApprovalRefused: anything does not verify (the message says what).
        """
        what = (
            "the approval secret" if self.key is not None else "its digest (no approval secret set)"
        )
        for key in self._keys_of(pending):
            try:
                expected = _signature(key, pending)
            except (AttributeError, TypeError, ValueError):  # a model_construct()ed wreck
                expected = ""
            if expected and _same(expected, pending.signature):
                break
        else:
            raise ApprovalRefused(
                "the pending approvals do not verify against "
                f"{what}: they were changed (arguments, ids, tools, turn, key id, expiry, "
                "limits or end), signed with another key, not signed, or the signature is "
                "malformed; nothing was run"
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
        return key

    def verify(
        self,
        pending: PendingApprovals,
        decisions: Iterable[ApprovalDecision],
        now: datetime | None = None,
    ) -> dict[str, ApprovalDecision]:
        """Check the state (:meth:`check`) and every decision's binding; the decisions by
        call id.

        Raises:
            ApprovalRefused: anything does not verify (the message says what).
        """
        key = self.check(pending, now)
        by_id: dict[str, PendingApproval] = {}
        for call in pending.calls:
            if not isinstance(call.call_id, str):  # pragma: no cover (signed: a str)
                raise ApprovalRefused("a pending call's id is not a string; nothing was run")
            token = _token(key, pending.nonce, call.call_id, call.tool, call.args_text)
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
