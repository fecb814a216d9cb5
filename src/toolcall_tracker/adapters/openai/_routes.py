"""The OpenAI Chat adapter's routing records, bounded by ``Limits.max_calls`` (private).

The Chat adapter routes each fragment itself: by server id, by index, or to the latest call
of its choice (see :class:`~toolcall_tracker.adapters.OpenAIChatAdapter`). Those routes and
the calls of each choice are kept here, and kept bounded.

Theory of operation
-------------------
A choice's *live* records are the calls that an event of the stream may still change
in the sink: the ones the ``finish_reason`` makes ready (or cuts off), the ones late text
fails. A record stops being live when the sink no longer has its call: the sink never
tracked it (a start beyond ``Limits.max_calls``, reported as ``too_many_calls``) or has
forgotten it (``keep_finished``, ``forget``). Everything written for such a call is ignored
by the sink, so dropping its record changes nothing the sink holds. The sink is asked
through ``status(call_id)`` (a machine, a tracker); a sink without it (the
:class:`~toolcall_tracker.EventCollector` behind ``feed``) is asked nothing, and the records
of calls already ready or failed are dropped instead.

The live records are therefore at most the calls the sink tracks (``max_calls``) plus the
calls still waiting for a name (at most ``max_calls``, see ``_openai._Emitter._admit``).
They are pruned when the records kept (calls and routes) reach twice what the last prune
left, at least ``4 * max_calls``: amortised constant work per call.

A dropped record's routes are *retired*, not lost: a later fragment for it (by id or
index) still reaches it, as it would have, for the last ``Limits.remember_forgotten``
routes retired (the machine remembers as many forgotten ids); an older one is forgotten.
Only a sink that cannot be asked keeps, at most, ``4 * max_calls`` open calls live: a call
that starts beyond that is written (the sink reports what it does with it) and routed, but
the ``finish_reason`` does not make it ready.
"""

from __future__ import annotations

from typing import Any

from ...limits import Limits
from ...sink import EventSink
from .._sinkguard import SinkRaised
from ._shared import _FAILED, _HELD, _PENDING, _READY, _Call, _Emitter, _logger

__all__ = ["_Choice", "_Routes"]


class _Choice:
    """Routing state of one choice: calls by server id, by index, the latest; the live
    calls (``calls``, see the module doc) and how many calls it made (``count``: the next
    call's position); whether it may make calls ready early (``early``: not once its
    fragments turned out to be interleaved)."""

    __slots__ = (
        "by_id",
        "by_index",
        "calls",
        "count",
        "cuts",
        "early",
        "finish",
        "index",
        "latest",
    )

    def __init__(self, index: int, early: bool) -> None:
        self.index = index
        self.by_id: dict[str, _Call] = {}
        self.by_index: dict[int, _Call] = {}
        self.latest: _Call | None = None
        self.calls: list[_Call] = []
        self.count = 0
        self.finish: str | None = None
        self.early = early
        # What settled every pending call of the choice (its finish_reason, an error
        # item), in order: (how many calls it had then, whether it made them ready).
        self.cuts: list[tuple[int, bool]] = []


class _Routes:
    """Every choice's live records and the retired routes (see the module doc)."""

    __slots__ = ("_busy", "_cap", "_limits", "_live", "_prune_at", "_size", "_skipped", "retired")

    def __init__(self) -> None:
        self._busy: dict[int, _Choice] = {}  # the choices that hold records or routes
        self.retired: dict[tuple[int, int | str], _Call] = {}  # oldest first
        self._size = 0  # calls and routes added since the last prune, plus what it left
        self._prune_at = 0  # computed from the limits at the first call
        self._cap = 0  # the most live calls (see _room)
        self._limits: Limits | None = None
        self._skipped = 0  # calls not kept live since the last prune that kept them out
        self._live = 0  # the live calls of every choice

    # -- routing ----------------------------------------------------------------------

    def by_id(self, state: _Choice, call_id: str) -> _Call | None:
        """The call of ``state`` with server id ``call_id``, live or retired."""
        call = state.by_id.get(call_id)
        if call is None and self.retired:
            call = self.retired.get((state.index, call_id))
            if call is not None and call.retired:
                self.revive(state, call)
        return call

    def at(self, state: _Choice, index: int) -> _Call | None:
        """The call of ``state`` at ``index``, live or retired."""
        call = state.by_index.get(index)
        if call is None and self.retired:
            call = self.retired.get((state.index, index))
            if call is not None and call.retired:
                self.revive(state, call)
        return call

    def route_id(self, state: _Choice, call_id: str, call: _Call) -> None:
        if call.retired:
            state.by_id.pop(call_id, None)
            self._retire((state.index, call_id), call)
        else:
            state.by_id[call_id] = call
            self._size += 1  # (a live call's choice is busy already)

    def route_index(self, state: _Choice, index: int, call: _Call) -> None:
        if call.retired:  # (the fast path reads the live routes: live calls only)
            state.by_index.pop(index, None)
            self._retire((state.index, index), call)
        elif state.by_index.get(index) is not call:
            state.by_index[index] = call
            self._size += 1

    def _retire(self, key: tuple[int, int | str], call: _Call) -> None:
        retired = self.retired
        retired.pop(key, None)  # re-inserted: the newest
        retired[key] = call

    @staticmethod
    def revive(state: _Choice, call: _Call) -> None:
        """Bring a retired record up to date before it is used: what its choice's
        ``finish_reason`` or an error item, or the switch to interleaved readiness, would
        have done to it, without writing (the sink has no such call)."""
        status = call.status
        if status != _PENDING and status != _HELD:
            return
        position = call.key[1]
        for count, ok in state.cuts:
            if position < count:
                if ok and call.started:
                    call.status = _READY
                    call.open = call.streaming = False
                    call.copy = None
                else:
                    _Emitter._stop(call, _FAILED)
                return
        if status == _HELD and not state.early:
            _Emitter._resume(call)

    # -- calls ------------------------------------------------------------------------

    def add(self, state: _Choice, call: _Call, sink: EventSink, limits: Limits) -> None:
        """Count a new call of ``state`` and keep it live if there is room (see the module
        doc); prune first when the records kept call for it."""
        state.count += 1
        if (
            self._size >= self._prune_at or self._live >= self._cap or limits is not self._limits
        ) and not self._room(call, sink, limits):
            return
        state.calls.append(call)
        self._live += 1
        self._size += 1
        self._busy[state.index] = state

    def _room(self, call: _Call, sink: EventSink, limits: Limits) -> bool:
        """Prune if due; whether ``call`` may be kept live."""
        bound = 4 * max(limits.max_calls, 1)
        if limits is not self._limits:  # the first call, or a sink with other limits
            self._limits = limits
            self._cap = bound
            self._prune_at = bound
        if self._size >= self._prune_at or (self._live >= bound and not self._skipped):
            self._prune(sink, limits)
        if self._live < bound:
            self._skipped = 0
            return True
        # Only a sink that cannot be asked, full of open calls; pruning again at once would
        # find nothing more: try after a quarter bound.
        call.retired = True
        self._skipped = (self._skipped + 1) % max(bound // 4, 1)
        _logger.debug(
            "tool call %r: %d open calls kept already; its choice's finish_reason will not "
            "make it ready",
            call.call_id,
            bound,
        )
        return False

    def kept(self) -> int:
        """How many records and routes are kept (for tests)."""
        return sum(
            len(state.calls) + len(state.by_id) + len(state.by_index)
            for state in self._busy.values()
        ) + len(self.retired)

    def _prune(self, sink: EventSink, limits: Limits) -> None:
        """Drop the records no event can change in the sink, and retire their routes."""
        ask = getattr(sink, "status", None)
        bound = 4 * max(limits.max_calls, 1)
        retired = self.retired
        size = live = 0
        for number, state in list(self._busy.items()):
            keep: list[_Call] = []
            for call in state.calls:
                if ask is None:
                    alive = call.status == _PENDING or call.status == _HELD
                else:
                    try:
                        alive = not call.started or ask(call.call_id) is not None
                    except Exception as exc:
                        raise SinkRaised(exc) from None
                if alive:
                    keep.append(call)
                else:
                    call.retired = True
            state.calls = keep
            held = set(keep)
            self._retire_routes(number, state.by_id, held, bound)
            self._retire_routes(number, state.by_index, held, bound)
            if not (keep or state.by_id or state.by_index):
                del self._busy[number]
            live += len(keep)
            size += len(keep) + len(state.by_id) + len(state.by_index)
        remember = max(limits.remember_forgotten, bound)
        while len(retired) > remember:
            del retired[next(iter(retired))]
        self._size = size
        self._live = live
        self._prune_at = max(bound, 2 * size)

    def _retire_routes(
        self, number: int, routes: dict[Any, _Call], held: set[_Call], bound: int
    ) -> None:
        """Retire the routes to calls not ``held`` live (and the oldest beyond ``bound``:
        a call under countless indexes)."""
        gone = [key for key, call in routes.items() if call not in held]
        if len(routes) - len(gone) > bound:
            gone.extend(key for key, call in list(routes.items())[:-bound] if call in held)
        for key in gone:
            self._retire((number, key), routes.pop(key))

    def forget(self) -> None:
        """The turn ended: nothing is routed any more; the records are released."""
        for state in self._busy.values():
            state.calls = []
            state.by_id = {}
            state.by_index = {}
            state.latest = None
        self._busy.clear()
        self.retired.clear()
        self._size = self._live = 0
