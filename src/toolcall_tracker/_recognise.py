"""Recognising a stream's format from its items' shapes (private; one home for it).

The command line's ``--format auto``, the wrong-adapter check of
:func:`~toolcall_tracker.adapters.adapt` and the hint of
:meth:`~toolcall_tracker.ToolCallTracker.consume` all ask this module, which asks each
registered provider (``_registry``) whether an item is distinctive of its format.

The wrong-adapter check (:class:`Probe`) looks at the first :data:`WINDOW` items of an
adapted stream. As soon as one of them is an item its adapter reads (its own format, or
one it accepts: LiteLLM's chunks through the Chat adapter), it stops looking. If none of
them is, it says so once: a WARNING on the ``toolcall_tracker`` logger, and the reason
the turn ends with ("these items look like Anthropic events; use AnthropicAdapter"),
instead of a turn that ends quietly with no calls. The check costs one test per item
for the first items only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from ._registry import Provider, for_adapter, get, providers

logger = logging.getLogger("toolcall_tracker")

WINDOW: Final = 8
"""The items of an adapted stream the wrong-adapter check looks at, at most."""


def item_format(item: Any) -> str | None:
    """The format one item's shape is distinctive of, or ``None`` if it says nothing."""
    for provider in providers():
        try:
            if provider.recognise(item):
                return provider.format
        except Exception:  # a declaration must not raise; if it does, it says nothing
            continue
    return None


def tally(items: Iterable[Any]) -> dict[str, int]:
    """Per format, how many of ``items`` are distinctive of it."""
    votes: dict[str, int] = {}
    for item in items:
        found = item_format(item)
        if found is not None:
            votes[found] = votes.get(found, 0) + 1
    return votes


def best(votes: dict[str, int]) -> str | None:
    """The format with the most votes (the first listed, on a tie), or ``None``."""
    if not votes:
        return None
    order = {fmt: rank for rank, fmt in enumerate(provider.format for provider in providers())}
    return min(votes, key=lambda fmt: (-votes[fmt], order.get(fmt, len(order))))


def reads(provider: Provider, fmt: str | None) -> bool:
    """Whether ``provider``'s adapter reads items of format ``fmt``."""
    return fmt == provider.format or fmt in provider.accepts


def use_instead(fmt: str) -> str:
    """What to do with items of format ``fmt`` ("use AnthropicAdapter")."""
    provider = get(fmt)
    if provider.adapter_name is None:
        return "pass them to tracker.consume() without adapt()"
    return f"use {provider.adapter_name}"


def wrong_adapter(provider: Provider, seen: int, votes: dict[str, int]) -> str:
    """Why ``provider``'s adapter read none of ``seen`` items, and what fits instead."""
    found = best(votes)
    if found is not None:
        return f"these items look like {get(found).title}; {use_instead(found)}"
    items = "the item is not" if seen == 1 else f"none of the first {seen} items is"
    return (
        f"{items} one {provider.adapter_name} reads ({provider.title}), "
        "nor one of any format this library knows"
    )


def raw_item_hint(value: Any) -> str | None:
    """For an event that failed to parse: the provider item it looks like, and the fix."""
    fmt = item_format(value)
    if fmt is None:
        return None
    provider = get(fmt)
    if provider.adapter_name is None:
        return None
    return (
        f"this looks like {provider.one}; wrap the stream with "
        f"adapt(stream, {provider.adapter_name}())"
    )


class Probe:
    """The wrong-adapter check of one adapted stream (see the module docstring).

    ``see(item)`` for each item while it returns ``True``; ``verdict()`` at the end of the
    stream. The warning is logged once, when the check decides.
    """

    __slots__ = ("_provider", "_read", "_reason", "_seen", "_understands", "_votes")

    def __init__(self, provider: Provider) -> None:
        self._provider = provider
        self._understands = provider.understands or provider.recognise
        self._seen = 0
        self._votes: dict[str, int] = {}
        self._reason: str | None = None
        self._read = False  # the adapter read one of the items: all is well

    def see(self, item: Any) -> bool:
        """Look at one item; ``False`` once the check has decided (stop calling)."""
        try:
            understood = bool(self._understands(item))
        except Exception:
            understood = False
        found = None if understood else item_format(item)
        if understood or reads(self._provider, found):
            self._read = True
            return False
        self._seen += 1
        if found is not None:
            self._votes[found] = self._votes.get(found, 0) + 1
        if self._seen >= WINDOW:
            self._decide()
            return False
        return True

    def refused(self, exc: TypeError, item: Any) -> TypeError:
        """The adapter refused ``item`` (not an item of its kind at all): the same error,
        naming the adapter that reads it, when the item is recognisably another format's."""
        found = item_format(item)
        if found is None or reads(self._provider, found):
            return exc
        return TypeError(f"{exc}; these items look like {get(found).title}; {use_instead(found)}")

    def verdict(self) -> str | None:
        """At the end of the stream: why the adapter read nothing, or ``None`` if it did."""
        if self._reason is None and self._seen and not self._read:
            self._decide()
        return self._reason

    def _decide(self) -> None:
        self._reason = reason = wrong_adapter(self._provider, self._seen, self._votes)
        logger.warning("%s", reason)


def probe_for(adapter: object) -> Probe | None:
    """The check for ``adapter``, or ``None`` for an adapter the registry does not know."""
    provider = for_adapter(adapter)
    return None if provider is None else Probe(provider)
