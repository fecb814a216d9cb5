"""Replay every fuzz corpus input through the fuzz targets' invariants (no atheris needed).

The corpora live in ``fuzz/corpus/<target>/`` (inputs the fuzzers found interesting, kept
small) and ``fuzz/seeds/<target>/`` (the hand-made and fixture-derived seeds). The checks
are the very functions the fuzz targets run, from ``fuzz/_checks.py``; see ``fuzz/`` for
the commands that grow the corpora.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))

import _checks  # noqa: E402

TARGETS = {"fuzz_json": _checks.check_json, "fuzz_adapters": _checks.check_adapters}

KNOWN: dict[str, str] = {}
"""Corpus files named ``crash-<known bug>-<hash>`` reproduce a reported bug: xfail(strict).
(``crash-surrogate-id-*`` and ``crash-long-id-*`` reproduce bugs fixed since: they are plain
regression inputs.)"""


def corpus(target: str) -> list[Path]:
    files: list[Path] = []
    for kind in ("corpus", "seeds"):
        directory = FUZZ / kind / target
        if directory.is_dir():
            files.extend(sorted(p for p in directory.iterdir() if p.is_file()))
    return files


def marks(path: Path) -> list[pytest.MarkDecorator]:
    for name, reason in KNOWN.items():
        if path.name.startswith(f"crash-{name}-"):
            return [pytest.mark.xfail(strict=True, reason=reason)]
    return []


CASES = [
    pytest.param(
        target, path, id=f"{target}/{path.parent.parent.name}/{path.name}", marks=marks(path)
    )
    for target in TARGETS
    for path in corpus(target)
]


def test_corpora_are_present() -> None:
    for target in TARGETS:
        assert corpus(target), f"no corpus for {target}"


def test_adapters_are_all_fuzzed() -> None:
    assert _checks.ADAPTER_NAMES == [
        "AISDKAdapter",
        "AnthropicAdapter",
        "GeminiAdapter",
        "OpenAIChatAdapter",
        "OpenAIResponsesAdapter",
    ]


@pytest.mark.parametrize(("target", "path"), CASES)
def test_corpus_input(target: str, path: Path) -> None:
    TARGETS[target](path.read_bytes())
