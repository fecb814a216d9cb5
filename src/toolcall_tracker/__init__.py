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
- :class:`Limits` for hostile input, with :data:`DEFAULT_LIMITS`.
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
from .limits import DEFAULT_LIMITS, Limits
from .machine import IgnoredHook, ToolCallStateMachine, tool_call_streaming_state_machine
from .reducer import IgnoreReason
from .tracker import CallTimeline, ToolCallTracker

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS",
    "ArgumentsTooLarge",
    "CallFailure",
    "CallTimeline",
    "Delta",
    "End",
    "Error",
    "Event",
    "EventInput",
    "IgnoreReason",
    "IgnoredHook",
    "IncompleteArguments",
    "InvalidArguments",
    "InvalidEvent",
    "Limits",
    "Ready",
    "Result",
    "Start",
    "Status",
    "ToolCall",
    "ToolCallFailed",
    "ToolCallStateMachine",
    "ToolCallTracker",
    "ToolCallTrackerError",
    "TrackerClosed",
    "UnknownToolCall",
    "__version__",
    "parse_event",
    "tool_call_streaming_state_machine",
]
