"""Admission of a ready call (private): the ``validating`` state's work.

:func:`admit` looks the tool up and validates the arguments on a fresh copy parsed from the
call's text (so a tool that mutates its arguments changes nobody else's); :func:`decide_need`
asks the tool whether the call needs a human's approval, and answers through the turn's
``fire`` with ``needs_approval`` / ``no_approval_needed``, or ``invalid`` with an
:class:`~toolcall_tracker.failures.ApprovalCheckFailed` if the predicate raised. An async
predicate is awaited in a task of the turn; the call stays ``validating`` meanwhile, so
whatever happens to it then (the turn is cut off, it is cancelled) the table decides.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import anyio.abc
from pydantic import ValidationError

from .._json import _ArgumentsError, parse_json
from ..calls import ToolCall
from ..failures import ApprovalCheckFailed, CallFailure, UnknownTool
from ..tools import Tool
from . import _outcomes as outcomes
from ._invoke import describe
from ._table import RunnerEvent

logger: Final = logging.getLogger("toolcall_tracker.runner")

Fire = Callable[[RunnerEvent, Any], object]


def admit(
    tools: dict[str, Tool[..., Any]], call: ToolCall
) -> tuple[Tool[..., Any], tuple[Any, ...], dict[str, Any]] | CallFailure:
    """The call's tool and bound arguments (the tool's own copy), or why it cannot run."""
    spec = tools.get(call.name)
    if spec is None:
        available = tuple(sorted(tools))
        message = (
            f"there is no tool named {call.name!r}; available tools: "
            f"{', '.join(available) or '(none)'}"
        )
        return UnknownTool(message=message, tool=call.name, available=available)
    try:
        arguments = parse_json(call.args_text)  # the tool's own copy
    except _ArgumentsError:  # pragma: no cover (the text parsed once already)
        arguments = copy.deepcopy(call.args)
    try:
        args, kwargs = spec.bind(arguments)
    except ValidationError as exc:
        failure = outcomes.validation_failure(call.name, exc)
        logger.info("call %r: %s", call.id, failure.message)
        return failure
    return spec, args, kwargs


def bind_edited(
    spec: Tool[..., Any], call: ToolCall, arguments: Any
) -> tuple[tuple[Any, ...], dict[str, Any]] | CallFailure:
    """Edited arguments bound for the tool (its own copy), or why they are invalid."""
    try:
        return spec.bind(copy.deepcopy(arguments))
    except ValidationError as exc:
        return outcomes.validation_failure(call.name, exc, edited=True)


def decide_need(
    spec: Tool[..., Any], call: ToolCall, fire: Fire, tg: anyio.abc.TaskGroup | None
) -> None:
    """Ask, or go on, as the tool's ``needs_approval`` says (answered through ``fire``)."""
    needs = spec.needs_approval
    if needs is True or needs is False:
        fire(RunnerEvent.NEEDS_APPROVAL if needs else RunnerEvent.NO_APPROVAL_NEEDED, None)
        return
    try:
        verdict = needs(call)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the predicate's fault: do not run the call
        fire(RunnerEvent.INVALID, _predicate_raised(call, exc))
        return
    if inspect.isawaitable(verdict):
        assert tg is not None
        tg.start_soon(_await_verdict, call, verdict, fire)
    else:
        fire(RunnerEvent.NEEDS_APPROVAL if verdict else RunnerEvent.NO_APPROVAL_NEEDED, None)


async def _await_verdict(call: ToolCall, verdict: Awaitable[bool], fire: Fire) -> None:
    try:
        needed = await verdict
    except anyio.get_cancelled_exc_class():
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        fire(RunnerEvent.INVALID, _predicate_raised(call, exc))
        return
    fire(RunnerEvent.NEEDS_APPROVAL if needed else RunnerEvent.NO_APPROVAL_NEEDED, None)


def _predicate_raised(call: ToolCall, exc: BaseException) -> CallFailure:
    text = describe(exc)
    logger.warning("needs_approval of tool %r raised for call %r: %s", call.name, call.id, text)
    return ApprovalCheckFailed(
        message=f"deciding whether tool {call.name!r} needs approval raised {text}",
        tool=call.name,
        exception=type(exc).__name__,
    )
