"""Track LLM tool calls while they stream; start each tool the moment its arguments are complete.

The public surface, re-exported here:

- events: :class:`Start`, :class:`Delta`, :class:`Ready`, :class:`Result`, :class:`Error`,
  :class:`End`, the :data:`Event` union, :func:`parse_event`;
- calls: :class:`ToolCall` snapshots and their :class:`Status`;
- the synchronous machine: :func:`tool_call_streaming_state_machine`,
  :class:`ToolCallStateMachine`, the reducer's :class:`IgnoreReason` vocabulary, its change
  feed (:class:`ChangeListener`) and the path adapters write through (:class:`EventSink`,
  :class:`EventCollector`, :class:`ItemSource`);
- the async :class:`ToolCallTracker` and its :class:`CallTimeline`;
- exceptions (:class:`InvalidEvent`, :class:`ToolCallFailed`, :class:`UnknownToolCall`,
  :class:`TrackerClosed`) and the error values stored in calls (:class:`CallFailure`,
  :class:`InvalidArguments`, :class:`IncompleteArguments`, :class:`ArgumentsTooLarge`);
- :class:`Limits` for hostile input, with :data:`DEFAULT_LIMITS`;
- the tool runner: :class:`ToolRunner` / :func:`run_tools`, :func:`tool` / :class:`Tool`,
  its per-run handle :class:`RunControl` and the :class:`ProgressUpdate` it publishes,
  approvals across requests
  (:class:`PendingApprovals`, :class:`PendingApproval`, :class:`ApprovalDecision`,
  :class:`OutcomeStore`, :class:`InMemoryOutcomeStore`, :class:`CallOutcome`,
  :class:`Claim`, :func:`merge_calls`,
  :class:`ApprovalRefused`), and its error values (:class:`ValidationFailed`,
  :class:`UnknownTool`, :class:`ToolRaised`, :class:`CallTimedOut`, :class:`NotExecuted`,
  :class:`CallCancelled`, :class:`ApprovalDenied`, :class:`OutcomeInDoubt`). The old names
  ``FinishedCalls`` / ``InMemoryFinishedCalls`` still work, with a ``DeprecationWarning``.

Provider-specific pieces live in submodules: :mod:`toolcall_tracker.adapters` (stream
adapters), :mod:`toolcall_tracker.tools` (tool definitions per provider) and
:mod:`toolcall_tracker.feedback` (result messages per provider).

Names are imported lazily, on first use (as pydantic does): code that only uses the
synchronous machine and the adapters never loads anyio, the runner or the command line.
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import TYPE_CHECKING, Any

# A library adds no output of its own: without logging configured by the application,
# nothing of ours reaches stderr (not even logging's last-resort handler).
logging.getLogger(__name__).addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from ._reducer import IgnoreReason
    from .calls import Status, ToolCall
    from .changes import ChangeListener
    from .errors import (
        ApprovalRefused,
        ArgumentsTooLarge,
        CallFailure,
        IncompleteArguments,
        InvalidArguments,
        InvalidEvent,
        ToolCallFailed,
        ToolCallTrackerError,
        TrackerClosed,
        UnknownToolCall,
    )
    from .events import Delta, End, Error, Event, EventInput, Ready, Result, Start, parse_event
    from .failures import (
        ApprovalCheckFailed,
        ApprovalDenied,
        CallCancelled,
        CallTimedOut,
        ClaimFailed,
        FieldError,
        NotExecuted,
        OutcomeInDoubt,
        ToolRaised,
        UnknownTool,
        ValidationFailed,
    )
    from .limits import DEFAULT_LIMITS, Limits
    from .machine import IgnoredHook, ToolCallStateMachine, tool_call_streaming_state_machine
    from .runner import (
        ApprovalDecision,
        CallOutcome,
        Claim,
        InMemoryOutcomeStore,
        OutcomeStore,
        PendingApproval,
        PendingApprovals,
        ProgressUpdate,
        RunControl,
        RunnerEvent,
        RunnerListener,
        RunnerState,
        ToolOptions,
        ToolRunner,
        merge_calls,
        run_tools,
    )
    from .sink import EventCollector, EventSink, ItemSource
    from .timeline import CallTimeline
    from .tools import NeedsApproval, Tool, ToolsInput, tool
    from .tracker import ToolCallTracker

__version__ = "0.1.0"

_MODULE_OF: dict[str, str] = {
    **dict.fromkeys(("Status", "ToolCall"), "calls"),
    "ChangeListener": "changes",
    **dict.fromkeys(
        (
            "ApprovalRefused",
            "ArgumentsTooLarge",
            "CallFailure",
            "IncompleteArguments",
            "InvalidArguments",
            "InvalidEvent",
            "ToolCallFailed",
            "ToolCallTrackerError",
            "TrackerClosed",
            "UnknownToolCall",
        ),
        "errors",
    ),
    **dict.fromkeys(
        ("Delta", "End", "Error", "Event", "EventInput", "Ready", "Result", "Start", "parse_event"),
        "events",
    ),
    **dict.fromkeys(
        (
            "ApprovalCheckFailed",
            "ApprovalDenied",
            "CallCancelled",
            "CallTimedOut",
            "ClaimFailed",
            "FieldError",
            "NotExecuted",
            "OutcomeInDoubt",
            "ToolRaised",
            "UnknownTool",
            "ValidationFailed",
        ),
        "failures",
    ),
    **dict.fromkeys(("DEFAULT_LIMITS", "Limits"), "limits"),
    **dict.fromkeys(
        ("IgnoredHook", "ToolCallStateMachine", "tool_call_streaming_state_machine"), "machine"
    ),
    "IgnoreReason": "_reducer",
    **dict.fromkeys(
        (
            "ApprovalDecision",
            "CallOutcome",
            "Claim",
            "FinishedCalls",
            "InMemoryFinishedCalls",
            "InMemoryOutcomeStore",
            "OutcomeStore",
            "PendingApproval",
            "PendingApprovals",
            "ProgressUpdate",
            "RunControl",
            "RunnerEvent",
            "RunnerListener",
            "RunnerState",
            "ToolOptions",
            "ToolRunner",
            "merge_calls",
            "run_tools",
        ),
        "runner",
    ),
    **dict.fromkeys(("EventCollector", "EventSink", "ItemSource"), "sink"),
    "CallTimeline": "timeline",
    **dict.fromkeys(("NeedsApproval", "Tool", "ToolsInput", "tool"), "tools"),
    "ToolCallTracker": "tracker",
}

_DEPRECATED = frozenset({"FinishedCalls", "InMemoryFinishedCalls"})

__all__ = [
    "DEFAULT_LIMITS",
    "ApprovalCheckFailed",
    "ApprovalDecision",
    "ApprovalDenied",
    "ApprovalRefused",
    "ArgumentsTooLarge",
    "CallCancelled",
    "CallFailure",
    "CallOutcome",
    "CallTimeline",
    "CallTimedOut",
    "ChangeListener",
    "Claim",
    "ClaimFailed",
    "Delta",
    "End",
    "Error",
    "Event",
    "EventCollector",
    "EventInput",
    "EventSink",
    "FieldError",
    "IgnoreReason",
    "IgnoredHook",
    "InMemoryOutcomeStore",
    "IncompleteArguments",
    "InvalidArguments",
    "InvalidEvent",
    "ItemSource",
    "Limits",
    "NeedsApproval",
    "NotExecuted",
    "OutcomeInDoubt",
    "OutcomeStore",
    "PendingApproval",
    "PendingApprovals",
    "ProgressUpdate",
    "Ready",
    "Result",
    "RunControl",
    "RunnerEvent",
    "RunnerListener",
    "RunnerState",
    "Start",
    "Status",
    "Tool",
    "ToolCall",
    "ToolCallFailed",
    "ToolCallStateMachine",
    "ToolCallTracker",
    "ToolCallTrackerError",
    "ToolOptions",
    "ToolRaised",
    "ToolRunner",
    "ToolsInput",
    "TrackerClosed",
    "UnknownTool",
    "UnknownToolCall",
    "ValidationFailed",
    "__version__",
    "merge_calls",
    "parse_event",
    "run_tools",
    "tool",
    "tool_call_streaming_state_machine",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, then keep it here."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    if name not in _DEPRECATED:  # a deprecated name warns on every use
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
