"""The commands: one module per command (or family), each owning its `add_arguments(parser, name)` and its
`run(args, run)`; here, what they share: the table of them, and the invocation each is given.

COMMANDS maps a command's name to its module's name, its one-line help and whether it asks git where the repository
is as it begins (`early`: beside the imports; only the commit's hot path, `gate check`, does), in the order
`gate --help` lists them: only the selected command's module is imported (`gate check` on every commit builds one
parser). The other shared modules are `_remote` (the remote half of claims) and `_hooks` (what the harness hooks share).

`Invocation` is one invocation of `gate`: the repository once found, the failure reasons and events to flag at the
end. Every command's `run(args, run)` is given one; `gates.cli.main` makes it and writes its flags when it ends. A
command reports through its methods alone (fail, deny, notice, announce: what to flag; judged, passes: what a check
settled; did: what was changed); none writes a field of it.

The one error boundary (`guarded`) sorts whatever a body raises into one `Failure`; what is done with it is the
caller's policy, and there are two: `fail` (the command line, gates/cli.py: one line on stderr, a flag, the
documented exit code) and let through (a harness hook, which must never wedge or fail the session: the stop hook
lets the stop through and says why, the start hook hands the model the reason in its envelope; both exit 0 and
flag it).
"""

import os
import time

from gates.infra.console import say
from gates.infra.errors import CANNOT_RUN, INTERNAL, INTERRUPTED, VIOLATION, GateError
from gates.infra.git import Early, Repo
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable, TypeVar

    T = TypeVar("T")

    from gates.infra.config import Config
    from gates.infra.findings import CheckResult

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


def module(name: str) -> "ModuleType":
    """The module of the command `name`, imported now."""
    found: ModuleType = __import__(f"gates.commands.{COMMANDS[name].module}", fromlist=["run"])
    return found


# What a run's `config-invalid` flag is about when it could not use the configuration (the flag's `about`), so that a
# later check that loads the configuration ends the flag (docs/flags-and-journal.md).
CONFIGURATION: dict[str, str | None] = {"input": "configuration"}


class Invocation:
    """One invocation: the repository once found, and the failure reasons to flag at the end."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self._repo: Repo | None = None
        self._config: Config | None = None
        # What the command reported, through the methods below only (no command writes these): read at the end.
        self._reasons: list[tuple[str, str]] = []
        self._events: list[tuple[str, str]] = []
        self.started_ns = time.time_ns()  # a flag raised by a run begun later is not this run's to resolve
        self._gate_of: dict[tuple[str, str], str] = {}  # (reason, message) -> the gate whose failure it is
        self._about: dict[tuple[str, str], dict[str, str | None]] = {}  # (reason, message) -> what it is about
        self._scope: dict[str, Any] | None = None  # what this check judged (changes.scope_of)
        self._passed: list[str] = []  # gates that ran in this check and found no error
        self._done: list[str] = []  # what this run changed, said again if its output is lost
        # A command declared `early` (COMMANDS) asks git where the repository is now and reads the answer in repo();
        # it is stopped at the end if unread.
        entry = COMMANDS.get(argv[0]) if argv else None
        self._early = Early() if entry is not None and entry.early else None

    @property
    def command(self) -> str:
        """The command line as a shell would take it back, for flags and the journal."""
        from gates.infra.text import shell_join

        return shell_join(["gate", *self.argv])

    def repo(self) -> Repo:
        if self._repo is None:
            from gates.infra.git import discover

            self._repo = discover(early=self._early)
        return self._repo

    def config(self) -> "Config":
        """The configuration, loaded once. When it cannot be used, the error says so for its flag (CONFIGURATION):
        the next `gate check` that loads it ends the flag, whichever command raised it."""
        if self._config is None:
            from gates.infra import config

            try:
                self._config = config.load(self.repo())
            except GateError as exc:
                if exc.reason == "config-invalid":
                    exc.about = CONFIGURATION
                raise
        return self._config

    def remote_name(self, named: object) -> str | None:
        """The git remote of remote claims: the one named on the command line (`named`, when a string), else
        claims.remote, else None (then claims are local only)."""
        if isinstance(named, str):
            return named
        configured = self.config().section("claims").get("remote")
        return str(configured) if configured else None

    def fail(self, reason: str, message: str, *, gate: str | None = None,
             about: dict[str, str | None] | None = None) -> None:
        """A reason this run failed: flagged when it ends with exit 1, 3 or 4; with `gate`, resolved by its next pass;
        with `about` (an event's: what this run found unsound), resolved by a later run that finds that sound
        (flags.resolve_event)."""
        self._reasons.append((reason, message))
        if gate is not None:
            self._gate_of[(reason, message)] = gate
        if about is not None:
            self._about[(reason, message)] = about

    def notice(self, reason: str, message: str, *, about: dict[str, str | None] | None = None) -> None:
        """An event the next session must hear of even though the run succeeds (a claim broken, say); `about` as
        for fail."""
        self._events.append((reason, message))
        if about is not None:
            self._about[(reason, message)] = about

    def judged(self, scope: "dict[str, Any]") -> None:
        """What this check judged (changes.scope_of): its gates' flags are raised and resolved in this scope."""
        self._scope = scope

    def passes(self, gate: str) -> None:
        """`gate` ran in this check and found no error: its open flags in this worktree and scope resolve at the end."""
        self._passed.append(gate)

    def did(self, what: str) -> None:
        """Something this run changed, said again if its output is lost (a stamp, say)."""
        self._done.append(what)

    def deny(self, reason: str, message: str, *, gate: str | None = None) -> int:
        """A request refused: say why on stdout, flag it, exit 1; with `gate`, the flag resolves as that gate's."""
        print(message)
        self.fail(reason, message, gate=gate)
        return VIOLATION

    def scoped_as_check(self) -> None:
        """Flag this run's gate-tagged failures in the scope of a plain `gate check` of this worktree."""
        from gates.domain import changes

        handoff = self.repo().path(self.config().section("handoff")["path"])
        self._scope = changes.scope_of(self.repo(), [], None, handoff)

    def judged_as_check(self, gate: str) -> None:
        """This run settled what `gate` judges in a plain `gate check` of this worktree: the flags its failures
        raised (and denials tagged with it) resolve when the run ends, as they do when that gate passes."""
        self.scoped_as_check()
        self._passed.append(gate)

    def announce(self, reason: str, message: str) -> None:
        """Something the next session must hear of, said now and flagged."""
        print(message)
        self.notice(reason, message)

    def close(self) -> None:
        """The end of the invocation: every git call started for it and never read is stopped and reaped."""
        if self._early is not None:
            self._early.drop()
        if self._repo is not None:
            self._repo.drop_started()

    def settle(self, reason: str, **which: "Any") -> list[str] | None:
        """End this worktree's open `reason` event flags whose cause this run found gone (flags.resolve_event: those
        raised before it began, narrowed by `which`): the ids ended, or None when they could not be moved. One
        listdir first: with no flag of `reason` in the folder, the flags module is not even loaded."""
        repo = self.repo()
        if not flagged(repo, (reason,)):
            return []
        from gates.domain import flags

        return _resolving(lambda: flags.resolve_event(repo, reason, command=self.command, observed_ns=self.started_ns,
                                                      **which))

    def resolve_passed(self) -> None:
        """Resolve now the open flags, in this worktree and the scope judged, of the gates that passed (`passes`),
        and say so; write_flags does it at the end for what was reported since."""
        flagged = _open_here(self._repo, self) if self._passed and self._scope is not None and self._repo else []
        passed, self._passed = self._passed, []
        if flagged:
            from gates.domain import flags

            repo, scope = self._repo, self._scope
            assert repo is not None and scope is not None
            ended = _resolving(lambda: flags.resolve(repo, passed, scope, command=self.command,
                                                     observed_ns=self.started_ns))
            if ended:  # said, as the doctor says its own: a flag that vanished unannounced looks lost
                gates = sorted({flags.reason_of_id(flag_id) for flag_id in ended})  # a gate's flags: its id
                say(f"gate: resolved {len(ended)} open flag{'s' if len(ended) > 1 else ''} of {', '.join(gates)}: "
                    f"{'it passes' if len(gates) == 1 else 'they pass'} now (`gate flags --all` lists them)")

    def write_flags(self, code: int) -> int:
        """Resolve the flags of the gates that passed in this check, then flag this run's failures and events."""
        self.resolve_passed()
        pending = list(self._events)
        if code in (VIOLATION, CANNOT_RUN, INTERNAL):
            pending += self._reasons
        if not pending:
            return code
        if self._repo is None:
            try:
                self.repo()  # a command that never needed it (`gate schema`, `--help`) can still be flagged
            except GateError:
                if any(reason != "not-a-repository" for reason, _ in pending):  # else the error said it already
                    say("gate: no flag written: not inside a repository")
                return code
        assert self._repo is not None
        from gates.domain import flags, journal

        for reason, message in pending:
            gate = self._gate_of.get((reason, message))
            try:
                flags.raise_flag(self._repo, reason, message, command=self.command, exit_code=code, gate=gate,
                                 scope=self._scope if gate else None, observed_ns=self.started_ns,
                                 about=self._about.get((reason, message)))
            except journal.NotJournalled as exc:
                say(f"gate: raised the {reason} flag, but the journal could not record it: {exc.cause.render()}")
            except GateError as exc:
                say(f"gate: could not write the {reason} flag: {exc.render()}")
            except OSError as exc:
                say(f"gate: could not write the {reason} flag: {exc}")
        return code


def flagged(repo: Repo, reasons: tuple[str, ...]) -> set[str]:
    """Which of the event `reasons` have a flag file in the flags folder (named `…-REASON-…`): one listdir, and the
    flags module not loaded; none when there is no folder."""
    from gates.infra import state

    try:
        names = os.listdir(state.layout(repo).flags)
    except OSError:
        return set()
    return {reason for reason in reasons if any(f"-{reason}-" in name for name in names)}


def passing(result: "CheckResult", fixers: "set[str] | frozenset[str]" = frozenset()) -> list[str]:
    """The gates of `result` that passed: ran, judged something, found no error (and mended nothing: `fixers`)."""
    failed = {finding.gate for finding in result.errors}
    return [gate for gate in result.gates if gate not in failed and gate not in result.unjudged and gate not in fixers]


def _resolving(resolve: "Callable[[], list[str]]") -> list[str] | None:
    """`resolve()`'s answer, the ids of the flags it ended; None when it could not move them, which is said: the flags
    stay open for a later run, and this run goes on (an old flag's bookkeeping is no reason to fail a check)."""
    try:
        return resolve()
    except GateError as exc:
        say(f"gate: could not resolve flags: {exc.render()}")
    except OSError as exc:
        say(f"gate: could not resolve flags: {exc}")
    return None


class Failure:
    """What the boundary caught: `error`, a GateError (an expected failure: `error` holds it); `interrupted`
    (Ctrl-C); `timeout` (past the boundary's time bound); `bug`, any other exception (`frames`: its last ones).
    A plain class: it is made on every run's import, and a NamedTuple's class costs more to make."""

    __slots__ = ("kind", "message", "error", "frames")

    def __init__(self, kind: str, message: str, error: GateError | None = None, frames: str = "") -> None:
        self.kind = kind
        self.message = message  # one line, as every policy says it
        self.error = error
        self.frames = frames


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout()


def guarded(body: "Callable[[], T]", timeout: float | None = None) -> "tuple[T | None, Failure | None]":
    """The one error boundary: `body()`'s value and None, or None and what it raised, sorted (a broken pipe is the
    stdout error it is; stdout is silenced first). With `timeout`, a body still running after that many seconds
    is stopped by SIGALRM and is a `timeout`."""
    from gates.infra.console import StdoutError, silence_stdout

    previous = None
    if timeout is not None:
        import signal

        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return body(), None
    except _Timeout:
        return None, Failure("timeout", f"it took longer than {timeout:.0f}s")
    except GateError as exc:
        return None, Failure("error", exc.render(), exc)
    except KeyboardInterrupt:
        return None, Failure("interrupted", "interrupted")
    except BrokenPipeError as exc:  # a pipe written past the guard: the same io-error as a closed stdout
        silence_stdout()
        error = StdoutError(exc)
        return None, Failure("error", error.render(), error)
    except Exception as exc:  # the boundary: a bug, reported short
        import traceback

        frames = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)).rstrip("\n")
        return None, Failure("bug", f"internal error: {type(exc).__name__}: {exc}", None, frames)
    finally:
        if timeout is not None:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def fail(failure: Failure, run: Invocation) -> int:
    """The command line's policy: one line on stderr (a bug's last frames too), a flag unless it is a usage error or
    an interruption, the documented exit code."""
    if failure.kind == "interrupted":
        say("gate: interrupted")
        return INTERRUPTED
    if failure.error is not None:
        return failed(failure.error, run)
    say("gate: internal error (a bug in handoff-gate; please report it):\n" + failure.frames)
    run.fail("internal-error", failure.message)
    return INTERNAL


def failed(exc: GateError, run: Invocation) -> int:
    """An expected failure: one line on stderr, a flag unless it is a usage error, its exit code."""
    from gates.infra.console import StdoutError
    from gates.infra.errors import USAGE

    message = exc.render()
    if isinstance(exc, StdoutError) and run._done:
        message += f" (the output is lost; done before it: {'; '.join(run._done)})"
    say(f"gate: {message}")
    if exc.code != USAGE:
        run.fail(exc.reason, message, about=exc.about)
    return exc.code


def flag_reason(failure: Failure) -> str:
    """The flag reason a let-through policy raises for `failure`."""
    return failure.error.reason if failure.error is not None else "internal-error"



def ids(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _open_here(repo: Repo, run: Invocation) -> list[str]:
    """The gates that passed with a flag open in this worktree and scope: when none has, there is nothing to
    resolve and the flags module is not even loaded (flags open in other worktrees, a denied claim's, say, are
    theirs to resolve)."""
    from gates.domain import changes

    return list(changes.open_markers(repo, run._passed, run._scope))
