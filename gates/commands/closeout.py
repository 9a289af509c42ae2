"""`gate closeout`: the stop hook. Is this session's close-out done? If not, block the stop with steps to take.

The close-out is done when the hand-over passes its gates (`gate check`), the work is closed out (sessions.closure,
the one definition the brief uses too: a failed git question is never an all-clear) and this worktree's claim (this
session's, or one without a session) is released. The loop guard, the let-through that never wedges a session and
the one verdict per stop of Copilot CLI's two hooks (`_twin`, `_judged_already`) are docs/agents.md's.
"""

import os
import sys
import time

from gates.commands import Invocation, guarded
from gates.commands._hooks import hook_input, judge_now
from gates.domain import ancestry, claims, handoff, harness, journal, sessions
from gates.infra import fsio, jsonio, state
from gates.infra.console import say
from gates.infra.digest import sha256
from gates.infra.errors import OK, VIOLATION, GateError
from gates.infra.git import GitFailed, Repo
from gates.infra.text import excerpt, shell_path, shell_quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from gates.infra.config import Config

TIMEOUT = 20.0  # seconds; the installed hooks give the harness's own timeout as 60
REMOTE_SECONDS = 8.0  # the stop's whole network work: a read of the remote claim, within TIMEOUT
MARGIN_SECONDS = 2.0  # of TIMEOUT, left after that read for the verdict and its record
TWIN_SECONDS = 10.0  # without an event time: a verdict by another format, same session and HEAD, within this is the same stop
RELEASE = "Release the claim: "  # the release step, a close-out done but for the claim
CLAIM_LEFT = "the claim is still held after the close-out"  # the summary line of a close-out done but for it
MAX_FINDINGS = 8
MAX_PATHS = 5  # the uncommitted paths a step names


def judge(run: Invocation, session: str | None) -> tuple[list[str], list[str], str | None]:
    """The steps the close-out still needs (none: it is done), one short line per unmet condition for the journal and
    the flag, from the gates run on the state as it is now, and the live claim another worktree holds on the
    hand-over, described (None: none), which the steps were worded for."""
    repo, config = run.repo(), run.config()
    path = config.section("handoff")["path"]
    found = _errors(run)
    work = sessions.closure(repo, config, _meta_ref(repo, config))
    holder = claims.claimed_elsewhere(repo, path)
    steps, summary, asks = _steps(repo, path, found, work, holder)
    # With claims.remote, the claim there is read only by a stop that asks for a commit of the hand-over or has one
    # not pushed yet: another clone's claim refuses that push (handoff-claim-remote), so the stop is worded for it.
    name = config.section("claims").get("remote")
    unpushed = _unpushed(repo, path, str(name)) if holder is None and name else None
    if holder is None and name and (asks or unpushed):
        holder, unread = _claimed_remotely(run, path)
        if holder is not None:
            steps, summary, asks = _steps(repo, path, found, work, holder, "push")
            if unpushed:
                steps.append(_take_out(path, holder, unpushed))
                summary.append("unpushed commits change the hand-over another clone holds")
        elif unread is not None and asks:
            steps.append(f"Before you push that commit: the claim on {path} could not be read from the remote "
                         f"({unread}); if another clone holds it, its pre-push gate refuses the push.")
    if not steps:
        held = _held_claim(repo, path, session)
        if held and unpushed:  # released first, the claim would no longer guard the close-out's push
            how = "`git push`" + ("" if unpushed.startswith("@") else f"; `git push -u {name} HEAD` where the branch has no "
                                                                      "upstream")
            steps.append(f"Push the close-out ({how}): commits of this branch not pushed yet change {path}, and the "
                         "claim guards their push only until it is released.")
            summary.append("the close-out is not pushed yet")
        if held:
            steps.append(f"{RELEASE}{held}.")
            summary.append(CLAIM_LEFT)
    return steps, summary, holder


def _steps(repo: Repo, path: str, found: list[tuple[str, str]], work: sessions.Closure, holder: str | None,
           refused: str = "commit") -> tuple[list[str], list[str], bool]:
    """The steps and summary lines for the gates' `found` errors and the `work`, worded for `holder` (the live claim
    another worktree or clone holds, described; None: none), whose claim refuses a `refused` (commit or push) of the
    hand-over, and whether they ask for a commit of it."""
    errors = [line for gate, line in found if not (holder and gate == "handoff-claim")]  # its step is below
    steps: list[str] = []
    summary: list[str] = []
    if errors:
        shown = "\n".join(f"   {excerpt(line, 300)}" for line in errors[:MAX_FINDINGS])
        more = f"\n   (+{len(errors) - MAX_FINDINGS} more: `gate check`)" if len(errors) > MAX_FINDINGS else ""
        what = (f"Make {path} pass its gates: fix each finding below" if holder is None else
                f"The gates fail here: fix each finding below that is yours to fix. {path} itself is for the session "
                f"that holds its claim ({holder}) to change: a finding only a change of it mends (its Meta ref too far "
                "behind, say) needs that session, or its release (`gate release --force --reason TEXT` if it is gone)")
        steps.append(f"{what}, then run `gate check` until it exits 0.\n{shown}{more}")
        summary.append(f"the hand-over fails {len(errors)} gate finding(s)")
    asks = _work_steps(repo, work, path, steps, summary, holder, refused)
    return steps, summary, asks


def _shown(paths: list[tuple[str, str]]) -> str:
    names = ", ".join(excerpt(path, 80) for _, path in paths[:MAX_PATHS])
    return names + (f", +{len(paths) - MAX_PATHS} more (`git status`)" if len(paths) > MAX_PATHS else "")


def _is_handoff(listed: str, path: str) -> bool:
    """Whether a path `git status` lists is the hand-over (or an untracked folder holding it)."""
    return listed == path or (listed.endswith("/") and path.startswith(listed))


def _work_steps(repo: Repo, work: sessions.Closure, path: str, steps: list[str], summary: list[str],
                holder: str | None = None, refused: str = "commit") -> bool:
    """The steps (and one summary line each) that close out the work, each worded from what was found. While another
    worktree holds the hand-over's claim (`holder`), the hand-over is that session's to write: this one commits its
    work and leaves the hand-over as committed; the commits it made are the next writer's to describe (the brief's
    Salvage lists them)."""
    ref, found = str(work.ref), work.found
    kind = found.kind if found is not None else None
    if work.history_error is not None:  # a failed question is never "nothing to close out": the stop is blocked
        steps.append(f"Whether work after {path}'s Meta ref {ref[:12]} is closed out cannot be told: "
                     f"{work.history_error}. Make git able to read this repository's history (fix what it says).")
        summary.append(work.history_error)
    elif kind == "shallow":
        steps.append(f"{path}'s Meta ref {ref[:12]} is not in this shallow clone: {ancestry.SHALLOW_ADVICE}.")
        summary.append("the Meta ref is not in this shallow clone")
    others = [(code, name) for code, name in work.paths if not _is_handoff(name, path)]  # the hand-over: below
    changed = [(code, name) for code, name in others if code != "??"]
    untracked = [(code, name) for code, name in others if code == "??"]
    underway = work.underway
    if underway is not None:  # the paths are the operation's: undoing them one by one would drop what it brought
        what, finish, abort = underway
        steps.append(f"Finish {what} in progress: resolve its conflicts, then `{finish}`; or end it with `{abort}`. "
                     f"Do not undo its paths one by one ({_shown(changed or untracked)}): they hold what it brings.")
        summary.append(f"{what} is in progress")
    elif changed:
        steps.append(f"Commit the work: {len(changed)} path(s) have uncommitted changes ({_shown(changed)}). Commit what is "
                     "the session's work and undo what is not (`git restore`): a close-out leaves nothing uncommitted.")
        summary.append(f"{len(changed)} path(s) have uncommitted changes")
    if untracked:
        steps.append(f"Deal with {len(untracked)} untracked path(s) git does not ignore ({_shown(untracked)}): commit "
                     "what belongs to the project, delete scratch files, or have git ignore them (`.gitignore`, or "
                     "`.git/info/exclude` for this clone only).")
        summary.append(f"{len(untracked)} untracked path(s)")
    mine = [code for code, name in work.paths if _is_handoff(name, path)]
    asks = False
    if holder is None:
        asks = _handoff_steps(repo, work, path, bool(changed or untracked), mine, steps, summary)
    elif mine:
        undo = f"`git restore --staged --worktree {shell_path(path)}`" if mine != ["??"] else f"remove {path}"
        steps.append(f"Leave {path} to the session that holds its claim: a {refused} of it is refused while {holder} "
                     f"holds it. Keep your notes elsewhere if you need them, then undo your edit: {undo}. The commits "
                     "you made are for the next writer of the hand-over in this worktree to describe (the brief here "
                     "lists them).")
        summary.append("the hand-over is edited, but another worktree holds its claim")
    if work.status_error is not None:  # a failed question is never "nothing uncommitted": the stop is blocked
        message = work.status_error
        steps.append(f"{message[:1].upper()}{message[1:]}. Make `git status` work in this repository "
                     f"(fix what it says), then commit what it lists.")
        summary.append(message)
    return asks


def _handoff_steps(repo: Repo, work: sessions.Closure, path: str, uncommitted: bool, mine: list[str], steps: list[str],
                   summary: list[str]) -> bool:
    """The steps that bring the hand-over up to date with the work and commit it (and whether there are any).
    `uncommitted`: other paths are."""
    ref, found = str(work.ref), work.found
    kind = found.kind if found is not None else None
    if found is not None and kind == "behind":
        commits, total = sessions.work_after(repo, found)
        listed = "".join(f"\n   - {sha} {excerpt(subject, 80)}{sessions.merged(merge)}"
                         for sha, subject, _, merge in commits[:5])
        more = f"\n   (+{total - 5} more: `git log {found.commit}..HEAD`)" if total > 5 else ""  # a full id, as resolved
        steps.append(f"Describe the work in {path}: {found.behind} commit(s) after its Meta ref {ref[:12]} "
                     f"are not closed out. Update its Current Target and Open Threads (and Decisions, Dead "
                     f"Ends, Verified) so the next session can continue from them:{listed}{more}")
        summary.append(f"{found.behind} commit(s) after the Meta ref are not closed out")
    elif kind == "elsewhere":
        steps.append(f"{path}'s Meta ref {ref[:12]} is not in this history: bring the hand-over up to date with git.")
        summary.append("the Meta ref is not in this history")
    elif work.ref is None:
        steps.append(f"{path} names no commit in its Meta ref: describe the work in it.")
        summary.append("the hand-over names no Meta ref")
    how = (f"{path} is not committed yet" if mine == ["??"] else f"{path} has uncommitted changes") if mine else ""
    close = f"`gate stamp`, then `git add {shell_path(path)} && git commit -m \"close-out: …\"`"
    if work.ref is None or kind in ("behind", "elsewhere") or (uncommitted and mine):
        steps.append(f"Close out: {close}" + (f" ({how}: that commit takes them)." if mine else "."))
    elif uncommitted:  # the hand-over is current: only a commit of that work puts it behind (the next stop asks)
        steps.append(f"If you committed work in the steps above, close out: {close}. If you committed nothing, "
                     f"{path} is already up to date.")
        return False
    elif mine:
        steps.append(f"Commit the hand-over: `git add {shell_path(path)} && git commit -m \"close-out: …\"` ({how}).")
    else:
        return False
    if mine:
        summary.append("the hand-over has uncommitted changes")
    return True


def _unpushed(repo: Repo, path: str, name: str) -> str | None:
    """The revisions (as `git log` takes them) of this branch's commits not pushed yet, when they change the hand-over;
    None when none do. Against its upstream as this clone last saw it (what they change together); a branch with no
    upstream (or one whose ref is gone) against every branch of remote `name` this clone has seen; a git that
    cannot answer counts as yes (the remote then decides)."""
    if repo.head is None:
        return None
    elsewhere = f"HEAD --not --remotes={name}"
    try:
        branch, upstream = repo.branch(), None
        if branch:  # detached: no upstream
            named = repo.git("for-each-ref", "--format=%(upstream)", "--end-of-options", f"refs/heads/{branch}")
            if named.returncode != 0:
                return elsewhere
            upstream = repo.resolve_commit("@{upstream}") if named.stdout.strip() else None
        if upstream is not None:
            return "@{upstream}.." if repo.changed(upstream, repo.head, [path]) else None
        listed = repo.git("log", "--format=%H", "HEAD", "--not", f"--remotes={name}", "--", path)
        if listed.returncode != 0:
            return elsewhere
        return elsewhere if listed.stdout.strip() else None
    except GitFailed:
        return elsewhere


def _take_out(path: str, holder: str, unpushed: str) -> str:
    """The step for commits not pushed yet (`unpushed`: their revisions) that change a hand-over another clone holds.
    Taking the change out rewrites them: a commit that changed the hand-over back would itself be a change of it
    whose Meta ref is not its parent, which the commit hook and CI refuse."""
    shown = shell_path(path)
    said = (f"Commits of this branch not pushed yet change {path} (`git log {unpushed} -- {shown}` lists them), but "
            f"{holder} holds its claim: the pre-push gate refuses their push. Take the change of {path} out of them, "
            "or push once that claim is released.")
    if not unpushed.startswith("@"):
        return f"{said} They are not pushed: rewrite them without it."
    return (f"{said} To take it out, make them one commit without it: `base=$(git merge-base HEAD @{{upstream}}) && "
            f"git reset --soft \"$base\" && git restore --source=\"$base\" --staged --worktree -- {shown}`, then "
            "commit the work.")


def _claimed_remotely(run: Invocation, path: str) -> tuple[str | None, str | None]:
    """The claim on the hand-over another clone holds on claims.remote, described, as the pre-push gate reads it (live,
    or a record that cannot be read: never free), and None; or None and why it could not be read. This clone's own
    records there are not another's (its worktrees' claims are the local ones). Within REMOTE_SECONDS and what is left
    of the stop's TIMEOUT."""
    from gates.domain import remote

    repo, config = run.repo(), run.config()
    name = run.remote_name(None)
    assert name is not None
    left = TIMEOUT - (time.time_ns() - run.started_ns) / 1e9 - MARGIN_SECONDS
    if left < 1:
        return None, f"no time was left of the stop's {TIMEOUT:.0f} s to ask it"
    found = remote.another_clones(repo, config, name, path, min(remote.timeout_of(config), REMOTE_SECONDS, left))
    shown = excerpt(name)
    if found.problem:
        return (f"on remote {shown}: a record that cannot be read ({found.problem}), never taken as free; "
                "`gate release --force --reason TEXT` removes it"), None
    if found.record is None:
        return None, found.unread
    return f"on remote {shown}: {remote.describe(found.record)}", None


def _meta_ref(repo: Repo, config: "Config") -> str | None:
    try:
        loaded = handoff.load_handoff(repo, config, repo.path(config.section("handoff")["path"]))
    except GateError:
        return None  # the gates have said why
    return sessions.meta(loaded, config, "ref")


def _held_claim(repo: Repo, path: str, session: str | None) -> str | None:
    """The release step's text for this worktree's claim, with the command that releases it (`--session` for a
    claim taken with one); None when there is none to release. A hook knows its session: another session's claim of
    this worktree is not its to release. A preview (`--format text`) does not: it names any, so that it never says
    "done" where the stop hook blocks."""
    record = claims.read(state.layout(repo), path)
    if record is None or not claims.held_here(record, repo):
        return None
    held_by = record.get("session")
    known = session or os.environ.get("GATE_SESSION") or None
    if held_by is not None and known is not None and held_by != known:
        return None  # another session of this worktree holds it: not this session's to release
    if held_by is not None and claims.valid_session(held_by) is None:
        return f"{claims.FORCE} ({claims.describe(record)}): {claims.NO_SESSION_ID}"
    command = f"`gate release --session {held_by}`" if held_by is not None else "`gate release`"
    whose = f", if session {held_by} is yours or gone" if held_by is not None and known is None else ""
    return f"{command} ({claims.describe(record)}){whose}"


def reason_text(steps: list[str], runner: str | None = None, session: str | None = None) -> str:
    """The steps, numbered; with `runner` (how this very gate is started), a line naming it for a shell that does not
    find `gate` (Codex's shell tool is a login shell, whose PATH no longer holds a virtual environment's folder). The
    preview it names judges as this `session`'s stop does (another session's claim of this worktree is not its own)."""
    body = "\n".join(f"{n}. {step}" for n, step in enumerate(steps, start=1))
    elsewhere = f"\nWhere your shell does not find `gate`, run `{runner}` in its place." if runner else ""
    preview = f"gate closeout --format text{f' --session {session}' if claims.valid_session(session) else ''}"
    return ("The session's close-out is not done (handoff-gate). Do these steps in order, then stop again:\n"
            f"{body}\n`{preview}` exits 0 once the close-out is done.{elsewhere}")


# ---- the consecutive-block counter -----------------------------------------------------------------------

def _counter_path(repo: Repo, session: str | None) -> tuple[str, str]:
    lay = state.layout(repo)
    folder = state.ensure_dir(lay, os.path.join(lay.root, "closeout"))
    key = sha256(f"{repo.toplevel}\0{session or ''}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return folder, os.path.join(folder, f"{key}.json")


def _read_counter(path: str) -> "tuple[dict[str, Any], int]":
    try:
        data = fsio.read_state_file(path, 1 << 16)
        loaded = jsonio.load_json(data.decode("utf-8", "replace")) if data else {}
    except (GateError, jsonio.DataError):
        loaded = {}
    record = loaded if isinstance(loaded, dict) else {}
    return record, int(record["blocks"]) if isinstance(record.get("blocks"), int) else 0


def _write_counter(repo: Repo, path: str, fmt: str, hook: harness.HookInput, session: str | None, blocks: int,
                   now_ns: int, verdict: str) -> None:
    record = {"session": session, "format": fmt, "blocks": blocks, "time_ns": now_ns, "head": repo.head,
              "verdict": verdict, "event_ms": hook.event_ms}
    state.write(repo, path, (jsonio.dumps(record) + "\n").encode())


def _twin(record: "dict[str, Any]", fmt: str, event_ms: int | None, head: str | None, now_ns: int) -> bool:
    """Whether another format's hook already judged this stop (Copilot CLI runs `.github/hooks/` and
    `.claude/settings.json` for one stop), whatever its verdict: the event time decides where both have one, else
    the same HEAD within TWIN_SECONDS."""
    if record.get("format") in (None, fmt):
        return False
    earlier = record.get("event_ms")
    if isinstance(earlier, int) and event_ms is not None:
        return earlier == event_ms
    last_ns = record.get("time_ns")
    return (isinstance(last_ns, int) and now_ns - last_ns < TWIN_SECONDS * 1e9 and record.get("head") == head)


def decide(repo: Repo, fmt: str, hook: harness.HookInput, session: str | None, done: bool, bound: int) -> tuple[str, int]:
    """Block or let through, counting consecutive blocks for the session under the counter folder's lock: the verdict
    (done, block, let-through or twin) and the consecutive blocks before this stop."""
    folder, path = _counter_path(repo, session)
    with fsio.locked(folder):
        record, counted = _read_counter(path)
        now_ns = time.time_ns()
        if _twin(record, fmt, hook.event_ms, repo.head, now_ns):
            return "twin", counted
        if fmt == "cursor" and hook.loop_count is not None:
            before = hook.loop_count
        elif hook.stop_hook_active is False:
            before = 0
        else:
            before = counted
        if done:
            verdict, after = "done", 0
        elif before >= bound:
            verdict, after = "let-through", 0
        else:
            verdict, after = "block", before + 1
        _write_counter(repo, path, fmt, hook, session, after, now_ns, verdict)
    return verdict, before


def _journal(repo: Repo, details: "dict[str, Any]", action: str = "closeout") -> None:
    """Journal the verdict; when it was reached but could not be recorded, say so."""
    try:
        journal.append(repo, action, details)
    except journal.NotJournalled as exc:
        say(f"gate: the close-out verdict is not journalled: {exc.cause.render()}")


# -- the command --

def _errors(run: Invocation) -> list[tuple[str, str]]:
    """The gates' errors on the state as it is now, (gate, line) each: what the close-out must fix first. The
    close-out and `gate check` judge alike: a gate that passes here ends its open flags in this worktree, as it
    would in a check."""
    try:
        result = judge_now(run)  # as `gate check` judges it: the flags of the gates that pass resolve, as a check's
    except GitFailed as exc:  # a question git could not answer is a step that blocks the stop, not a pass
        return [("", f"the gates cannot judge the hand-over: {exc.message}")]
    except GateError as exc:  # the configuration the commit would record is not the one read
        return [("", exc.render())]
    return [(f.gate, f.render()) for f in result.errors]


def run(args: "argparse.Namespace", run: Invocation) -> int:
    fmt = args.format
    hook = hook_input() if fmt != "text" else harness.HookInput({})
    session = args.session or hook.session or os.environ.get("GATE_SESSION") or None
    if fmt == "text":
        return _text(run, session)
    out, failure = guarded(lambda: _hook(run, fmt, hook, session), timeout=TIMEOUT)  # the let-through policy:
    if failure is not None:  # whatever fails, the session is never wedged; the next one hears of it
        why = f"the close-out check took longer than {TIMEOUT:.0f}s" if failure.kind == "timeout" else failure.message
        out = _let_through(run, fmt, hook, session, why)
    if out:
        sys.stdout.write(out + "\n")
    return OK


def _hook(run: Invocation, fmt: str, hook: harness.HookInput, session: str | None) -> str:
    repo, config = run.repo(), run.config()
    if hook.problem:
        run.notice("input-unreadable", harness.unreadable_input("closeout", fmt, hook.problem, "judged without it"))
    steps, summary, holder = judge(run, session)
    configured = int(config.section("closeout")["max_blocks"])
    bound = harness.block_bound(fmt, configured)
    verdict, blocks = decide(repo, fmt, hook, session, not steps, bound)
    if verdict != "twin":  # `left`: the hand-over was left to another's claim (the brief's first line says so)
        _journal(repo, {"harness": fmt, "session": session, "verdict": verdict, "blocks": blocks, "reasons": summary,
                        "head": repo.head, "left": holder is not None})
    if verdict == "done":
        run.settle(sessions.CLOSEOUT_MISSING)
    if verdict == "block":
        return harness.block_envelope(fmt, reason_text(steps, _runner(), session))
    if verdict == "let-through":
        capped = f", capped at {bound} for {fmt}, which ends the turn itself after {bound + 1}" if bound != configured else ""
        return _missing(run, fmt, f"session {session or '(no id)'} ({fmt}) stopped without closing out after {blocks} "
                        f"consecutive blocked stops (closeout.max_blocks is {configured}{capped}): {'; '.join(summary)}"
                        + (f" — the next session must release it if that session is gone: {steps[0].removeprefix(RELEASE)}"
                           if summary == [CLAIM_LEFT] else
                           " — the next session must salvage its work: read the brief's Salvage section"))
    return harness.allow_envelope(fmt)


def _missing(run: Invocation, fmt: str, message: str) -> str:
    """A stop let through without a close-out: flagged for the next session, said, and the envelope saying it."""
    run.notice(sessions.CLOSEOUT_MISSING, message)
    say(f"gate: {message}")
    return harness.allow_envelope(fmt, f"handoff-gate: {message}")


def _runner() -> str:
    """This gate as a shell command that needs no PATH: the `gate` script the hook ran, by its absolute path, else
    this interpreter in isolated mode with `-m gates`."""
    script = sys.argv[0]
    if os.path.isabs(script) and os.path.basename(script) == "gate":
        return shell_quote(script)
    return f"{shell_quote(sys.executable)} -I -m gates"


def _judged_already(run: Invocation, fmt: str, hook: harness.HookInput, session: str | None) -> bool:
    """For a stop about to be let through unchecked: whether another format's hook judged this same stop (`_twin`);
    if not, this let-through is recorded for that hook to find, so one stop raises one flag. Without the counter's
    lock (waiting on it may be what timed out, and no alarm is left): a race costs a second flag at worst."""
    try:
        repo = run.repo()
        path = _counter_path(repo, session)[1]
        record, blocks = _read_counter(path)
        now_ns = time.time_ns()
        if _twin(record, fmt, hook.event_ms, repo.head, now_ns):
            return True
        _write_counter(repo, path, fmt, hook, session, blocks, now_ns, "error")
    except Exception:  # the boundary: the stop is let through whatever fails here
        return False
    return False


def _let_through(run: Invocation, fmt: str, hook: harness.HookInput, session: str | None, why: str) -> str:
    if _judged_already(run, fmt, hook, session):
        return harness.allow_envelope(fmt)
    message = (f"gate closeout --format {fmt} let session {session or '(no id)'} stop unchecked: {why} — the "
               "close-out may be missing: the next session must check it (`gate closeout --format text`)")
    envelope = _missing(run, fmt, message)
    try:
        _journal(run.repo(), {"harness": fmt, "session": session, "verdict": "error", "reasons": [excerpt(why, 200)]})
    except (GateError, OSError):
        pass
    return envelope


def _text(run: Invocation, session: str | None) -> int:
    """The preview (a model's own check, a script's): said and journalled as `closeout-preview`, never a stop."""
    steps, summary, holder = judge(run, session)
    repo = run.repo()
    _journal(repo, {"session": session, "verdict": "not-done" if steps else "done", "reasons": summary,
                    "head": repo.head}, "closeout-preview")
    if not steps:  # closed out: this worktree's earlier `closeout-missing` flags have no cause left
        run.settle(sessions.CLOSEOUT_MISSING)
        path = run.config().section("handoff")["path"]
        print(f"close-out done: the work is committed, and {path} is left to the session that holds its claim ({holder}): "
              "the commits after its Meta ref are for the next writer of it in this worktree to describe (the brief here lists "
              "them)" if holder else
              "close-out done: the hand-over passes its gates and describes every commit, and nothing is left uncommitted")
        return OK
    print(reason_text(steps, session=session))
    return VIOLATION


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    parser.add_argument("--format", choices=harness.STOP_FORMATS, default="text",
                        help="a harness's stop-hook envelope; text: the steps, exit 1 until done")
    parser.add_argument("--session", help="judge as this session's stop does (its claim, not another's of this "
                                          "worktree); default: the hook's session id, else $GATE_SESSION")
