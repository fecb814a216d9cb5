"""Track LLM tool calls while they stream; start each tool the moment its arguments are complete.

The root exports what an application writes daily; everything else lives in the module
that documents it (one import path per name):

- the tracker: :class:`ToolCallTracker`;
- the synchronous machine: :func:`tool_call_streaming_state_machine`,
  :class:`ToolCallStateMachine` and the :class:`IgnoreReason` vocabulary of its
  ``on_ignored`` hook;
- events: :class:`Start`, :class:`Delta`, :class:`Ready`, :class:`Result`, :class:`Error`,
  :class:`End`, the :data:`Event` and :data:`EventInput` unions, :func:`parse_event`; calls:
  :class:`ToolCall` snapshots and their :class:`Status`;
- the tool runner: :class:`ToolRunner`, its per-run handle :class:`RunControl`,
  :func:`run_turn`, :func:`run_tools`, and :func:`tool` / :class:`Tool`;
- :class:`Limits` for hostile input, with :data:`DEFAULT_LIMITS`;
- the failures: the exceptions (:class:`ToolCallTrackerError`, :class:`InvalidEvent`,
  :class:`ToolCallFailed`, :class:`UnknownToolCall`, :class:`TrackerClosed`,
  :class:`ApprovalRefused`) and the error values stored in calls (:class:`CallFailure`,
  :class:`InvalidArguments`, :class:`IncompleteArguments`, :class:`ArgumentsTooLarge`,
  :class:`ValidationFailed`, :class:`UnknownTool`, :class:`ToolRaised`,
  :class:`CallTimedOut`, :class:`NotExecuted`, :class:`CallCancelled`,
  :class:`ApprovalDenied`, :class:`ApprovalCheckFailed`, :class:`ClaimFailed`,
  :class:`OutcomeInDoubt`);
- :func:`adapt`, which drives a provider adapter over a stream.

Elsewhere: the adapters in :mod:`toolcall_tracker.adapters`; approvals across requests
and progress in :mod:`toolcall_tracker.runner`; tool definitions per provider in
:mod:`toolcall_tracker.tools`; result messages per provider in
:mod:`toolcall_tracker.feedback`; the change feed in :mod:`toolcall_tracker.changes`; the
sink protocol in :mod:`toolcall_tracker.sink`. The names that left the root in 0.2.0
(:data:`MOVED`) still import from it, with a ``DeprecationWarning``, until 0.3.0.

Names are imported lazily, on first use (as pydantic does): code that only uses the
synchronous machine and the adapters never loads anyio, the runner or the command line.
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._moved import aliases as _aliases

# A library adds no output of its own: without logging configured by the application,
# nothing of ours reaches stderr (not even logging's last-resort handler).
logging.getLogger(__name__).addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from ._reducer import IgnoreReason
    from .adapters import adapt
    from .calls import Status, ToolCall
    from .errors import (
        ApprovalRefused,
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
        ArgumentsTooLarge,
        CallCancelled,
        CallFailure,
        CallTimedOut,
        ClaimFailed,
        IncompleteArguments,
        InvalidArguments,
        NotExecuted,
        OutcomeInDoubt,
        ToolRaised,
        UnknownTool,
        ValidationFailed,
    )
    from .limits import DEFAULT_LIMITS, Limits
    from .machine import ToolCallStateMachine, tool_call_streaming_state_machine
    from .runner import RunControl, ToolRunner, run_tools, run_turn
    from .tools import Tool, tool
    from .tracker import ToolCallTracker

__version__ = "0.2.0"

_MODULE_OF: dict[str, str] = {
    **dict.fromkeys(("Status", "ToolCall"), "calls"),
    **dict.fromkeys(
        (
            "ApprovalRefused",
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
            "ArgumentsTooLarge",
            "CallCancelled",
            "CallFailure",
            "CallTimedOut",
            "ClaimFailed",
            "IncompleteArguments",
            "InvalidArguments",
            "NotExecuted",
            "OutcomeInDoubt",
            "ToolRaised",
            "UnknownTool",
            "ValidationFailed",
        ),
        "failures",
    ),
    **dict.fromkeys(("DEFAULT_LIMITS", "Limits"), "limits"),
    **dict.fromkeys(("ToolCallStateMachine", "tool_call_streaming_state_machine"), "machine"),
    "IgnoreReason": "_reducer",
    **dict.fromkeys(("RunControl", "ToolRunner", "run_tools", "run_turn"), "runner"),
    **dict.fromkeys(("Tool", "tool"), "tools"),
    "ToolCallTracker": "tracker",
    "adapt": "adapters",
}

MOVED: dict[str, str] = {
    "ChangeListener": "toolcall_tracker.changes",
    **dict.fromkeys(("EventCollector", "EventSink", "ItemSource"), "toolcall_tracker.sink"),
    "IgnoredHook": "toolcall_tracker.machine",
    "CallTimeline": "toolcall_tracker.timeline",
    **dict.fromkeys(
        (
            "ApprovalDecision",
            "FinishedCalls",
            "InMemoryFinishedCalls",
            "PendingApproval",
            "PendingApprovals",
            "ProgressUpdate",
            "merge_calls",
        ),
        "toolcall_tracker.runner",
    ),
    **dict.fromkeys(("NeedsApproval", "ToolsInput"), "toolcall_tracker.tools"),
    "FieldError": "toolcall_tracker.failures",
}
"""Names that left the root in 0.2.0, and the module each lives in now.

``toolcall_tracker.<name>`` still works for them, with a ``DeprecationWarning``; the
aliases go in 0.3.0.
"""

__all__ = [
    "DEFAULT_LIMITS",
    "ApprovalCheckFailed",
    "ApprovalDenied",
    "ApprovalRefused",
    "ArgumentsTooLarge",
    "CallCancelled",
    "CallFailure",
    "CallTimedOut",
    "ClaimFailed",
    "Delta",
    "End",
    "Error",
    "Event",
    "EventInput",
    "IgnoreReason",
    "IncompleteArguments",
    "InvalidArguments",
    "InvalidEvent",
    "Limits",
    "NotExecuted",
    "OutcomeInDoubt",
    "Ready",
    "Result",
    "RunControl",
    "Start",
    "Status",
    "Tool",
    "ToolCall",
    "ToolCallFailed",
    "ToolCallStateMachine",
    "ToolCallTracker",
    "ToolCallTrackerError",
    "ToolRaised",
    "ToolRunner",
    "TrackerClosed",
    "UnknownTool",
    "UnknownToolCall",
    "ValidationFailed",
    "__version__",
    "adapt",
    "parse_event",
    "run_tools",
    "run_turn",
    "tool",
    "tool_call_streaming_state_machine",
]


_moved = _aliases(__name__, {name: (home, name) for name, home in MOVED.items()}, stacklevel=3)


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, then keep it here."""
    if name in MOVED:
        return _moved(name)
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
