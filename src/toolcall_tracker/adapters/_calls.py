"""The adapters' call table (private): one record per announced call, each rule once.

Theory of operation
-------------------
A provider stream announces a call (a block, a part, an item), streams its argument text
in fragments that name it by a *key* (a content-block index, a provider id), closes it,
and ends the turn. Every adapter used to keep its own copy of that life cycle; this
module keeps the one copy, and an adapter is a *wire map*: it reads each item of its
provider and calls the table, usually in a line or two per event type.

A :class:`AdapterCallTable` is bound to the sink the adapter writes into (a machine, a tracker,
an :class:`~toolcall_tracker.EventCollector`) and honours that sink's
:class:`~toolcall_tracker.Limits`. Its operations, each written once here:

- :meth:`AdapterCallTable.start`: a new record under ``key``. A call still open at ``key`` is
  *superseded* (it fails, unless the new call repeats its id: a repeated announcement, which
  is ignored). A provider id that is missing or longer than ``Limits.max_id_chars`` is
  replaced by a *minted* id (``_common.IdMinter``), never longer than the limit; an id the
  stream already *claimed* is handled by the provider's ``reused_id`` rule. The name is
  cut to ``Limits.max_name_chars``. A call whose name is unusable, or whose key received
  text *before* it started (:meth:`AdapterCallTable.early`), fails right after its start.
- :meth:`AdapterCallTable.more`: the one fast path. More text for an open call whose text already
  counts goes straight to the sink; anything else returns ``False`` and the adapter takes
  :meth:`AdapterCallTable.append`, which checks the fragment and applies the ``whitespace`` rule.
- :meth:`AdapterCallTable.close`: the ``{}`` rule (a call with no text gets its announced
  ``initial`` input as JSON, else ``{}``), then ``ready``.
- :meth:`AdapterCallTable.fail`: the call's error value, built by the adapter's failure factory.
- :meth:`AdapterCallTable.end`: the end of the turn; the records are released.

Records are bounded by ``Limits.max_calls``: when that many are kept, the closed ones and
the ones the sink has forgotten are dropped; a start beyond the bound is still written
(the machine reports it as ``too_many_calls``) but keeps no record.

Errors from the sink. The table writes every event; an exception the sink (or one of its
listeners) raises is wrapped in ``_sinkguard.SinkRaised``, a ``BaseException``, so that no
handler in an adapter's decoding can take it for a malformed item. The adapter's boundary
(:class:`~toolcall_tracker.adapters._protocol.SinkAdapter`) re-raises the original exception.
Only an adapter's own decoding of an item may become a call's failure, and only through
the errors of reading provider data (``_common.READ_ERRORS``); a defect of the adapter
(``NameError``, ``AttributeError``...) propagates.

Where providers differ, the rule is an option of :class:`Rules`; ``RULES`` is the table of
every provider's options (documented in ``docs/adapters-internals.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..failures import CallFailure
from ..limits import DEFAULT_LIMITS, Limits
from ..machine import _lanes_of
from ..sink import EventSink
from ._call_rules import RULES, Rules
from ._common import (
    NOT_PARSED,
    IdMinter,
    _json_written,
    _plain,
    _short,
    _tool_name,
    _usable_id,
    logger,
)
from ._sinkguard import SinkRaised

if TYPE_CHECKING:
    from .._reducer import _CallRecord

__all__ = ["RULES", "AdapterCallTable", "AdapterCall", "Rules", "malformed_event"]

_JSON_WS: Final = " \t\n\r"


class AdapterCall:
    """One call the adapters' table keeps: its id, name, key, and what has been streamed.

    (Three tables keep calls, each with its own record: this one, the adapters'; the
    machine's ``_reducer._CallRecord``, the call's state; the runner's
    ``runner._calls.RunnerCall``, what the runner does with it.)

    ``open``: not closed, failed or superseded yet. ``empty``: no fragment that counts as
    text yet (see ``Rules.whitespace_is_text``). ``streaming``: open and not empty, the
    fast path's one test (never while a ``copy`` is kept). ``finished``: its outcome (an
    error, a provider-run result) was written. ``copy``: its text, for a table that reads
    text back from a sink that holds none (``size`` characters). ``initial``: the input
    the announcement carried (the text of a call that streams none). ``server``: a
    provider-run call.
    """

    __slots__ = (
        "call_id",
        "copy",
        "empty",
        "finished",
        "initial",
        "key",
        "lane",
        "name",
        "open",
        "server",
        "size",
        "streaming",
    )

    def __init__(self, key: Any, call_id: str, name: str, server: bool) -> None:
        self.key = key
        self.call_id = call_id
        self.name = name
        self.server = server
        self.initial: Any = None
        self.empty = True
        self.streaming = False
        self.finished = False
        self.copy: list[str] | None = None
        self.size = 0
        self.open = True
        self.lane: _CallRecord | None = None


Failure = Callable[[AdapterCall, str, str], CallFailure]
"""The adapter's failure factory: ``(record, why, event_type) -> error value``."""


def malformed_event(kind: Callable[..., CallFailure]) -> Failure:
    """The failure factory of the adapters whose error value is ``<Provider>MalformedEvent``
    (``message``, ``event_type``, ``index``)."""

    def failure(record: AdapterCall, why: str, event_type: str) -> CallFailure:
        key = record.key
        return kind(
            message=f"call {record.call_id!r} ({record.name}): malformed {event_type}: {why}",
            event_type=event_type,
            index=key if type(key) is int else None,
        )

    return failure


class AdapterCallTable:
    """The adapters' call table: one stream's calls, bound to a sink (see the module doc)."""

    __slots__ = (
        "_delta",
        "_early",
        "_failure",
        "_ids",
        "_lanes",
        "_read",
        "_ready",
        "_rules",
        "_start",
        "ended",
        "limits",
        "records",
        "sink",
    )

    sink: EventSink
    limits: Limits

    def __init__(self, rules: Rules, failure: Failure, sink: EventSink | None) -> None:
        self._rules = rules
        self._failure = failure
        self.records: dict[Any, AdapterCall] = {}
        self._early: set[Any] = set()
        self._ids = IdMinter(rules.id_sep)
        self.ended = False
        self.limits = DEFAULT_LIMITS
        if sink is not None:  # (an adapter's table: bound with the adapter, before use)
            self.bind(sink)

    def bind(self, sink: EventSink) -> None:
        """Write into ``sink`` from now on, under its limits."""
        self.sink = sink
        self.limits = sink.limits
        self._delta = sink.write_delta
        self._start = sink.write_start
        self._ready = sink.write_ready
        self._lanes = _lanes_of(sink)
        for record in self.records.values():  # the lanes of another sink's records
            record.lane = None
        self._read = getattr(sink, "args_text", None) if self._rules.reads_text else None

    # -- the life cycle ---------------------------------------------------------------

    def start(
        self,
        key: Any,
        call_id: Any,
        name: Any,
        event_type: str,
        *,
        initial: Any = None,
        server: bool = False,
    ) -> AdapterCall | None:
        """Start a call under ``key`` (see the module doc); ``None`` if none started."""
        records = self.records
        old = records.get(key)
        if old is not None and old.open:
            if old.call_id == call_id:
                return None  # the same call announced twice
            why = f"a new {self._rules.unit} started at its index before it closed"
            self.fail(old, why, event_type)
        call_id = self.claim(key, call_id)
        if call_id is None:
            records.pop(key, None)
            return None
        limits = self.limits
        text_name = name if type(name) is str else ""
        record = AdapterCall(key, call_id, text_name, server)
        if len(records) >= limits.max_calls and key not in records:
            records = self._prune()
        if len(records) < limits.max_calls or key in records:
            records[key] = record
        else:
            records.pop(key, None)
        self.begin(record)
        if type(name) is not str or (not name and self._rules.empty_name_fails):
            self.fail(record, f"the call has no name ({_short(name)})", event_type)
        elif key in self._early:
            self._early.discard(key)
            rules = self._rules
            why = f"argument text arrived before the {rules.unit} started"
            self.fail(record, why, rules.delta_event)
        else:
            record.initial = initial
            return record
        return None

    def claim(self, key: Any, call_id: Any) -> str | None:
        """The tracker id of a call announced at ``key`` with the provider's ``call_id``;
        ``None`` (logged) if the call is to be ignored.

        A usable id (a non-empty string within ``Limits.max_id_chars``) is the tracker id,
        unless the stream already used it (see ``Rules.reused_id``); any other id is
        replaced by one minted from ``Rules.mint`` and ``key``, never longer than the
        limit.
        """
        limits = self.limits
        max_id = limits.max_id_chars
        if _usable_id(call_id, max_id):
            if self._ids.claim(call_id, limits):
                return call_id
            reused = self._rules.reused_id
            if reused == "ignore":
                logger.debug("ignored a call reusing id %r", call_id)
                return None
            minted = self._ids.mint(call_id, limits) if reused == "suffix" else self._mint(key)
        else:
            minted = self._mint(key)
        if minted is None:
            logger.warning("ignored a call at %r: no id fits Limits.max_id_chars (%d)", key, max_id)
        return minted

    def begin(self, record: AdapterCall) -> None:
        """Write the start of ``record`` (its name cut to ``Limits.max_name_chars``), and
        prepare the copy of its text a ``reads_text`` table keeps for a sink without
        ``args_text``. :meth:`start` calls it; an adapter that routes its calls itself
        (OpenAI) calls it once it knows the call's name."""
        if self._rules.reads_text and self._read is None:
            record.copy = []
        try:
            self._start(record.call_id, _tool_name(record.name, self.limits.max_name_chars))
        except Exception as exc:
            raise SinkRaised(exc) from None
        lanes = self._lanes
        if lanes is not None:
            record.lane = lanes.get(record.call_id)

    def early(self, key: Any) -> None:
        """Argument text for ``key`` before any call started there: the call that then
        starts at ``key`` fails (its text would miss this fragment)."""
        if not self.ended and len(self._early) < self.limits.max_calls:
            logger.debug("argument text at %r before its %s", key, self._rules.unit)
            self._early.add(key)

    def more(self, key: Any, text: Any) -> bool:
        """The fast path: write ``text`` for the open, non-empty call at ``key`` and return
        ``True``; ``False`` (nothing written) for anything else."""
        record = self.records.get(key)  # (more_of's lines, inlined: a call per fragment)
        if record is None or not record.streaming or type(text) is not str or not text:
            return False
        lane = record.lane  # the machine's record of the call: see _CallRecord.append
        if lane is not None and lane.append(text):
            return True
        try:
            self._delta(record.call_id, text)
        except Exception as exc:
            raise SinkRaised(exc) from None
        return True

    def more_of(self, record: AdapterCall, text: Any) -> bool:
        """:meth:`more` for a record the adapter routed itself (OpenAI): the one test and
        the one write of the fast path."""
        if not record.streaming or type(text) is not str or not text:
            return False
        lane = record.lane  # the machine's record of the call: see _CallRecord.append
        if lane is not None:
            # (an inlined copy of _CallRecord.append: tests/test_fast_lane.py compares the two)
            budget = lane.budget - len(text)
            if budget >= 0:
                lane.budget = budget
                lane.parts.append(text)
                return True
            if lane.budget >= 0 and lane.add(text):
                return True
        try:
            self._delta(record.call_id, text)
        except Exception as exc:
            raise SinkRaised(exc) from None
        return True

    def append(self, record: AdapterCall, text: Any, event_type: str) -> None:
        """Append a fragment to an open call: fails it if ``text`` is not a string (``None``:
        see ``Rules.absent_text_fails``); nothing for ``""``."""
        if not record.open or (text is None and not self._rules.absent_text_fails):
            return
        if not isinstance(text, str):
            self.fail(record, f"the argument text must be a string, got {_short(text)}", event_type)
            return
        if not text:
            return
        if record.empty and (self._rules.whitespace_is_text or text.strip(_JSON_WS)):
            record.empty = False
            record.streaming = record.copy is None
        copy = record.copy
        if copy is not None:
            record.size += len(text)
            if record.size > self.limits.max_args_chars:
                record.copy = None  # the sink fails the call (ArgumentsTooLarge)
            else:
                copy.append(text)
        self._write_delta(record.call_id, text)

    def append_parsed(self, record: AdapterCall, text: str, value: Any, event_type: str) -> None:
        """:meth:`append` of a call's whole argument text, ``value`` being its parse by
        ``parse_json``: a machine takes that value at ``ready`` instead of parsing ``text``
        again (see ``_CallRecord.give``)."""
        self.append(record, text, event_type)
        self.give(record, text, value)

    def give(self, record: AdapterCall, text: str, value: Any) -> None:
        """Hand the sink ``value``, the parse by ``parse_json`` of ``text``, the whole text
        the open call ``record`` holds: a machine takes that value at ``ready`` instead of
        parsing ``text`` again (see ``_CallRecord.give``); other sinks
        parse as ever. Nothing for ``NOT_PARSED`` (see ``_common._json_written``)."""
        lane = record.lane
        if lane is not None and record.open and value is not NOT_PARSED:
            lane.give(text, value)

    def close(self, key: Any, event_type: str) -> None:
        """Make the open call at ``key`` ready, applying the ``{}`` rule first."""
        record = self.records.get(key)
        if record is not None:
            self.ready(record, event_type)

    def ready(self, record: AdapterCall, event_type: str) -> None:
        """:meth:`close` for a record the adapter routed itself (OpenAI)."""
        if not record.open:
            return
        if record.empty:
            initial = record.initial
            if initial is None or (
                self._rules.falsy_input_is_empty
                and not isinstance(initial, str)
                and not _plain(initial)
            ):
                written: tuple[str, Any] | None = ("{}", NOT_PARSED)
            else:
                written = _json_written(initial)
            if written is None:
                why = f"the call's input cannot be written as JSON: {_short(initial)}"
                self.fail(record, why, event_type)
                return
            text, value = written
            self.give(record, text, value)
            record.open = False
            if record.copy is not None:
                record.copy.append(text)
            self._write_delta(record.call_id, text)
        record.open = record.streaming = False
        if not self._rules.text_after_ready:
            record.copy = None
        try:
            self._ready(record.call_id)
        except Exception as exc:
            raise SinkRaised(exc) from None

    def fail(
        self, record: AdapterCall, why: str, event_type: str, error: CallFailure | None = None
    ) -> None:
        """Fail an open call with the adapter's error value (``error``, if given)."""
        if not record.open:
            return
        self.finish(record, error or self._failure(record, why, event_type))

    def finish(self, record: AdapterCall, error: Any) -> None:
        """Write a call's error, reported by the provider (whether ready or not)."""
        record.open = record.streaming = False
        record.finished = True
        record.copy = None
        self.error(record.call_id, error)

    def text(self, record: AdapterCall) -> str | None:
        """The text a call holds (``Rules.reads_text``): the sink's, or the copy kept;
        ``None`` when unknown (the sink has no such call, or the copy outgrew the limit)."""
        read = self._read
        if read is not None:
            text: str | None = read(record.call_id)
            return text
        copy = record.copy
        return None if copy is None else "".join(copy)

    def end(self, ok: bool, reason: str) -> None:
        """End the turn; every record is released."""
        self.ended = True
        self.records.clear()
        self._early.clear()
        try:
            self.sink.write_end(ok, reason)
        except Exception as exc:
            raise SinkRaised(exc) from None

    # -- writing ----------------------------------------------------------------------

    def result(self, call_id: str, value: Any) -> None:
        """A provider-run call's result."""
        self._write("write_result", call_id, value)

    def error(self, call_id: str, value: Any) -> None:
        """A call's error value."""
        self._write("write_error", call_id, value)

    def _write_delta(self, call_id: str, text: str) -> None:
        try:
            self._delta(call_id, text)
        except Exception as exc:
            raise SinkRaised(exc) from None

    def _write(self, method: str, call_id: str, *payload: Any) -> None:
        try:
            getattr(self.sink, method)(call_id, *payload)
        except Exception as exc:
            raise SinkRaised(exc) from None

    # -- internals --------------------------------------------------------------------

    def _mint(self, key: Any) -> str | None:
        base = self._rules.mint
        if base is None:
            return None
        return self._ids.mint(base.format(key=key), self.limits)

    def _prune(self) -> dict[Any, AdapterCall]:
        """Drop the records no event can need: closed calls, and calls the sink forgot."""
        forgotten = getattr(self.sink, "is_forgotten", None)
        self.records = records = {
            key: record
            for key, record in self.records.items()
            if record.open and not (forgotten is not None and forgotten(record.call_id))
        }
        return records
