"""Track LLM tool calls while they stream; start each tool the moment its arguments are complete.

The public surface, re-exported here:

- events: :class:`Start`, :class:`Delta`, :class:`Ready`, :class:`Result`, :class:`Error`,
  :class:`End`, the :data:`Event` union, :func:`parse_event`;
- calls: :class:`ToolCall` snapshots and their :class:`Status`;
- the synchronous machine: :func:`tool_call_streaming_state_machine`,
  :class:`ToolCallStateMachine`, and the reducer's :class:`IgnoreReason` vocabulary;
- the async :class:`ToolCallTracker`;
- exceptions (:class:`InvalidEvent`, :class:`ToolCallFailed`, :class:`UnknownToolCall`,
  :class:`TrackerClosed`) and the error values stored in calls (:class:`CallFailure`,
  :class:`InvalidArguments`, :class:`IncompleteArguments`, :class:`ArgumentsTooLarge`);
- :class:`Limits` for hostile input, with :data:`DEFAULT_LIMITS`;
- the tool runner: :class:`ToolRunner` / :func:`run_tools`, :func:`tool` / :class:`Tool`,
  and its error values (:class:`ValidationFailed`, :class:`UnknownTool`,
  :class:`ToolRaised`, :class:`CallTimedOut`, :class:`NotExecuted`, :class:`CallCancelled`).

Provider-specific pieces live in submodules: :mod:`toolcall_tracker.adapters` (stream
adapters), :mod:`toolcall_tracker.tools` (tool definitions per provider) and
:mod:`toolcall_tracker.feedback` (result messages per provider).
"""

from .errors import (
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
from .events import (
    Delta,
    End,
    Error,
    Event,
    EventInput,
    Ready,
    Result,
    Start,
    Status,
    ToolCall,
    parse_event,
)
from .failures import (
    CallCancelled,
    CallTimedOut,
    FieldError,
    NotExecuted,
    ToolRaised,
    UnknownTool,
    ValidationFailed,
)
from .limits import DEFAULT_LIMITS, Limits
from .machine import IgnoredHook, ToolCallStateMachine, tool_call_streaming_state_machine
from .reducer import IgnoreReason
from .runner import ToolRunner, run_tools
from .tools import Tool, ToolsInput, tool
from .tracker import CallTimeline, ToolCallTracker

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS",
    "ArgumentsTooLarge",
    "CallCancelled",
    "CallFailure",
    "CallTimeline",
    "CallTimedOut",
    "Delta",
    "End",
    "Error",
    "Event",
    "FieldError",
    "EventInput",
    "IgnoreReason",
    "IgnoredHook",
    "IncompleteArguments",
    "InvalidArguments",
    "InvalidEvent",
    "Limits",
    "NotExecuted",
    "Ready",
    "Result",
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
    "ToolsInput",
    "TrackerClosed",
    "UnknownTool",
    "UnknownToolCall",
    "ValidationFailed",
    "__version__",
    "parse_event",
    "run_tools",
    "tool",
    "tool_call_streaming_state_machine",
]
