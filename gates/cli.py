"""The `gate` command line: the parser, and its command run inside the one error boundary (invocation.guarded)
under the command line's policy, which turns every failure into an exit code.

Each command's arguments and body live in its module under gates/commands/; this module builds only the
selected command's parser and runs it. Nothing below here prints a traceback or exits.
"""

from gates import __version__
from gates.commands import COMMANDS as _TABLE
from gates.commands import fail, failed, guarded
from gates.infra.argspec import Spec
from gates.infra.console import StdoutError
from gates.infra.errors import USAGE
from gates.infra.plain import Namespace

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import ModuleType
    from typing import Any, NoReturn

    from gates.commands import Invocation

COMMANDS = frozenset(_TABLE)


def _suggest(message: str, options: list[str]) -> str:
    """argparse's message with the closest name where one is close: "invalid choice: 'chek' — did you mean
    'check'?" for a command (instead of the whole list), "unrecognized arguments: --formt (did you mean
    --format?)" for an option of the command."""
    import difflib

    head, found, rest = message.partition("argument COMMAND: invalid choice: ")
    if found and not head and rest.count("'") >= 2:
        asked = rest.split("'")[1]
        close = difflib.get_close_matches(asked, sorted(COMMANDS), n=1)
        return f"{found}'{asked}' — did you mean '{close[0]}'?" if close else message
    if message.startswith("unrecognized arguments: --"):
        asked = message.split()[2].partition("=")[0]
        close = difflib.get_close_matches(asked, [o for o in options if o.startswith("--")], n=1)
        return f"{message} (did you mean {close[0]}?)" if close else message
    return message


def build_parser(selected: str | None = None) -> "argparse.ArgumentParser":
    """The parser; with `selected`, only that command's own parser is built (the others are never needed)."""
    import argparse

    class Parser(argparse.ArgumentParser):
        """argparse, with a usage error in one line naming the command, and no abbreviated options."""

        def error(self, message: str) -> "NoReturn":
            said = _suggest(message, sorted(self._option_string_actions))
            self.exit(USAGE, f"{self.prog}: error: {said} (`{self.prog} --help` lists what it takes)\n")

        def parse_args(self, args: "Any" = None, namespace: "Any" = None) -> "Any":
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

    for name, entry in _TABLE.items():
        if selected is not None and name != selected:
            continue  # its module is not even imported
        module = commands.module(name)
        command = sub.add_parser(name, help=entry.help, description=entry.help, allow_abbrev=False)
        command.set_defaults(func=module.run, parser=command)
        module.add_arguments(command, name)
        for action in command._actions:  # argparse tells a hidden option by identity with its own SUPPRESS
            if action.help == commands.HIDDEN:
                action.help = argparse.SUPPRESS
    return parser


def run(argv: list[str], run: "Invocation") -> int:
    """Parse `argv` and run its command inside the boundary (invocation.guarded) under the command line's policy:
    every exception becomes an exit code and, but for usage, a flag."""
    first = next((a for a in argv if not a.startswith("-")), None)
    try:
        args = _plain(argv) or build_parser(first if first in COMMANDS else None).parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else USAGE
    except StdoutError as exc:  # --help or --version to a closed or full stdout
        return failed(exc, run)
    code, failure = guarded(lambda: int(args.func(args, run)))
    return fail(failure, run) if failure is not None else int(code or 0)


def _plain(argv: list[str]) -> "Any":
    """The parsed arguments of a plain invocation `gate COMMAND ...`, or None for argparse to parse."""
    if not argv or argv[0] not in COMMANDS:
        return None
    from gates import commands

    module: ModuleType = commands.module(argv[0])
    spec = Spec()
    module.add_arguments(spec, argv[0])
    values = spec.parse(argv[1:]) if spec.plain else None
    if values is None:
        return None
    return Namespace(command=argv[0], func=module.run, **values)


def __getattr__(name: str) -> "Any":
    """The cli -> main shim: `from gates.cli import main`, as hooks installed by earlier versions in users'
    repositories still say. The one place cli reaches main (tests/test_architecture.py holds it so)."""
    if name == "main":
        from gates.main import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
