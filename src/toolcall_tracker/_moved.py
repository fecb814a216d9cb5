"""Deprecated aliases: a name that moved still resolves where it was, with a warning (private).

Every module that lost a public name keeps it importable for one more minor release, and
says where it went. They all do it the same way: a table of ``old name -> (new module,
new name)``, and a module-level ``__getattr__`` made by :func:`aliases`, which warns with
the import line to write instead (a :class:`DeprecationWarning`, at the caller's line) and
returns the object from its new home. Nothing is imported until an alias is used.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

REMOVED_IN = "0.3.0"
"""The release in which the aliases below go."""


def aliases(
    module: str, moved: Mapping[str, tuple[str, str]], *, stacklevel: int = 2
) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving each old name of ``module`` in ``moved``.

    Args:
        module: the module the names moved out of (its ``__name__``).
        moved: ``old name -> (new module, new name)``.
        stacklevel: the warning's stack level: 2 when the result is the module's
            ``__getattr__``, one more for each function that calls it.

    Any other name raises :class:`AttributeError`, as a module without ``__getattr__``
    would.
    """

    def __getattr__(name: str) -> Any:
        home = moved.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, new = home
        line = f"from {target} import {new}"
        renamed = "" if new == name else f" (renamed {new})"
        warnings.warn(
            f"{module}.{name} moved to {target}{renamed}: write `{line}`; "
            f"the old name goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        return getattr(import_module(target), new)

    return __getattr__
