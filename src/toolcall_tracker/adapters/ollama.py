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

Malformed lines never raise: a call without a string name, or whose arguments cannot be
written as JSON, fails with an :class:`OllamaMalformedToolCall`; anything else that cannot
be read is ignored and logged at DEBUG on the ``toolcall_tracker.adapters`` logger. Names
longer than ``Limits.max_name_chars`` are cut (``...(cut)``), ids longer than
``Limits.max_id_chars`` are treated as missing.

One adapter per model turn (per stream).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

from ..errors import CallFailure
from ..limits import Limits
from ._base import SinkAdapter
from ._common import _get, _IdMinter, _json_text, _short, _tool_name, _usable_id, logger
from .openai_chat import OpenAIChatAdapter

__all__ = ["OllamaAdapter", "OllamaMalformedToolCall"]


class OllamaMalformedToolCall(CallFailure):
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

    __slots__ = ("_count", "_ended", "_ids", "_native", "_ok_reasons", "_openai")

    def __init__(
        self, *, ok_done_reasons: Collection[str] = _DEFAULT_OK, limits: Limits | None = None
    ) -> None:
        super().__init__(limits=limits)
        self._ok_reasons = frozenset(ok_done_reasons)
        self._ids = _IdMinter()
        self._count = 0
        self._ended = False
        self._native = False  # a native line was seen: never switch to Chat chunks
        self._openai: OpenAIChatAdapter | None = None  # set for OpenAI-compatible chunks

    def _translate(self, item: Any) -> None:
        """Write the events one line implies. Never raises."""
        try:
            if self._openai is not None:
                self._openai.write(item, self._sink)
                return
            if self._ended:
                return
            if not self._native:
                if isinstance(_get(item, "choices"), list):
                    self._openai = OpenAIChatAdapter()
                    self._openai.write(item, self._sink)
                    return
                self._native = _get(item, "message") is not None or _get(item, "done") is not None
            error = _get(item, "error")
            if error is not None:
                text = error if isinstance(error, str) else _get(error, "message")
                self._end(False, f"error: {text:.200}" if isinstance(text, str) else "error")
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
                    self._end(True, "done")
                elif isinstance(reason, str):
                    self._end(reason in self._ok_reasons, reason)
                else:
                    self._end(False, f"invalid done_reason {_short(reason, 60)}")
        except Exception:  # a hostile object, or not an item at all (the Chat adapter's
            # TypeError): nothing to attribute it to
            logger.debug("ollama: ignored a line that could not be read", exc_info=True)

    def _finish_stream(self) -> None:
        """The end of the stream: ``End(ok=False)`` unless a ``done: true`` line came."""
        if self._openai is not None:
            self._openai.finish(self._sink)
        elif not self._ended:
            self._end(False, "stream ended before done")

    def _on_call(self, tool_call: Any) -> None:
        function = _get(tool_call, "function")
        if function is None:
            logger.debug("ollama: ignored a tool call without function: %.200r", tool_call)
            return
        if self._count >= self._limits.max_calls:
            logger.debug("ollama: ignored a tool call past Limits.max_calls")
            return
        position = self._count
        self._count += 1
        max_id = self._limits.max_id_chars
        call_id = _get(tool_call, "id")
        if not _usable_id(call_id, max_id) or not self._ids.claim(call_id):
            call_id = self._ids.mint(f"ollama-call-{position}", max_id)
        name = _get(function, "name")
        sink = self._sink
        sink.write_start(
            call_id, _tool_name(name if isinstance(name, str) else "", self._limits.max_name_chars)
        )
        if not isinstance(name, str) or not name:
            self._fail(call_id, "function.name", f"the call has no name ({_short(name)})")
            return
        arguments = _get(function, "arguments")
        if arguments is None:
            text: str | None = "{}"
        elif isinstance(arguments, str):
            text = arguments if arguments.strip() else "{}"
        else:
            if isinstance(arguments, Mapping) and type(arguments) is not dict:
                arguments = dict(arguments)
            text = _json_text(arguments)
        if text is None:
            why = f"function.arguments cannot be written as JSON: {_short(arguments)}"
            self._fail(call_id, "function.arguments", why)
            return
        sink.write_delta(call_id, text)
        sink.write_ready(call_id)

    def _fail(self, call_id: str, field: str, why: str) -> None:
        self._sink.write_error(
            call_id, OllamaMalformedToolCall(message=f"tool call {call_id!r}: {why}", field=field)
        )

    def _end(self, ok: bool, reason: str) -> None:
        self._ended = True
        self._sink.write_end(ok, reason)
