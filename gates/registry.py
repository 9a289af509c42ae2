"""Every gate, under its id. The id is the hook id, the config key and the module name."""

from __future__ import annotations

from types import ModuleType

from gates import (
    append_only,
    git_stale_locks,
    handoff_claim,
    handoff_claim_remote,
    handoff_fresh,
    handoff_no_checked_items,
    handoff_structure,
    handoff_tables,
    heartbeat,
    mailbox,
    records_immutable,
)

GATES: dict[str, ModuleType] = {
    module.ID: module
    for module in (
        handoff_structure,
        handoff_no_checked_items,
        handoff_fresh,
        handoff_claim,
        handoff_claim_remote,
        git_stale_locks,
        append_only,
        records_immutable,
        handoff_tables,
        mailbox,
        heartbeat,
    )
}
