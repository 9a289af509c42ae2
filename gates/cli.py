"""The `gate` command line: the parser, and the one error boundary that turns every failure into an exit code.

Each command's arguments and body live in its module under gates/commands/; this module builds only the
selected command's parser and runs it. Nothing below here prints a traceback or exits.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gates import __version__
from gates.commands import COMMANDS as _TABLE
from gates.infra.console import StdoutError, say, silence_stdout
from gates.infra.errors import INTERNAL, INTERRUPTED, USAGE, GateError

if TYPE_CHECKING:
    from gates.commands.invocation import Run

COMMANDS = frozenset(_TABLE)



def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `selected`, only that command's own parser is built (the others are never needed)."""
    parser = argparse.ArgumentParser(
        prog="gate",
        description="Keep a project's hand-over file trustworthy.",
        epilog="Exit codes: 0 clean; 1 violations or request denied; 2 usage error; 3 cannot run; "
        "4 internal error; 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"handoff-gate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from gates import commands

    for name, (_, help_text) in _TABLE.items():
        if selected is not None and name != selected:
            continue  # its module is not even imported
        module = commands.module(name)
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(func=module.run)
        module.add_arguments(command, name)
    return parser


def run(argv: list[str], run: Run) -> int:
    """Parse `argv` and run its command: every exception becomes an exit code and, but for usage, a flag."""
    first = next((a for a in argv if not a.startswith("-")), None)
    try:
        args = build_parser(first if first in COMMANDS else None).parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else USAGE
    except StdoutError as exc:  # --help or --version to a closed or full stdout
        return failed(exc, run)
    try:
        code = int(args.func(args, run))
    except GateError as exc:
        code = failed(exc, run)
    except KeyboardInterrupt:
        say("gate: interrupted")
        return INTERRUPTED
    except BrokenPipeError as exc:  # a pipe written past the guard: the same io-error
        silence_stdout()
        code = failed(StdoutError(exc), run)
    except Exception as exc:  # the boundary: a bug, reported short and flagged
        code = _internal_error(exc, run)
    return code


def failed(exc: GateError, run: Run) -> int:
    """An expected failure: one line on stderr, a flag unless it is a usage error, its exit code."""
    message = exc.render()
    if isinstance(exc, StdoutError) and run.done:
        message += f" (the output is lost; done before it: {'; '.join(run.done)})"
    say(f"gate: {message}")
    if exc.code != USAGE:
        run.fail(exc.reason, message)
    return exc.code


def _internal_error(exc: Exception, run: Run) -> int:
    import traceback

    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)
    say("gate: internal error (a bug in handoff-gate; please report it):\n" + "".join(frames).rstrip("\n"))
    run.fail("internal-error", f"internal error: {type(exc).__name__}: {exc}")
    return INTERNAL


def __getattr__(name: str) -> Any:
    """`from gates.cli import main`, as hooks installed by earlier versions in users' repositories still say."""
    if name == "main":
        from gates.main import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
