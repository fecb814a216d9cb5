"""Every Python block in docs/providers.md runs as written (a subprocess each, from the root)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
BLOCKS = [
    (PAGE[: match.start()].count("\n") + 1, match.group(1))
    for match in re.finditer(r"```python\n(.*?)```", PAGE, re.S)
]


def test_the_page_has_python_blocks() -> None:
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line-{line}" for line, _ in BLOCKS])
def test_a_block_runs_as_written(line: int, code: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"docs/providers.md line {line}:\n{result.stderr[-2000:]}"
