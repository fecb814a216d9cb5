"""Every adapter's "malformed" value shares one base, and keeps its own kind and fields."""

from __future__ import annotations

import pytest

from toolcall_tracker import CallFailure, adapters
from toolcall_tracker.adapters import ai_sdk, anthropic, gemini, openai
from toolcall_tracker.failures import MalformedStreamItem

MALFORMED = [
    anthropic.AnthropicMalformedEvent,
    adapters.BedrockMalformedEvent,
    adapters.CohereMalformedEvent,
    gemini.GeminiMalformedCall,
    adapters.OllamaMalformedToolCall,
    openai.OpenAIMalformedToolCall,
    ai_sdk.AISDKMalformedPart,
]


@pytest.mark.parametrize("cls", MALFORMED, ids=lambda cls: cls.__name__)
def test_a_malformed_value_is_a_malformed_stream_item_with_its_own_kind(
    cls: type[CallFailure],
) -> None:
    assert issubclass(cls, MalformedStreamItem)
    kind = cls.model_fields["kind"].default
    assert isinstance(kind, str)
    assert "malformed" in kind


def test_the_base_has_no_kind_of_its_own_so_stored_outcomes_revive_the_subclass() -> None:
    from toolcall_tracker.runner._store import _failure_classes

    kinds = _failure_classes()
    assert MalformedStreamItem not in kinds.values()
    for cls in MALFORMED:
        assert kinds[cls.model_fields["kind"].default] is cls


def _all_subclasses(cls: type[CallFailure]) -> set[type[CallFailure]]:
    found: set[type[CallFailure]] = set()
    todo = [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("toolcall_tracker.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def test_every_malformed_class_the_adapters_define_is_listed_here() -> None:
    import inspect

    from toolcall_tracker._registry import load_homes

    load_homes()  # every provider's failure values, each in its home
    found = {
        value
        for value in _all_subclasses(CallFailure)
        if "Malformed" in value.__name__
        and inspect.isclass(value)
        and issubclass(value, CallFailure)
        and value is not MalformedStreamItem
    }
    assert found == set(MALFORMED)


def test_the_openai_value_keeps_its_api_field_and_its_openai_base() -> None:
    value = openai.OpenAIMalformedToolCall(api="responses", message="m", field="name")
    assert isinstance(value, openai.OpenAICallFailure)
    assert value.model_dump()["api"] == "responses"
