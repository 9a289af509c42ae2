"""The change a gate judges: the commit being made (HEAD → the index), or each commit of `--range`."""

from __future__ import annotations

from dataclasses import dataclass, field

from gates.git import History, Repo


@dataclass
class Change:
    repo: Repo
    history: History
    old: str | None  # the parent commit; None when there is none
    new: str | None  # the commit; None: the index (the commit being made)
    subject: str = ""
    _changed: dict[tuple[str, ...], list[tuple[str, str]]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "the commit being made" if self.new is None else f"commit {self.new[:12]} ({self.subject[:60]})"

    def changed(self, *pathspecs: str) -> list[tuple[str, str]]:
        """(status, path) of the files this change adds (A), modifies (M) or deletes (D)."""
        if pathspecs not in self._changed:
            self._changed[pathspecs] = self.repo.changed(self.old, self.new, list(pathspecs))
        return self._changed[pathspecs]

    def before(self, path: str) -> bytes | None:
        return self.history.blob(self.old, path)

    def after(self, path: str) -> bytes | None:
        return self.repo.index_blob(path) if self.new is None else self.history.blob(self.new, path)


def staged(repo: Repo, history: History) -> list[Change]:
    return [Change(repo, history, repo.head, None)]


def in_range(repo: Repo, history: History, spec: str) -> list[Change]:
    return [Change(repo, history, parent, commit, subject) for commit, parent, subject in repo.commits(spec)]
