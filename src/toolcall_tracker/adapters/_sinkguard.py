"""What a sink raises, kept apart from what an adapter makes of a malformed item (private).

An adapter catches ``Exception`` around its decoding of a provider item, so that a hostile
item fails only its own call. An exception raised by the sink it writes into (or by one of
the sink's listeners) must never be taken for that: it is wrapped in :class:`SinkRaised`, a
``BaseException`` that such handlers let through, and the adapter's boundary re-raises the
original (:func:`unwrap`). The call table wraps its own writes; :class:`GuardedSink` wraps a
sink for the adapters that write outside a table.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..sink import EventSink

__all__ = ["GuardedSink", "SinkRaised", "unwrap"]


class SinkRaised(BaseException):
    """An exception the sink raised while the table wrote into it (``error``).

    A ``BaseException`` so that an adapter's ``except Exception`` around its decoding lets
    it through; the adapter's boundary re-raises ``error`` itself (:func:`unwrap`).
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def unwrap(wrapped: SinkRaised) -> NoReturn:
    """Re-raise what the sink raised, as it was raised."""
    error = wrapped.error
    raise error from error.__cause__


class GuardedSink:
    """A sink whose exceptions are wrapped in :class:`SinkRaised`, for the adapters that
    still write outside a table (their ``except Exception`` around decoding lets them
    through)."""

    __slots__ = ("_sink", "limits")

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self.limits = sink.limits

    def apply(self, event: Any) -> None:
        self._guard("apply", event)

    def write_start(self, call_id: str, name: str) -> None:
        self._guard("write_start", call_id, name)

    def write_delta(self, call_id: str, text: str) -> None:
        try:
            self._sink.write_delta(call_id, text)
        except Exception as exc:
            raise SinkRaised(exc) from None

    def write_ready(self, call_id: str) -> None:
        self._guard("write_ready", call_id)

    def write_result(self, call_id: str, result: Any) -> None:
        self._guard("write_result", call_id, result)

    def write_error(self, call_id: str, error: Any) -> None:
        self._guard("write_error", call_id, error)

    def write_end(self, ok: bool = True, reason: str | None = None) -> None:
        self._guard("write_end", ok, reason)

    def _guard(self, method: str, *args: Any) -> None:
        try:
            getattr(self._sink, method)(*args)
        except Exception as exc:
            raise SinkRaised(exc) from None
