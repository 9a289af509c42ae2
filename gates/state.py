"""The one place that knows the layout under `<git-common-dir>/gate/`.

Every worktree of a clone shares this directory; it lives inside git's own directory, so it
is never committed.
"""

from __future__ import annotations

import os
import stat
from datetime import datetime
from pathlib import Path

from gates.errors import GateError
from gates.git import Repo


class Layout:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def flags(self) -> Path:
        return self.root / "flags"

    @property
    def flags_acked(self) -> Path:
        return self.root / "flags" / "acked"

    @property
    def claims(self) -> Path:
        return self.root / "claims"

    @property
    def claims_released(self) -> Path:
        return self.root / "claims" / "released"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def lost_found(self) -> Path:
        return self.root / "lost+found"


def new_evidence_dir(lay: Layout, when: datetime) -> Path:
    """A fresh, unguessable folder in lost+found: a move into it can never overwrite anything."""
    parent = ensure_dir(lay, lay.lost_found)
    for _ in range(100):
        candidate = parent / f"{when:%Y%m%dT%H%M%SZ}-{os.urandom(6).hex()}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise GateError(f"cannot create a folder in {parent}", reason="io-error")


def layout(repo: Repo) -> Layout:
    return Layout(repo.common_dir / "gate")


def ensure_dir(lay: Layout, path: Path) -> Path:
    """Create `path` under the state dir, refusing any step that could be turned against us."""
    rel = path.relative_to(lay.root)
    current = lay.root
    for part in ("", *rel.parts):
        current = current / part if part else current
        _ensure_one(current)
    return path


def _ensure_one(path: Path) -> None:
    try:
        path.mkdir(exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise GateError(f"cannot create state directory {path}: {exc.strerror}", reason="io-error") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise GateError(f"refusing state directory {path}: not a plain directory (a symlink?)", reason="state-unsafe")
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        raise GateError(f"refusing state directory {path}: writable by every user", reason="state-unsafe")
