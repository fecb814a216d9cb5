"""The AI SDK UI message stream of a journaled turn, on any server: :func:`follow_ui_stream`
and :func:`follow_ui_sse` (resumable streams, the AI SDK's way).

Theory of operation. The AI SDK resumes a chat with a ``GET`` that replays the active
stream from its start and then follows it (its ``resumable-stream`` package keeps the
stream's text in Redis for that). Here the journal already holds the turn, so nothing
else is stored: the follower replays the turn's records into a state machine with an
:class:`~toolcall_tracker.adapters.ai_sdk.AISDKListener` subscribed, which writes the
parts the original server's listener wrote, in the same order. The stream is:

1. ``start`` (with ``messageId`` if given);
2. the listener's parts, as the records are read (following the turn live), except
   ``finish``, which is held back;
3. once the turn is over (see ``_follow.py``): a ``tool-approval-request`` for each call
   the runner left awaiting a decision (its last ``run_end`` record: a restored turn's is
   the restore's), with the approval id the original server gave it;
4. the held ``finish``, then (SSE) ``data: [DONE]``.

That is the stream of a server that writes ``start``, an ``AISDKListener``'s parts, and,
after the run, the approval requests of ``control.pending`` before ``finish``
(``examples/chat_app``). Two differences, neither visible in the client's message:
consecutive ``tool-input-delta`` parts of one call come joined (the journal joins them),
and preliminary outputs (progress) are not journaled, so only the final output comes.

``id:`` lines. :func:`follow_ui_sse` numbers the parts (``id: 1`` for ``start``); the
numbering is a function of the journal alone, so a client reconnecting with the
``Last-Event-ID`` header (``EventSource`` sends it) gets the parts after that one, from
any server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from ..adapters.ai_sdk._adapter import SSE_DONE, AISDKEncoder, AISDKListener, to_sse
from ..changes import ChangeListener
from ..machine import ToolCallStateMachine
from ._follow import FollowableJournal, FollowState
from ._protocol import DurableError

__all__ = ["follow_ui_sse", "follow_ui_stream"]

ApprovalId = Callable[[str, "str | None"], str]


def default_approval_id(call_id: str, nonce: str | None) -> str:
    """``"<nonce>:<call id>"`` (the call id alone without a nonce)."""
    return call_id if nonce is None else f"{nonce}:{call_id}"


async def follow_ui_stream(
    journal: FollowableJournal,
    turn_id: str,
    *,
    message_id: str | None = None,
    approval_id: ApprovalId = default_approval_id,
    timeout: float | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """The UI message stream parts of a journaled turn: replayed from its start, then
    followed live until the turn is over (see the module docs for the order).

    Args:
        journal: the turn's journal (any with ``follow``: ``SQLiteJournal``,
            ``RedisJournal``).
        turn_id: the turn.
        message_id: the ``start`` part's ``messageId`` (the original server's, if it gave
            one).
        approval_id: ``approval_id(call_id, nonce)``, the ``approvalId`` the original
            server gave a call awaiting approval (``nonce``: its signed state's). The
            default is ``"<nonce>:<call id>"``.
        timeout: passed to ``journal.follow``.

    Raises:
        DurableError: the turn did not end within ``timeout`` seconds, or the journal
            cannot be read.
    """
    parts: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []

    def emit(part: dict[str, Any]) -> None:
        (held if part["type"] == "finish" else parts).append(part)

    listeners: list[AISDKListener] = []

    def listen(machine: ToolCallStateMachine) -> ChangeListener:
        listeners.append(AISDKListener(machine, on_part=emit))
        return listeners[-1]

    state = FollowState(listen)
    for part in AISDKEncoder().start(message_id):
        yield part
    records = journal.follow(turn_id, timeout=timeout)
    try:
        async for record in records:
            state.add(record)
            ready = parts[:]
            parts.clear()
            for part in ready:
                yield part
            # no stop at ``state.finished`` here: a ``fence`` after a ``run_end`` re-opens
            # the turn (a restore), and the journal's follow stops by the same rule
    finally:
        await _close(records)
    if state.machine is None:  # pragma: no cover (follow ends only on a finished turn)
        raise DurableError(f"turn {turn_id!r} has no records")
    run_end = state.run_end or {}
    nonce = run_end.get("nonce")
    for call_id in run_end.get("awaiting") or ():
        listeners[0].approval_request(call_id, approval_id(call_id, nonce))
    for part in [*parts, *held]:
        yield part


def follow_ui_sse(
    journal: FollowableJournal,
    turn_id: str,
    *,
    last_event_id: str | None = None,
    message_id: str | None = None,
    approval_id: ApprovalId = default_approval_id,
    timeout: float | None = None,
) -> AsyncIterator[str]:
    """:func:`follow_ui_stream` as the SSE text of a UI message stream response: each part
    with an ``id:`` line (its number, ``1`` for ``start``), then ``data: [DONE]``.

    Serve it from the resume ``GET`` with
    :data:`~toolcall_tracker.adapters.ai_sdk.UI_MESSAGE_STREAM_HEADERS`. It checks
    ``last_event_id`` at once (before any part), so a bad header can be answered with a
    400 before the response starts.

    Args:
        journal: as :func:`follow_ui_stream`.
        turn_id: as :func:`follow_ui_stream`.
        last_event_id: the request's ``Last-Event-ID`` header, if any: only the parts
            after that one are written.
        message_id: as :func:`follow_ui_stream`.
        approval_id: as :func:`follow_ui_stream`.
        timeout: as :func:`follow_ui_stream`.

    Raises:
        ValueError: ``last_event_id`` is not an id this function writes (a number).
        DurableError: (while iterating) as :func:`follow_ui_stream`.
    """
    skip = 0
    if last_event_id is not None and last_event_id.strip():
        text = last_event_id.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 18):
            raise ValueError(
                f"Last-Event-ID {last_event_id[:40]!r} is not an id of this stream (a number)"
            )
        skip = int(text)
    parts = follow_ui_stream(
        journal, turn_id, message_id=message_id, approval_id=approval_id, timeout=timeout
    )
    return _framed(parts, skip)


async def _framed(parts: AsyncIterator[dict[str, Any]], skip: int) -> AsyncIterator[str]:
    """The SSE frames of ``parts`` after the first ``skip``, numbered, then ``[DONE]``."""
    number = 0
    try:
        async for part in parts:
            number += 1
            if number > skip:
                yield f"id: {number}\n{to_sse(part)}"
    finally:
        await _close(parts)
    yield SSE_DONE


async def _close(iterator: AsyncIterator[Any]) -> None:
    """Close an async generator we stopped reading (its connection, its waits)."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()
