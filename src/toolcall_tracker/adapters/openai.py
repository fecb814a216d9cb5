"""Compatibility module: the OpenAI adapters and their error values, under one name.

The adapters live in :mod:`toolcall_tracker.adapters.openai_chat` (Chat Completions) and
:mod:`toolcall_tracker.adapters.openai_responses` (Responses API); this module re-exports
their public names so that ``from toolcall_tracker.adapters.openai import ...`` keeps
working.

Error values (stored in ``ToolCall.error``; frozen pydantic models deriving from
:class:`~toolcall_tracker.CallFailure` through :class:`OpenAICallFailure`, whose ``api``
field says ``"chat.completions"`` or ``"responses"``):

- :class:`OpenAITurnCutOff` (``kind="turn_cut_off"``): the turn stopped before the call's
  arguments were complete.
- :class:`OpenAIMalformedToolCall` (``kind="malformed_tool_call"``): a field the call
  needs is unusable (arguments that are not a string, a name that never came).
- :class:`OpenAIArgumentsMismatch` (``kind="arguments_mismatch"``, Responses): the final
  ``arguments`` disagree with the streamed text (and do not merely extend it).
- :class:`OpenAILateArguments` (``kind="late_arguments"``, Chat with ``eager=True``):
  argument text arrived for a call that had already been made ready.
"""

from __future__ import annotations

from ._openai import (
    OpenAIArgumentsMismatch,
    OpenAICallFailure,
    OpenAILateArguments,
    OpenAIMalformedToolCall,
    OpenAITurnCutOff,
)
from .openai_chat import OpenAIChatAdapter
from .openai_responses import OpenAIResponsesAdapter

__all__ = [
    "OpenAIArgumentsMismatch",
    "OpenAICallFailure",
    "OpenAIChatAdapter",
    "OpenAILateArguments",
    "OpenAIMalformedToolCall",
    "OpenAIResponsesAdapter",
    "OpenAITurnCutOff",
]
