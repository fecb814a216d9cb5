"""The AI SDK reader's call failures (private; public names are re-exported by
:mod:`toolcall_tracker.adapters.ai_sdk`), and the factories that make them.
"""

from __future__ import annotations

from typing import Any, Literal

from ...failures import CallFailure, MalformedStreamItem
from .._calls import AdapterCall
from .._common import _get

__all__ = [
    "AISDKApprovalPending",
    "AISDKInputMismatch",
    "AISDKMalformedPart",
    "AISDKStepReset",
    "AISDKToolError",
    "approval_pending",
    "malformed",
    "step_reset",
    "tool_error",
]


class AISDKToolError(CallFailure):
    """The stream reported the call failed: ``tool-input-error``, ``tool-output-error``
    or ``tool-output-denied`` (``part_type``). ``message`` is the part's ``errorText``;
    ``input`` the part's ``input``, if it had one.
    """

    kind: Literal["ai_sdk_tool_error"] = "ai_sdk_tool_error"
    part_type: str
    input: Any = None


class AISDKInputMismatch(CallFailure):
    """No longer produced: the input of ``tool-input-available`` counts over the streamed
    text (issue 24). Kept so that code matching on it still imports (``input``: the
    part's input)."""

    kind: Literal["ai_sdk_input_mismatch"] = "ai_sdk_input_mismatch"
    input: Any = None


class AISDKApprovalPending(CallFailure):
    """The stream asked for approval of this call (``tool-approval-request``) and ended
    before a decision: the call never ran. ``approval_id`` is the request's ``approvalId``;
    the decision goes back to the server, whose next response runs or denies the call.
    """

    kind: Literal["ai_sdk_approval_pending"] = "ai_sdk_approval_pending"
    approval_id: str = ""


class AISDKStepReset(CallFailure):
    """The server retracted the call's step (``reset-step``): the call must not run (the
    SDK's own UI drops it), and the reader failed it whatever state it was in.

    ``was_ready``: the call had been made ready before the retraction, which only
    ``AISDKAdapter(ready="input")`` does: a runner that had not started its tool never
    does; one that had started it stops it (an async tool is cancelled; a sync tool's
    thread runs on and its result is discarded), but what the tool did is done. ``False``
    (always, with the default ``ready="step"``): the call was never ready and never ran.
    """

    kind: Literal["ai_sdk_step_reset"] = "ai_sdk_step_reset"
    was_ready: bool = False


class AISDKMalformedPart(MalformedStreamItem):
    """A part for this call was malformed (a delta that is not a string, no tool name...)."""

    kind: Literal["ai_sdk_malformed_part"] = "ai_sdk_malformed_part"
    part_type: str


def approval_pending(record: AdapterCall, approval_id: str) -> AISDKApprovalPending:
    return AISDKApprovalPending(
        message=f"call {record.call_id!r} ({record.name}) awaits approval ({approval_id!r}) "
        "when the turn ends; it never ran. The decision goes back to the server, whose next "
        "response runs or denies it",
        approval_id=approval_id,
    )


def step_reset(record: AdapterCall, *, ready: bool) -> AISDKStepReset:
    if ready:
        why = "the server retracted its step (reset-step) after it was made ready; a tool "
        why += "already started is stopped, but what it did is done"
    else:
        why = "the server retracted its step (reset-step); it never ran"
    return AISDKStepReset(
        message=f"call {record.call_id!r} ({record.name}): {why}", was_ready=ready
    )


def malformed(record: AdapterCall, why: str, part_type: str) -> AISDKMalformedPart:
    return AISDKMalformedPart(
        message=f"call {record.call_id!r} ({record.name}): malformed {part_type}: {why}",
        part_type=part_type,
    )


def tool_error(item: Any, kind: str) -> AISDKToolError:
    text = _get(item, "errorText")
    if not isinstance(text, str) or not text:
        text = "the tool call was denied" if kind == "tool-output-denied" else f"{kind}"
    return AISDKToolError(message=text, part_type=kind, input=_get(item, "input"))
