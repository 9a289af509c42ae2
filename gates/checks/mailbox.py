"""mailbox: the work-package file is either exactly its sentinel line or a work package with its sections.

What a work package is, and how `gate mailbox take` delivers it: gates/domain/mailbox.py.
"""

import os

from gates.checks import Context
from gates.infra.findings import Finding


def check(ctx: Context) -> list[Finding]:
    cfg = ctx.config.section("mailbox")
    if not os.path.lexists(ctx.repo.path(cfg["path"])):
        return []  # a missing file is an empty mailbox (most repositories have none: its module stays unloaded)
    from gates.domain import handoff, mailbox

    shown, data = mailbox.read(ctx.repo, ctx.config)
    if mailbox.is_empty(data, cfg["sentinel"], shown):
        return []
    assert data is not None
    doc = handoff.parse(handoff.Source.decode(data, shown).lines, shown)
    return [Finding(shown, 1, mailbox.ID, f"neither the sentinel line ({cfg['sentinel']!r}) nor a work package: it has no "
                    f"'## {name}' section — add it, or clear the file with `gate mailbox take`")
            for name in cfg["sections"] if not doc.section(name)]
