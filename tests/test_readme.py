"""Every Python block in README.md runs as written (a subprocess each, from the repo root)."""

from __future__ import annotations

import pytest

from _doc_blocks import ROOT, python_blocks, run_block

README = ROOT / "README.md"
BLOCKS = python_blocks(README)


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line-{line}" for line, _ in BLOCKS])
def test_a_readme_block_runs_as_written(line: int, code: str) -> None:
    run_block(README, line, code)
