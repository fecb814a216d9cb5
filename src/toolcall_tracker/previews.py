"""Previews of arguments while they stream: a best-effort parsed value, for display only.

A UI wants to show ``writing report.md...`` while a 20 KB ``write_file`` call streams. The
call's ``args`` exist only once it is ready; :class:`ArgsPreviews` gives, meanwhile, the
value of the partial argument text parsed as far as it goes (``{"path": "report.md",
"content": "# Rep"}`` for ``{"path": "report.md", "content": "# Rep``).

It is a listener of the change feed's fragments (``subscribe(..., fragments=True)``), kept
outside the core :class:`~toolcall_tracker.ToolCall`: the core never parses a partial text,
and the runner never sees a preview (a tool only ever gets the complete, validated
arguments). It keeps no copy of the text: when it parses, it reads the call's text from the
machine, whose ``Limits`` bound it.

**Cost.** Parsing a prefix costs its length, so parsing after every fragment of a 1 MB call
would cost the square of its size. A call's text is parsed again only once it has grown by
``growth`` (by default half) since the last parse, or when ``interval`` seconds passed since
the last parse and it grew at all. A call of ``n`` characters is parsed at most
``log(n) / log(1 + growth) + 2`` times plus once per ``interval`` of its streaming time,
whatever its fragments (between parses a fragment costs a few additions and one clock
reading). :meth:`ArgsPreviews.parses` counts them.

**Parsing.** With pydantic-core 2.24 or later (pydantic 2.10+) an unfinished string is kept
(``"# Rep"``); with an older one (the floor, pydantic 2.7) partial parsing drops an
unfinished string, so the preview shows the keys whose values are complete. A prefix that
no completion could make JSON (``{"a" 1``) keeps the last preview. Nothing here raises on
any text.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pydantic_core import from_json

from .calls import Status, ToolCall
from .changes import ChangeListener

__all__ = ["ArgsPreview", "ArgsPreviews"]

logger: Final = logging.getLogger("toolcall_tracker")


class _Source(Protocol):  # a ToolCallStateMachine or a ToolCallTracker
    def subscribe(self, listener: ChangeListener, *, fragments: bool = False) -> None: ...
    def unsubscribe(self, listener: ChangeListener) -> None: ...
    def get(self, call_id: str) -> ToolCall | None: ...


@dataclass(frozen=True)
class ArgsPreview:
    """A pending call's arguments as far as they parsed.

    Attributes:
        call_id: the call.
        value: the partial value (usually a ``dict``); display it, never act on it.
        chars: the length of the argument text it was parsed from.
    """

    call_id: str
    value: Any
    chars: int


class _Progress:
    __slots__ = ("chars", "parsed_at", "parsed_chars", "parses", "preview")

    def __init__(self) -> None:
        self.chars = 0
        self.parsed_chars = -1  # never parsed
        self.parsed_at = -math.inf
        self.parses = 0
        self.preview: ArgsPreview | None = None


class ArgsPreviews(ChangeListener):
    """Best-effort previews of the pending calls' partial arguments (see the module docs).

    Args:
        source: the :class:`~toolcall_tracker.ToolCallTracker` or state machine to follow;
            this subscribes itself to its fragments (undo it with :meth:`close`).
        growth: parse again once the text grew by this fraction since the last parse
            (default 0.5: at least half), > 0.
        interval: or once this many seconds passed since the last parse (and it grew).
        on_preview: called with each preview whose value changed, on the thread that
            applied the fragment (an exception it raises is logged and ignored).
        clock: seconds, monotonic (a test may pass its own).

    Raises:
        ValueError: ``growth`` or ``interval`` is not a positive number.
    """

    __slots__ = ("_calls", "_clock", "_growth", "_interval", "_on_preview", "_source")

    def __init__(
        self,
        source: _Source,
        *,
        growth: float = 0.5,
        interval: float = 0.25,
        on_preview: Callable[[ArgsPreview], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("growth", growth), ("interval", interval)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        self._source = source
        self._growth = 1.0 + float(growth)
        self._interval = float(interval)
        self._on_preview = on_preview
        self._clock = clock
        self._calls: dict[str, _Progress] = {}
        source.subscribe(self, fragments=True)

    def preview(self, call_id: str) -> ArgsPreview | None:
        """The latest preview of pending call ``call_id`` (``None``: none yet, or the call
        is no longer pending: its ``args`` are then the real thing)."""
        progress = self._calls.get(call_id)
        return None if progress is None else progress.preview

    def previews(self) -> dict[str, ArgsPreview]:
        """The latest preview of every pending call that has one."""
        return {
            call_id: progress.preview
            for call_id, progress in self._calls.items()
            if progress.preview is not None
        }

    def parses(self, call_id: str) -> int:
        """How many times pending call ``call_id``'s text was parsed (0 if unknown)."""
        progress = self._calls.get(call_id)
        return 0 if progress is None else progress.parses

    def close(self) -> None:
        """Stop following the source and forget every preview."""
        self._source.unsubscribe(self)
        self._calls.clear()

    # -- the change feed ----------------------------------------------------------------

    def args_appended(self, call_id: str, text: str) -> None:
        progress = self._calls.get(call_id)
        if progress is None:
            progress = self._calls[call_id] = _Progress()
        progress.chars += len(text)
        chars = progress.chars
        if chars >= progress.parsed_chars * self._growth:  # grew enough (or never parsed)
            self._parse(call_id, progress, self._now(progress))
        elif chars > progress.parsed_chars:
            now = self._now(progress)
            if now - progress.parsed_at >= self._interval:
                self._parse(call_id, progress, now)

    def _now(self, progress: _Progress) -> float:
        try:
            return float(self._clock())
        except Exception:  # a broken clock: as if no time passed
            return progress.parsed_at

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if after is not Status.PENDING:
            self._calls.pop(call_id, None)

    def call_forgotten(self, call_id: str) -> None:
        self._calls.pop(call_id, None)

    def _parse(self, call_id: str, progress: _Progress, now: float) -> None:
        progress.parsed_at = now
        progress.parsed_chars = progress.chars
        progress.parses += 1
        try:
            call = self._source.get(call_id)
        except Exception:
            return
        if call is None or call.status is not Status.PENDING:
            return
        text = call.args_text
        value = _parse_partial(text)
        if value is _NOTHING:
            return
        previous = progress.preview
        preview = ArgsPreview(call_id, value, len(text))
        progress.preview = preview
        if self._on_preview is not None and (previous is None or previous.value != value):
            try:
                self._on_preview(preview)
            except Exception:
                logger.warning("an ArgsPreviews on_preview callback raised", exc_info=True)


_NOTHING: Final = object()


def _parse_partial(text: str) -> Any:
    """The value of JSON prefix ``text``, or ``_NOTHING`` if it has none; never raises."""
    if not text.strip():
        return _NOTHING
    try:
        return _PARTIAL(text)
    except Exception:  # no completion makes it JSON, too deep, ...
        return _NOTHING


def _partial_parser() -> Callable[[str], Any]:
    """``from_json`` with the best partial mode this pydantic-core has."""
    try:
        if from_json('"a', allow_partial="trailing-strings") == "a":
            return lambda text: from_json(text, allow_partial="trailing-strings")
    except Exception:  # pydantic-core < 2.24: only a bool
        pass
    return lambda text: from_json(text, allow_partial=True)


_PARTIAL: Final = _partial_parser()
