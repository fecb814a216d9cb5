"""Every Python block in README.md and docs/**/*.md runs as written (a subprocess each).

Blocks run from the repository root, on the interpreter running the tests. The only block
allowed to skip is one that needs a real provider key; a block that uses a deprecated
import path of this library fails: it is preceded by a comment
``<!-- needs-env: OPENAI_API_KEY -->`` naming the variables, and skips when one is unset.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?:<!-- needs-env: ([A-Z0-9_ ]+) -->\n)?```python\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, str, list[str]]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text[: match.start(2)].count("\n")
            where = f"{page.relative_to(ROOT).as_posix()}:{line}"
            found.append((where, match.group(2), (match.group(1) or "").split()))
    return found


BLOCKS = _blocks()


def test_the_docs_have_python_blocks() -> None:
    pages = {where.split(":")[0] for where, _, _ in BLOCKS}
    assert "README.md" in pages
    assert len(BLOCKS) >= 30
    assert len(pages) >= 15


def test_a_skip_names_only_provider_keys() -> None:
    for where, _, needs in BLOCKS:
        assert all(name.endswith("_API_KEY") for name in needs), where


@pytest.mark.parametrize(("where", "code", "needs"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_a_docs_block_runs_as_written(where: str, code: str, needs: list[str]) -> None:
    missing = [name for name in needs if not os.environ.get(name)]
    if missing:
        pytest.skip(f"needs a real provider key: {', '.join(missing)}")
    result = subprocess.run(
        # A deprecated path of ours in the docs fails the block.
        [sys.executable, "-W", "error:toolcall_tracker:DeprecationWarning", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{where}:\n{result.stderr[-2000:]}"


_FILE = re.compile(r"`([A-Za-z_][\w/]*\.py)`")
_NAME = re.compile(r"`(toolcall_tracker(?:\.\w+)+)`")
_SOURCE = ROOT / "src" / "toolcall_tracker"
# Span and event names of the OpenTelemetry page are strings, not Python names.
_NAMES_NOT_PYTHON = {"docs/observability.md"}


def _resolves(dotted: str) -> bool:
    import importlib
    import warnings

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_a_documented_file_or_name_exists_in_the_code() -> None:
    """A page that names a module file (``_writer.py``, ``benchmarks/run.py``) or a dotted
    name (``toolcall_tracker.runner.RunnerSettings``) names something that exists: the
    docs that drift from the code fail here, not in a reader's hands."""
    sources = {path.name for path in _SOURCE.rglob("*.py")}
    others = {
        path.name
        for top in ("benchmarks", "examples", "tests")
        for path in (ROOT / top).rglob("*.py")
    }
    missing = []
    for page in PAGES:
        where = page.relative_to(ROOT).as_posix()
        text = page.read_text(encoding="utf-8")
        for name in sorted(set(_FILE.findall(text))):
            if not (ROOT / name).exists() and name.rsplit("/", 1)[-1] not in sources | others:
                missing.append(f"{where}: file {name}")
        if where in _NAMES_NOT_PYTHON:
            continue
        for dotted in sorted(set(_NAME.findall(text))):
            if not _resolves(dotted):
                missing.append(f"{where}: name {dotted}")
    assert not missing, "\n".join(missing)
