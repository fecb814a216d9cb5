"""The Ollama adapter: :class:`OllamaAdapter`.

Feed it the lines of Ollama's native ``/api/chat`` stream: the ``ollama`` client's
``ChatResponse`` objects (``client.chat(..., stream=True)``, ``AsyncClient.chat``) or the
plain dicts decoded from the NDJSON lines::

    stream = await ollama.AsyncClient().chat(model=..., messages=..., tools=..., stream=True)
    async with ToolCallTracker() as tracker:
        await tracker.consume(adapt(stream, OllamaAdapter()))

How the native stream maps to tracker events:

- Calls arrive whole in ``message.tool_calls`` (usually in a ``done: false`` line before the
  last), with ``function.arguments`` as a JSON object: each call becomes ``start``, one
  ``delta`` with the arguments' JSON text, and ``ready`` at once. Arguments sent as a
  string are taken as the JSON text itself; none at all means ``{}``.
- Ids: Ollama's native API sends none (recent servers may; a usable one is kept). A call
  without one gets ``ollama-call-<n>``, ``n`` its 0-based position among the turn's calls,
  so replaying a stream gives the same ids (``-2``, ``-3``... appended if taken). Tool
  messages sent back identify the tool by ``tool_name``, not by id (see
  :func:`toolcall_tracker.feedback.ollama_messages`).
- The line with ``done: true`` ends the turn: ``done_reason`` ``stop`` (which Ollama sends
  after tool calls too) ends it ok, as does a missing ``done_reason`` (older servers);
  ``length`` and anything else end it not ok (``ok_done_reasons`` to change that). An
  ``{"error": ...}`` line ends it not ok (reason ``"error: <text>"``).
- Text and ``thinking`` are ignored.

Ollama's OpenAI-compatible endpoint (``/v1/chat/completions``) streams Chat Completions
chunks instead. Fed those (items with ``choices``), the adapter reads the whole stream
through an :class:`~toolcall_tracker.adapters.OpenAIChatAdapter`, which already handles
that endpoint's quirks: every call numbered ``index: 0`` (each has its own id, so each is a
call of its own), whole calls in one chunk, ``finish_reason`` ``stop`` after tool calls.

Malformed lines never raise (what the sink or one of its listeners raises propagates): a
call without a non-empty string name, or whose arguments cannot be written as JSON, fails
with an :class:`OllamaMalformedToolCall`; anything else that cannot be read is ignored and
logged at DEBUG on the ``toolcall_tracker.adapters`` logger. Names longer than
``Limits.max_name_chars`` are cut (``...(cut)``), ids longer than ``Limits.max_id_chars``
are treated as missing.

One adapter per model turn (per stream).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

from ...failures import MalformedStreamItem
from ...limits import Limits
from .._calls import RULES, AdapterCall, AdapterCallTable
from .._common import READ_ERRORS, _get, _short, logger
from .._protocol import SinkAdapter
from ..openai._chat import OpenAIChatAdapter
from ..openai._shared import _NotAnItem

__all__ = ["OllamaAdapter", "OllamaMalformedToolCall"]


class OllamaMalformedToolCall(MalformedStreamItem):
    """A tool call of the stream was unusable: no string name, or arguments that cannot
    be written as JSON. ``field`` names the field (``"function.name"``...)."""

    kind: Literal["ollama_malformed_tool_call"] = "ollama_malformed_tool_call"
    field: str


_DEFAULT_OK: Final = ("stop",)


class OllamaAdapter(SinkAdapter):
    """Translate an Ollama ``/api/chat`` stream into tracker events (see the module doc).

    Args:
        ok_done_reasons: the ``done_reason`` values that end the turn ok (default
            ``("stop",)``; a ``done: true`` line without ``done_reason`` is ok too).
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    def __init__(
        self, *, ok_done_reasons: Collection[str] = _DEFAULT_OK, limits: Limits | None = None
    ) -> None:
        super().__init__(limits=limits)
        self._ok_reasons = frozenset(ok_done_reasons)
        self._table = self._calls = AdapterCallTable(RULES["ollama"], _failure, self._sink)
        self._count = 0
        self._native = False  # a native line was seen: never switch to Chat chunks
        self._openai: OpenAIChatAdapter | None = None  # set for OpenAI-compatible chunks

    def _translate(self, item: Any) -> None:
        """Write the events one line implies. Only what the sink raises propagates."""
        if self._openai is not None:
            self._compatible(item)
            return
        calls = self._calls
        try:
            if calls.ended:
                return
            if not self._native:
                if isinstance(_get(item, "choices"), list):
                    self._openai = OpenAIChatAdapter()
                else:
                    self._native = (
                        _get(item, "message") is not None or _get(item, "done") is not None
                    )
        except READ_ERRORS:  # a hostile object: nothing to attribute it to
            logger.debug("ollama: ignored a line that could not be read", exc_info=True)
            return
        if self._openai is not None:
            self._compatible(item)
            return
        try:
            error = _get(item, "error")
            if error is not None:
                text = error if isinstance(error, str) else _get(error, "message")
                calls.end(False, f"error: {text:.200}" if isinstance(text, str) else "error")
                return
            tool_calls = _get(_get(item, "message"), "tool_calls")
            if tool_calls:
                if isinstance(tool_calls, list | tuple):
                    for tool_call in tool_calls:
                        self._on_call(tool_call)
                else:
                    logger.debug(
                        "ollama: ignored tool_calls that is not a list: %.200r", tool_calls
                    )
            if _get(item, "done") is True:
                reason = _get(item, "done_reason")
                if reason is None:
                    calls.end(True, "done")
                elif isinstance(reason, str):
                    calls.end(reason in self._ok_reasons, reason)
                else:
                    calls.end(False, f"invalid done_reason {_short(reason, 60)}")
        except READ_ERRORS:  # a hostile object: nothing to attribute it to
            logger.debug("ollama: ignored a line that could not be read", exc_info=True)

    def _compatible(self, item: Any) -> None:
        """A Chat Completions chunk, through the Chat adapter (which raises only for what
        is not an item at all, and for what the sink raises)."""
        assert self._openai is not None
        try:
            self._openai.write(item, self._calls.sink)
        except _NotAnItem:
            logger.debug("ollama: ignored an item that is not a chunk", exc_info=True)

    def _finish_stream(self) -> None:
        """The end of the stream: ``End(ok=False)`` unless a ``done: true`` line came."""
        if self._openai is not None:
            self._openai.finish(self._calls.sink)
        elif not self._calls.ended:
            self._calls.end(False, "stream ended before done")

    def _on_call(self, tool_call: Any) -> None:
        function = _get(tool_call, "function")
        if function is None:
            logger.debug("ollama: ignored a tool call without function: %.200r", tool_call)
            return
        calls = self._calls
        position = self._count
        self._count += 1
        name = _get(function, "name")
        arguments = _get(function, "arguments")
        if isinstance(arguments, Mapping) and type(arguments) is not dict:
            arguments = dict(arguments)
        text = arguments if isinstance(arguments, str) and arguments.strip() else None
        initial = None if isinstance(arguments, str) else arguments
        record = calls.start(
            position, _get(tool_call, "id"), name, "function.name", initial=initial
        )
        if record is not None:
            calls.append(record, text, "function.arguments")
            calls.close(position, "function.arguments")


def _failure(record: AdapterCall, why: str, field: str) -> OllamaMalformedToolCall:
    return OllamaMalformedToolCall(message=f"tool call {record.call_id!r}: {why}", field=field)
