"""The lease keeper of a store with leases, and the bounded wait of a lost claim (private).

Shared by :class:`~toolcall_tracker.durable.SQLiteOutcomeStore` and
:class:`~toolcall_tracker.durable.RedisOutcomeStore`: a store holds the keys it won and has
not recorded; one daemon thread per store renews all their leases every third of the lease
(a process that dies stops renewing, so its leases run out). A claim lost to a live holder
with no outcome yet is read again every ``poll`` seconds, at most ``wait`` seconds, so a
retried resume gets the outcome of a call still running elsewhere; a fenced claim (its
claimer superseded) is never waited for.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Final

import anyio

from ..runner import Claim

__all__ = ["LeaseKeeper", "check_timing", "wait_for_outcome"]

logger: Final = logging.getLogger("toolcall_tracker.durable")


def check_timing(lease: float, wait: float | None, poll: float) -> float:
    """Refuse a bad ``lease`` / ``wait`` / ``poll``; the wait (default: twice the lease)."""
    for label, value in (("lease", lease), ("poll", poll)):
        if not value > 0:
            raise ValueError(f"{label} must be a positive number of seconds, not {value!r}")
    if wait is not None and not wait >= 0:
        raise ValueError(f"wait must be >= 0 seconds, not {wait!r}")
    return 2 * lease if wait is None else wait


async def wait_for_outcome(
    claim: Claim,
    read: Callable[[], Awaitable[Claim]],
    now: Callable[[], datetime],
    *,
    wait: float,
    poll: float,
) -> Claim:
    """``claim``, or (lost to a live holder, no outcome yet) the claim read again until it
    has an outcome, its lease runs out, or ``wait`` seconds passed. A fenced claim is
    answered at once (its claimer was superseded: nothing to wait for)."""
    deadline = anyio.current_time() + wait
    while (
        not claim.won
        and not claim.fenced
        and claim.outcome is None
        and not claim.lease_expired(now())
    ):
        if anyio.current_time() >= deadline:
            break
        await anyio.sleep(poll)
        claim = await read()
    return claim


class LeaseKeeper:
    """The keys a store holds, and the daemon thread renewing their leases.

    Args:
        lease: the lease in seconds (renewed every third of it).
        renew: renews the leases of the keys given (called on the keeper's thread; an
            exception is logged and the next round tries again).
    """

    __slots__ = ("_held", "_interval", "_lock", "_renew", "_stop", "_thread")

    def __init__(self, lease: float, renew: Callable[[list[str]], None]) -> None:
        self._interval = lease / 3
        self._renew = renew
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, key: str) -> None:
        """Renew ``key``'s lease from now on (the keeper starts with the first key)."""
        with self._lock:
            self._held.add(key)
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._keep, name="toolcall-tracker lease keeper", daemon=True
                )
                self._thread.start()

    def release(self, key: str) -> None:
        """Stop renewing ``key``'s lease (its outcome is recorded)."""
        with self._lock:
            self._held.discard(key)

    def stop(self) -> None:
        """Stop the keeper and wait for it (held leases then run out)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join()

    def _keep(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                held = list(self._held)
            if not held:
                continue
            try:
                self._renew(held)
            except Exception as exc:  # the next round tries again; the claims may run out
                logger.warning("%s", exc)
