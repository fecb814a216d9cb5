"""Each provider's ``text_of``: the model's text deltas, on real recordings (as plain
dicts and as the official SDKs' typed objects), on small items of the formats without
recordings, and on hostile input (never raises)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_real_streams import RECORDED, load_items, recordings

from _typed import typed
from toolcall_tracker._registry import get, providers

TEXT_FORMATS = [provider.format for provider in providers() if provider.text_of is not None]


def text_of(fmt: str, item: Any) -> str | None:
    extract = get(fmt).text_of
    assert extract is not None
    return extract(item)


def joined(fmt: str, items: list[Any]) -> str:
    return "".join(text for item in items if (text := text_of(fmt, item)) is not None)


def test_every_format_with_text_declares_it() -> None:
    assert set(TEXT_FORMATS) == {
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
        "ai-sdk",
        "ai-sdk-v4",
        "bedrock",
        "cohere",
        "mistral",
        "ollama",
    }


@pytest.mark.parametrize("rel", recordings() or ["none"])
def test_recorded_text_is_the_same_on_dicts_and_sdk_objects(rel: str) -> None:
    if rel == "none":
        pytest.skip(f"no recordings in {RECORDED}")
    fmt = rel.partition("/")[0].replace("_", "-")
    for item in load_items(RECORDED / rel):
        text = text_of(fmt, item)
        assert text is None or (isinstance(text, str) and text)
        obj = typed(fmt, item)
        if obj is not None:
            assert text_of(fmt, obj) == text


def recorded(fmt_dir: str) -> list[str]:
    return [rel for rel in recordings() if rel.startswith(f"{fmt_dir}/")]


@pytest.mark.parametrize("rel", recorded("openai_responses") or ["none"])
def test_responses_deltas_add_up_to_the_done_text(rel: str) -> None:
    if rel == "none":
        pytest.skip(f"no recordings in {RECORDED}")
    items = load_items(RECORDED / rel)
    done = [item["text"] for item in items if item.get("type") == "response.output_text.done"]
    assert joined("openai-responses", items) == "".join(done)


@pytest.mark.parametrize("rel", recorded("gemini") or ["none"])
def test_gemini_text_is_what_google_genai_says(rel: str) -> None:
    if rel == "none":
        pytest.skip(f"no recordings in {RECORDED}")
    for item in load_items(RECORDED / rel):
        obj = typed("gemini", item)
        if obj is None:
            pytest.skip("google-genai is not installed")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "there are non-text parts"
            expected = obj.text or None
        assert text_of("gemini", item) == expected


@pytest.mark.parametrize("rel", recorded("anthropic") or ["none"])
def test_anthropic_text_is_every_text_delta(rel: str) -> None:
    if rel == "none":
        pytest.skip(f"no recordings in {RECORDED}")
    items = load_items(RECORDED / rel)
    texts = [text_of("anthropic", item) for item in items]
    blocks = sum(1 for item in items if '"text_delta"' in json.dumps(item.get("delta")))
    assert sum(text is not None for text in texts) == blocks


def test_a_recording_with_text_gives_it() -> None:
    path = RECORDED / "anthropic" / "claude_text_then_json_tool.sse"
    if not path.is_file():
        pytest.skip(f"no recording {path}")
    text = joined("anthropic", load_items(path))
    assert len(text) > 10
    assert "{" not in text[:1]  # the tool's JSON input is not text


SMALL = [
    ("openai-chat", {"choices": [{"index": 0, "delta": {"content": "hi"}}]}, "hi"),
    ("openai-chat", {"choices": [{"index": 0, "delta": {"tool_calls": []}}]}, None),
    ("openai-chat", {"choices": []}, None),
    ("openai-responses", {"type": "response.output_text.delta", "delta": "hi"}, "hi"),
    ("openai-responses", {"type": "response.function_call_arguments.delta", "delta": "{"}, None),
    (
        "anthropic",
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}},
        "hi",
    ),
    (
        "anthropic",
        {"type": "content_block_delta", "delta": {"type": "input_json_delta", "partial_json": "{"}},
        None,
    ),
    ("gemini", {"candidates": [{"content": {"parts": [{"text": "a"}, {"text": "b"}]}}]}, "ab"),
    ("gemini", {"candidates": [{"content": {"parts": [{"text": "x", "thought": True}]}}]}, None),
    ("ai-sdk", {"type": "text-delta", "id": "t", "delta": "hi"}, "hi"),
    ("ai-sdk", {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "{"}, None),
    ("ai-sdk-v4", '0:"hi\\n"', "hi\n"),
    ("ai-sdk-v4", b'data: 0:"hi"\n', "hi"),
    ("ai-sdk-v4", 'c:{"toolCallId":"c","argsTextDelta":"{"}', None),
    ("ai-sdk-v4", "0:not json", None),
    ("bedrock", {"contentBlockDelta": {"delta": {"text": "hi"}, "contentBlockIndex": 0}}, "hi"),
    ("bedrock", {"contentBlockDelta": {"delta": {"toolUse": {"input": "{"}}}}, None),
    ("cohere", {"type": "content-delta", "delta": {"message": {"content": {"text": "hi"}}}}, "hi"),
    ("cohere", {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "x"}}}, None),
    ("mistral", {"data": {"choices": [{"index": 0, "delta": {"content": "hi"}}]}}, "hi"),
    ("ollama", {"message": {"role": "assistant", "content": "hi"}, "done": False}, "hi"),
    ("ollama", {"message": {"role": "assistant", "content": ""}, "done": True}, None),
    ("ollama", {"choices": [{"index": 0, "delta": {"content": "hi"}}]}, "hi"),
]


@pytest.mark.parametrize(("fmt", "item", "expected"), SMALL)
def test_text_of_small_items(fmt: str, item: Any, expected: str | None) -> None:
    assert text_of(fmt, item) == expected


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from(
        [
            "content_block_delta",
            "text_delta",
            "text-delta",
            "response.output_text.delta",
            "content-delta",
            '0:"x"',
            "0:[",
            "",
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "delta",
                    "text",
                    "choices",
                    "content",
                    "candidates",
                    "parts",
                    "message",
                    "data",
                    "contentBlockDelta",
                    "thought",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(fmt=st.sampled_from(TEXT_FORMATS), item=JSON | st.binary(max_size=8))
def test_text_of_never_raises(fmt: str, item: Any) -> None:
    text = text_of(fmt, item)
    assert text is None or (isinstance(text, str) and text)
