"""What a sink raises, kept apart from what an adapter makes of a malformed item (private).

An adapter catches ``_common.READ_ERRORS`` (the errors of reading provider data) around its
decoding of a provider item, so that a hostile item fails only its own call. An exception
raised by the sink it writes into (or by one of the sink's listeners) must never be taken
for that: it is wrapped in :class:`SinkRaised`, a ``BaseException`` that such handlers let
through, and the adapter's boundary re-raises the original (:func:`unwrap`). The call table
wraps its own writes.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["SinkRaised", "unwrap"]


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
