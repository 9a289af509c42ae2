"""The `gate` command line: the parser, and the one error boundary that turns every failure into an exit code.

Each command's arguments and body live in its module under gates/commands/; this module builds only the
selected command's parser and runs it. Nothing below here prints a traceback or exits.
"""

from __future__ import annotations

import sys

from gates import __version__
from gates.commands import COMMANDS as _TABLE
from gates.infra.console import StdoutError, say, silence_stdout
from gates.infra.errors import INTERNAL, INTERRUPTED, USAGE, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import ModuleType
    from typing import Any, NoReturn

    from gates.commands.invocation import Run

COMMANDS = frozenset(_TABLE)



def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `selected`, only that command's own parser is built (the others are never needed)."""
    import argparse

    class Parser(argparse.ArgumentParser):
        """argparse, with a usage error in one line naming the command, and no abbreviated options."""

        def error(self, message: str) -> NoReturn:
            self.exit(USAGE, f"{self.prog}: error: {message} (`{self.prog} --help` lists what it takes)\n")

        def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
            parsed, extras = self.parse_known_args(args, namespace)
            owner = parsed.__dict__.pop("parser", None)  # the command's own parser, set as a default below
            if extras:  # said by the command's parser, not gate's: `gate check --bogus` is check's mistake
                (owner or self).error(f"unrecognized arguments: {' '.join(extras)}")
            return parsed

    parser = Parser(
        allow_abbrev=False,
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
        command = sub.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)
        command.set_defaults(func=module.run, parser=command)
        module.add_arguments(command, name)
        for action in command._actions:  # argparse tells a hidden option by identity with its own SUPPRESS
            if action.help == commands.HIDDEN:
                action.help = argparse.SUPPRESS
    return parser


def run(argv: list[str], run: Run) -> int:
    """Parse `argv` and run its command: every exception becomes an exit code and, but for usage, a flag."""
    first = next((a for a in argv if not a.startswith("-")), None)
    try:
        args = _plain(argv) or build_parser(first if first in COMMANDS else None).parse_args(argv)
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


class _Spec:
    """A command's arguments as its `add_arguments` declares them, collected without argparse.

    It parses only the plain invocation (`gate check --only ID FILE...`, `gate brief --format
    claude`): exact option names, a value that is allowed and converts, positionals in one run,
    at most one option of an exclusive group. Whatever else (help, an abbreviation, a bad value,
    a second run of positionals, a form it does not know) is left to argparse, so every message and
    every refusal is argparse's own. A hook's `gate check` skips building a parser, and importing
    argparse (with shutil, which it pulls in), on every commit.
    """

    def __init__(self) -> None:
        self.options: dict[str, tuple[str, dict[str, Any], int]] = {}  # name -> (dest, declaration, group)
        self.defaults: dict[str, Any] = {}
        self.positional: str | None = None
        self.plain = True  # every declaration was one this class understands
        self.epilog: str | None = None
        self.groups = 0

    def add_argument(self, *names: str, _group: int = 0, **kwargs: Any) -> None:
        action, nargs = kwargs.get("action", "store"), kwargs.get("nargs")
        if action not in ("store", "store_true") or nargs not in (None, "*", "?") or kwargs.get("required"):
            self.plain = False
            return
        if not names[0].startswith("-"):
            if nargs != "*" or self.positional is not None:
                self.plain = False
            self.positional = names[0]
            self.defaults[names[0]] = []
            return
        if nargs == "*":
            self.plain = False
            return
        dest = kwargs.get("dest") or names[-1].lstrip("-").replace("-", "_")
        self.defaults[dest] = kwargs.get("default", False if action == "store_true" else None)
        for name in names:
            self.options[name] = (dest, kwargs, _group)

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Group:
        if kwargs.get("required"):
            self.plain = False
        self.groups += 1
        return _Group(self, self.groups)

    def parse(self, argv: list[str]) -> dict[str, Any] | None:
        values = dict(self.defaults)
        rest: list[str] = []
        state = "before"  # positionals: before their run, in it, after it (argparse takes one run)
        chosen: dict[int, str] = {}  # exclusive group -> the option given
        words = list(argv)
        at = 0
        while at < len(words):
            word = words[at]
            at += 1
            if word == "--" or word.startswith("-") and word != "-":
                name, eq, given = word.partition("=")
                value: str | None = given
                if name not in self.options:
                    return None
                dest, kwargs, group = self.options[name]
                if group and chosen.setdefault(group, dest) != dest:
                    return None  # two of an exclusive group: argparse says so
                if kwargs.get("action") == "store_true":
                    if eq:
                        return None
                    values[dest] = True
                else:
                    if not eq and kwargs.get("nargs") == "?":
                        taken = at < len(words) and not words[at].startswith("-")
                        value, at = (words[at], at + 1) if taken else (kwargs.get("const"), at)
                    elif not eq:
                        if at >= len(words) or words[at].startswith("-"):
                            return None
                        value, at = words[at], at + 1
                    try:
                        values[dest] = kwargs["type"](value) if "type" in kwargs and value is not None else value
                    except Exception:
                        return None
                    if "choices" in kwargs and values[dest] not in kwargs["choices"]:
                        return None
                state = "after" if state == "in" else state
            elif self.positional is None or state == "after":
                return None
            else:
                state = "in"
                rest.append(word)
        if self.positional is not None:
            values[self.positional] = rest
        return values


class _Group:
    """An exclusive group of a _Spec: its options are the spec's, marked with the group."""

    def __init__(self, spec: _Spec, number: int) -> None:
        self.spec = spec
        self.number = number

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        self.spec.add_argument(*names, _group=self.number, **kwargs)


def _plain(argv: list[str]) -> Any:
    """The parsed arguments of a plain invocation `gate COMMAND ...`, or None for argparse to parse."""
    if not argv or argv[0] not in COMMANDS:
        return None
    from gates import commands

    module: ModuleType = commands.module(argv[0])
    spec = _Spec()
    module.add_arguments(spec, argv[0])
    values = spec.parse(argv[1:]) if spec.plain else None
    if values is None:
        return None
    namespace: Any = type(sys.implementation)  # types.SimpleNamespace, without importing types
    return namespace(command=argv[0], func=module.run, **values)


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
