"""A spool of output lines: kept in memory while small, then in a temporary file.

The reports print rows (timeline rows, ignored events) that are produced during the replay
but belong after a header whose counts are only known at its end, so they are spooled and
written out at the end. Memory stays bounded however long the stream is.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Final

MAX_MEMORY_CHARS: Final = 1 << 20
"""Characters a spool keeps in memory before it moves to a temporary file."""


class Spool:
    """Lines (without line breaks) appended one by one, read back once in order."""

    def __init__(self) -> None:
        self._file: tempfile.SpooledTemporaryFile[str] = tempfile.SpooledTemporaryFile(  # noqa: SIM115
            max_size=MAX_MEMORY_CHARS,
            mode="w+",
            encoding="utf-8",
            errors="backslashreplace",
            newline="\n",
        )
        self.count = 0
        """The number of lines appended."""

    def add(self, line: str) -> None:
        """Append one line; it must not contain a line break."""
        self._file.write(line)
        self._file.write("\n")
        self.count += 1

    def __iter__(self) -> Iterator[str]:
        """The lines, in order, without their line breaks."""
        self._file.seek(0)
        for line in iter(self._file.readline, ""):
            yield line[:-1]

    def close(self) -> None:
        """Release the memory or the temporary file."""
        self._file.close()
