"""Where a path named by the repository really leads.

The config, the CLI and the work tree name files the gate reads and writes; any of them may be
hostile (a committed `.gate.yaml`, a committed directory symlink). Every such path is resolved
through every symlink and must land inside the work tree and outside every git directory (the
git dir, the common dir with its `worktrees/<id>` admin dirs, `GIT_DIR`, and any `.git` below
the top). Only then is it read or written, and the writers open the resolved path without
following a link in any component (fsio), so a link swapped in afterwards is not followed either.
"""

import os

from gates.infra.errors import CANNOT_RUN, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from gates.infra.git import Repo


def within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies under it, judged on the paths as given (resolve both first)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def below(path: str, folder: str) -> str:
    """`path` relative to `folder`, for a `path` that lies within it (see `within`): os.path.relpath's answer,
    without its two abspath calls and its walk of common components."""
    return "." if path == folder else path[len(folder.rstrip(os.sep)) + 1:]


def real_from(path: str, given: str, real: str) -> str:
    """`os.path.realpath(path)` where the folder `given` is already known to resolve to `real`: below it, one lstat
    a component (realpath's walk costs about 50,000 instructions a call, and a check makes a dozen). Any part that
    is a link, `.`, `..` or empty is left to realpath itself; an lstat that fails reads as "not a link", as in
    realpath."""
    if path == given:
        return real
    head = given.rstrip(os.sep) + os.sep
    if not path.startswith(head):
        return os.path.realpath(path)
    at = real
    for part in path[len(head):].split(os.sep):
        if part in ("", ".", ".."):
            return os.path.realpath(path)
        at = os.path.join(at, part)
        try:
            if os.lstat(at).st_mode & 0o170000 == 0o120000:  # S_IFLNK
                return os.path.realpath(path)
        except OSError:
            pass
    return at


def nested(repo: "Repo", relative: str) -> bool:
    """Whether a folder on the way to `relative` (repository-relative, `/`-separated) holds a `.git`: a submodule's or
    another repository's work tree, whose files this index does not hold."""
    parts = relative.split("/")[:-1]
    return any(os.path.lexists(os.path.join(repo.toplevel, *parts[:n], ".git")) for n in range(1, len(parts) + 1))


def git_dirs(repo: "Repo") -> list[str]:
    """Every git directory this run knows of: the git dir, the common dir, and where GIT_DIR leads."""
    found = [str(repo.git_dir), str(repo.common_dir)]
    pointed = repo.env.get("GIT_DIR")
    if pointed:
        found.append(os.path.realpath(pointed))
    return found


def resolve(repo: "Repo", path: "Path | str") -> tuple[str, str | None]:
    """(the real path, why it is no place for the gate's files or None) for `path`, through every symlink it crosses."""
    top = repo.toplevel
    real = real_from(os.fspath(path), top, top)  # the top is real: it was resolved
    if any(within(real, folder) for folder in git_dirs(repo)):
        return real, "resolves inside the git directory"
    if not within(real, top):
        return real, "resolves outside the repository"
    if real == top:
        return real, "names the top of the work tree, not a file in it"
    if any(part.casefold() == ".git" for part in below(real, top).split(os.sep)):
        return real, "resolves inside a .git folder"
    return real, None


def canonical(repo: "Repo", relative: str) -> tuple[str, str | None]:
    """A configured path as the repository-relative POSIX path it really names, or why it names none."""
    if not relative or relative.startswith("/"):
        return relative, "must be a path relative to the top of the work tree"
    real, why = resolve(repo, os.path.join(repo.toplevel, relative))
    if why:
        return relative, why
    return below(real, repo.toplevel).replace(os.sep, "/"), None


def confined(repo: "Repo", path: "Path | str", shown: str, *, reason: str = "input-unreadable") -> str:
    """The real path of a file the gate is about to read or write, refused when it leads out of bounds.

    Nothing of a refused file is read: the message names the path as given and why, never content.
    """
    real, why = resolve(repo, path)
    if why:
        raise GateError(f"refusing it: it {why}", code=CANNOT_RUN, reason=reason, path=shown)
    return real
