"""append-only: the configured files (default ARCHIVE.md) only ever grow at their end.

A change that edits, inserts into or removes existing content, or deletes the file, is a
violation naming the first changed line. Judged on the commit being made, or on every commit of
`gate check --range`.
"""

from gates.checks import Context
from gates.infra.findings import Finding

ID = "append-only"


def check(ctx: Context) -> list[Finding]:
    files = ctx.config.section("append_only")["files"]
    findings: list[Finding] = []
    for change in ctx.changes:
        for status, path in change.changed(*files):
            if status == "A":
                continue
            old = change.before(path) or b""
            new = change.after(path)
            if new is None or status == "D":
                findings.append(Finding(path, 1, ID, f"{change.label} deletes {path}, which may only grow — restore it"))
            elif not new.startswith(old):
                line = first_changed_line(old, new)
                findings.append(Finding(path, line, ID, f"{change.label} changes existing content of {path} at line "
                                        f"{line}: it may only grow at its end — restore that text, add below it"))
    return findings


def first_changed_line(old: bytes, new: bytes) -> int:
    """The 1-based line of `old` where `new` first departs from it."""
    limit = min(len(old), len(new))
    index = next((i for i in range(limit) if old[i] != new[i]), limit)
    return old.count(b"\n", 0, index) + 1
