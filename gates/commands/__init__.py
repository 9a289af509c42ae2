"""One module per command (or family), each owning its `add_arguments(parser, name)` and its `run(args, run)`.

COMMANDS maps a command's name to its module's name and its one-line help, in the order `gate --help` lists
them: only the selected command's module is imported (`gate check` on every commit builds one parser).
Helpers shared by several commands (the invocation, the remote half of claims) are the modules not named here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

HIDDEN = "==SUPPRESS=="  # argparse.SUPPRESS, without importing argparse: an option left out of --help

COMMANDS: dict[str, tuple[str, str]] = {
    'check': ('check', "run the enabled gates on the hand-over file"),
    'config': ('config', "print the effective configuration"),
    'schema': ('config', "print a shipped JSON Schema"),
    'flags': ('flags', "print every open flag verbatim, oldest first"),
    'init': ('init', "write HANDOFF.md, ARCHIVE.md and .gate.yaml where they are missing"),
    'claim': ('claims', "claim the state file for this worktree (first mover wins)"),
    'release': ('claims', "release this worktree's claim, or break another's with --force"),
    'claims': ('claims', "list every claim with holder, age, TTL and liveness"),
    'brief': ('brief', "the session-start briefing: flags, the tripwire, the claim, the hand-over"),
    'closeout': ('closeout', "the stop hook: block the stop until the session's close-out is done"),
    'stamp': ('stamp', "close-out: set Meta ref to HEAD and updated to now, atomically"),
    'journal': ('journal', "print the audit journal of every action the gate took"),
    'archive': ('archive', "move every checked item (with its children) to the archive"),
    'render': ('archive', "regenerate the table regions of the hand-over file from the records"),
    'record': ('archive', "make records: `gate record new TITLE`"),
    'mailbox': ('mailbox', "the work-package mailbox: `gate mailbox take` prints it and clears it"),
    'install-hooks': ('install_hooks', "write native git hooks that run the gate (no framework needed)"),
    'doctor': ('doctor', "check the wiring and the environment, and say what to fix"),
    'locks': ('locks', "list git lock files with a verdict: fresh, live, stale or ineligible"),
}


def module(name: str) -> ModuleType:
    """The module of the command `name`, imported now."""
    found: ModuleType = __import__(f"gates.commands.{COMMANDS[name][0]}", fromlist=["run"])
    return found
