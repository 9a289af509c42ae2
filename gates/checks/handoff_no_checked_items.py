"""handoff-no-checked-items: completed items leave the live file.

A checked task item (`- [x]`, `* [X]`, `+ [x]`, `1. [x]`, nested or not) anywhere in the
hand-over file is a violation at its line. Unchecked items, text in fenced code blocks or HTML
comments, and an `[x]` that is not a list item's checkbox are not.
"""

from gates.checks import OVER_CAP, Context
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.findings import Finding
from gates.infra.git import Repo
from gates.infra.text import excerpt

ID = "handoff-no-checked-items"


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    archive = ctx.config.section("archive")["path"]
    for loaded in ctx.handoffs:
        if loaded.doc is None:
            findings.append(Finding(loaded.shown, 1, ID, OVER_CAP))
            continue
        for item in loaded.doc.items():
            if item.checked:
                findings.append(Finding(
                    loaded.doc.path, item.line, ID,
                    f"checked item '{excerpt(item.text)}' — completed items move to {archive} (`gate archive`)",
                ))
    return findings


def fix(repo: Repo, config: Config, now: datetime) -> list[str]:
    """`gate check --fix`: move the checked items to the archive file."""
    from gates.domain import archive

    moves = archive.archive(repo, config, now, who="gate check --fix")
    if not moves:
        return []
    return [f"fixed: moved {len(moves)} checked item(s) to {config.section('archive')['path']}: "
            + "; ".join(m.item.text[:60] for m in moves) + " — stage both files again"]
