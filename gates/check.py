"""`gate check`: load the inputs once, run the selected gates, collect their findings."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from gates import changes, handoff
from gates.config import Config
from gates.context import Context, Loaded
from gates.errors import USAGE, GateError
from gates.findings import CheckResult
from gates.git import Repo
from gates.registry import GATES


def select(config: Config, only: list[str], skip: list[str]) -> list[str]:
    """The gate ids to run: `--only` names them (enabled or not), else the enabled ones."""
    for gate_id in (*only, *skip):
        if gate_id not in GATES:
            raise GateError(f"unknown gate id '{gate_id}' (known: {', '.join(GATES)})", code=USAGE, reason="usage")
    enabled = config.section("gates")
    chosen = only or [gate_id for gate_id in GATES if enabled.get(gate_id, True)]
    return [gate_id for gate_id in chosen if gate_id not in skip]


def load_handoff(repo: Repo, config: Config, path: Path) -> Loaded:
    _, shown, data = handoff.read(repo, config, path)
    if isinstance(data, int):
        return Loaded(shown, data, None)
    return Loaded(shown, len(data), handoff.parse(handoff.Source.decode(data, shown).lines, shown))


def run(repo: Repo, config: Config, gate_ids: list[str], files: list[Path], now: datetime | None = None,
        range_spec: str | None = None) -> CheckResult:
    paths = files or [repo.toplevel / config.section("handoff")["path"]]
    loaded = [load_handoff(repo, config, path) for path in paths]
    history = repo.history()
    found = changes.in_range(repo, history, range_spec) if range_spec else changes.staged(repo, history)
    ctx = Context(repo=repo, config=config, handoffs=loaded, now=now or datetime.now(timezone.utc), changes=found,
                  range_spec=range_spec)
    result = CheckResult(gates=list(gate_ids), files=[item.shown for item in loaded])
    try:
        for gate_id in gate_ids:
            result.findings.extend(GATES[gate_id].check(ctx))
    finally:
        history.close()
    result.findings.sort(key=lambda f: (f.path, f.line, f.gate))  # stable: a gate's own order stands within a line
    result.events = ctx.events
    result.until = ctx.until
    return result
