"""The context managers of the journals and stores (private): ``with`` calls
:meth:`Closing.close`, ``async with`` calls :meth:`Closing.aclose`."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["Closing"]

_C = TypeVar("_C", bound="Closing")


class Closing:
    """A base for objects closed by ``close()`` (blocking) or ``aclose()`` (async code)."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the object holds (blocking)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release what the object holds, the event loop not waiting."""
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self: _C) -> _C:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
