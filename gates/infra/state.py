"""The one place that knows the layout under `<git-common-dir>/gate/`.

Every worktree of a clone shares this directory; it lives inside git's own directory, so it
is never committed.
"""

import os
import stat

from gates.infra import clock
from gates.infra.clock import datetime
from gates.infra.errors import GateError
from gates.infra.git import Repo


class Layout:
    """The state dir's folders, as paths (str: `pathlib` costs a commit more to import than it saves)."""

    def __init__(self, root: str, repo: Repo | None = None) -> None:
        self.root = root
        self.repo = repo
        self.flags = os.path.join(root, "flags")
        self.flags_acked = os.path.join(root, "flags", "acked")
        self.flags_open = os.path.join(root, "flags", "open")  # markers: which (gate, worktree, scope) have a flag open
        self.flags_resolved = os.path.join(root, "flags", "resolved")
        self.claims = os.path.join(root, "claims")
        self.claims_released = os.path.join(root, "claims", "released")
        self.cache = os.path.join(root, "cache")
        self.lost_found = os.path.join(root, "lost+found")


def new_evidence_dir(lay: Layout, when: datetime) -> str:
    """A fresh, unguessable folder in lost+found: a move into it can never overwrite anything."""
    parent = ensure_dir(lay, lay.lost_found)
    for _ in range(100):
        candidate = os.path.join(parent, f"{clock.name_text(when)}-{os.urandom(6).hex()}")
        try:
            os.mkdir(candidate)
        except FileExistsError:
            continue
        return candidate
    raise GateError(f"cannot create a folder in {parent}", reason="io-error")


def layout(repo: Repo) -> Layout:
    """The state dir's layout of this clone (made once a run)."""
    if "layout" not in repo.memo:
        repo.memo["layout"] = Layout(os.path.join(repo.common_dir, "gate"), repo)
    found: Layout = repo.memo["layout"]
    return found


def shared_modes(repo: Repo) -> tuple[int, int] | None:
    """(file mode, directory mode) for new state files when core.sharedRepository asks for it, else None (umask)."""
    if "shared" not in repo.memo:
        proc = repo.ask("config", "--get", "core.sharedRepository", answers=(0, 1))  # 1: not set
        repo.memo["shared"] = _shared(proc.stdout.strip().lower()) if proc.returncode == 0 else None
    modes: tuple[int, int] | None = repo.memo["shared"]
    return modes


def _shared(value: str) -> tuple[int, int] | None:
    from gates.infra.fsio import umask

    base = 0o666 & ~umask()
    if value in ("true", "group", "1"):
        return base | 0o060, 0o2770 | ((base & 0o004) and 0o005)
    if value in ("all", "world", "everybody", "2"):
        return base | 0o064, 0o2775
    if value.startswith("0") and len(value) > 1 and all(c in "01234567" for c in value):
        perms = int(value, 8) & 0o666
        return perms, perms | ((perms & 0o444) >> 2) | 0o2000
    return None


def write(repo: Repo, path: str, data: bytes, *, exclusive: bool = False, reason: str = "io-error") -> bool:
    """The atomic writer, for files under the state dir: new ones follow core.sharedRepository."""
    from gates.infra import fsio

    modes = shared_modes(repo) if not os.path.lexists(path) else None
    return fsio.write_atomic(path, data, exclusive=exclusive, reason=reason, mode=modes[0] if modes else None)


def ensure_dir(lay: Layout, path: str) -> str:
    """Create `path` under the state dir, refusing any step that could be turned against us."""
    rel = os.path.relpath(path, lay.root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        raise GateError(f"{path} is not under the state directory {lay.root}", reason="state-unsafe")
    current = lay.root
    _ensure_one(current, lay.repo)
    for part in rel.split(os.sep) if rel != os.curdir else ():
        current = os.path.join(current, part)
        _ensure_one(current, lay.repo)
    return path


def _ensure_one(path: str, repo: Repo | None = None) -> None:
    try:
        if not os.path.lexists(path):
            try:
                os.mkdir(path)
            except FileExistsError:
                pass  # made meanwhile: judged below like any other
            if repo is not None and (modes := shared_modes(repo)):
                os.chmod(path, modes[1])
        info = os.lstat(path)
    except OSError as exc:
        raise GateError(f"cannot create state directory {path}: {exc.strerror}", reason="io-error") from None
    problem = refusal(info, repo)
    if problem:
        raise GateError(f"refusing state directory {path}: {problem}", reason="state-unsafe")


def refusal(info: os.stat_result, repo: Repo | None) -> str | None:
    """Why a writing command refuses a state directory with this `lstat`, or None: the one rule, for writers
    (`ensure_dir`) and for readers that only report it (`unsafe`)."""
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return "not a plain directory (a symlink?)"
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX and not (repo and shared_modes(repo)):
        return "writable by every user"
    return None


def unsafe(lay: Layout) -> list[tuple[str, str]]:
    """(folder, why) for each existing folder of the state dir a writing command would refuse.

    Only looks (`lstat`): nothing is created, and a missing folder is fine (it is made on first use)."""
    found = []
    for path in (lay.root, lay.flags, lay.flags_acked, lay.flags_open, lay.flags_resolved, lay.claims, lay.claims_released,
                 lay.cache, lay.lost_found):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            if path == lay.root:
                break
            continue
        except OSError as exc:
            found.append((path, f"cannot be read: {exc.strerror}"))
            continue
        problem = refusal(info, lay.repo)
        if problem:
            found.append((path, problem))
            if path == lay.root:
                break  # nothing under it is ours to look at
    return found
