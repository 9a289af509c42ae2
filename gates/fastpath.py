"""The recipe of a clean `gate check`: what it depended on, so that the next run can be replayed (quick.py).

The recipe covers everything the gates read and everything git read to answer discovery:
every folder from where the run started up to the top of the work tree (no `.git`, `HEAD`,
`objects` or `refs` appeared there), the `.git` entry and its owner, the `commondir` pointer,
the repository's config and config.worktree and the user's and system's git config files, HEAD
and the loose ref it names (with packed-refs), the index, the shallow file, the gate's own code,
`.gate.yaml`, the hand-over and work-package files, an optional project schema, the archive and
append-only files, the records, the claims and whether their worktrees exist, and the list of
worktrees; the arguments, the working directory and the environment are the record's context.
A git lock file in any folder git keeps them in, a deep lock scan, `--range`, a reftable
repository or a config with includes always take the full path.

A record is written only when the run was clean, its answer came from HEAD's recent history alone
(a Meta ref that git had to resolve by name or from the object store could change with any ref
update or fetch), and nothing moved under it: the recipe is evaluated before the gates run and
again after, and git's discovery is proven to have answered for this very state — by the
discovery evidence standing unchanged from before git was asked until the plan (`Before`), or
else by asking git a second time after the run. A record expires when a gate said its verdict could flip by the clock alone
(Context.holds_until: a claim's TTL, the hand-over turning stale or no longer being in the
future) and after an hour in any case. It lives in the rebuildable
cache: deleting it changes no answer.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from gates import quick
from gates.config import CONFIG_NAME, Config
from gates.errors import GateError
from gates.git import Repo

MAX_AGE = 3600.0
_PACKAGE = Path(quick.PACKAGE)
_REF = re.compile(r"refs/[A-Za-z0-9._/+-]+")


class Plan:
    """A recipe, what it found before the gates ran, where git said the run looks, and until when a result holds."""

    def __init__(self, recipe: list[tuple[str, str]], head: bytes, found: tuple[str, str], until: float,
                 where: tuple[str, str, str, str], proven: bool) -> None:
        self.recipe = recipe
        self.head = head
        self.found = found
        self.until = until
        self.where = where
        self.proven = proven  # the discovery evidence stood unchanged from before git's discovery until the plan


def _discovery(top: str, git_dir: str, common: str, recipe: list[tuple[str, str]]) -> bytes | None:
    """The evidence that git would find this repository again the same way, and the repository's config as read;
    None when the evidence cannot be had cheaply."""
    start = os.path.realpath(quick.start_dir(os.environ))
    folder = start
    while True:
        recipe.append(("kind", os.path.join(folder, ".git")))
        if folder == top:
            break
        recipe += [("kind", os.path.join(folder, name)) for name in ("HEAD", "objects", "refs")]
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    recipe += [("content", os.path.join(top, ".git")), ("kind", top), ("kind", git_dir), ("kind", common),
               ("content", os.path.join(git_dir, "commondir")), ("content", os.path.join(git_dir, "config.worktree"))]
    config = quick.read_capped(os.path.join(common, "config"), 1 << 20)
    if config is None or b"include" in config.lower() or os.path.lexists(os.path.join(common, "reftable")):
        return None
    recipe.append(("content", os.path.join(common, "config")))
    home, xdg = os.environ.get("HOME", ""), os.environ.get("XDG_CONFIG_HOME", "")
    user_files = [os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
                  os.path.join(xdg or os.path.join(home, ".config"), "git", "config"),
                  os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    recipe += [("stat", path) for path in user_files if path]
    # HEAD, and the loose ref it names; without one, packed-refs holds the answer.
    head = quick.read_capped(os.path.join(git_dir, "HEAD"), 4096) or b""
    recipe.append(("content", os.path.join(git_dir, "HEAD")))
    if head.startswith(b"ref: "):
        name = head[5:].strip().decode("utf-8", "replace")
        if not _REF.fullmatch(name) or ".." in name:
            return None
        loose = quick.read_capped(os.path.join(common, name), 4096)
        if loose is not None and loose.startswith(b"ref:"):
            return None  # a symbolic ref to a symbolic ref: not followed here
        recipe += [("content", os.path.join(common, name)), ("stat", os.path.join(common, "packed-refs"))]
    return config


class Before:
    """The discovery evidence as it stood before git was asked: where the cheap walk leads, and what it found."""

    def __init__(self, where: tuple[str, str, str, str], recipe: list[tuple[str, str]], found: list[bytes]) -> None:
        self.where = where
        self.recipe = recipe
        self.found = found


def before_discovery() -> Before | None:
    """Taken before git's discovery: if the same evidence stands after it (and git's answer is where this walk
    leads), git answered for exactly this state, and the run needs no second discovery to prove it."""
    try:
        where = quick.locate(os.environ)
        recipe: list[tuple[str, str]] = []
        if where is None or _discovery(where[0], where[1], where[2], recipe) is None:
            return None
        return Before(where, recipe, quick.evaluate(recipe))
    except (OSError, quick.Busy):
        return None


def _claims(repo: Repo, recipe: list[tuple[str, str]]) -> None:
    """Add the claims to the recipe, and whether the worktrees they name exist (a claim's TTL is handoff-claim's)."""
    folder = repo.common_dir / "gate" / "claims"
    recipe.append(("list", str(folder)))
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        recipe.append(("content", str(path)))
        try:
            record = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            recipe += [("kind", str(record.get(key, ""))) for key in ("worktree", "git_dir")]


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _folder(path: Path, pattern: str, recipe: list[tuple[str, str]], op: str) -> None:
    recipe.append(("list", str(path)))
    recipe += [(op, str(p)) for p in sorted(path.glob(pattern))] if path.is_dir() else []


def plan(repo: Repo, config: Config, args: Any, argv: list[str], before: Before | None = None) -> Plan | None:
    """The recipe of this run, evaluated before the gates run; None: this run is never replayed."""
    if args.range or config.section("locks")["deep"]:
        return None
    recipe: list[tuple[str, str]] = []
    repo_config = _discovery(str(repo.toplevel), str(repo.git_dir), str(repo.common_dir), recipe)
    if repo_config is None:
        return None
    evidence = len(recipe)
    worktrees = repo.common_dir / "worktrees"
    recipe += [("lock-free", str(repo.common_dir)), ("lock-free", str(repo.git_dir)), ("list", str(worktrees))]
    recipe += [("lock-free", str(worktrees / name)) for name in (sorted(os.listdir(worktrees)) if worktrees.is_dir() else [])]
    index = repo.env.get("GIT_INDEX_FILE")
    index_path = os.path.realpath(repo.toplevel / index if index else repo.git_dir / "index")  # absolute stays so
    sha1 = b"objectformat" not in repo_config.lower()  # quick.py takes apart SHA-1 indexes only
    recipe.append(("index" if sha1 else "stat", index_path))
    recipe.append(("stat", str(repo.common_dir / "shallow")))
    _folder(_PACKAGE, "*.py", recipe, "stat")
    _folder(_PACKAGE / "schemas", "*.json", recipe, "stat")
    handoff = config.section("handoff")
    files = [Path(f).absolute() for f in args.files] or [repo.toplevel / handoff["path"]]
    if any(_size(path) > handoff["max_bytes"] for path in files):
        return None  # refused by its size alone: a failure, never replayed, and not worth hashing
    top = repo.toplevel
    named = [top / CONFIG_NAME, *files, top / config.section("mailbox")["path"], top / config.section("archive")["path"],
             *(top / name for name in config.section("append_only")["files"])]
    if handoff["schema"]:
        named.append(top / handoff["schema"])
    recipe += [("content", str(path)) for path in named]
    _folder(top / config.section("records")["path"], "*.md", recipe, "content")
    _claims(repo, recipe)
    head = _context(argv)
    try:
        found = _digests(head, recipe)
    except quick.Busy:
        return None
    config_now = quick.LOOKS["content"](str(top / CONFIG_NAME))
    if config_now != (b"-" if config.raw is None else quick.content_value(config.raw)):
        return None  # .gate.yaml changed after it was read: this run's answer is not the file's
    where = (str(repo.toplevel), str(repo.git_dir), str(repo.common_dir), index_path)
    proven = (before is not None and before.where == where and before.recipe == recipe[:evidence]
              and before.found == quick.evaluate(recipe[:evidence]))
    return Plan(recipe, head, found, time.time() + MAX_AGE, where, proven)


def _digests(head: bytes, recipe: list[tuple[str, str]]) -> tuple[str, str]:
    found = quick.evaluate(recipe)
    return quick.digest(head, recipe, found=found), quick.digest(head, recipe, staged=True, found=found)


def _context(argv: list[str]) -> bytes:
    return quick.context(os.getcwd(), argv, os.environ, getattr(sys.stdout, "encoding", None) or "")


def remember(repo: Repo, plan: Plan, argv: list[str], output: str, clock_until: float) -> None:
    """Keep a clean run's output for replay, if nothing moved while it ran and git still answers the same.

    `clock_until`: when a gate's verdict could change by the clock alone (Context.holds_until)."""
    from gates import cache
    from gates.git import discover

    if any(key.startswith("resolve:") for key in repo.memo):
        return  # git was asked about a name or an object beyond HEAD's recent history: refs and fetches move those
    try:
        if _digests(plan.head, plan.recipe) != plan.found:
            return
        again = repo if plan.proven else discover(environ=os.environ)  # else: ask git again, to be sure
    except (quick.Busy, GateError):
        return
    if (again.toplevel, again.git_dir, again.common_dir, again.head) != (repo.toplevel, repo.git_dir, repo.common_dir,
                                                                          repo.head):
        return
    if quick.locate(os.environ) != plan.where:
        return  # the no-change path would not find this repository the way git did: a record would never be used
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    errors = getattr(sys.stdout, "errors", None) or "strict"
    try:
        data = output.encode(encoding, errors)
    except (UnicodeError, LookupError):
        return
    record = quick.Record(min(plan.until, clock_until), plan.where, plan.found, plan.recipe, data)
    cache.put_raw(repo, quick.slot(os.getcwd(), argv), record.encode())
