"""A session loop that did not run, noticed by the commit it let through (issue 26): `gate check`'s one look.

A harness skips the project's hooks silently when it does not trust them or was started below the top of the work
tree; its commits still run the git hook, which warns when docs/agents.md#a-loop-that-did-not-run says. Cheap on
every commit: a person's commit costs three environment look-ups; an agent's a read of one small file and of the
journal's last TAIL_BYTES. No git process (HEAD's recent line came with the discovery), no JSON parser, no `re`:
the journal's lines are the gate's own, read with string methods.
"""

from gates.infra import clock, fsio
from gates.infra.clock import datetime
from gates.infra.errors import GateError
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

QUIET_COMMITS = 3  # commits without a loop entry at any of them, the one being made included
QUIET_SECONDS = 3600  # and no loop entry for this long
TAIL_BYTES = 1 << 16  # what of the journal is read: its newest entries
FILE_CAP = 1 << 20  # what of a harness's project file is read
LOOP_ACTIONS = (b'"action": "session-brief"', b'"action": "closeout"')

# (variable, the value it must have or None for any, harness, its project files (agents.FILES/LOCAL_FILES), why)
HARNESSES = (
    ("CLAUDECODE", "1", "claude", "Claude Code", (".claude/settings.json", ".claude/settings.local.json"),
     "Claude Code reads the project's settings only when started at the top of the work tree, and an interactive "
     "session runs their hooks only after its folder-trust prompt was accepted"),
    ("CODEX_THREAD_ID", None, "codex", "Codex", (".codex/hooks.json",),
     "Codex runs project hooks only in a trusted folder, and only entries trusted as they are now: a re-install, an "
     "upgrade or any edit of .codex/hooks.json un-trusts them, silently, until they are reviewed again (/hooks)"),
    ("GEMINI_CLI", "1", "gemini", "Gemini CLI", (".gemini/settings.json",),
     "Gemini CLI loads the project's hooks only in a trusted folder, and only when started at the top of the work "
     "tree"),
)


def notice(repo: Repo, now: datetime, environ: "Mapping[str, str]") -> tuple[str, str] | None:
    """(the harness file, the message) when an agent's commit comes with no session loop, else None."""
    for variable, value, agent, name, files, why in HARNESSES:
        given = environ.get(variable)
        if not given or value is not None and given != value:
            continue
        shown = next((f for f in files if _runs_brief(repo, f, agent)), None)
        if shown is None or (quiet := _quiet_for(repo, now)) is None:
            return None
        return shown, (f"this commit is made in a {name} session ({variable} is set), but the session loop is not "
                       f"running for it: {quiet} — {why}; `gate doctor` says what it can tell, `gate brief` gives the "
                       "brief now")
    return None


def _runs_brief(repo: Repo, shown: str, agent: str) -> bool:
    """Whether the harness file `shown` holds a hook of ours running `gate brief --format AGENT`. Read with no link
    followed, never waited on, capped: a planted FIFO or symlink there is simply not a wired harness."""
    try:
        data = fsio.read_regular(repo.path(shown), FILE_CAP)
    except OSError:
        return False
    return f" brief --format {agent}".encode() in data[:FILE_CAP]


def _quiet_for(repo: Repo, now: datetime) -> str | None:
    """What says the loop has been quiet (for the message), or None when an entry of it is recent enough."""
    last = _last_loop_entry(repo)
    if last is None:
        return (f"no session brief or close-out is journalled for this worktree (in the journal's newest "
                f"{TAIL_BYTES // 1024} KiB)")
    when, head = last
    recent = repo.recent()
    made = (recent.index(head) if head in recent else len(recent)) + 1  # commits since it, this one included
    seen = clock.parse_utc(when, zoned=True)
    age = (now - seen).total_seconds() if seen is not None else QUIET_SECONDS
    if made < QUIET_COMMITS or age < QUIET_SECONDS:
        return None
    count = f"{made}" if head in recent else f"{made} or more"
    return (f"no session brief or close-out has been journalled for this worktree for {count} commits, this one "
            f"included, and {int(age // 3600)} hour(s) (the last: {clock.shown(when)})")


def _last_loop_entry(repo: Repo) -> tuple[str, str | None] | None:
    """(time, head) of this worktree's newest loop entry in the journal's tail; None when there is none (or the
    journal cannot be read: the state dir's own warning says why)."""
    from gates.domain import journal

    try:
        tail, _ = journal.read(repo, TAIL_BYTES)
    except GateError:
        return None
    top = str(repo.toplevel).replace("\\", "\\\\").replace('"', '\\"')
    worktree = b'"worktree": "' + top.encode("utf-8", "surrogateescape") + b'"'
    for line in reversed(tail.split(b"\n")):
        if worktree in line and any(action in line for action in LOOP_ACTIONS):
            when = _field(line, b'"time": "')
            if when:
                return when, _field(line, b'"head": "')
    return None


def _field(line: bytes, key: bytes) -> str | None:
    """The string value after `key` in one of the journal's own lines (a time, a hex commit id), else None."""
    _, found, rest = line.partition(key)
    value, quote, _ = rest.partition(b'"')
    return value.decode("ascii", "replace") if found and quote and value else None
