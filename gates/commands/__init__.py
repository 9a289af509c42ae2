"""One module per command (or family), each owning its `add_arguments(parser, name)` and its `run(args, run)`.

COMMANDS maps a command's name to its module's name, its one-line help and whether it asks git where the repository
is as it begins (`early`: beside the imports; only the commit's hot path, `gate check`, does), in the order
`gate --help` lists them: only the selected command's module is imported (`gate check` on every commit builds one
parser).
Helpers shared by several commands (the invocation, the remote half of claims) are the modules not named here.
"""

from __future__ import annotations

from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

HIDDEN = "==SUPPRESS=="  # argparse.SUPPRESS, without importing argparse: an option left out of --help


class Command(NamedTuple):
    """A command of COMMANDS: the module that owns it, its help line, and whether it discovers the repository early."""

    module: str
    help: str
    early: bool = False


COMMANDS: dict[str, Command] = {
    'check': Command('check', "run the enabled gates on the hand-over file", early=True),
    'config': Command('config', "print the effective configuration"),
    'schema': Command('config', "print a shipped JSON Schema"),
    'flags': Command('flags', "print every open flag verbatim, oldest first"),
    'init': Command('init', "write HANDOFF.md, ARCHIVE.md and .gate.yaml where they are missing; it never overwrites a file"),
    'adopt': Command('init', "take an existing hand-over file under the gate: write its .gate.yaml, add its Meta"),
    'claim': Command('claims', "claim the state file for this worktree (first mover wins)"),
    'release': Command('claims', "release this worktree's claim, or break another's with --force"),
    'claims': Command('claims', "list every claim with holder, age, TTL and liveness"),
    'brief': Command('brief', "the session-start briefing: flags, the tripwire, the claim, the hand-over"),
    'closeout': Command('closeout', "the stop hook: block the stop until the session's close-out is done"),
    'stamp': Command('stamp', "close-out: set Meta ref to HEAD and updated to now, atomically"),
    'journal': Command('journal', "print the audit journal of every action the gate took"),
    'archive': Command('archive', "move every checked item (with its children) to the archive"),
    'render': Command('archive', "regenerate the table regions of the hand-over file from the records"),
    'record': Command('archive', "make records: `gate record new TITLE`"),
    'mailbox': Command('mailbox', "the work-package mailbox: `gate mailbox take` prints it and clears it"),
    'install-hooks': Command('install_hooks', "write native git hooks that run the gate (no framework needed)"),
    'doctor': Command('doctor', "check the wiring and the environment, and say what to fix"),
    'locks': Command('locks', "list git lock files with a verdict: fresh, live, stale or ineligible"),
}


def module(name: str) -> ModuleType:
    """The module of the command `name`, imported now."""
    found: ModuleType = __import__(f"gates.commands.{COMMANDS[name].module}", fromlist=["run"])
    return found
