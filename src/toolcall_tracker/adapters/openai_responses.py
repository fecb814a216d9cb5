"""Deprecated: this module moved to ``toolcall_tracker.adapters.openai`` (aliases only).

Its names still import from here, with a ``DeprecationWarning``, until 0.3.0.
"""

from __future__ import annotations

from .._moved import aliases as _aliases

__getattr__ = _aliases(
    __name__,
    {
        name: ("toolcall_tracker.adapters.openai", name)
        for name in (
            "OpenAIResponsesAdapter",
            "OpenAICallFailure",
            "OpenAIMalformedToolCall",
            "OpenAITurnCutOff",
            "OpenAIArgumentsMismatch",
        )
    },
)
