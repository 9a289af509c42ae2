"""Where git's lock files are: the scan every check makes. Judging them, and moving the stale ones aside, is
gates/domain/locks.py, loaded only once this scan has found one.
"""

import os

from gates.infra.errors import GateError
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COMPANION = "~pid.lock"  # `<lock>~pid.lock`: a companion file naming its lock's holder
FRESH, LIVE, STALE, INELIGIBLE = "fresh", "live", "stale", "ineligible"


class Lock:
    """A git lock file, and what judging it found (size, age, verdict, why, and the evidence)."""

    def __init__(self, path: str, shown: str, companion: bool = False) -> None:
        self.path = path
        self.shown = shown  # relative to the common dir, as the quarantine keeps it
        self.companion = companion
        self.size = 0
        self.age = 0.0
        self.verdict = LIVE
        self.reason = ""
        self.evidence: dict[str, Any] = {}
        self.ident = (0, 0)
        self.mtime = 0.0
        self.ctime = 0.0

    def to_json(self) -> "dict[str, Any]":
        return {"path": self.path, "shown": self.shown, "size": self.size, "age_seconds": round(self.age, 1),
                "verdict": self.verdict, "reason": self.reason, "evidence": self.evidence}


def _plain_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def admin_dirs(repo: Repo) -> list[str]:
    dirs = [repo.common_dir]
    worktrees = os.path.join(repo.common_dir, "worktrees")
    if _plain_dir(worktrees):
        dirs += sorted(path for name in os.listdir(worktrees) if _plain_dir(path := os.path.join(worktrees, name)))
    return dirs


def find(repo: Repo, deep: bool) -> list[Lock]:
    """Lock files at the top of the common dir and each worktree admin dir; under refs/ when `deep`."""
    found: list[Lock] = []
    for directory in admin_dirs(repo):
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:  # a git dir we cannot list may hide the very lock that wedges git
            raise GateError(f"cannot look for git lock files in {directory}: {exc.strerror}", reason="io-error") from None
        found += [_lock(repo, os.path.join(directory, name)) for name in names if name.endswith(".lock")]
    refs = os.path.join(repo.common_dir, "refs")
    if deep and _plain_dir(refs):
        for top, dirs, files in os.walk(refs, onerror=_unlistable):  # never follows a symlinked directory
            # A folder (or a symlink to one) named like a lock wedges git as surely as a file: report it, and do
            # not walk into it.
            wedged = sorted(name for name in dirs if name.endswith(".lock"))
            dirs[:] = sorted(name for name in dirs if not name.endswith(".lock"))
            found += [_lock(repo, os.path.join(top, name)) for name in sorted([*files, *wedged]) if name.endswith(".lock")]
    return found


def _unlistable(exc: OSError) -> None:
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return  # a ref folder git pruned meanwhile
    raise GateError(f"cannot look for git lock files in {exc.filename}: {exc.strerror}", reason="io-error")


def _lock(repo: Repo, path: str) -> Lock:
    shown = os.path.relpath(path, repo.common_dir).replace(os.sep, "/")
    return Lock(path, shown, companion=companion(os.path.basename(path)))


def companion(name: str) -> bool:
    r"""Whether a lock file's name is a companion's: a name of one line, then `~pid.lock` (what the pattern
    `^.+~pid\.lock$` matched; a check meets a lock file on every `git commit -a`, so `re` is not loaded for it)."""
    return len(name) > len(COMPANION) and name.endswith(COMPANION) and "\n" not in name
