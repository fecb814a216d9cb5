"""Every Python block in docs/durable-turns.md runs as written (a subprocess each, from the
repo root)."""

from __future__ import annotations

import pytest

from _doc_blocks import ROOT, python_blocks, run_block

PAGE = ROOT / "docs" / "durable-turns.md"
BLOCKS = python_blocks(PAGE)


def test_the_page_has_python_blocks() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line-{line}" for line, _ in BLOCKS])
def test_a_block_of_the_durable_page_runs_as_written(line: int, code: str) -> None:
    run_block(PAGE, line, code)
