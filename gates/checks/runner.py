"""`gate check`: load the inputs once, run the selected gates, collect their findings."""

import os
import posixpath

from gates.checks import GATES, Context
from gates.domain import changes
from gates.domain.handoff import load_handoff
from gates.infra import clock
from gates.infra.clock import datetime
from gates.infra.config import CONFIG_NAME, MAX_CONFIG_BYTES, Config, verify_recorded
from gates.infra.errors import USAGE, GateError
from gates.infra.findings import ENVIRONMENT, ERROR, WARNING, CheckResult, Finding
from gates.infra.git import Repo
from gates.infra.text import shell_quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def select(config: Config, only: list[str], skip: list[str]) -> list[str]:
    """The gate ids to run: `--only` names them (enabled or not), else the enabled ones."""
    for gate_id in (*only, *skip):
        if gate_id not in GATES:
            raise GateError(f"unknown gate id '{gate_id}' (known: {', '.join(GATES)})", code=USAGE, reason="usage")
    enabled = config.section("gates")
    chosen = only or [gate_id for gate_id in GATES if enabled.get(gate_id, True)]
    return [gate_id for gate_id in chosen if gate_id not in skip]


def run(repo: Repo, config: Config, gate_ids: list[str], files: list[str], now: datetime | None = None,
        range_spec: str | None = None, push: "list[Any] | None" = None, fixed: bool = False) -> CheckResult:
    """Judge the hand-over as the commit will record it: staged, its staged content. After `--fix` mended it in
    the work tree (`fixed`), the work tree's: that is what the user stages again, and the commit is stopped anyway."""
    staged = not files and range_spec is None and not fixed  # the hand-over as the commit will record it
    if range_spec is None and push is None:
        begin(repo, config if staged else None)
    elif push is not None:
        repo.prefetch(repo.changed_args(repo.head, None, []))
    history = repo.history()
    for gate_id in gate_ids:
        GATES[gate_id]  # noqa: B018 (imported now, while git answers)
    found = changes.in_range(repo, history, range_spec) if range_spec else changes.staged(repo, history)
    paths = files or [repo.path(config.section("handoff")["path"])]
    loaded = [load_handoff(repo, config, path, found if staged else None) for path in paths]
    ctx = Context(repo=repo, config=config, handoffs=loaded, now=now or clock.now(), changes=found,
                  range_spec=range_spec, push=push)
    result = CheckResult(gates=list(gate_ids), files=[item.shown for item in loaded])
    result.unstaged = [item.shown for item in loaded if item.unstaged]
    result.range = (range_spec, len(found)) if range_spec else None
    result.situation = changes.situation(range_spec, push, found)
    try:
        for gate_id in gate_ids:
            result.findings.extend(GATES[gate_id].check(ctx))
        result.findings.extend(environment(repo, config, [c.changed() for c in found], paths))
        if not range_spec:
            result.findings.extend(quiet_loop(repo, ctx.now))
    finally:
        history.close()
    result.findings.sort(key=lambda f: (f.path, f.line, f.gate))  # stable: a gate's own order stands within a line
    result.events = ctx.events
    result.unjudged = ctx.unjudged
    return result


def begin(repo: Repo, config: Config | None) -> None:
    """What a check of the commit being made (or of the work tree) asks first, once a run: whether the commit amends
    (changes.amend_base: before anything is asked of HEAD), then what is staged and, where the commit is judged as it
    will be recorded (`config` given), the index's `.gate.yaml` and configured hand-over in one `cat-file --batch`:
    started side by side, read as they are needed."""
    if "begun" in repo.memo:
        return
    repo.memo["begun"] = True
    changes.amend_base(repo)
    repo.prefetch(repo.changed_args(repo.head, None, []))
    if config is not None:
        if not os.path.lexists(repo.path(CONFIG_NAME)):  # the index is asked what it holds there all the same
            repo.prefetch(repo.entries_args([CONFIG_NAME]))
        handoff = config.section("handoff")
        repo.prefetch_blobs([repo.index_spec(CONFIG_NAME), repo.index_spec(posixpath.normpath(handoff["path"]))],
                            MAX_CONFIG_BYTES + int(handoff["max_bytes"]) + 512)  # (512: the two header lines)


def verify_config(repo: Repo, config: Config) -> None:
    """Where a commit is being made (changes.committing), refuse it when it records another configuration than the
    work tree's, which the gates read: CI will judge it by the one it records (config.verify_recorded)."""
    begin(repo, config)
    if changes.committing(changes.staged(repo, repo.history())):
        verify_recorded(repo, config)


def fix(repo: Repo, config: Config, gate_ids: list[str], now: datetime) -> list[tuple[str, str]]:
    """`gate check --fix`: every chosen gate whose module offers `fix(repo, config, now)` mends what it finds.

    In catalog order, before any gate judges. A fixer returns what it did, one line each (none: nothing
    to mend); each is (the gate that fixed, the line).
    """
    return [(gate_id, line) for gate_id in GATES if gate_id in gate_ids
            for line in getattr(GATES[gate_id], "fix", _nothing)(repo, config, now)]


def _nothing(repo: Repo, config: Config, now: datetime) -> list[str]:
    return []


AGENT_VARIABLES = ("CLAUDECODE", "CODEX_THREAD_ID", "GEMINI_CLI")  # loopwatch.HARNESSES' (held equal by its test)


def quiet_loop(repo: Repo, now: datetime) -> list[Finding]:
    """An agent's commit whose session loop did not run (domain/loopwatch.py): a warning at the harness's file. A
    person's commit (no harness's variable set) does not even load the module."""
    import os

    if not any(name in os.environ for name in AGENT_VARIABLES):
        return []
    from gates.domain import loopwatch

    found = loopwatch.notice(repo, now, os.environ)
    return [Finding(found[0], 1, ENVIRONMENT, found[1], WARNING)] if found else []


def environment(repo: Repo, config: Config, changed: list[list[tuple[str, str]]], paths: list[str]) -> list[Finding]:
    """What a passing check must still mention. Only looks: nothing is created, the state dir included."""
    from gates.domain import leftovers
    from gates.infra import state

    out = []
    for folder, why in state.unsafe(state.layout(repo)):
        out.append(Finding(folder, 1, ENVIRONMENT, f"state dir {folder}: {why}: commands that write "
                           "(flags, claims, stamps, the journal) refuse it — `gate doctor` says what to fix", WARNING))
    committed = sorted({path for pairs in changed for path in leftovers.staged(pairs)})
    for path in committed:
        out.append(Finding(path, 1, ENVIRONMENT, f"{path} is a temp file a killed writer left, not content: "
                           f"`git rm --cached -- {shell_quote(path)}`, then `gate doctor --fix` moves it to lost+found", ERROR))
    for item in leftovers.in_work_tree(repo, config, paths):
        if item.shown not in committed:
            out.append(Finding(item.shown, 1, ENVIRONMENT, f"{item.shown} is a temp file a killed writer left: "
                               "`git add -A` would commit it — `gate doctor --fix` moves it to lost+found", WARNING))
    return out
