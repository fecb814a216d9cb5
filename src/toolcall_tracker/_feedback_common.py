"""What every feedback builder shares (private; the public names are re-exported by
:mod:`toolcall_tracker.feedback`): the default renderers, a call's reply text and
arguments, and the check that every call is finished."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from ._jsonout import _json_text, _jsonable, _plain_text
from .calls import Status, ToolCall

TextRenderer: TypeAlias = Callable[[Any], str]
"""Turns a call's ``result`` (or ``error``) value into the text sent to the model."""


def result_text(result: Any) -> str:
    """The default rendering of a result: a ``str`` as it is (lone surrogates replaced with
    U+FFFD), anything else as strict JSON text; never raises.

    NaN and infinities are written as ``null``, a lone surrogate inside the JSON as a
    ``\\uXXXX`` escape, ``bytes`` as their UTF-8 text (invalid bytes replaced), any object
    pydantic cannot serialise as its ``str`` (see :func:`jsonable` for the other rules).
    """
    if isinstance(result, str):
        return _plain_text(result)
    return _json_text(result)


def error_text(error: Any) -> str:
    """The default rendering of an error: ``{"error": <the error value as JSON>}``, strict
    JSON text by the same rules as :func:`result_text`; never raises.

    A ``retry`` failure (the tool raised ``ToolRetry``) is its message as it is: the tool's
    own words to the model on how to fix the call.
    """
    message = retry_message(error)
    if message is not None:
        return _plain_text(message)
    return _json_text({"error": error})


def retry_message(error: Any) -> str | None:
    """The message of a ``retry`` failure (a ``RetryRequested`` value, or its JSON form
    read back from a store), or ``None`` for any other error value."""
    if isinstance(error, Mapping):
        kind, message = error.get("kind"), error.get("message")
    else:
        kind, message = getattr(error, "kind", None), getattr(error, "message", None)
    return message if kind == "retry" and isinstance(message, str) else None


def _reply(
    call: ToolCall,
    render_result: TextRenderer,
    render_error: TextRenderer,
    notes: Mapping[str, str] | None = None,
) -> str:
    """The text sent back for a finished call: its rendered result, or its rendered error,
    with lone surrogates replaced (the text is handed to the SDK as a plain string), and
    the call's note, if any, after a blank line."""
    failed = call.status is Status.ERROR
    text = render_error(call.error) if failed else render_result(call.result)
    note = notes.get(call.id) if notes else None
    if note:
        text = f"{text}\n\n(Note: {note})"
    return _plain_text(text)


def _input(call: ToolCall) -> dict[str, Any]:
    """A call's parsed arguments as a JSON object for the SDK (``{}`` if they never parsed)."""
    args = _jsonable(call.args) if isinstance(call.args, dict) else None
    return args if isinstance(args, dict) else {}


def _finished(calls: Iterable[ToolCall]) -> list[ToolCall]:
    finished = list(calls)
    unfinished = [call for call in finished if call.status not in (Status.DONE, Status.ERROR)]
    if unfinished:
        named = "; ".join(
            f"{call.id!r} ({call.name}) is still {call.status}" for call in unfinished
        )
        ids = ", ".join(repr(call.id) for call in unfinished)
        raise ValueError(
            f"calls {ids} are not finished: {named}. Feed back finished calls only: await the "
            "runner first, and decide the calls still awaiting approval (resume them with "
            "ToolRunner.resume and merge_calls) before building the next request"
        )
    return finished


def _structured(
    call: ToolCall, render_result: TextRenderer | None, render_error: TextRenderer | None
) -> dict[str, Any] | None:
    """The JSON object sent for ``call`` as data, or ``None`` when it is sent as text."""
    if call.status is Status.ERROR:  # a retry's message is sent as text, as it is
        if render_error or retry_message(call.error) is not None:
            return None
        return {"error": _jsonable(call.error)}
    if render_result or isinstance(call.result, str):
        return None
    data = _jsonable(call.result)
    return data if isinstance(data, dict) else None


def _renderers(
    render_result: TextRenderer | None, render_error: TextRenderer | None
) -> tuple[TextRenderer, TextRenderer]:
    return render_result or result_text, render_error or error_text


def _note(
    call: ToolCall,
    notes: Mapping[str, str] | None,
    block: Callable[[str], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The content block carrying ``call``'s note, if it has one."""
    note = notes.get(call.id) if notes else None
    return [block(_plain_text(f"(Note: {note})"))] if note else []
