"""handoff-no-checked-items: completed items leave the live file.

A checked task item (`- [x]`, `* [X]`, `+ [x]`, `1. [x]`, nested or not) anywhere in the
hand-over file is a violation at its line. Unchecked items, text in fenced code blocks or HTML
comments, and an `[x]` that is not a list item's checkbox are not.
"""

from __future__ import annotations

from gates.checks.context import Context
from gates.infra.findings import Finding
from gates.infra.text import excerpt

ID = "handoff-no-checked-items"


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    archive = ctx.config.section("archive")["path"]
    for loaded in ctx.handoffs:
        if loaded.doc is None:
            findings.append(Finding(loaded.shown, 1, ID, "not checked: the file is over its size cap (see handoff-structure)"))
            continue
        for item in loaded.doc.items():
            if item.checked:
                findings.append(Finding(
                    loaded.doc.path, item.line, ID,
                    f"checked item '{excerpt(item.text)}' — completed items move to {archive}",
                ))
    return findings
