"""Recognising a stream's format from its items' shapes (``--format auto``).

What each format's items look like is declared by its provider (the private
``_providers`` modules) and asked by the library's one recognition module,
``_recognise``; this module adds the command line's window and its messages.

Only the first :data:`DETECT_ITEMS` items are looked at (fewer if they hold more than
:data:`DETECT_CHARS` characters): a stream has one format. They are kept for the replay,
which reads the rest as it goes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from .._recognise import item_format
from .._registry import formats
from ._input import InputError, Item

__all__ = ["DETECT_CHARS", "DETECT_ITEMS", "FORMATS", "detect", "item_format", "mismatch"]

FORMATS: Final = tuple(formats())
"""The stream formats ``--format`` accepts (besides ``auto``), from the provider registry
(as the package defines them; the parser reads the registry again when it is built).

LiteLLM's chunks, and Mistral's and Ollama's OpenAI-compatible ones, are ``openai-chat``.
"""

DETECT_ITEMS: Final = 1000
"""The items ``--format auto`` looks at."""
DETECT_CHARS = 16 * 1024 * 1024
"""``--format auto`` stops looking once the items it holds are this long."""


def mismatch(fmt: str, items: int, votes: dict[str, int]) -> str:
    """Why no item of a stream is a ``fmt`` item, and the format that would fit."""
    what = f"none of the {items} items is" if items != 1 else "the item is not"
    ranked = sorted(votes.items(), key=lambda vote: -vote[1])
    if not ranked:
        return f"{what} of the {fmt} format, nor of any format this tool knows"
    best, count = ranked[0]
    return f"{what} of the {fmt} format; {count} of {items} look like {best} (pass --format {best})"


def detect(items: Iterator[Item]) -> tuple[str, list[Item]]:
    """The format most of the first items are distinctive of (``--format auto``).

    Reads the first :data:`DETECT_ITEMS` items (fewer once they hold :data:`DETECT_CHARS`
    characters) from ``items``, and returns them with the format, for the replay: the
    rest stay unread in ``items``.

    Raises:
        InputError: no item is distinctive, two formats tie, or the items are bad.
    """
    window: list[Item] = []
    chars = 0
    votes: dict[str, int] = {}
    for item in items:
        window.append(item)
        found = item_format(item.value)
        if found is not None:
            votes[found] = votes.get(found, 0) + 1
        chars += item.chars
        if len(window) >= DETECT_ITEMS or chars >= DETECT_CHARS:
            break
    if not votes:
        raise InputError(
            "cannot recognise the stream's format from its items; pass --format "
            f"({', '.join(formats())})"
        )
    ranked = sorted(votes.items(), key=lambda vote: -vote[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        raise InputError(
            f"the items fit {ranked[0][0]} and {ranked[1][0]} equally well; pass --format"
        )
    return ranked[0][0], window
