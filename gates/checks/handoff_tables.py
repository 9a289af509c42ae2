"""handoff-tables: every generated table region of the hand-over file is up to date.

A region `<!-- gate:table NAME -->` … `<!-- /gate:table -->` must hold exactly what `gate render`
writes there from the records; an unknown NAME or a region without its end marker is a violation.
"""

from __future__ import annotations

from gates.checks.context import OVER_CAP, Context
from gates.domain import tables
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.findings import Finding
from gates.infra.git import Repo
from gates.infra.text import excerpt

ID = "handoff-tables"


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    rendered: dict[str, list[str]] | None = None
    for loaded in ctx.handoffs:
        if loaded.doc is None:
            findings.append(Finding(loaded.shown, 1, ID, OVER_CAP))
            continue
        lines = loaded.doc.lines
        for region in tables.regions(lines, loaded.doc.comment_lines):
            line = region.start + 1
            if region.end is None:
                findings.append(Finding(loaded.shown, line, ID,
                                        f"table '{excerpt(region.name)}' has no '<!-- /gate:table -->' end"))
                continue
            if rendered is None:
                rendered = _rendered(ctx)
            want = rendered.get(region.name)
            if want is None:
                findings.append(Finding(loaded.shown, line, ID, f"unknown table '{excerpt(region.name)}' "
                                        f"(known: {', '.join(tables.SELECT)})"))
                continue
            have = lines[region.start + 1:region.end]
            if have != want:
                findings.append(Finding(loaded.shown, line, ID, _difference(region.name, have, want, region.start + 2)))
    return findings


def _rendered(ctx: Context) -> dict[str, list[str]]:
    """Every known table as `gate render` writes it: a function of the records alone, kept under the hash of the
    folder's content (records.Scan.key), so an unchanged folder's records are not even loaded."""
    from gates.infra import cache

    scan = ctx.records_scan()

    def compute() -> dict[str, list[str]]:
        found = scan.load()[0]
        return {name: tables.table(name, found) or [] for name in tables.SELECT}

    def valid(value: object) -> bool:
        return isinstance(value, dict) and set(value) == set(tables.SELECT) and all(
            isinstance(rows, list) and all(isinstance(row, str) for row in rows) for rows in value.values())

    kept: dict[str, list[str]] = cache.memo(ctx.repo, "tables", lambda: scan.key, compute, valid)
    return kept


def fix(repo: Repo, config: Config, now: datetime) -> list[str]:
    """`gate check --fix`: render every table region again from the records."""
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
