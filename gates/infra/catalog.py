"""Every gate's id, one-line summary and flag reason: data, which the layers below the checks may read.

The gates' modules are imported by gates.checks (GATES), never from here.
"""

from __future__ import annotations

from gates.infra.plain import NamedTuple


class Gate(NamedTuple):
    """flag_reason: None unless the gate's failures are flagged under another reason; on: whether `gate check`
    runs it when the config does not say (the `gates:` defaults are made from this)."""

    id: str
    summary: str
    flag_reason: str | None
    on: bool = True


CATALOG: dict[str, Gate] = {gate.id: gate for gate in (
    Gate("handoff-structure", "the hand-over file has its sections, Meta block, target and size limits", None),
    Gate("handoff-no-checked-items", "no checked-off task items in the hand-over file", None),
    Gate("handoff-fresh", "the Meta ref is HEAD or a recent ancestor, and the hand-over is not stale", None),
    Gate("handoff-claim", "no commit of the state file while another live worktree holds its claim", "claim-denied"),
    Gate("handoff-claim-remote", "no push of the state file while another clone holds its remote claim, or under a "
         "stale fence", None, False),  # push time only: `gate check --remote` and its hook run it
    Gate("git-stale-locks", "no stale git lock file wedges the repository", None),
    Gate("append-only", "archive files only grow at their end", None),
    Gate("records-immutable", "closed records are never edited; records are valid; supersession is reciprocal", None),
    Gate("handoff-tables", "generated tables in the hand-over file match the records", None),
    Gate("mailbox", "the work-package file is its sentinel line or a complete work package", None),
    Gate("heartbeat", "a commit of other work also updates the hand-over file (or grows the journal file)", None, False),
)}


def flag_reason(gate_id: str) -> str:
    """The reason a gate's violations are flagged under: its own id unless the catalog names another."""
    return str(CATALOG[gate_id].flag_reason or gate_id)
