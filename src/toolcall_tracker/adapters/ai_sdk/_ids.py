"""The ``toolCallId`` a call has in an AI SDK UI message stream (private; the public name
is re-exported by :mod:`toolcall_tracker.adapters.ai_sdk`).

``useChat`` keys the tool parts of an assistant message by ``toolCallId``, so two calls of
one message must never share one. A message can hold several model turns (steps, in one
response or continued by a later one), and a turn's ids repeat an earlier turn's when a
provider mints them per turn (Ollama's ``ollama-call-0``). The writers (:class:`AISDKEncoder`
and :class:`AISDKListener`) therefore keep the ids earlier steps used, and give a call
whose id is among them a fresh one, ``<id>~<step>`` (``~`` appended until unused).

A later response of the same message (the one that answers the client's approvals) must
write the outcomes under the ids the client knows: :class:`AISDKStreamIds` carries them
from the first response's writer to the second's, as JSON kept next to the pending
approvals (JSON: the ids may hold lone surrogates, which pydantic's JSON cannot write).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["AISDKStreamIds", "fresh_id"]


@dataclass(frozen=True)
class AISDKStreamIds:
    """The ids (``toolCallId``) one response gave its calls, for a later response continuing
    the same assistant message (the one that answers the client's approvals).

    Take it from the first response's writer (:meth:`AISDKEncoder.stream_ids`,
    :meth:`AISDKListener.stream_ids`) once its last step is written, keep it with the
    pending approvals (:meth:`to_json` / :meth:`from_json`), and build the second
    response's encoder with ``AISDKEncoder(continues=ids)``: its
    :meth:`~AISDKEncoder.outcomes` then writes each call under the id the client knows
    (``ollama-call-0~1``, not ``ollama-call-0``), and a call of a new step that reuses an
    id of the message gets a fresh one.

    Attributes:
        calls: the last step's calls: call id -> its ``toolCallId`` in the stream.
        used: every ``toolCallId`` the message holds.
    """

    calls: Mapping[str, str] = field(default_factory=dict)
    used: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # a read-only copy: the ids stay as they were taken
        object.__setattr__(self, "calls", MappingProxyType(dict(self.calls)))
        object.__setattr__(self, "used", frozenset(self.used))

    def __hash__(self) -> int:
        return hash((frozenset(self.calls.items()), self.used))

    def to_json(self) -> str:
        """JSON text for the ids (ASCII: an id with a lone surrogate is written with a
        ``\\u`` escape, which :meth:`from_json` reads back as it was)."""
        return json.dumps({"calls": dict(self.calls), "used": sorted(self.used)})

    @classmethod
    def from_json(cls, text: str | bytes) -> AISDKStreamIds:
        """The ids :meth:`to_json` wrote.

        Raises:
            ValueError: ``text`` is not such JSON (the message says what is wrong).
        """
        try:
            data: Any = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"AISDKStreamIds.from_json: not JSON ({exc})") from None
        if not isinstance(data, dict) or set(data) != {"calls", "used"}:
            raise ValueError(
                'AISDKStreamIds.from_json: expected an object with "calls" and "used" only'
            )
        calls, used = data["calls"], data["used"]
        if not isinstance(calls, dict) or not all(isinstance(v, str) for v in calls.values()):
            raise ValueError('AISDKStreamIds.from_json: "calls" must map ids to strings')
        if not isinstance(used, list) or not all(isinstance(v, str) for v in used):
            raise ValueError('AISDKStreamIds.from_json: "used" must be a list of strings')
        return cls(calls=dict(calls), used=frozenset(used))


def fresh_id(call_id: str, step: int, used: set[str] | frozenset[str]) -> str:
    """A ``toolCallId`` for ``call_id`` that is not in ``used``: itself if unused, else
    ``<id>~<step>``, with ``~`` appended until unused."""
    if call_id not in used:
        return call_id
    wire = f"{call_id}~{step}"
    while wire in used:
        wire += "~"
    return wire
