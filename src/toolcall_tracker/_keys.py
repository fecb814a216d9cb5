"""One key per call of a turn: the store key every path claims, and the idempotency key.

Theory of operation. A call may be run by several paths: the live runner of a durable
turn, :meth:`ToolRunner.resume` of a signed state, ``resume_turn`` after a restore, an
engine's retry. For "no tool runs twice" to hold across all of them, they must all claim
the same key in the outcome store for the same call, and never the same key for two
different calls. What identifies a call:

==================  ========================================================================
part                why
==================  ========================================================================
the turn            the turn id (a durable turn's journal id; the signed state's
                    ``turn_id``; a state of the previous format: its nonce). Call ids are
                    unique within a turn only, and providers reuse them across turns
                    (``call_0`` every time) or change them on every attempt
the call id         the call within its turn
the tool name       a call is one tool's
the argument text   the model's exact text (never edited arguments: a restore re-applies
                    an edit, so the key stays the same). An application that reuses one
                    turn id for two model responses cannot give one call's outcome to
                    another whose arguments differ
==================  ========================================================================

The key is the SHA-256 of the canonical JSON of these four under a domain tag, so no
choice of delimiters in an id, a name or a text can make two calls collide (each part is a
JSON string; lone surrogates are escaped), after the turn and the call id as ASCII (JSON's
escapes), ``"<turn>:<call id>:<digest>"``, so an operator can tell whose key a row of the
store is. Only the digest decides: the readable parts are a label.

A turn named by its nonce (a run given no turn id, whose signed state names the nonce as
its turn; and every state of the previous format, which has no turn id) claims the key
the previous version claimed, ``"<nonce>:<call id>"`` (the id in the signed state's wire
form): a nonce is random and made once per turn, so no other turn can share it, and a
process of either version resuming such a state during a rolling deploy, or its
remainder re-signed by this version, claims one key.

The idempotency key (:attr:`ToolContext.idempotency_key`) is a second hash, of the store
key under another domain tag: stable across resumes, restores and retries like the store
key, and safe to send to a third party (it reveals neither the turn id, nor the arguments,
nor the store key). A tool passes it as the ``Idempotency-Key`` of the payment or e-mail
API it calls, so that a double run, where that API honours the key, does no harm.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final

__all__ = ["call_key", "idempotency_key"]

_CALL: Final = "toolcall-tracker/call-key/1"
_IDEMPOTENCY: Final = "toolcall-tracker/idempotency-key/1"


def _digest(value: list[str]) -> str:
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _label(value: str) -> str:
    """``value`` as ASCII for a key's readable part (``\\uXXXX`` escapes beyond ASCII)."""
    return json.dumps(value, ensure_ascii=True)[1:-1]


def call_key(turn: str, call_id: str, tool: str, args_text: str) -> str:
    """The outcome store key of one call of turn ``turn`` (see the module docs)."""
    return f"{_label(turn)}:{_label(call_id)}:{_digest([_CALL, turn, call_id, tool, args_text])}"


def idempotency_key(store_key: str) -> str:
    """The idempotency key of the call whose store key is ``store_key`` (64 hex digits)."""
    return _digest([_IDEMPOTENCY, store_key])
