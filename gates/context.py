"""What a gate is given: the repository, the effective config and the loaded hand-over files."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gates.changes import Change
from gates.config import Config
from gates.git import Repo
from gates.handoff import Document


@dataclass(frozen=True)
class Loaded:
    """A hand-over file as read: its document, or only its size when it was over the cap."""

    shown: str
    size: int
    doc: Document | None


@dataclass
class Context:
    repo: Repo
    config: Config
    handoffs: list[Loaded]
    now: datetime
    changes: list[Change] = field(default_factory=list)  # what the change-judging gates judge
    range_spec: str | None = None  # set under `gate check --range`: changes are those commits
    events: list[tuple[str, str]] = field(default_factory=list)  # (flag reason, message) to flag even on success
    _records: tuple[list[Any], list[tuple[str, int, str]]] | None = field(default=None, repr=False)

    def records(self) -> tuple[list[Any], list[tuple[str, int, str]]]:
        """The records of the work tree, read once per check for every gate that needs them."""
        if self._records is None:
            from gates import records

            self._records = records.load_all(self.repo, self.config)
        return self._records

    def staged(self, path: str) -> bool:
        """Whether the commit being made changes `path` (never true under --range: history has no index)."""
        return self.range_spec is None and any(change.touches(path) for change in self.changes)
