"""Tool names for the providers (private): MCP names sanitised, clashes prefixed.

An MCP tool name may hold any character (dots, slashes, spaces...) and be of any length;
the providers do not all accept that. Every name the runner declares follows the rule of
:mod:`toolcall_tracker.tools` (1 to 64 ASCII letters, digits, ``_`` or ``-``, starting with
a letter or ``_``), the one rule OpenAI, Anthropic, Gemini, Bedrock, Cohere, Mistral and
Ollama all accept, so one list of tools renders for each of them unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

_BAD = re.compile(r"[^A-Za-z0-9_-]")
_LIMIT = 64


def sanitise(name: str) -> str:
    """``name`` as a valid tool name: each other character becomes ``_``, a leading digit or
    ``-`` gets a ``_`` before it, and a name over 64 characters keeps its first 55 and a
    hash of the whole (so two long names stay distinct)."""
    clean = _BAD.sub("_", name) or "_"
    if not (clean[0].isalpha() or clean[0] == "_"):
        clean = "_" + clean
    if len(clean) > _LIMIT:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        clean = f"{clean[: _LIMIT - 9]}_{digest}"
    return clean


def assign(listing: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], str]:
    """The runner name of each ``(server, mcp name)``.

    A name is sanitised; a sanitised name two servers share is prefixed with each one's
    server name (``files_search``, ``web_search``); one that still clashes (within one
    server, two names that sanitise alike) gets ``_2``, ``_3``... in listing order.
    """
    owners: dict[str, set[str]] = {}
    for server, names in listing.items():
        for name in names:
            owners.setdefault(sanitise(name), set()).add(server)
    taken: set[str] = set()
    result: dict[tuple[str, str], str] = {}
    for server, names in listing.items():
        for name in names:
            base = sanitise(name)
            if len(owners[base]) > 1:
                base = sanitise(f"{server}_{base}")
            chosen, n = base, 1
            while chosen in taken:
                n += 1
                chosen = sanitise(f"{base}_{n}")
            taken.add(chosen)
            result[(server, name)] = chosen
    return result
