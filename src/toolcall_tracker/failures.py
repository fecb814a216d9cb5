"""Every error value the library stores in ``ToolCall.error`` when a call does not succeed.

Every value is a frozen pydantic model deriving from :class:`CallFailure`, so it has a
``kind`` string and a readable ``message``, and ``value.model_dump(mode="json")`` is
plain JSON that can be shown to the model as the call's result. The kinds:

=================  ======================  ================================================
``kind``           class                   the call ended in ``error`` because
=================  ======================  ================================================
``invalid_arguments`` :class:`InvalidArguments` its argument text was not valid JSON at
                                           ``ready`` (the state machine)
``incomplete_arguments`` :class:`IncompleteArguments` the turn ended while its arguments
                                           were still streaming (the state machine)
``arguments_too_large`` :class:`ArgumentsTooLarge` its argument text grew past
                                           ``Limits.max_args_chars`` (the state machine)
``validation``     :class:`ValidationFailed`  its arguments do not fit the tool's signature
``unknown_tool``   :class:`UnknownTool`    no tool has the name the model used
``tool_exception`` :class:`ToolRaised`     the tool raised an exception
``retry``          :class:`RetryRequested` the tool raised ``ToolRetry``: its message tells
                                           the model how to fix the call
``timeout``        :class:`CallTimedOut`   the per-call or the overall timeout expired
``not_executed``   :class:`NotExecuted`    a gated tool's turn did not end normally
``cancelled``      :class:`CallCancelled`  the runner, or this one call, was cancelled first
``approval_denied`` :class:`ApprovalDenied` a human (or the timeout) denied the call
``approval_check_failed`` :class:`ApprovalCheckFailed` the tool's ``needs_approval`` raised
``claim_failed``   :class:`ClaimFailed`    the outcome store could not claim the call
``in_doubt``       :class:`OutcomeInDoubt` a resume claimed it before and its outcome is
                                           unknown (it may have run; never run again)
``mcp_error``      :class:`McpFailed`      an MCP server answered with ``isError``, an
                                           error response, or disconnected
=================  ======================  ================================================

A tool may end its own call with one of these values (rather than ``tool_exception``) by
raising :class:`~toolcall_tracker.errors.FailCall` with it; the MCP tools
(:mod:`toolcall_tracker.mcp`) do.

``tool_started`` (on timeouts and cancellations) says whether the tool's code had begun:
if it had, some of its side effects may have happened.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ._moved import aliases as _aliases

__all__ = [
    "ApprovalCheckFailed",
    "ApprovalDenied",
    "ArgumentsTooLarge",
    "CallCancelled",
    "CallFailure",
    "CallTimedOut",
    "ClaimFailed",
    "FieldError",
    "IncompleteArguments",
    "InvalidArguments",
    "MalformedStreamItem",
    "McpFailed",
    "NotExecuted",
    "OutcomeInDoubt",
    "RetryRequested",
    "ToolRaised",
    "UnknownTool",
    "ValidationFailed",
]


class CallFailure(BaseModel):
    """Base of the error values the library stores in ``ToolCall.error``."""

    model_config = ConfigDict(frozen=True)

    kind: str
    message: str


class InvalidArguments(CallFailure):
    """The argument text was not valid JSON when the call became ready.

    ``position`` is the 0-based character offset of the problem in ``args_text``;
    ``line`` and ``column`` are 1-based.
    """

    kind: Literal["invalid_arguments"] = "invalid_arguments"
    position: int
    line: int
    column: int


class IncompleteArguments(CallFailure):
    """The turn ended while the call's arguments were still streaming.

    ``reason`` is the ``End`` event's reason (``"length"``, ``"cancelled"``, ...), if any.
    """

    kind: Literal["incomplete_arguments"] = "incomplete_arguments"
    reason: str | None = None


class ArgumentsTooLarge(CallFailure):
    """The argument text grew past ``Limits.max_args_chars``; the text was discarded.

    ``limit`` is the limit in characters; ``received`` how many had arrived, counting the
    fragment that crossed it.
    """

    kind: Literal["arguments_too_large"] = "arguments_too_large"
    limit: int
    received: int


class MalformedStreamItem(CallFailure):
    """Base of the adapters' "malformed" values: an item of the provider's stream that
    concerned this call could not be used (a field of the wrong type, a name that never
    came, arguments that cannot be written as JSON), so the call cannot be trusted and
    fails alone.

    Each adapter's value derives from it and keeps its own ``kind``
    (``anthropic_malformed_event``, ``openai``'s ``malformed_tool_call``...), so
    ``isinstance(call.error, MalformedStreamItem)`` tells a broken stream from a failed
    tool on every provider.
    """


class FieldError(BaseModel):
    """One problem with the arguments, as pydantic reported it.

    ``path`` locates the value in the argument object (``("user", "age")``, ``("items", 0)``;
    empty for the object itself), ``message`` says what is wrong and ``type`` is pydantic's
    error code (``missing``, ``int_parsing``, ``extra_forbidden``, ...).
    """

    model_config = ConfigDict(frozen=True)

    path: tuple[str | int, ...]
    message: str
    type: str


class ValidationFailed(CallFailure):
    """The arguments do not fit the tool's signature; the tool did not run."""

    kind: Literal["validation"] = "validation"
    tool: str
    errors: tuple[FieldError, ...]


class UnknownTool(CallFailure):
    """The model called a tool that does not exist; ``available`` lists those that do."""

    kind: Literal["unknown_tool"] = "unknown_tool"
    tool: str
    available: tuple[str, ...]


class ToolRaised(CallFailure):
    """The tool raised; ``exception`` is the exception's class name.

    The traceback is logged on the ``toolcall_tracker.runner`` logger, not stored here.
    """

    kind: Literal["tool_exception"] = "tool_exception"
    tool: str
    exception: str


class RetryRequested(CallFailure):
    """The tool raised :class:`~toolcall_tracker.tools.ToolRetry`: ``message`` is the tool's
    own text for the model (how to fix the call), and every feedback builder sends that
    text as it is, not the structured error."""

    kind: Literal["retry"] = "retry"
    tool: str


class CallTimedOut(CallFailure):
    """A timeout expired before the tool finished.

    ``scope`` is ``"call"`` for the per-call timeout and ``"run"`` for the runner's overall
    timeout; ``timeout`` is its length in seconds.
    """

    kind: Literal["timeout"] = "timeout"
    tool: str
    scope: Literal["call", "run"]
    timeout: float
    tool_started: bool


class NotExecuted(CallFailure):
    """A gated tool was not run because the turn did not end normally.

    ``reason`` is the turn's ``End.reason`` (``"length"``, ``"cancelled"``, ...).
    """

    kind: Literal["not_executed"] = "not_executed"
    tool: str
    reason: str | None = None


class CallCancelled(CallFailure):
    """The runner was cancelled (or stopped by an error), or this one call was cancelled
    through its run's :class:`~toolcall_tracker.runner.RunControl`, before it finished.

    ``reason`` is the reason given to :meth:`~toolcall_tracker.runner.RunControl.cancel`
    (``None`` when the whole runner was cancelled).
    """

    kind: Literal["cancelled"] = "cancelled"
    tool: str
    tool_started: bool
    reason: str | None = None


class ApprovalDenied(CallFailure):
    """The call needed a human's approval and did not get it; the tool never ran.

    ``reason`` is the reason the human gave, ``"timeout"`` when the runner's overall
    timeout expired first, or ``"no_approver"`` when the run had no
    :class:`~toolcall_tracker.runner.RunControl` to ask through.
    """

    kind: Literal["approval_denied"] = "approval_denied"
    tool: str
    reason: str


class OutcomeInDoubt(CallFailure):
    """The call was claimed by an earlier resume whose outcome was never recorded.

    The tool may be running elsewhere, or may have run (the store failed to record its
    outcome, or the server stopped meanwhile); it is never run again. Check the tool's side
    effects before asking the model to retry.
    """

    kind: Literal["in_doubt"] = "in_doubt"
    tool: str


class ApprovalCheckFailed(CallFailure):
    """The tool's ``needs_approval`` predicate raised while deciding whether the call needs
    a human's approval; the tool never ran. ``exception`` is the class name (the traceback
    is logged at WARNING on ``toolcall_tracker.runner``)."""

    kind: Literal["approval_check_failed"] = "approval_check_failed"
    tool: str
    exception: str


class ClaimFailed(CallFailure):
    """The outcome store raised while claiming the call right before its tool would start;
    the tool never ran, so a later attempt may still decide and run it. ``exception`` is the
    class name."""

    kind: Literal["claim_failed"] = "claim_failed"
    tool: str
    exception: str


class McpFailed(CallFailure):
    """An MCP server's tool did not succeed (see :mod:`toolcall_tracker.mcp`).

    ``reason`` says how: ``"tool_error"`` (the tool answered with ``isError``: ``content``
    holds its text, ``structured`` its structured content, both for the model to read),
    ``"protocol_error"`` (the server answered the request with a JSON-RPC error: ``code``)
    or ``"disconnected"`` (the connection closed before the answer: the tool may have
    run). ``server`` names the server and ``mcp_tool`` the tool by its name there.
    """

    kind: Literal["mcp_error"] = "mcp_error"
    tool: str
    server: str
    mcp_tool: str
    reason: Literal["tool_error", "protocol_error", "disconnected"]
    code: int | None = None
    content: str | None = None
    structured: Any = None


__getattr__ = _aliases(__name__, {"FailCall": ("toolcall_tracker.errors", "FailCall")})
"""``FailCall`` moved to :mod:`toolcall_tracker.errors` (it is an exception)."""
