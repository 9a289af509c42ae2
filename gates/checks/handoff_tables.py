"""handoff-tables: every generated table region of the hand-over file is up to date.

A region `<!-- gate:table NAME -->` … `<!-- /gate:table -->` must hold exactly what `gate render`
writes there from the records; an unknown NAME or a region without its end marker is a violation.
"""

from gates.checks import OVER_CAP, Context
from gates.infra.findings import Finding
from gates.infra.text import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gates.domain import records
    from gates.infra.clock import datetime
    from gates.infra.config import Config
    from gates.infra.git import Repo

ID = "handoff-tables"


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    kept: dict[str, str] | None = None
    for loaded in ctx.handoffs:
        if loaded.doc is None:
            findings.append(Finding(loaded.shown, 1, ID, OVER_CAP))
            continue
        if not loaded.doc.comment_lines:
            continue  # both markers are HTML comments: a hand-over without one has no table (and loads no table code)
        from gates.domain import tables

        lines = loaded.doc.lines
        for region in tables.regions(lines, loaded.doc.comment_lines):
            line = region.start + 1
            if region.end is None:
                findings.append(Finding(loaded.shown, line, ID,
                                        f"table '{excerpt(region.name)}' has no '<!-- /gate:table -->' end"))
                continue
            if region.name not in tables.SELECT:
                findings.append(Finding(loaded.shown, line, ID, f"unknown table '{excerpt(region.name)}' "
                                        f"(known: {', '.join(tables.SELECT)})"))
                continue
            if kept is None:
                kept = _digests(ctx)
            have = lines[region.start + 1:region.end]
            if _digest(have) != kept[region.name]:  # rendered again only to say where it differs
                want = _rendered(ctx.records_scan().load()[0])[region.name]
                if have != want:
                    findings.append(Finding(loaded.shown, line, ID,
                                            _difference(region.name, have, want, region.start + 2)))
    return findings


def _rendered(found: "list[records.Record]") -> dict[str, list[str]]:
    """Every known table as `gate render` writes it from the records `found`."""
    from gates.domain import tables

    return {name: tables.table(name, found) or [] for name in tables.SELECT}


def _digest(rows: list[str]) -> str:
    from gates.infra import cache

    return cache.key("\n".join(rows).encode("utf-8", "surrogateescape"))


def _digests(ctx: Context) -> dict[str, str]:
    """The hash of every known table as `gate render` writes it: a function of the records alone, kept under the
    hash of the folder's content (records.Scan.key), so an unchanged folder's records are not even loaded."""
    from gates.domain import tables
    from gates.infra import cache

    scan = ctx.records_scan()

    def compute() -> dict[str, str]:
        return {name: _digest(rows) for name, rows in _rendered(scan.load()[0]).items()}

    def valid(value: object) -> bool:
        return isinstance(value, dict) and set(value) == set(tables.SELECT) and all(
            type(digest) is str for digest in value.values())

    found: dict[str, str] = cache.memo(ctx.repo, "table-digests", lambda: scan.key, compute, valid)
    return found


def fix(repo: "Repo", config: "Config", now: "datetime") -> list[str]:
    """`gate check --fix`: render every table region again from the records."""
    from gates.domain import tables

    stale, _ = tables.render_file(repo, config, write=True, who="gate check --fix")
    if not stale:
        return []
    return [f"fixed: rendered {len(stale)} table(s) in {config.section('handoff')['path']} — stage it again"]


def _difference(name: str, have: list[str], want: list[str], first_line: int) -> str:
    index = next((i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b), min(len(have), len(want)))
    found = have[index] if index < len(have) else "(nothing)"
    expected = want[index] if index < len(want) else "(nothing)"
    return (f"table '{name}' is out of date ({len(have)} lines, {len(want)} expected): line {first_line + index} is "
            f"'{excerpt(found, 80)}', expected '{excerpt(expected, 80)}' — run `gate render` (`gate render --diff` shows all)")
