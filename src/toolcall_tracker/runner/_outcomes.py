"""The failure values a turn writes, with their messages, and the one way it writes an
outcome (private)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from ..calls import ToolCall
from ..errors import TrackerClosed
from ..failures import (
    ApprovalDenied,
    CallCancelled,
    CallTimedOut,
    ClaimFailed,
    FieldError,
    NotExecuted,
    OutcomeInDoubt,
    ValidationFailed,
)
from ..tracker import ToolCallTracker


def timed_out(call: ToolCall, scope: str, started: bool, seconds: float | None) -> CallTimedOut:
    if scope == "call":
        what = f"the per-call timeout of {seconds}s"
    else:
        what = f"the tool runner's overall timeout of {seconds}s"
    stage = "before it finished" if started else "before the tool could start"
    return CallTimedOut(
        message=f"tool {call.name!r} timed out: {what} expired {stage}",
        tool=call.name,
        scope="call" if scope == "call" else "run",
        timeout=seconds or 0.0,
        tool_started=started,
    )


def cancelled(
    call: ToolCall, started: bool, reason: str, given: str | None = None
) -> CallCancelled:
    stage = "while the tool was running" if started else "before the tool started"
    return CallCancelled(
        message=f"tool {call.name!r} did not finish: {reason} {stage}",
        tool=call.name,
        tool_started=started,
        reason=given,
    )


def closed(call: ToolCall, started: bool) -> CallCancelled:
    return cancelled(call, started, "the tracker was closed", "tracker_closed")


def denied(call: ToolCall, reason: str, seconds: float | None = None) -> ApprovalDenied:
    if reason == "timeout":
        why = f"no decision came before the tool runner's overall timeout of {seconds}s"
    elif reason == "no_approver":
        why = "it needs approval and the run had no RunControl to ask through"
    else:
        why = f"a human denied it: {reason}"
    return ApprovalDenied(
        message=f"tool {call.name!r} was not run: {why}", tool=call.name, reason=reason
    )


def not_executed(call: ToolCall, reason: str | None) -> NotExecuted:
    why = f" ({reason})" if reason else ""
    return NotExecuted(
        message=f"tool {call.name!r} was not executed: the model's turn ended "
        f"abnormally{why}, and this tool only runs after a turn that ended normally",
        tool=call.name,
        reason=reason,
    )


def already_finished(call: ToolCall) -> NotExecuted:
    return NotExecuted(
        message=f"tool {call.name!r} was not run: this call was already decided by an earlier "
        "resume (run, or denied), and a call is never run twice",
        tool=call.name,
        reason="already_finished",
    )


def validation_failure(name: str, exc: ValidationError, edited: bool = False) -> ValidationFailed:
    errors = tuple(
        FieldError(path=tuple(error["loc"]), message=error["msg"], type=error["type"])
        for error in exc.errors(include_url=False, include_input=False, include_context=False)
    )
    described = "; ".join(
        f"{'.'.join(str(part) for part in error.path) or '(the arguments)'}: {error.message}"
        for error in errors
    )
    which = "edited arguments" if edited else "arguments"
    return ValidationFailed(
        message=f"invalid {which} for tool {name!r}: {described}",
        tool=name,
        errors=errors,
    )


def claim_failed(call: ToolCall, exc: BaseException, text: str) -> ClaimFailed:
    return ClaimFailed(
        message=f"tool {call.name!r} was not run: claiming the call failed ({text})",
        tool=call.name,
        exception=type(exc).__name__,
    )


def in_doubt(call: ToolCall, lease_until: datetime | None = None) -> OutcomeInDoubt:
    if lease_until is not None and lease_until <= datetime.now(timezone.utc):
        why = (
            "its lease expired with no outcome recorded (the process running it stopped: "
            "it may have run)"
        )
    else:
        why = "its outcome was never recorded (it may be running, or have run, elsewhere)"
    return OutcomeInDoubt(
        message=f"tool {call.name!r} was not run again: an earlier attempt claimed this call "
        f"and {why}",
        tool=call.name,
    )


def write(tracker: ToolCallTracker, call_id: str, value: Any, *, error: bool) -> None:
    """Write a call's outcome. A closed tracker takes no more events, but a call must not
    stay ``running``: its outcome then goes to the tracker's own machine."""
    try:
        if error:
            tracker.write_error(call_id, value)
        else:
            tracker.write_result(call_id, value)
    except TrackerClosed:
        machine = tracker.machine
        if error:
            machine.write_error(call_id, value)
        else:
            machine.write_result(call_id, value)
