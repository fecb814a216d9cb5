"""Python blocks of a Markdown page, and running one as written (not a test module)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """Each ```` ```python ```` block of ``page``: its first line number and its code."""
    text = page.read_text(encoding="utf-8")
    return [
        (text[: match.start()].count("\n") + 1, match.group(1))
        for match in re.finditer(r"```python\n(.*?)```", text, re.S)
    ]


def run_block(page: Path, line: int, code: str) -> None:
    """Run ``code`` in a subprocess from the repo root; fail with its stderr if it fails."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{page.name} line {line}:\n{result.stderr[-2000:]}"
