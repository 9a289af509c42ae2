"""heartbeat: a commit that changes other files also leaves a written trace (off by default).

A commit that changes files other than the hand-over files (the hand-over file, the archive, the
work package, the records) must also change the hand-over file, or make the configured journal
file grow: a session that leaves no written trace never happened.
"""

from gates.checks import Context
from gates.domain.changes import Change
from gates.infra.findings import Finding

ID = "heartbeat"


def check(ctx: Context) -> list[Finding]:
    cfg = ctx.config
    handoff_path = cfg.section("handoff")["path"]
    own = {handoff_path, cfg.section("archive")["path"], cfg.section("mailbox")["path"]}
    records_dir = cfg.section("records")["path"].rstrip("/") + "/"
    journal_file = cfg.section("heartbeat")["journal"]
    findings = []
    for change in ctx.changes:
        paths = [path for _, path in change.changed()]
        work = [p for p in paths if p not in own and not p.startswith(records_dir) and p != journal_file]
        if not work or handoff_path in paths or (journal_file and _grew(change, journal_file)):
            continue
        also = f", or add to {journal_file}" if journal_file else ""
        findings.append(Finding(handoff_path, 1, ID, f"{change.label} changes {len(work)} file(s) ({work[0]}…) but not "
                                f"{handoff_path}: a session that leaves no written trace never happened — update the "
                                f"hand-over{also}"))
    return findings


def _grew(change: Change, path: str) -> bool:
    old, new = change.before(path) or b"", change.after(path)
    return new is not None and len(new) > len(old) and new.startswith(old)
