"""The `gate` command: argument parsing, the one error boundary, exit codes and flags.

Nothing below this module prints or exits; commands return an exit code and record the
reasons of a failure, and `main()` turns every failure into a flag.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TextIO, cast

from gates import __version__
from gates.errors import (
    CANNOT_RUN,
    INTERNAL,
    INTERRUPTED,
    OK,
    USAGE,
    VIOLATION,
    GateError,
)
from gates.git import Repo

if TYPE_CHECKING:
    from datetime import datetime

    from gates.claims import Holder
    from gates.config import Config
    from gates.findings import CheckResult
    from gates.locks import Moved


class Run:
    """One invocation: the repository once found, and the failure reasons to flag at the end."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.command = shlex.join(["gate", *argv])
        self._repo: Repo | None = None
        self._config: Config | None = None
        self.reasons: list[tuple[str, str]] = []
        self.events: list[tuple[str, str]] = []
        self.started_ns = time.time_ns()  # a flag raised by a run begun later is not this run's to resolve
        self.gate_of: dict[tuple[str, str], str] = {}  # (reason, message) -> the gate whose failure it is
        self.scope: dict[str, Any] | None = None  # what this check judged (flags.scope_of)
        self.passed: list[str] = []  # gates that ran in this check and found no error
        self.done: list[str] = []  # what this run changed, said again if its output is lost

    def repo(self) -> Repo:
        if self._repo is None:
            from gates.git import discover

            self._repo = discover()
        return self._repo

    def config(self) -> Config:
        if self._config is None:
            from gates import config

            self._config = config.load(self.repo())
        return self._config

    def fail(self, reason: str, message: str, *, gate: str | None = None) -> None:
        """A reason this run failed: flagged when it ends with exit 1, 3 or 4; with `gate`, resolved by its next pass."""
        self.reasons.append((reason, message))
        if gate is not None:
            self.gate_of[(reason, message)] = gate

    def notice(self, reason: str, message: str) -> None:
        """An event the next session must hear of even though the run succeeds (a claim broken, say)."""
        self.events.append((reason, message))

    def deny(self, reason: str, message: str) -> int:
        """A request refused: say why on stdout, flag it, exit 1."""
        print(message)
        self.fail(reason, message)
        return VIOLATION

    def announce(self, reason: str, message: str) -> None:
        """Something the next session must hear of, said now and flagged."""
        print(message)
        self.notice(reason, message)

    def write_flags(self, code: int) -> int:
        """Resolve the flags of the gates that passed in this check, then flag this run's failures and events."""
        if self.passed and self.scope is not None and self._repo is not None:
            from gates import flags

            try:
                flags.resolve(self._repo, self.passed, self.scope, command=self.command, observed_ns=self.started_ns)
            except GateError as exc:
                print(f"gate: could not resolve flags: {exc.render()}", file=sys.stderr)
            except OSError as exc:
                print(f"gate: could not resolve flags: {exc}", file=sys.stderr)
        pending = list(self.events)
        if code in (VIOLATION, CANNOT_RUN, INTERNAL):
            pending += self.reasons
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
        from gates import flags, journal

        for reason, message in pending:
            gate = self.gate_of.get((reason, message))
            try:
                flags.raise_flag(self._repo, reason, message, command=self.command, exit_code=code, gate=gate,
                                 scope=self.scope if gate else None, observed_ns=self.started_ns)
            except journal.NotJournalled as exc:
                say(f"gate: raised the {reason} flag, but the journal could not record it: {exc.cause.render()}")
            except GateError as exc:
                say(f"gate: could not write the {reason} flag: {exc.render()}")
            except OSError as exc:
                say(f"gate: could not write the {reason} flag: {exc}")
        return code


class StdoutError(GateError):
    """The output could not be written: a closed pipe, a full disk, an I/O error."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write to stdout: {exc.strerror or exc}", reason="io-error")


class _GuardedStdout:
    """Stands in for sys.stdout during a run: a failed write or flush becomes a StdoutError (exit 3).

    After the first failure, stdout is pointed at /dev/null so that nothing later (the interpreter's
    own flush at exit included) fails again; further writes raise, a flush does nothing."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.broken: StdoutError | None = None

    def write(self, text: str) -> int:
        if self.broken is not None:
            raise self.broken
        try:
            return int(self.stream.write(text))
        except OSError as exc:
            raise self._fail(exc) from None

    def flush(self) -> None:
        if self.broken is not None:
            return
        try:
            self.stream.flush()
        except OSError as exc:
            raise self._fail(exc) from None

    def _fail(self, exc: OSError) -> StdoutError:
        self.broken = StdoutError(exc)
        silence_stdout(self.stream)
        return self.broken

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def silence_stdout(stream: Any = None) -> None:
    """After a broken pipe or a full disk: point stdout at /dev/null so that the final flush cannot fail."""
    _silence(sys.__stdout__ if stream is None else stream)


def _silence(stream: Any) -> None:
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file (a test's capture): nothing will flush it at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def say(line: str) -> None:
    """One line on stderr, when stderr works: a closed or full stderr is not a reason to fail."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except OSError:
        _silence(sys.stderr)


def _emit_json(document: object) -> None:
    import json

    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _ids(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _agent_names(text: str) -> str:
    from gates.agents import AGENTS

    unknown = [name for name in _ids(text) if name not in AGENTS]
    if unknown or not _ids(text):
        raise argparse.ArgumentTypeError(f"unknown agent {(unknown or [text])[0]!r} (known: {', '.join(AGENTS)})")
    return text


def cmd_check(args: argparse.Namespace, run: Run) -> int:
    from gates import report

    try:
        result, fixed = _check(run, args)
        result.fixed = [line for _, line in fixed]
    except GateError as exc:
        if exc.code != USAGE:
            sys.stdout.write(_render(report, args.format, None, exc.code, exc))
        raise
    code = VIOLATION if result.errors or fixed else OK
    if fixed and args.format in ("text", "github"):
        print("\n".join(line for _, line in fixed))
    sys.stdout.write(_render(report, args.format, result, code, None))
    for gate_id, line in fixed:  # resolved when that gate next passes: the fix was staged
        run.fail("autofix-applied", line, gate=gate_id)
    from gates.registry import flag_reason

    for gate_id in result.gates:
        lines = [f.render() for f in result.errors if f.gate == gate_id]
        if lines:
            run.fail(flag_reason(gate_id), "\n".join(lines), gate=gate_id)
        elif not any(fixer == gate_id for fixer, _ in fixed):
            run.passed.append(gate_id)  # write_flags resolves its open flags in this worktree and scope
    from gates.check import ENVIRONMENT

    lines = [f.render() for f in result.errors if f.gate == ENVIRONMENT]
    if lines:
        run.fail("io-error", "\n".join(lines))  # a killed writer's temp file staged for the commit
    for reason, message in result.events:
        run.notice(reason, message)
    return code


def _check(run: Run, args: argparse.Namespace) -> tuple[CheckResult, list[tuple[str, str]]]:
    """Run the gates on the state as it is now: every check judges afresh, nothing is replayed."""
    from gates import check, flags

    repo, config = run.repo(), run.config()
    gate_ids = check.select(config, args.only, args.skip)
    fixed = _fix(run, config, gate_ids) if args.fix else []
    files = [Path(f).absolute() for f in args.files]
    run.scope = flags.scope_of(repo, files, args.range, repo.toplevel / config.section("handoff")["path"])
    push = None
    if args.remote or args.pre_push or "handoff-claim-remote" in gate_ids and os.environ.get("PRE_COMMIT_TO_REF") \
            or "handoff-claim-remote" in args.only:  # at push time (issue 18)
        from gates import handoff_claim_remote

        push = handoff_claim_remote.updates(repo, sys.stdin if args.pre_push else None, os.environ)
        if "handoff-claim-remote" not in gate_ids and "handoff-claim-remote" not in args.skip:
            gate_ids.append("handoff-claim-remote")
    result = check.run(repo, config, gate_ids, files, range_spec=args.range, push=push)
    return result, fixed


def _render(report: Any, fmt: str, result: Any, code: int, error: GateError | None) -> str:
    if fmt == "json":
        return str(report.as_json(result, code, error))
    if fmt == "github":
        return str(report.github(result, error))
    if fmt == "sarif":
        return str(report.sarif(result, code, error))
    if fmt == "junit":
        return str(report.junit(result, error))
    return str(report.text(result)) if result is not None else ""


def _fix(run: Run, config: Config, gate_ids: list[str]) -> list[tuple[str, str]]:
    """What pre-commit fixers do: change the files, say so, and make the run exit 1 so they are staged again.

    Each fix is (the gate that fixed, what it did)."""
    from gates import archive, tables

    said = []
    if "handoff-no-checked-items" in gate_ids:
        moves = archive.archive(run.repo(), config, _now())
        if moves:
            said.append(("handoff-no-checked-items",
                         f"fixed: moved {len(moves)} checked item(s) to {config.section('archive')['path']}: "
                         + "; ".join(m.item.text[:60] for m in moves) + " — stage both files again"))
    if "handoff-tables" in gate_ids:
        stale, _ = tables.render_file(run.repo(), config, write=True)
        if stale:
            said.append(("handoff-tables",
                         f"fixed: rendered {len(stale)} table(s) in {config.section('handoff')['path']} — stage it again"))
    return said


def cmd_config(args: argparse.Namespace, run: Run) -> int:

    config = run.config()
    if args.format == "json":
        _emit_json(dict(config))
        return OK
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    sys.stdout.write(f"# effective configuration ({'from ' + config.source if config.source else 'defaults'})\n")
    yaml.dump(dict(config), sys.stdout)
    return OK


def cmd_schema(args: argparse.Namespace, run: Run) -> int:
    from gates import schemas

    sys.stdout.write(schemas.schema_path(args.name).read_text(encoding="utf-8"))
    return OK


def cmd_flags(args: argparse.Namespace, run: Run) -> int:
    from gates import flags

    if args.ack or args.ack_all:
        moved = flags.acknowledge(run.repo(), None if args.ack_all else args.ack)
        print(f"acknowledged {len(moved)} flag{'s' if len(moved) != 1 else ''}" + "".join(f"\n  {i}" for i in moved))
        return _push_flags(args, run)
    if args.push:
        return _push_flags(args, run)
    listed = flags.every(run.repo()) if args.all else flags.pending(run.repo())
    if args.format == "json":
        _emit_json({"version": 1, "flags": listed})
        return OK
    if not listed:
        print("no flags at all" if args.all else "no unacknowledged flags")
    for record in listed:
        count = f" ×{record.get('count')}" if record.get("count", 1) != 1 else ""
        status = ""
        if args.all:
            resolved = record.get("resolved") if record["status"] == "resolved" else None
            status = (f" (resolved {resolved.get('time')} by `{resolved.get('command')}`)" if isinstance(resolved, dict)
                      else f" ({record['status']})")
        print(f"== flag {record.get('id')} [{record.get('reason')}]{count} first {record.get('first_seen')} "
              f"last {record.get('last_seen')} by `{record.get('command', '?')}` in {record.get('worktree', '?')}{status}")
        print(record["message"])
    return OK


def _push_flags(args: argparse.Namespace, run: Run) -> int:
    """`gate flags --push`: publish this clone's open flags to refs/gate/flags/<clone id> (issue 18)."""
    if not args.push:
        return OK
    from gates import remote_commands, remote_flags

    name = remote_commands.remote_name(args, run)
    if name is None:
        raise GateError("--push: name a remote (`--remote origin`) or set claims.remote", code=USAGE, reason="usage")
    count, ref = remote_flags.push(run.repo(), run.config(), name, _now())
    print(f"pushed {count} open flag{'s' if count != 1 else ''} to {ref} on remote {name}")
    return OK


def cmd_init(args: argparse.Namespace, run: Run) -> int:
    from gates import scaffold

    repo = run.repo()
    for shown, written in scaffold.init(repo, run.config(), _now()):
        print(f"wrote {shown}" if written else f"skipped {shown}: it exists, left unchanged")
    if repo.head is None:
        print(f"note: no commit yet, so Meta ref is the placeholder {scaffold.UNBORN_REF}: "
              "after the first commit, set it to that commit")
    return OK


def _claim_setup(args: argparse.Namespace, run: Run) -> tuple[Repo, str, Holder, datetime]:
    from gates import claims

    repo = run.repo()
    session = args.session if args.session is not None else os.environ.get("GATE_SESSION") or None
    state_rel = claims.key(repo, run.config().section("handoff")["path"])  # the one name of the file, any spelling
    holder = claims.holder_of(repo, session)
    return repo, state_rel, holder, _now()


def _now() -> datetime:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


def cmd_claim(args: argparse.Namespace, run: Run) -> int:
    from gates import claims

    note = claims.check_note(args.note)
    ttl_text = args.ttl if args.ttl is not None else run.config().section("claims")["ttl"]
    from gates.config import parse_duration

    ttl = parse_duration(ttl_text, "--ttl" if args.ttl is not None else "claims.ttl") if ttl_text else None
    repo, state_rel, holder, now = _claim_setup(args, run)
    from gates import remote_commands

    remote_name = remote_commands.remote_name(args, run)
    if remote_name is not None or args.offline:  # the local claim and the remote one (issue 18)
        return remote_commands.claim(args, run, remote_name, state_rel, holder, ttl, note, now)
    outcome = claims.claim(repo, state_rel, holder, ttl, note, now)
    assert outcome.record is not None
    if outcome.kind == "denied":
        message = (f"denied: {state_rel} is claimed by {claims.describe(outcome.record)} — the first mover wins: "
                   "fold your update into a later session")
        return run.deny("claim-denied", message)
    if outcome.kind == "taken-over":
        assert outcome.previous is not None
        message = (f"took over the claim on {state_rel}: the previous claim by {claims.describe(outcome.previous)} was "
                   f"abandoned ({outcome.why}); its record is kept in {outcome.evidence}")
        run.announce("claim-taken-over", message)
    verb = {"renewed": "renewed", "granted": "claimed", "taken-over": "claimed"}[outcome.kind]
    print(f"{verb} {state_rel} for {claims.describe(outcome.record)}")
    return OK


def cmd_release(args: argparse.Namespace, run: Run) -> int:
    from gates import claims

    if args.force and not args.reason:
        raise GateError("--force needs --reason TEXT: say why the claim is broken", code=USAGE, reason="usage")
    reason = claims.check_note(args.reason) if args.force else None
    repo, state_rel, holder, now = _claim_setup(args, run)
    from gates import remote_commands

    remote_name = remote_commands.remote_name(args, run)
    if remote_name is not None:  # this clone's claim and the remote one (issue 18)
        return remote_commands.release(args, run, remote_name, state_rel, holder, reason, now)
    outcome = claims.release(repo, state_rel, holder, now, force_reason=reason)
    if outcome.kind == "none":
        message = f"not released: nobody holds a claim on {state_rel}"
        return run.deny("release-denied", message)
    assert outcome.record is not None
    holder_text = claims.describe(outcome.record)
    if outcome.kind == "other-session":
        held = outcome.record.get("session")
        if held and holder.session:
            message = (f"not released: the claim on {state_rel} is held by this worktree for session {held}, not session "
                       f"{holder.session} — pass --session {held} or set GATE_SESSION={held}")
        elif held:
            message = (f"not released: the claim on {state_rel} is held by this worktree for session {held}, and no "
                       f"session was given — pass --session {held} or set GATE_SESSION={held}")
        else:
            message = (f"not released: the claim on {state_rel} is held by this worktree without a session, not for "
                       f"session {holder.session} — run `gate release` without --session and with GATE_SESSION unset")
        return run.deny("release-denied", message)
    if outcome.kind == "not-holder":
        message = (f"not released: this worktree does not hold the claim on {state_rel}; {holder_text} does — "
                   "`gate release --force --reason TEXT` breaks it if that session is gone")
        return run.deny("release-denied", message)
    if outcome.kind == "broken":
        message = (f"broke the claim on {state_rel} by {holder_text}: {outcome.why!r}; its record is kept in "
                   f"{outcome.evidence}")
        run.announce("claim-broken", message)
        return OK
    print(f"released {state_rel} (record kept in {outcome.evidence})")
    return OK


def cmd_claims(args: argparse.Namespace, run: Run) -> int:
    from gates import claims

    if args.remote is not None:
        from gates import remote_commands

        name = args.remote or remote_commands.remote_name(argparse.Namespace(), run)
        if not name:
            raise GateError("--remote: name a remote (`--remote origin`) or set claims.remote", code=USAGE,
                            reason="usage")
        return remote_commands.list_remote(args, run, name, _now())
    listed = claims.list_all(run.repo(), _now())
    if args.format == "json":
        _emit_json({"version": 1, "claims": listed})
        return OK
    if not listed:
        print("no claims")
    for record in listed:
        state = "live" if record["live"] else "ABANDONED"
        print(f"{record.get('path')}: {state} ({record['liveness']}); age {record.get('age_seconds')}s; "
              f"{claims.describe(record) if 'token' in record else record.get('problem')}")
    return OK


def cmd_locks(args: argparse.Namespace, run: Run) -> int:
    from gates import locks, state
    from gates.config import parse_duration

    repo = run.repo()
    if args.restore:
        for path in locks.restore(repo, args.restore):
            print(f"restored {path}")
        return OK
    threshold = parse_duration(run.config().section("locks")["threshold"], "locks.threshold").total_seconds()
    found = locks.find(repo, deep=True)
    if found:
        locks.judge(repo, found, threshold, locks.filesystem_now(state.layout(repo)))
    moves = [locks.quarantine(repo, lock, threshold, _now()) for lock in found
             if args.quarantine and lock.verdict == locks.STALE]
    if args.format == "json":
        document = {"version": 1, "locks": [lock.to_json() for lock in found],
                    "moved": [{"path": str(m.lock.path), "to": str(m.target) if m.target else None,
                               "problem": m.problem} for m in moves]}
        _emit_json(document)
    else:
        if not found:
            print("no lock files")
        for lock in found:
            print(f"{lock.verdict:10} {lock.shown}  {lock.size} bytes, {int(lock.age)}s old — {lock.reason}")
    return _report_moves(moves, run, quiet=args.format == "json")


def _report_moves(moves: list[Moved], run: Run, quiet: bool) -> int:
    code = OK
    for moved in moves:
        if moved.target is not None and moved.evidence_dir is not None and not moved.problem:
            message = (f"moved {moved.lock.path} to {moved.target}; "
                       f"`gate locks --restore {moved.evidence_dir.name}` puts it back")
            run.notice("stale-lock-quarantined", message)
        elif moved.problem.startswith("gone"):
            message = f"{moved.lock.path}: {moved.problem}"
        else:
            message = f"not moved: {moved.lock.path}: {moved.problem}"
            run.fail("lock-quarantine-failed", message)
            code = VIOLATION
        if not quiet:
            print(message)
    return code


def cmd_brief(args: argparse.Namespace, run: Run) -> int:
    from gates import start

    return start.command(args, run)


def cmd_closeout(args: argparse.Namespace, run: Run) -> int:
    from gates import closeout

    return closeout.command(args, run)


def cmd_stamp(args: argparse.Namespace, run: Run) -> int:
    from gates import stamp

    stamp.check_expect(args.expect)  # before the repository is even looked at
    shown, digest, not_journalled = stamp.stamp(run.repo(), run.config(), _now(), args.expect)
    said = f"stamped {shown}: ref {run.repo().head}, sha256 {digest}"
    run.done.append(said)
    print(said)  # the new hash, whatever failed after the write: a caller is never told the file is unchanged
    if not_journalled is not None:
        raise not_journalled
    return OK


def cmd_journal(args: argparse.Namespace, run: Run) -> int:
    import json

    from gates import journal

    repo = run.repo()
    if args.repair:
        repaired = journal.repair(repo, _now())
        if repaired is None:
            print("journal intact: nothing to repair")
            return OK
        run.announce("journal-broken", f"journal restarted: the broken one is kept in {repaired[0]}; the new chain's "
                     "first entry names it")
        return OK
    if args.verify:
        verdict = journal.verify(repo)
        if not verdict.ok:
            message = f"journal broken: {verdict.problem}"
            return run.deny("journal-broken", message)
        print(f"journal intact: {verdict.entries} entries, each chained to the one before")
        if verdict.unfinished:
            lines = ", ".join(str(n) for n in verdict.unfinished)
            print(f"  and {len(verdict.unfinished)} append(s) a crash cut short before they were recorded (line "
                  f"{lines}): kept as they are, each followed by the retried entry or by nothing")
        return OK
    rows, _ = journal.read_all(repo)
    for number, entry, raw in rows:
        if args.format == "json":
            print(raw)
        elif entry is None:
            print(f"line {number}: (not an entry) {raw[:200]}")
        else:
            print(f"{entry.get('seq'):>5} {entry.get('time')} {entry.get('action')} "
                  f"{json.dumps(entry.get('details'), ensure_ascii=False)}")
    return OK


def cmd_archive(args: argparse.Namespace, run: Run) -> int:
    from gates import archive

    config = run.config()
    moves = archive.archive(run.repo(), config, _now())
    target = config.section("archive")["path"]
    for move in moves:
        print(f"moved {config.section('handoff')['path']}:{move.item.line}-{move.item.end_line} "
              f"({move.section}) to {target}: {move.item.text[:80]}")
    if not moves:
        print("nothing to archive: no checked items")
    return OK


def cmd_render(args: argparse.Namespace, run: Run) -> int:
    from gates import tables

    stale, diff = tables.render_file(run.repo(), run.config(), write=not args.diff)
    if args.diff:
        sys.stdout.writelines(line + "\n" for line in diff)
    elif stale:
        print(f"rendered {len(stale)} table(s): {', '.join(stale)}")
    else:
        print("every table is up to date")
    return OK


def cmd_record(args: argparse.Namespace, run: Run) -> int:
    from gates import records

    path = records.new(run.repo(), run.config(), " ".join(args.title), _now())
    print(run.repo().relpath(path))
    return OK


def cmd_mailbox(args: argparse.Namespace, run: Run) -> int:
    from gates import mailbox

    def deliver(package: str) -> None:  # raises StdoutError when the output fails: the file is then kept
        sys.stdout.write(package if package.endswith("\n") else package + "\n")
        sys.stdout.flush()

    taken = mailbox.take(run.repo(), run.config(), _now(), deliver)
    if taken is None:
        print("the mailbox is empty: no work package")
        return OK
    if taken.cleared:
        say(f"gate: took the work package from {taken.shown}; a copy is kept in {taken.copy}")
    else:
        say(f"gate: delivered the work package (a copy is kept in {taken.copy}); {taken.shown} changed meanwhile and "
            "was left as it is")
    if taken.journal_error is not None:
        raise taken.journal_error
    return OK


def cmd_install_hooks(args: argparse.Namespace, run: Run) -> int:
    from gates import hooks

    if args.agent:  # an agent harness's project configuration, not git's hooks
        from gates import agents

        for line in agents.run(run.repo(), [a for names in args.agent for a in _ids(names)], args.uninstall):
            print(line)
        return OK
    if args.uninstall:  # every hook the gate installed, whatever else was asked
        said = hooks.uninstall(run.repo(), list(hooks.KINDS))
    else:
        said = hooks.install(run.repo(), ["pre-commit", *(["pre-push"] if args.pre_push else [])])
    for line in said:
        print(line)
    return OK


def cmd_doctor(args: argparse.Namespace, run: Run) -> int:
    from gates import doctor

    if args.fix:
        for line in doctor.fix(run.repo()):
            print(line)
    checks = doctor.run(run.repo())
    if args.remote is not None:  # issue 18: probe the claims remote
        from gates import remote_commands, remote_doctor

        name = args.remote or remote_commands.remote_name(argparse.Namespace(), run)
        if not name:
            raise GateError("--remote: name a remote (`--remote origin`) or set claims.remote", code=USAGE,
                            reason="usage")
        checks += remote_doctor.probe(run.repo(), run.config(), name)
    for check in checks:
        print(f"{check.status:4}  {check.message}")
    needed = [c.message for c in checks if c.status == doctor.FIX]
    if needed:
        run.fail("doctor", "gate doctor: needs fixing:\n" + "\n".join(needed))
        return VIOLATION
    return OK


COMMANDS = frozenset({
    "check", "config", "schema", "flags", "init", "claim", "release", "claims", "brief", "stamp", "journal", "archive",
    "render", "record", "mailbox", "install-hooks", "doctor", "locks", "closeout",
})


class _Unused:
    """Stands in for the parsers of commands not being run: building all of them costs every hook run ~10 ms."""

    def add_argument(self, *args: object, **kwargs: object) -> None:
        return None

    def add_mutually_exclusive_group(self) -> _Unused:
        return self


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

    def add(name: str, func: Callable[[argparse.Namespace, Run], int], help_text: str) -> Any:
        if selected is not None and name != selected:
            return _Unused()
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(func=func)
        return command

    check = add("check", cmd_check, "run the enabled gates on the hand-over file")
    if selected in (None, "check"):
        from gates.registry import GATES

        check.epilog = "gate ids (for --only and --skip): " + ", ".join(GATES)
    check.add_argument("--only", type=_ids, default=[], metavar="ID[,ID]", help="run only these gates")
    check.add_argument("--skip", type=_ids, default=[], metavar="ID[,ID]", help="do not run these gates")
    check.add_argument("--format", choices=("text", "json", "github", "sarif", "junit"),
                       default="github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text",
                       help="default: github when GITHUB_ACTIONS=true, else text")
    check.add_argument("--fix", action="store_true", help="archive checked items and render tables, then exit 1 if "
                       "anything changed (stage the files again)")
    check.add_argument("--range", metavar="BASE..HEAD", help="judge every commit of this range (for CI on a pull request)")
    check.add_argument("--remote", action="store_true", help="push time: also judge the push against the remote "
                       "claim (handoff-claim-remote; needs claims.remote)")
    check.add_argument("--pre-push", action="store_true", help=argparse.SUPPRESS)  # git's pre-push lines on stdin
    check.add_argument("files", nargs="*", metavar="FILE", help="hand-over files to check instead of the configured one")

    config = add("config", cmd_config, "print the effective configuration")
    config.add_argument("--format", choices=("yaml", "json"), default="yaml")

    from gates.schemas import NAMES

    schema = add("schema", cmd_schema, "print a shipped JSON Schema")
    schema.add_argument("name", choices=NAMES)

    flags = add("flags", cmd_flags, "print every open flag verbatim, oldest first")
    flags.add_argument("--format", choices=("text", "json"), default="text")
    flags.add_argument("--all", action="store_true", help="also the resolved and acknowledged flags, marked as such")
    group = flags.add_mutually_exclusive_group()
    group.add_argument("--ack", action="append", metavar="ID", help="acknowledge a flag (repeatable)")
    group.add_argument("--ack-all", action="store_true", help="acknowledge every flag")
    flags.add_argument("--push", action="store_true", help="publish this clone's open flags to the remote "
                       "(refs/gate/flags/<clone id>), after any --ack")
    flags.add_argument("--remote", metavar="NAME", help="the remote for --push (default: claims.remote)")

    add("init", cmd_init, "write HANDOFF.md, ARCHIVE.md and .gate.yaml where they are missing")

    claim = add("claim", cmd_claim, "claim the state file for this worktree (first mover wins)")
    claim.add_argument("--note", help="what this session is doing (shown to anyone denied)")
    claim.add_argument("--ttl", help="how long the claim lives without renewal: 90s, 15m, 2h, 1d (default: claims.ttl)")
    claim.add_argument("--session", help="a session id; default $GATE_SESSION")
    claim.add_argument("--remote", metavar="NAME", help="also claim on this git remote (default: claims.remote)")
    claim.add_argument("--offline", action="store_true", help="with a remote configured: take the local claim only, "
                       "marked unverified (a claim-unverified flag)")

    release = add("release", cmd_release, "release this worktree's claim, or break another's with --force")
    release.add_argument("--force", action="store_true", help="break another worktree's claim")
    release.add_argument("--reason", help="why the claim is broken (required with --force)")
    release.add_argument("--session", help="a session id; default $GATE_SESSION")
    release.add_argument("--remote", metavar="NAME", help="also release on this git remote (default: claims.remote)")

    listing = add("claims", cmd_claims, "list every claim with holder, age, TTL and liveness")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.add_argument("--remote", nargs="?", const="", metavar="NAME",
                         help="list the claims on this git remote instead (default: claims.remote)")

    brief = add("brief", cmd_brief, "the session-start briefing: flags, the tripwire, the claim, the hand-over")
    brief.add_argument("--format", choices=("text", "json", "claude", "codex", "gemini"), default="text",
                       help="claude, codex, gemini: exactly the JSON that harness's session-start hook expects")

    closeout_cmd = add("closeout", cmd_closeout, "the stop hook: block the stop until the session's close-out is done")
    closeout_cmd.add_argument("--format", choices=("text", "claude", "codex", "gemini", "copilot", "cursor"),
                              default="text", help="a harness's stop-hook envelope; text: the steps, exit 1 until done")

    stamp = add("stamp", cmd_stamp, "close-out: set Meta ref to HEAD and updated to now, atomically")
    stamp.add_argument("--expect", metavar="SHA256", help="refuse unless the file still has this content hash")

    journal = add("journal", cmd_journal, "print the audit journal of every action the gate took")
    journal_actions = journal.add_mutually_exclusive_group()
    journal_actions.add_argument("--verify", action="store_true", help="check the hash chain; exit 1 at the first bad entry")
    journal_actions.add_argument("--repair", action="store_true",
                                 help="move a broken journal into lost+found and start a new chain that names it")
    journal.add_argument("--format", choices=("text", "json"), default="text")

    add("archive", cmd_archive, "move every checked item (with its children) to the archive")
    render = add("render", cmd_render, "regenerate the table regions of the hand-over file from the records")
    render.add_argument("--diff", action="store_true", help="show what would change; write nothing")
    record = add("record", cmd_record, "make records: `gate record new TITLE`")
    record.add_argument("action", choices=("new",))
    record.add_argument("title", nargs="+")
    box = add("mailbox", cmd_mailbox, "the work-package mailbox: `gate mailbox take` prints it and clears it")
    box.add_argument("action", choices=("take",))

    install = add("install-hooks", cmd_install_hooks, "write native git hooks that run the gate (no framework needed)")
    install.add_argument("--uninstall", action="store_true",
                         help="remove every hook the gate installed (pre-push too), putting chained hooks back")
    install.add_argument("--pre-push", action="store_true", help="also a pre-push hook")
    install.add_argument("--agent", action="append", metavar="NAME[,NAME]", type=_agent_names,
                         help="instead, wire the session loop into an agent harness: claude, codex, gemini, copilot, "
                         "cursor or agents-md (repeatable; with --uninstall, remove exactly that)")
    doctor = add("doctor", cmd_doctor, "check the wiring and the environment, and say what to fix")
    doctor.add_argument("--fix", action="store_true", help="first move temp files of killed writers into lost+found "
                        "(with a manifest; nothing is deleted)")
    doctor.add_argument("--remote", nargs="?", const="", metavar="NAME", help="also probe this git remote for claims "
                        "(default: claims.remote): reachable, accepts refs/gate/ pushes, round-trip time")

    lock_cmd = add("locks", cmd_locks, "list git lock files with a verdict: fresh, live, stale or ineligible")
    lock_cmd.add_argument("--format", choices=("text", "json"), default="text")
    lock_actions = lock_cmd.add_mutually_exclusive_group()
    lock_actions.add_argument("--quarantine", action="store_true", help="move every stale lock into lost+found")
    lock_actions.add_argument("--restore", metavar="ID", help="put a quarantined lock back when its place is free")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `gate` command line: `_bin/gate`, `python -m gates` and the native hooks start here."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if os.name != "posix":
        say("gate: handoff-gate runs on Linux and macOS only (POSIX file semantics are required)")
        return CANNOT_RUN
    real_stdout = sys.stdout
    guard = _GuardedStdout(real_stdout)
    sys.stdout = cast("TextIO", guard)  # every write to stdout below fails as a StdoutError, never a traceback
    run = Run(argv)
    try:
        code = _run(argv, run)
        try:
            sys.stdout.flush()  # here, not at the interpreter's exit: a full disk or closed pipe is our exit 3
        except StdoutError as exc:
            code = _failed(exc, run)
    finally:
        sys.stdout = real_stdout
    return run.write_flags(code)


def _run(argv: list[str], run: Run) -> int:
    first = next((a for a in argv if not a.startswith("-")), None)
    try:
        args = build_parser(first if first in COMMANDS else None).parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else USAGE
    except StdoutError as exc:  # --help or --version to a closed or full stdout
        return _failed(exc, run)
    try:
        code = int(args.func(args, run))
    except GateError as exc:
        code = _failed(exc, run)
    except KeyboardInterrupt:
        say("gate: interrupted")
        return INTERRUPTED
    except BrokenPipeError as exc:  # a pipe written past the guard: the same io-error
        silence_stdout()
        code = _failed(StdoutError(exc), run)
    except Exception as exc:  # the boundary: a bug, reported short and flagged
        code = _internal_error(exc, run)
    return code


def _failed(exc: GateError, run: Run) -> int:
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

