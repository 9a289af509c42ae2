"""records-immutable: a closed record is history; records are valid and their supersession is reciprocal.

A change that edits, renames or deletes a record whose committed version is closed or superseded
is a violation: closing a record is its last edit but one, and that one is marking a closed record
superseded (`status: superseded` and a `superseded_by:` line, every other byte the same). Every record's front matter follows
`schemas/record.schema.json`, and when A is superseded by B, B lists A in `supersedes` (and the
other way round).
"""

from gates.checks import Context
from gates.domain import records
from gates.domain.changes import Change
from gates.infra.findings import Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

ID = "records-immutable"


def check(ctx: Context) -> list[Finding]:
    _, relative = records.folder(ctx.repo, ctx.config)
    findings: list[Finding] = []
    for change in ctx.changes:
        findings.extend(_judge_change(change, relative, validate=ctx.range_spec is not None))
    findings.extend(_of_the_folder(ctx))
    return findings


def _of_the_folder(ctx: Context) -> list[Finding]:
    """What the records themselves break: files that are not records, schema problems, supersession that is not
    reciprocal. A function of the records alone, so it is kept under the hash of the folder's content
    (records.Scan.key): an unchanged folder of 10,000 records is not parsed or walked again."""
    from gates.infra import cache

    scan = ctx.records_scan()

    def compute() -> list[list[object]]:
        found, broken = scan.load()
        out = [Finding(shown, line, ID, f"not a record: {message}") for shown, line, message in broken]
        for record in found:
            out += [Finding(record.shown, line, ID, message) for line, message in records.problems(record)]
        out.extend(_reciprocity(found))
        return [list(finding) for finding in out]

    rows = cache.memo(ctx.repo, "records-findings", lambda: scan.key, compute, _rows)
    return [Finding(*row) for row in rows]


def _rows(value: object) -> bool:
    """Whether a kept value is findings as compute() writes them: (path, line, this gate, message, severity)."""
    return isinstance(value, list) and all(
        isinstance(row, list) and len(row) == 5 and isinstance(row[0], str) and type(row[1]) is int
        and row[2] == ID and isinstance(row[3], str) and row[4] in ("error", "warning") for row in value)


def _judge_change(change: Change, relative: str, validate: bool) -> "Iterator[Finding]":
    for status, path in change.changed(f"{relative}/"):
        if not path.endswith(".md"):
            continue
        if status in ("M", "D"):
            old = change.before(path)
            before = _parse(old, path)
            if status == "M" and before is not None and _superseding(old, change.after(path)):
                pass  # a closed record's one later edit: it is superseded (reciprocity is judged below)
            elif before is not None and before.status in records.FINAL:
                verb = "edits" if status == "M" else "deletes or renames"
                yield Finding(path, 1, ID, f"{change.label} {verb} record {before.meta.get('id')}, which is "
                              f"{before.status}: a closed record is history — write a new record that supersedes it")
        if validate and status in ("A", "M"):
            after = _parse(change.after(path), path)
            if after is None:
                yield Finding(path, 1, ID, f"{change.label} leaves {path} without valid front matter")
            else:
                yield from (Finding(path, line, ID, f"in {change.label}: {message}")
                            for line, message in records.problems(after))


def _superseding(old: bytes | None, new: bytes | None) -> bool:
    """Whether `new` is the closed record `old` marked superseded and nothing else: `status: closed` became
    `status: superseded`, a `superseded_by:` line was added, and every other byte is the same."""
    if old is None or new is None:
        return False
    before, after = old.split(b"\n"), new.split(b"\n")
    if b"status: closed" not in before or b"status: superseded" not in after \
            or any(line.startswith(b"superseded_by:") for line in before):
        return False
    kept = [line for line in after if not line.startswith(b"superseded_by:")]
    return len(kept) == len(after) - 1 and kept == [b"status: superseded" if line == b"status: closed" else line
                                                    for line in before]


def _parse(data: bytes | None, shown: str) -> records.Record | None:
    if data is None:
        return None
    try:
        return records.parse(data, shown)
    except records.RecordError:
        return None


def _reciprocity(found: list[records.Record]) -> "Iterator[Finding]":
    by_id = {str(r.meta.get("id")): r for r in found}
    for record in found:
        own = str(record.meta.get("id"))
        later = record.meta.get("superseded_by")
        if record.status == "superseded" and isinstance(later, str):
            successor = by_id.get(later)
            line = record.lines.get(("superseded_by",), 1)
            if successor is None:
                yield Finding(record.shown, line, ID, f"superseded_by {later}: no such record")
            elif own not in (successor.meta.get("supersedes") or []):
                yield Finding(record.shown, line, ID, f"superseded by {later}, but {later} does not list {own} in "
                              "supersedes — add it there")
        for earlier in record.meta.get("supersedes") or []:
            line = record.lines.get(("supersedes",), 1)
            target = by_id.get(str(earlier))
            if target is None:
                yield Finding(record.shown, line, ID, f"supersedes {earlier}: no such record")
            elif target.status != "superseded" or target.meta.get("superseded_by") != own:
                yield Finding(record.shown, line, ID, f"supersedes {earlier}, but {earlier} is not marked "
                              f"'status: superseded' with 'superseded_by: {own}'")
