"""Every gate's id, one-line summary and flag reason: data, which the layers below the checks may read.

The gates' modules are imported by gates.checks (GATES), never from here. The surfaces that name every gate (the
hook manifest, the config schema's `gates` keys, the `gates:` block `gate init` writes, docs/configuration.md) are
rendered from this table by gates/infra/surfaces.py: `python -I -m gates.infra.surfaces --write`.
"""

from gates.infra.plain import NamedTuple


class Gate(NamedTuple):
    """flag_reason: None unless the gate's failures are flagged under another reason; on: whether `gate check`
    runs it when the config does not say (the `gates:` defaults are made from this). For its surfaces: hook, the
    hook's description where it says more than the summary (None: the summary, as a sentence); fix, whether the hook
    runs `--fix`; push, a push-time gate (the hook's stages are pre-push's, not a commit's); note, why a gate off by
    default is off (the comment of its `gates:` line); situated, whether its verdict depends on the situation judged
    (the commit as it will be, the work tree, a range, a push): its flags then resolve only in the same situation
    (gates/domain/changes.py::keyed). A gate that reads only the work tree or the clone's state is not."""

    id: str
    summary: str
    flag_reason: str | None
    on: bool = True
    hook: str | None = None
    fix: bool = False
    push: bool = False
    note: str | None = None
    situated: bool = True


CATALOG: dict[str, Gate] = {gate.id: gate for gate in (
    Gate("handoff-structure", "the hand-over file has its sections, Meta block, target and size limits", None),
    Gate("handoff-no-checked-items", "no checked-off task items in the hand-over file", None,
         hook="No checked-off task items in the hand-over file; the hook moves them to the archive and fails so you "
              "re-stage.", fix=True),
    Gate("handoff-fresh", "the Meta ref is HEAD or a recent ancestor, and the hand-over is not stale", None,
         hook="The Meta ref is HEAD or a recent first-parent ancestor; a staged hand-over names HEAD; not stale."),
    Gate("handoff-claim", "no commit of the state file while another live worktree holds its claim", "claim-denied",
         hook="No commit of the state file while another live worktree holds its claim (gate claim).", situated=False),
    Gate("handoff-claim-remote", "no push of the state file while another clone holds its remote claim, or under a "
         "stale fence", None, False, push=True, note="runs at push time: `gate check --remote` and its pre-push hook",
         hook="At push, no change of the state file while another clone holds its remote claim or under a stale fence "
              "(needs claims.remote; reads the remote, so pre-commit.ci must skip it)."),
    Gate("git-stale-locks", "no stale git lock file wedges the repository", None,
         hook="No stale git lock file wedges the repository; stale ones move into lost+found.", situated=False),
    Gate("append-only", "archive files only grow at their end", None),
    Gate("records-immutable", "closed records are never edited; records are valid; supersession is reciprocal", None),
    Gate("handoff-tables", "generated tables in the hand-over file match the records", None),
    Gate("mailbox", "the work-package file is its sentinel line or a complete work package", None, situated=False),
    Gate("heartbeat", "a commit of other work also updates the hand-over file (or grows the journal file)", None, False,
         hook="A commit of other work also updates the hand-over file (enable it in .gate.yaml)."),
)}


def flag_reason(gate_id: str) -> str:
    """The reason a gate's violations are flagged under: its own id unless the catalog names another."""
    return str(CATALOG[gate_id].flag_reason or gate_id)
