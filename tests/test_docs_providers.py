"""Every Python block in docs/providers.md runs as written (a subprocess each, from the root)."""

from __future__ import annotations

import pytest

from _doc_blocks import ROOT, python_blocks, run_block

PAGE = ROOT / "docs" / "providers.md"
BLOCKS = python_blocks(PAGE)


def test_the_page_has_python_blocks() -> None:
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line-{line}" for line, _ in BLOCKS])
def test_a_block_runs_as_written(line: int, code: str) -> None:
    run_block(PAGE, line, code)
