"""`gate brief`: the session-start command, for a reader and for each harness's start hook.

Hook formats read the harness's input (session id, `source`) from stdin without blocking, print
exactly the harness's envelope and nothing else, within its budget (harness.START_BUDGET; the
hand-over gives way first and the flags last, keeping their count and a line per reason, with a
pointer to the full brief saved as brief.md in the state dir), and journal the delivery. Broken
input is never fatal: the brief still prints and an `input-unreadable` flag says why.
"""

from __future__ import annotations

import os
import sys

from gates.domain import brief, harness, journal, sessions
from gates.infra import clock, jsonio
from gates.infra.errors import OK, GateError
from gates.infra.text import clean, clean_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from gates.commands.invocation import Run
    from gates.infra.git import Repo

COMPACTED = ("The context was compacted: this brief re-injects the hand-over. Trust it, and git, over the summary "
             "the compaction left you with.")


def command(args: argparse.Namespace, run: Run) -> int:
    """Exit 0 whatever it finds; in text or json, non-zero when it cannot run at all, after printing what it could
    (a harness format exits 0 even then, with the reason in the context: a harness ignores a failed start hook)."""
    from gates.infra.console import say

    fmt = args.format
    hook = harness.read_stdin() if fmt in harness.HOOK_START_FORMATS else harness.HookInput({})
    session = hook.session or os.environ.get("GATE_SESSION") or None
    try:
        repo = run.repo()
        config = run.config()
    except GateError as exc:
        text = f"# Session brief\n\nThe gate cannot run here: {exc.render()}\n"
        if fmt not in harness.HOOK_START_FORMATS:
            sys.stdout.write(text)
            raise
        # A harness reads a start hook's stdout only when it exits 0: the session still learns why, and a flag stays.
        sys.stdout.write(harness.start_envelope(fmt, text) + "\n")
        say(f"gate: {exc.render()}")
        if exc.reason != "not-a-repository":
            run.notice(exc.reason, exc.render())
        return OK
    now = clock.now()
    own = _own(repo, fmt, session)
    parts, work = brief.sections(repo, config, now, own)
    before = work.before(own) if own else work  # the work as this session found it
    try:
        last = sessions.last_session(repo, session)
    except (GateError, OSError):
        last = None
    lines = [sessions.own_line(fmt, str(session), own, work)] if own else []
    lines.append(sessions.first_line(last, before, own.start.head if own else repo.head))
    if hook.source == "compact":
        lines.append(COMPACTED)
    if hook.problem:
        lines.append(f"(The harness's hook input could not be read: {hook.problem}. The brief is complete without it.)")
    lines.append(f"# Session brief: {repo.toplevel} (branch {repo.branch() or 'detached'}, "
                 f"HEAD {(repo.head or 'none')[:12]})")
    header = clean("\n".join(lines))  # the worktree's path and branch name are the repository's text too
    full = brief.render(parts, header)
    text = full
    if fmt == "json":
        document = {"version": 1, "first_line": lines[0], "sections": [{"title": p.title, "text": p.body} for p in parts],
                    "text": full}
        sys.stdout.write(jsonio.dumps(clean_tree(document), indent=2, ensure_ascii=False) + "\n")
    elif fmt in harness.HOOK_START_FORMATS:
        budget = harness.START_BUDGET[fmt]
        assert budget is not None
        pointer = f"the full brief is in {_save(repo, full)} (or run `gate brief`)"
        text = harness.within(fmt, budget, lambda limit: brief.fit(parts, header, limit, pointer))
        sys.stdout.write(harness.start_envelope(fmt, text) + "\n")
    else:
        sys.stdout.write(full)
    if hook.problem:
        run.notice("input-unreadable", harness.unreadable_input("brief", fmt, hook.problem,
                                                                "the brief was delivered without it"))
    try:
        sessions.record_brief(repo, fmt, session, hook.source, len(text) < len(full), hook.problem,
                              len(work.paths) if work.status_error is None else None)
    except journal.NotJournalled as exc:
        say(f"gate: the brief was delivered but not journalled: {exc.cause.render()}")
    return OK


def _own(repo: Repo, fmt: str, session: str | None) -> sessions.Own | None:
    """For a later brief of a running harness session (a compaction, a resume): its start and its own commits."""
    if not session or fmt not in harness.HOOK_START_FORMATS:
        return None
    try:
        start = sessions.session_start(repo, fmt, session)
        return sessions.own_work(repo, start) if start else None
    except (GateError, OSError):
        return None


def _save(repo: Repo, text: str) -> str:
    try:
        return brief.save_full(repo, text)
    except GateError as exc:
        return f"`gate brief` (it could not be saved: {exc.message})"


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--format", choices=harness.START_FORMATS, default="text",
                       help="claude, codex, gemini, copilot: exactly the JSON that harness's session-start hook "
                       "expects")


def run(args: argparse.Namespace, run: Run) -> int:
    return command(args, run)
