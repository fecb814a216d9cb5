"""The machine's change feed: listeners told of every transition, synchronously and in order.

A :class:`~toolcall_tracker.ToolCallStateMachine` publishes what happens to its calls to the
listeners subscribed with :meth:`~toolcall_tracker.ToolCallStateMachine.subscribe`. That
is how every layer above the core reads the one source of truth instead of keeping a copy:
the async tracker wakes its waiters from it, the tool runner stops a call that failed while
its tool waited, the AI SDK encoder and the command line's timeline draw from it.

What is published, from inside the ``apply`` (or ``write_*``) that caused it, after the
machine's own state is updated:

- :meth:`ChangeListener.call_changed` for every transition of a call: created
  (``before`` is ``None``, ``after`` is ``pending``), ready (``running``), finished
  (``done`` / ``error``). Read the call itself with ``machine.get(call_id)``.
- :meth:`ChangeListener.args_appended` for every fragment appended to a pending call, but
  only to listeners subscribed with ``fragments=True`` (nothing is paid for it otherwise).
- :meth:`ChangeListener.turn_ended` once, after the ``end`` was broadcast to every call
  (so the calls it abandoned were published first).
- :meth:`ChangeListener.call_forgotten` when a finished call is dropped (``forget`` or
  ``keep_finished``), after its last ``call_changed``.
- :meth:`ChangeListener.event_ignored` for every ignored event, with its reason.

Listeners are called in the order they subscribed. A listener must not apply events to
the machine it listens to from inside a callback (schedule that work instead). A listener
that raises does not stop the machine or the other listeners: the change is complete,
every listener is told, and the first exception is then re-raised from the call that
caused it (``apply``, ``write_*``, ``forget``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._reducer import IgnoreReason
    from .calls import Status
    from .events import End

__all__ = ["ChangeListener"]


class ChangeListener:
    """A listener of a machine's change feed; subclass it and override what you need.

    Every method does nothing by default. See :mod:`toolcall_tracker.changes` for when each
    is called and what happens if one raises.
    """

    __slots__ = ()

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        """Call ``call_id`` went from ``before`` (``None``: it was just created) to ``after``."""

    def args_appended(self, call_id: str, text: str) -> None:
        """``text`` was appended to the arguments of pending call ``call_id``.

        Only for listeners subscribed with ``fragments=True``.
        """

    def turn_ended(self, end: End) -> None:
        """The turn ended with ``end``; every call has seen it."""

    def call_forgotten(self, call_id: str) -> None:
        """Finished call ``call_id`` was forgotten (dropped from the machine)."""

    def event_ignored(self, event: object, reason: IgnoreReason) -> None:
        """``event`` was ignored, for ``reason`` (the machine's ``on_ignored`` hook sees it
        too)."""
