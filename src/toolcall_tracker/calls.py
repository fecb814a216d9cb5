"""The call snapshot: :class:`ToolCall` and its :class:`Status`.

A snapshot is what every layer reads: the machine's ``get`` / ``list``, the tracker's waiters
and ``ready_calls()``, the runner, the feedback builders. It is immutable; a call's live state
lives in the machine, and a new snapshot is taken when its status changes.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Status", "ToolCall"]


class Status(str, Enum):
    """Where a call is in its life: ``pending -> running -> done``, or ``error``.

    Members compare equal to their string values (``Status.RUNNING == "running"``).
    """

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class ToolCall(BaseModel):
    """An immutable snapshot of one call.

    ``args`` is set once the arguments parsed (status ``running`` or ``done``);
    ``result`` once the call is ``done``; ``error`` once it is ``error``.
    ``call.model_dump(by_alias=True)`` gives the wire shape (camelCase ``argsText``).
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    id: str
    name: str
    args_text: str = Field("", alias="argsText")
    args: Any = None
    status: Status = Status.PENDING
    result: Any = None
    error: Any = None
