"""JSON values for tests: a hypothesis strategy, a type-strict equality, and a count of
the parses a module makes."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import pytest
from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON kinds all the way down (True is not 1, 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return False
    return bool(a == b)


def count_parses(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> list[tuple[str, str]]:
    """Wrap each module's ``parse_json``; the list returned grows by (the module's last name,
    the text) at each parse."""
    parsed: list[tuple[str, str]] = []
    for module in modules:
        parse = module.parse_json
        where = module.__name__.rsplit(".", 1)[-1]

        def counting(text: str, _parse: Any = parse, _where: str = where) -> Any:
            parsed.append((_where, text))
            return _parse(text)

        monkeypatch.setattr(module, "parse_json", counting)
    return parsed
