"""Every Python block in docs/approvals-across-requests.md runs as written (a subprocess
each, from the repo root)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "approvals-across-requests.md"
TEXT = PAGE.read_text(encoding="utf-8")
BLOCKS = [
    (TEXT[: match.start()].count("\n") + 1, match.group(1))
    for match in re.finditer(r"```python\n(.*?)```", TEXT, re.S)
]


def test_the_page_has_python_blocks() -> None:
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line-{line}" for line, _ in BLOCKS])
def test_a_block_of_the_approvals_page_runs_as_written(line: int, code: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{PAGE.name} line {line}:\n{result.stderr[-2000:]}"
