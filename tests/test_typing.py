"""The typed path for SDK users: plain ``mypy --strict`` (no plugin, no configuration)
accepts a program that passes the library's tool definitions and feedback straight to the
OpenAI and Anthropic clients, and ``Delta(args_text_delta=...)``.

The program, ``tests/typing/sdk_user.py``, is checked (never run) with the installed mypy,
in one run together with a program that must fail, so the check is shown to have teeth.
The SDKs' types are large: mypy's cache lives in the system's temporary directory, kept
between runs (a cold run takes about 20 s of CPU, a warm one about 2 s).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")
pytest.importorskip("openai")
pytest.importorskip("anthropic")
import mypy.version  # noqa: E402

HERE = Path(__file__).parent
PROGRAM = HERE / "typing" / "sdk_user.py"
SRC = HERE.parent / "src"

WRONG = """\
from anthropic import Anthropic
from toolcall_tracker import Delta
from toolcall_tracker.tools import anthropic_tools

def f(client: Anthropic) -> None:
    client.messages.create(model="m", max_tokens=1, messages=anthropic_tools([]))

Delta(id="a", argsTextDelta="x")
"""


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    wrong = tmp_path_factory.mktemp("typing") / "wrong_user.py"
    wrong.write_text(WRONG)
    version = f"{mypy.version.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    cache = Path(tempfile.gettempdir()) / f"toolcall-tracker-mypy-cache-{version}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MYPYPATH", str(SRC))  # this checkout's sources, as if installed
        stdout, stderr, status = api.run(
            [
                "--strict",
                "--config-file",
                "",  # the user's configuration: none, so no plugin
                "--cache-dir",
                str(cache),
                "--python-version",
                "3.10",
                "--no-error-summary",
                str(PROGRAM),
                str(wrong),
            ]
        )
    return stdout + stderr, status


def errors_in(output: str, name: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(rf"{name}\.py:\d+: error", line)]


def test_a_strict_program_hands_definitions_and_feedback_to_the_sdks(
    mypy_output: tuple[str, int],
) -> None:
    output, status = mypy_output
    assert status == 1, output  # the wrong program, only
    assert errors_in(output, "sdk_user") == [], output
    # no error inside the library itself (a note pointing at a definition is fine)
    library = [line for line in output.splitlines() if "toolcall_tracker" in line.split(":")[0]]
    assert not [line for line in library if ": error:" in line], output


def test_the_check_catches_wrong_types(mypy_output: tuple[str, int]) -> None:
    output, _ = mypy_output
    errors = "\n".join(errors_in(output, "wrong_user"))
    assert 'Argument "messages" to "create" of "Messages"' in errors, output
    assert 'Unexpected keyword argument "argsTextDelta" for "Delta"' in errors, output
