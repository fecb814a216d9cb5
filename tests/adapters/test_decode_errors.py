"""Only the decoding of provider data may be taken for a bad item; an adapter's own defect
propagates.

Each adapter catches :data:`~toolcall_tracker.adapters._common.READ_ERRORS` around its
reading of an item: what reading a hostile item's field raised (``DecodeError``), and the
errors Python's operations raise on a value of the wrong shape. A defect of the adapter
(a ``NameError``, an ``AttributeError`` on our side) is not a malformed item: it must reach
the caller instead of turning into an ignored item or a failed call. The rows below drive
each adapter's general path with an item of its own format, with the module's field reader
replaced by one that fails in each way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolcall_tracker.adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    BedrockConverseAdapter,
    CohereAdapter,
    GeminiAdapter,
    OllamaAdapter,
)
from toolcall_tracker.adapters._common import READ_ERRORS, DecodeError, _get

# (module whose ``_get`` is replaced, adapter, an item of its format that its general path
# reads through ``_get``)
ROWS: dict[str, tuple[str, Callable[[], Any], Any]] = {
    "anthropic": ("anthropic._adapter", AnthropicAdapter, {"type": "message_start", "message": {}}),
    "bedrock": (
        "bedrock._adapter",
        BedrockConverseAdapter,
        {"messageStart": {"role": "assistant"}},
    ),
    "cohere": ("cohere._adapter", CohereAdapter, {"type": "message-start"}),
    "gemini": ("gemini._adapter", GeminiAdapter, {"candidates": [{"content": {"parts": []}}]}),
    "ollama": ("ollama._adapter", OllamaAdapter, {"message": {"role": "assistant"}, "done": False}),
    "ai_sdk": ("ai_sdk._adapter", AISDKAdapter, {"type": "start"}),
}


def _failing(error: BaseException) -> Callable[..., Any]:
    def reader(*args: Any) -> Any:
        raise error

    return reader


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize(
    "defect",
    [NameError("name 'oops' is not defined"), AttributeError("'NoneType' has no 'x'")],
    ids=["NameError", "AttributeError"],
)
def test_a_defect_in_the_adapter_propagates(
    name: str, defect: Exception, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, make, item = ROWS[name]
    monkeypatch.setattr(f"toolcall_tracker.adapters.{module}._get", _failing(defect))
    with pytest.raises(type(defect)) as raised:
        make().feed(item)
    assert raised.value is defect


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize(
    "error",
    [DecodeError("a hostile property"), KeyError("k"), TypeError("t"), ValueError("v")],
    ids=["DecodeError", "KeyError", "TypeError", "ValueError"],
)
def test_a_decoding_error_is_the_items_own(
    name: str, error: Exception, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, make, item = ROWS[name]
    monkeypatch.setattr(f"toolcall_tracker.adapters.{module}._get", _failing(error))
    adapter = make()
    assert adapter.feed(item) == []  # ignored (and logged at DEBUG), nothing raised
    monkeypatch.undo()
    assert [event.type for event in adapter.end()] == ["end"]  # the stream goes on


class _Hostile:
    """An SDK-like object whose every field read raises something no shape check knows."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"hostile {name}")


class _HostileMapping(dict[str, Any]):
    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("hostile get")


def test_get_turns_what_a_read_raised_into_a_decode_error() -> None:
    with pytest.raises(DecodeError, match=r"_Hostile\.type") as raised:
        _get(_Hostile(), "type")
    assert isinstance(raised.value.__cause__, RuntimeError)
    with pytest.raises(DecodeError, match="'type'"):
        _get(_HostileMapping(), "type")
    assert _get(object(), "type") is None  # a missing field is no error
    assert DecodeError in READ_ERRORS
    for defect in (AttributeError, NameError, RuntimeError, AssertionError):
        assert not issubclass(defect, READ_ERRORS)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_a_hostile_item_is_ignored_by_every_adapter(name: str) -> None:
    _, make, _ = ROWS[name]
    adapter = make()
    for _ in range(3):  # again once its class is known (the fast paths read it directly)
        assert adapter.feed(_Hostile()) == []
