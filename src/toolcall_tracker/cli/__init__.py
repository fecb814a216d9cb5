"""The ``toolcall-tracker`` command line: replay and visualise recorded streams.

Commands::

    toolcall-tracker replay FILE [--format FORMAT] [--events] [--json] [--svg SVG]
                                 [--live | --plain] [--speed FACTOR]
    toolcall-tracker validate FILE... [--format FORMAT]
    toolcall-tracker demo [--backend asyncio|trio] [--svg SVG] [--fast] [--live | --plain]

``replay`` reads a recorded stream, feeds every item through the provider's adapter (or,
for the ``events`` format, applies the protocol events directly) into a
:func:`~toolcall_tracker.tool_call_streaming_state_machine`, and prints a table of the
calls, how the turn ended and the events the machine ignored (with their reasons).
On a terminal with rich installed (the ``[cli]`` extra) it first shows a live table of
the calls while it replays (at the recorded speed for a timed recording, whose items are
``{"t": seconds, "item": {...}}``), then the summary as rich tables; otherwise (piped,
``--plain``, or without rich) plain text that fits the width (``COLUMNS``).
``--events`` adds a timeline: one line per tracker event, with the stream item it came
from and a column per call showing which calls were open at that point. ``--json`` prints
one JSON document instead, for scripts. ``--svg`` writes a timeline picture.

``validate`` replays each file quietly and fails if any call ended in ``error``, the turn
did not end ok, or any event was ignored: a check for CI.

``demo`` runs a simulated turn through the tracker and the runner and shows it.

Input files (``-`` reads standard input) hold one of:

- a server-sent-event transcript as the providers send it (``event:`` / ``data:`` lines,
  blank lines between events, ``:`` comments); ``data: [DONE]`` ends the stream, as it
  does for the official clients;
- JSON Lines, one item per line;
- a JSON array of items (or a single JSON object, one item);
- a raw AWS event-stream body (``application/vnd.amazon.eventstream``, what Bedrock's
  ``ConverseStream`` sends), recognised by its first message's prelude CRC; each message
  is checked (lengths, CRCs, at most 16 MiB) and becomes the event dict boto3 yields.

Every item is a JSON object, except in a line protocol's text lines (the AI SDK v4 data
stream, ``9:{...}``, read line by line). The formats are those of the provider registry
(the private ``_registry``). ``--format auto`` (the default) recognises the format from
the items' shapes: ``events`` (the protocol's own ``start``/``delta``/``ready``/``result``/
``error``/``end`` events), ``openai-chat`` (Chat Completions chunks), ``openai-responses``
(Responses API events), ``anthropic`` (Messages stream events), ``gemini``
(``GenerateContentResponse`` chunks), ``ai-sdk`` (Vercel AI SDK UI message parts),
``ai-sdk-v4`` (AI SDK v4 data stream lines),
``bedrock`` (Bedrock ``ConverseStream`` event dicts or a raw body), ``cohere`` (v2 chat
stream events), ``ollama`` (native ``/api/chat`` lines) or ``mistral`` (dumped
``mistralai`` ``CompletionEvent`` objects; Mistral's wire chunks are Chat Completions
chunks, recognised as ``openai-chat``, which reads them the same). LiteLLM's chunks are
``openai-chat``.

An ``events`` stream that does not end with an ``end`` event ends the turn normally when it
is exhausted, as :meth:`ToolCallTracker.consume <toolcall_tracker.ToolCallTracker.consume>`
does; a provider stream ends as its adapter's ``end()`` says.

Input is read as the replay goes, with bounded memory: a line, and the data of one SSE
event, may be at most 16 MiB of text, a JSON document (array) at most 64 MiB (record longer
streams as JSON Lines or SSE); a binary file fails on its first 64 KiB. The ``--events``
rows and the ignored events are kept in a temporary file, not in memory, until the report
is written at the end.

Exit codes: ``0`` every call succeeded (or is still running) and the turn ended ok
(``validate``: and nothing was ignored); ``1`` a call failed or the turn did not end ok
(``replay`` prints its report anyway; ``validate``: or an event was ignored); ``2`` a usage
error (a ``--format`` that fits no item, ``--live`` without rich, an SVG that cannot be
written), or an input that cannot be read (missing, not UTF-8 text, not JSON, not a stream
of JSON objects, an invalid protocol event, a line or document over its limit, a
corrupted or cut-off event-stream message). Input never
causes a traceback: problems are reported on standard error in one line naming the file
and the line or item.

Text taken from the input (ids, names, arguments) is printed with control and other
non-printable characters escaped, so a hostile stream cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from collections.abc import Callable
from contextlib import closing
from typing import Final

from .. import __version__
from .._registry import OLD_NAMES
from .._registry import formats as registered_formats
from ._detect import FORMATS
from ._input import InputError
from ._json_out import JsonReport
from ._render import TextReport, ValidateReport
from ._replay import Replay, replay
from ._text import clean, count, end_text, terminal_width, write
from ._watch import ReplayWatch

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "FORMATS", "main"]

EXIT_OK: Final = 0
"""Every call succeeded (or is running) and the turn ended ok."""
EXIT_FAILED: Final = 1
"""A call ended in ``error`` or the turn did not end ok (``validate``: or an event was ignored)."""
EXIT_USAGE: Final = 2
"""A usage error, or an input that cannot be read."""

_PROG: Final = "toolcall-tracker"
_JOURNALS: Final = ("sqlite:", "redis:", "rediss:", "unix:")  # how a journal's location starts


def _fail(path: str, message: str) -> None:
    """Report an unreadable input on standard error, in one line."""
    write(sys.stderr, f"{_PROG}: error: {clean(path)}: {message}\n")


class _UsageError(Exception):
    """A usage error found after parsing (exit code 2, one line on standard error)."""


def rich_available() -> bool:
    """Whether :mod:`rich` (the ``[cli]`` extra) can be imported."""
    try:
        importlib.import_module("rich")
    except ImportError:
        return False
    return True


def _live_wanted(args: argparse.Namespace) -> bool:
    """The live view: with ``--live``, or by default when stdout is a terminal and rich
    is installed; never with ``--plain`` or ``--json``."""
    if getattr(args, "json", False) or args.plain:
        return False
    if args.live:
        if not rich_available():
            raise _UsageError("--live needs the rich package: pip install 'toolcall-tracker[cli]'")
        return True
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty()) and rich_available()


def _write_svg(path: str, text: str) -> bool:
    """Write the SVG file; on failure report it in one line and return ``False``."""
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as exc:
        _fail(path, f"cannot write the SVG: {exc.strerror or exc}")
        return False
    return True


def _svg_title(done: Replay) -> str:
    """The SVG's title line for a replay."""
    return (
        f"{done.path}: {done.format}, {count(len(done.calls), 'call')}, turn {end_text(done.end)}"
    )


def _cmd_replay(args: argparse.Namespace) -> int:
    """``replay FILE``: print the report (or the JSON document) of one stream."""
    path: str = args.file
    if path.startswith(_JOURNALS):  # a journal: replay one of its turns
        from ._journal import replay_journal

        return replay_journal(args)
    if args.turn is not None or args.follow or args.prefix is not None:
        raise _UsageError(
            "TURN, --follow and --prefix are for a journal (sqlite:///FILE.db TURN or "
            "redis://host:port/db TURN)"
        )
    live = _live_wanted(args)
    width = terminal_width()
    report = JsonReport() if args.json else TextReport(width)
    watch: ReplayWatch | None = None
    with closing(report):
        try:
            if live:
                from ._live import LiveView, console, summary

                out = console(sys.stdout, width, force=args.live)
                view = LiveView(out, f"replaying {clean(path)}")
                watch = ReplayWatch(view, speed=args.speed)
                with view:
                    done = replay(path, args.format, report, timeline=args.events, watch=watch)
            else:
                watch = ReplayWatch(None) if args.svg else None
                done = replay(path, args.format, report, timeline=args.events, watch=watch)
        except InputError as exc:
            _fail(path, str(exc))
            return EXIT_USAGE
        except MemoryError:
            _fail(path, "out of memory while replaying the stream")
            return EXIT_USAGE
        if live:
            assert isinstance(report, TextReport)
            assert watch is not None
            for line in report.head(done, events=args.events):
                out.print(line, markup=False, highlight=False, overflow="fold")
            summary(out, done.calls, watch.log, report.tail(done))
        else:
            report.write(done, sys.stdout, events=args.events)
    if args.svg and watch is not None:
        from ._svg import svg

        if not _write_svg(args.svg, svg(watch.log, _svg_title(done))):
            return EXIT_USAGE
    return EXIT_OK if done.ok else EXIT_FAILED


def _cmd_demo(args: argparse.Namespace) -> int:
    """``demo``: a simulated turn, shown live (or as plain text), optionally drawn."""
    from ._demo import demo

    try:
        done = demo(
            backend=args.backend,
            fast=args.fast,
            live=_live_wanted(args),
            force=args.live,
            width=terminal_width(),
        )
    except ModuleNotFoundError as exc:  # trio not installed
        raise _UsageError(f"the {args.backend} backend needs the {exc.name} package") from None
    if args.svg:
        from ._svg import svg

        if not _write_svg(args.svg, svg(done.log, done.title)):
            return EXIT_USAGE
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    """``validate FILE...``: one line per file (and per problem); the worst exit code."""
    worst = EXIT_OK
    for path in args.files:
        with closing(ValidateReport()) as report:
            try:
                done = replay(path, args.format, report, timeline=False)
            except InputError as exc:
                _fail(path, str(exc))
                worst = EXIT_USAGE
                continue
            except MemoryError:
                _fail(path, "out of memory while replaying the stream")
                worst = EXIT_USAGE
                continue
            if report.write(done, sys.stdout):
                worst = max(worst, EXIT_FAILED)
    return worst


def _parser() -> argparse.ArgumentParser:
    """The argument parser of the command line."""
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Replay and visualise recorded LLM tool-call streams.",
        epilog="Exit codes: 0 ok; 1 a call failed or the turn did not end ok (validate: or "
        "an event was ignored); 2 usage error or unreadable input.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    formats = ["auto", *registered_formats()]  # the registry, read now
    format_help = "the stream's format (default: auto, recognised from the items)"

    def format_name(value: str) -> str:  # an old name (seed) is its new one (events)
        return OLD_NAMES.get(value, value)

    replay = commands.add_parser(
        "replay",
        help="replay a recorded stream and print its calls",
        description="Replay a recorded stream (SSE transcript, JSON Lines or a JSON array) "
        "through the state machine and print the calls, the turn's end and the ignored "
        "events.",
    )
    replay.add_argument(
        "file",
        metavar="FILE",
        help="the recorded stream ('-': stdin), or a journal: sqlite:///relative/or/absolute.db "
        "or redis://host:port/db (rediss://, unix:///path?db=N)",
    )
    replay.add_argument("turn", metavar="TURN", nargs="?", help="a journal's turn id")
    replay.add_argument(
        "--follow",
        action="store_true",
        help="journal: print new records as they are written, until the turn ends",
    )
    replay.add_argument(
        "--prefix",
        metavar="PREFIX",
        help="Redis journal: its key prefix (RedisJournal(prefix=...); default toolcall-tracker:)",
    )
    replay.add_argument(
        "--timeout",
        type=_speed,
        default=60.0,
        metavar="SECONDS",
        help="journal --follow: give up after this long (default 60)",
    )
    replay.add_argument(
        "--format", type=format_name, choices=formats, default="auto", help=format_help
    )
    replay.add_argument(
        "--events",
        action="store_true",
        help="also print a timeline: each tracker event, its item, and the calls' states",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON document instead")
    replay.add_argument(
        "--svg", metavar="SVG", help="also write a timeline picture of the calls to this file"
    )
    replay.add_argument(
        "--speed",
        type=_speed,
        default=1.0,
        metavar="FACTOR",
        help="live view of a timed recording: play it FACTOR times faster than recorded "
        "(0: as fast as possible; default 1)",
    )
    _view_options(replay)
    replay.set_defaults(handler=_cmd_replay)

    demo = commands.add_parser(
        "demo",
        help="run a simulated turn and show its calls live",
        description="Run a built-in simulated model turn (interleaved calls streaming, "
        "tools starting while later calls still stream, one failure) through the tracker "
        "and the runner, and show it live; plain text when stdout is not a terminal.",
    )
    demo.add_argument(
        "--backend", choices=["asyncio", "trio"], default="asyncio", help="the event loop"
    )
    demo.add_argument("--svg", metavar="SVG", help="also write a timeline picture to this file")
    demo.add_argument("--fast", action="store_true", help="run 50 times faster (for tests)")
    _view_options(demo)
    demo.set_defaults(handler=_cmd_demo)

    validate = commands.add_parser(
        "validate",
        help="fail if a call failed, the turn did not end ok or an event was ignored",
        description="Replay each stream and exit 1 if any call ended in error, a turn did "
        "not end ok or any event was ignored (2 if a file cannot be read).",
    )
    validate.add_argument("files", metavar="FILE", nargs="+", help="recorded streams")
    validate.add_argument(
        "--format", type=format_name, choices=formats, default="auto", help=format_help
    )
    validate.set_defaults(handler=_cmd_validate)
    return parser


def _speed(text: str) -> float:
    """``--speed``: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def _view_options(parser: argparse.ArgumentParser) -> None:
    """``--live`` / ``--plain``."""
    view = parser.add_mutually_exclusive_group()
    view.add_argument(
        "--live",
        action="store_true",
        help="show the live view even when stdout is not a terminal (needs rich)",
    )
    view.add_argument("--plain", action="store_true", help="print plain text, even on a terminal")


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    See the module documentation for the commands and the exit codes. Never raises for
    bad input or bad arguments: it reports them on standard error and returns 2.
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except _UsageError as exc:
        write(sys.stderr, f"{_PROG}: error: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`
        _silence_stdout()
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
