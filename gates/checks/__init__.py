"""What a gate is given (Context), and every gate under its id: the catalog is data, and a gate's module is imported
only when it runs.

The id is the hook id, the config key and the module name (`-` as `_`). A check that runs one
gate (`gate check --only ID`, as each pre-commit hook does) imports that gate alone. The catalog
itself lives in gates/infra/catalog.py, so that the layers below the checks (flags, doctor, the
report) can read the ids without importing a gate.
"""

from _collections_abc import Mapping  # what collections.abc re-exports, without `collections` itself

from gates.domain.changes import Change
from gates.domain.handoff import Loaded
from gates.infra.catalog import CATALOG, Gate, flag_reason
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType
    from typing import Any

    from gates.domain.records import Record, Scan
    from gates.infra.findings import Finding

__all__ = ["CATALOG", "GATES", "OVER_CAP", "Context", "Gate", "flag_reason"]


class _Modules(Mapping[str, "ModuleType"]):
    """id -> the gate's module, imported on first use."""

    def __getitem__(self, gate_id: str) -> "ModuleType":
        if gate_id not in CATALOG:
            raise KeyError(gate_id)
        module: ModuleType = __import__(f"gates.checks.{gate_id.replace('-', '_')}", fromlist=["check"])
        return module

    def __iter__(self) -> "Iterator[str]":
        return iter(CATALOG)

    def __len__(self) -> int:
        return len(CATALOG)


GATES: "Mapping[str, ModuleType]" = _Modules()


OVER_CAP = "not checked: the file is over its size cap (see handoff-structure)"  # a gate's word on a file it cannot read


class Context:
    """What every gate of one check reads: the repository, the config, the hand-over files as read, the time."""

    def __init__(self, repo: Repo, config: Config, handoffs: list[Loaded], now: datetime,
                 changes: list[Change] | None = None, range_spec: str | None = None,
                 push: "list[Any] | None" = None) -> None:
        self.repo = repo
        self.config = config
        self.handoffs = handoffs
        self.now = now
        self.changes = changes or []  # what the change-judging gates judge
        self.range_spec = range_spec  # set under `gate check --range`: changes are those commits
        self.push = push  # at push time (`gate check --remote`, pre-push): the refs pushed (domain.push.Update)
        self.events: list[tuple[str, str]] = []  # (flag reason, message) to flag even on success
        self.unjudged: dict[str, str] = {}  # gate: why it judged nothing this time (its flags stay as they are)
        self._scan: Scan | None = None

    def records_scan(self) -> "Scan":
        """The records folder as listed now (domain.records.Scan), once per check for every gate that needs it."""
        if self._scan is None:
            from gates.domain import records

            self._scan = records.scan(self.repo, self.config)
        return self._scan

    def records(self) -> "tuple[list[Record], list[tuple[str, int, str]]]":
        """The records of the work tree, read once per check for every gate that needs them."""
        return self.records_scan().load()

    def judged_nothing(self, gate: str, why: str) -> "list[Finding]":
        """What a gate returns when this check gave it nothing to judge: no finding, and no pass either, so its open
        flags are neither resolved nor raised again; the summary line says so."""
        self.unjudged[gate] = why
        return []

    def staged(self, path: str) -> bool:
        """Whether the commit being made changes `path` (never true under --range: history has no index)."""
        return self.range_spec is None and any(change.touches(path) for change in self.changes)
