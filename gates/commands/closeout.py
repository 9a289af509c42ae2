"""`gate closeout`: the stop hook; it blocks the stop until the close-out is done (the verdict: domain/closeout.py)."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from gates.commands.invocation import Run
from gates.domain import closeout, harness
from gates.infra.console import say
from gates.infra.errors import OK, VIOLATION, GateError
from gates.infra.git import GitFailed
from gates.infra.text import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from gates.infra.git import Repo


def _errors(run: Run) -> list[str]:
    """The gates' errors on the state as it is now: what the close-out must fix first."""
    from gates.checks import runner

    config = run.config()
    try:
        result = runner.run(run.repo(), config, runner.select(config, [], []), [])
    except GitFailed as exc:  # a question git could not answer is a step that blocks the stop, not a pass
        return [f"the gates cannot judge the hand-over: {exc.message}"]
    return [f.render() for f in result.errors]


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout()


def command(args: argparse.Namespace, run: Run) -> int:
    fmt = args.format
    hook = harness.read_stdin() if fmt != "text" else harness.HookInput({})
    session = hook.session or os.environ.get("GATE_SESSION") or None
    if fmt == "text":
        return _text(run, session)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, closeout.TIMEOUT)
    try:
        out = _hook(run, fmt, hook, session)
    except _Timeout:
        out = _let_through(run, fmt, session, f"the close-out check took longer than {closeout.TIMEOUT:.0f}s")
    except GateError as exc:
        out = _let_through(run, fmt, session, exc.render())
    except Exception as exc:  # the boundary: a bug must not wedge the session
        out = _let_through(run, fmt, session, f"internal error: {type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if out:
        sys.stdout.write(out + "\n")
    return OK


def _hook(run: Run, fmt: str, hook: harness.HookInput, session: str | None) -> str:
    repo, config = run.repo(), run.config()
    if hook.problem:
        run.notice("input-unreadable", harness.unreadable_input("closeout", fmt, hook.problem, "judged without it"))
    verdict = closeout.judge(repo, config, session, _errors(run))
    configured = int(config.section("closeout")["max_blocks"])
    bound = harness.block_bound(fmt, configured)
    decision = closeout.decide(repo, fmt, hook, session, not verdict.steps, bound)
    details = {"harness": fmt, "session": session, "verdict": decision.verdict, "blocks": decision.blocks,
               "reasons": verdict.summary, "head": repo.head}
    if decision.verdict != "twin":
        _journal(repo, details)
    if decision.verdict == "done":
        _resolve_missing(run)
    if decision.verdict == "block":
        return harness.block_envelope(fmt, closeout.reason_text(verdict.steps, _runner()))
    if decision.verdict == "let-through":
        message = (f"session {session or '(no id)'} ({fmt}) stopped without closing out after {decision.blocks} "
                   f"consecutive blocked stops (closeout.max_blocks is {configured}"
                   + (f", capped at {bound} for {fmt}, which ends the turn itself after {bound + 1}" if bound != configured
                      else "") + "): "
                   + "; ".join(verdict.summary)
                   + " — the next session must salvage its work: read the brief's Salvage section")
        run.notice("closeout-missing", message)
        say(f"gate: {message}")
        return harness.allow_envelope(fmt, f"handoff-gate: {message}")
    return harness.allow_envelope(fmt)


def _runner() -> str:
    """This gate as a shell command that needs no PATH: the `gate` script the hook ran, by its absolute path, else
    this interpreter in isolated mode with `-m gates`."""
    from gates.infra.text import shell_quote

    script = sys.argv[0]
    if os.path.isabs(script) and os.path.basename(script) == "gate":
        return shell_quote(script)
    return f"{shell_quote(sys.executable)} -I -m gates"


def _let_through(run: Run, fmt: str, session: str | None, why: str) -> str:
    message = (f"gate closeout --format {fmt} let session {session or '(no id)'} stop unchecked: {why} — the "
               "close-out may be missing: the next session must check it (`gate closeout --format text`)")
    run.notice("closeout-missing", message)
    say(f"gate: {message}")
    try:
        _journal(run.repo(), {"harness": fmt, "session": session, "verdict": "error", "reasons": [excerpt(why, 200)]})
    except (GateError, OSError):
        pass
    return harness.allow_envelope(fmt, f"handoff-gate: {message}")


def _journal(repo: Repo, details: dict[str, Any]) -> None:
    warning = closeout.journal_verdict(repo, details)
    if warning:
        say(warning)


def _resolve_missing(run: Run) -> None:
    """A `done` verdict found the work closed out: this worktree's `closeout-missing` flags raised before this run
    began have no cause left (a later session salvaged the work, or the same one closed out after all)."""
    from gates.domain import flags, sessions

    try:
        flags.resolve_event(run.repo(), sessions.CLOSEOUT_MISSING, command=run.command, observed_ns=run.started_ns)
    except (GateError, OSError) as exc:
        say(f"gate: could not resolve the {sessions.CLOSEOUT_MISSING} flags: {exc}")


def _text(run: Run, session: str | None) -> int:
    """The preview (a model's own check, a script's): said and journalled as `closeout-preview`, never a stop."""
    repo, config = run.repo(), run.config()
    verdict = closeout.judge(repo, config, session, _errors(run))
    warning = closeout.journal_verdict(repo, {"session": session, "verdict": "not-done" if verdict.steps else "done",
                                              "reasons": verdict.summary, "head": repo.head}, "closeout-preview")
    if warning:
        say(warning)
    if not verdict.steps:
        _resolve_missing(run)
        print("close-out done: the hand-over passes its gates and describes every commit, and nothing is left "
              "uncommitted")
        return OK
    print(closeout.reason_text(verdict.steps))
    return VIOLATION


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--format", choices=harness.STOP_FORMATS,
                              default="text", help="a harness's stop-hook envelope; text: the steps, exit 1 until done")


def run(args: argparse.Namespace, run: Run) -> int:
    return command(args, run)
