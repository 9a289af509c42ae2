"""The change a gate judges: the commit being made (HEAD → the index), or each commit of `--range`."""

import os

from gates.infra import jsonio
from gates.infra.digest import sha256
from gates.infra.git import History, Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Change:
    def __init__(self, repo: Repo, history: History, old: str | None, new: str | None, subject: str = "") -> None:
        self.repo = repo
        self.history = history
        self.old = old  # the parent commit; None when there is none
        self.new = new  # the commit; None: the index (the commit being made)
        self.subject = subject
        self._all: list[tuple[str, str]] | None = None

    @property
    def label(self) -> str:
        return "the commit being made" if self.new is None else f"commit {self.new[:12]} ({self.subject[:60]})"

    def changed(self, *paths: str) -> list[tuple[str, str]]:
        """(status, path) of the files this change adds (A), modifies (M) or deletes (D): all of them, or those
        named (a name ending in '/' is a folder). One git call per change answers every gate."""
        if self._all is None:
            self._all = self.repo.changed(self.old, self.new, [])
        if not paths:
            return list(self._all)
        return [(status, path) for status, path in self._all
                if any(path == p or (p.endswith("/") and path.startswith(p)) for p in paths)]

    def touches(self, path: str) -> bool:
        return bool(self.changed(path))

    def before(self, path: str, limit: int | None = None) -> bytes | None:
        """`path` before this change (None: it was not there); `limit`: as for Repo.index_blob."""
        return self.history.blob(self.old, path, limit)

    def after(self, path: str, limit: int | None = None) -> bytes | None:
        """`path` as this change leaves it (None: not there); `limit`: as for Repo.index_blob."""
        return self.repo.index_blob(path, limit) if self.new is None else self.history.blob(self.new, path, limit)


def staged(repo: Repo, history: History) -> list[Change]:
    return [Change(repo, history, repo.head, None)]


# `git commit`'s long options (git 2.39's `git commit --git-completion-helper-all`; `=`: one that takes a value,
# the next argument when not given with `=`), which git's option parser also takes by any unique prefix, and the
# short ones that take a value: the next argument, or the rest of their cluster (`-mMSG`; `S` and `u` only so).
# What follows a value-taking option is a value, never an option: `git commit -m --amend` is no amend.
_LONG = ("quiet verbose file= author= date= message= reedit-message= reuse-message= fixup= squash= reset-author "
         "trailer= signoff template= edit cleanup= status gpg-sign all include interactive patch only no-verify "
         "dry-run short branch ahead-behind porcelain long null amend no-post-rewrite untracked-files "
         "pathspec-from-file= pathspec-file-nul allow-empty allow-empty-message verify post-rewrite").split()
_NAMES = {name.rstrip("="): name.endswith("=") for name in _LONG}
_NAMES.update({f"no-{name}": False for name in list(_NAMES) if not name.startswith("no-")})
_VALUED_SHORT, _ATTACHED_SHORT = "mFCct", "Su"
_GIT_VALUED = ("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
               "--attr-source")


def amend_base(repo: Repo) -> bool:
    """Judge the commit being made as the amend it is: git tells a commit hook nothing of `--amend`, so the command
    line of the `git commit` running this check as its hook (the parent, or its parent under the pre-commit
    framework) is read from /proc, and when it amends, the commit's parent, HEAD's first parent, stands in for HEAD
    (its staged change, its Meta ref, its count; `repo.memo["amends"]` keeps the HEAD it replaces). Where it cannot
    be read (no /proc: macOS), or HEAD has no parent here (the root, a shallow clone's boundary: the amend
    makes a new root), the commit is judged as a new one on HEAD, as before. Returns whether it stood in."""
    if "GIT_INDEX_FILE" not in repo.env or repo.head is None:  # git sets it for each of its commit hooks
        return False
    from gates.infra.fsio import read_regular

    pid = os.getppid()
    for _ in range(3):
        try:
            argv = read_regular(f"/proc/{pid}/cmdline", 1 << 16).decode("utf-8", "surrogateescape").split("\0")
            pid = int(read_regular(f"/proc/{pid}/stat", 4096).rsplit(b")", 1)[1].split()[1])  # after the name's ")"
        except (OSError, ValueError, IndexError):
            return False
        amends = _amends(argv)
        if amends is None:
            continue
        line = repo.recent()
        if not amends or len(line) < 2:
            return False
        repo.memo["amends"], repo.head, repo.memo["recent"] = repo.head, line[1], line[1:]
        return True
    return False


def _amends(argv: list[str]) -> bool | None:
    """Whether `argv` is `git commit --amend`, read as git's option parser reads it (the last of --amend and
    --no-amend wins; a long option by any unique prefix); None when it is no git at all. An alias is no concern:
    git runs one as a git process of its own, `git commit --amend` (a shell alias's git is its own too)."""
    if not argv or os.path.basename(argv[0]) != "git":
        return None
    at = 1
    while at < len(argv) and argv[at].startswith("-"):  # git's own options, before its command
        at += 2 if argv[at] in _GIT_VALUED else 1
    if at >= len(argv) or argv[at] != "commit":
        return False  # git's, running this hook for another command (`git merge`: pre-merge-commit)
    amend, args = False, iter(argv[at + 1:])
    for arg in args:
        if arg in ("--", "--end-of-options"):
            break
        if arg.startswith("--"):
            typed, valued = arg[2:].partition("=")[0], "=" in arg
            matches = [typed] if typed in _NAMES else [name for name in _NAMES if name.startswith(typed)]
            name = matches[0] if len(matches) == 1 else ""  # ambiguous: git refuses the commit before any hook
            if name in ("amend", "no-amend"):
                amend = name == "amend"
            elif _NAMES.get(name) and not valued:
                next(args, None)
        elif arg.startswith("-"):
            for place, flag in enumerate(arg[1:], 1):
                if flag in _VALUED_SHORT + _ATTACHED_SHORT:
                    if place == len(arg) - 1 and flag in _VALUED_SHORT:
                        next(args, None)
                    break
    return amend


def committing(found: list[Change]) -> bool:
    """Whether `found` is a commit being made: the index's change, and something is staged or git runs this check
    as a commit's hook. git sets GIT_INDEX_FILE for every commit hook (the index, or the temporary one of `commit -a`
    and `commit PATH`): an empty commit, or an amend of the message alone, stages nothing and is a commit all the
    same, judged by what it records. The one definition: the hand-over read, the situation, the fresh gate's
    count and the claim gate ask it."""
    return bool(found) and found[0].new is None and (bool(found[0].changed()) or "GIT_INDEX_FILE" in found[0].repo.env)


def in_range(repo: Repo, history: History, spec: str) -> list[Change]:
    found = [Change(repo, history, parent, commit, subject) for commit, parent, subject in repo.commits(spec)]
    listed = repo.changed_in([(change.old, change.new) for change in found if change.new is not None])
    for change in found:
        change._all = listed.get(str(change.new), [])  # one git call for the whole range, not one per commit
    return found


# What a check judged, as `situation` names it (its flags are keyed by it), and as a message says it
SITUATIONS = {"commit": "the commit as it will be recorded", "work tree": "the work tree",
              "range": "a range of commits", "push": "a push"}


def situation(range_spec: str | None, push: object, found: list[Change]) -> str:
    """What a check judges: a --range's commits, a push, the commit as it will be recorded (`committing`), or else
    the work tree."""
    if range_spec:
        return "range"
    if push is not None:
        return "push"
    return "commit" if committing(found) else "work tree"


def scope_of(repo: Repo, files: list[str], range_spec: str | None, default_file: str,
             judged: str | None = None) -> "dict[str, Any]":
    """What a check judged: the hand-over files it read (the configured one when none is named), its range and its
    situation: the scope its flags are raised and resolved in (gates/domain/flags.py).

    `gate check HANDOFF.md` and `gate check` have the same scope; `gate check OTHER.md` and a
    `--range` check have their own: a pass there says nothing about a failure here. So has the situation: a manual
    check of the work tree says nothing about the commit a hook refused.
    """
    from gates.infra.paths import real_from

    top = repo.toplevel  # resolved: below it, one lstat a component (paths.real_from)
    paths = sorted({real_from(p, top, top) for p in files}) if files else [real_from(default_file, top, top)]
    return {"files": paths, "range": range_spec, "situation": judged}


def keyed(gate: str, scope: "dict[str, Any] | None") -> "dict[str, Any] | None":
    """The scope `gate`'s flags are keyed by: a gate whose verdict does not depend on the situation (the catalog's
    `situated`) is keyed without it, so that any check of the clone's state settles it."""
    from gates.infra.catalog import CATALOG

    entry = CATALOG.get(gate)
    if scope is None or entry is None or entry.situated:
        return scope
    return {key: value for key, value in scope.items() if key != "situation"}


def marker(gate: str, worktree: str, scope: "dict[str, Any] | None", digests: dict[bool, str] | None = None) -> str:
    """The name of the marker (flags/open/<name>) that says `gate` has a flag open in `worktree` and `scope`.
    `digests`: those made already for this worktree and scope, by whether the gate is keyed by the whole scope
    (`keyed` gives `scope` itself) or by it without its situation: a check names a marker for each gate, of two."""
    scoped = keyed(gate, scope)
    whole = scoped is scope
    digest = digests.get(whole) if digests is not None else None
    if digest is None:
        text = jsonio.dumps([worktree, scoped], sort_keys=True)
        digest = sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        if digests is not None:
            digests[whole] = digest
    return f"{gate}.{digest}"


def open_markers(repo: Repo, gates: list[str], scope: "dict[str, Any] | None") -> dict[str, str]:
    """{gate: its marker's name} for each of `gates` with a flag open in this worktree and `scope`: one lstat a
    gate. What flags.resolve resolves, asked first without loading the flags module."""
    from gates.infra import state

    folder, worktree = state.layout(repo).flags_open, str(repo.toplevel)
    digests: dict[bool, str] = {}
    named = {gate: marker(gate, worktree, scope, digests) for gate in gates}
    return {gate: name for gate, name in named.items() if os.path.lexists(os.path.join(folder, name))}
