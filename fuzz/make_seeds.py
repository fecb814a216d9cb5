"""Write the seed corpora in fuzz/seeds/<target>/ (run once; the seeds are committed).

    .venv/bin/python fuzz/make_seeds.py

fuzz_json: a few JSON texts (valid and not) with cut points. fuzz_adapters: the provider
transcripts in tests/fixtures/, one item per line, prefixed by the adapter's index.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fuzz"))

from _checks import ADAPTER_NAMES  # noqa: E402

FIXTURE_ADAPTER = {
    "ai_sdk": "AISDKAdapter",
    "anthropic": "AnthropicAdapter",
    "gemini": "GeminiAdapter",
    "openai_chat": "OpenAIChatAdapter",
    "openai_responses": "OpenAIResponsesAdapter",
}

JSON_SEEDS = [
    '{"q": "hi", "n": [1, 2.5, -3e2, true, false, null]}',
    '{"a": {"b": {"c": [[], {}]}}}',
    '"\\ud800\\udc00 \\u00e9 \\n"',
    '{"k": 1, "k": 2}',
    "[" * 60 + "]" * 60,
    "1e400",
    "-0",
    "NaN",
    '{"a": 01}',
    '{"a": "\x01"}',
    "\ufeff{}",
    " \t\n\r[1]\r\n",
    "{} {}",
    "",
    '{"emoji": "\U0001f600", "raw": "\ud800"}',
]


def write(target: str, data: bytes) -> None:
    out = ROOT / "fuzz" / "seeds" / target
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def main() -> None:
    for text in JSON_SEEDS:
        body = text.encode("utf-8", "surrogatepass")
        write("fuzz_json", b"\x00" + body)
        write("fuzz_json", b"\x03\x20\x80\xe0" + body)
    for directory in sorted((ROOT / "tests" / "fixtures").iterdir()):
        name = FIXTURE_ADAPTER.get(directory.name)
        if name not in ADAPTER_NAMES:
            continue
        index = ADAPTER_NAMES.index(name)
        for path in sorted(directory.iterdir()):
            text = path.read_text()
            if path.suffix == ".json":
                items = json.loads(text)
                lines = [json.dumps(item) for item in items]
            else:
                lines = [
                    line[len("data:") :].strip()
                    for line in text.splitlines()
                    if line.startswith("data:") and line[len("data:") :].strip() != "[DONE]"
                ]
            write("fuzz_adapters", bytes([index, 0]) + "\n".join(lines).encode())


if __name__ == "__main__":
    main()
