"""The only door to git: every git call of the product goes through this module.

Everything in the repository, `.git/config` and the files it includes among it, may be written by
an adversary, and the gate runs with the user's rights. So no git call may run a program the
repository names. Each call (our own and GitPython's, for `--range`) gets:

- `SAFE_CONFIG` as `-c` options: command-line config beats every config file (and every
  `include.path`, and GIT_CONFIG_PARAMETERS/GIT_CONFIG_COUNT from the environment, which git reads
  first). `log.showSignature=false` keeps `git log` from handing a forged `gpgsig` header to
  `gpg.program`, `gpg.ssh.program` or `gpg.x509.program`; `core.fsmonitor=false` keeps the index
  reader from starting a hook or a daemon; an empty `credential.helper` and `core.askPass` leave
  nothing to ask. Each is safe for every subcommand: they only switch features off.
- An environment in which no transport is allowed (GIT_ALLOW_PROTOCOL names none and overrides
  every `protocol.*.allow`) and lazy fetching is off (GIT_NO_LAZY_FETCH, honoured since the
  2024 security releases, 2.39.4 among them; older gits ignore it and the refusal holds): reading an
  object a partial clone lacks would otherwise fetch it, running `remote.*.uploadpack`, an
  `ext::` command, `core.sshCommand`, `core.gitProxy` or a credential helper. Variables that name
  programs (GIT_PAGER, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, GIT_ASKPASS, ...) are dropped.
- git itself by absolute path, found through PATH's absolute entries only (GitPython's too).
- Per call: `--no-pager` (and output is never a terminal); diffs are `--name-status` only, with
  `--no-ext-diff --no-textconv`, so no `diff.external`, `diff.<driver>.command` or textconv runs;
  logs `--no-show-signature`.

Name-keyed drivers (`diff.<x>.*`, `filter.<x>.*`, `merge.<x>.driver`) cannot be switched off by
name; none of the subcommands used here runs them (no patch output, no work-tree content is
hashed or checked out, nothing is merged), and editors, pagers and hooks have no subcommand here
that starts them. tests/test_no_programs.py holds all of this against a hostile repository.
GIT_OPTIONAL_LOCKS=0 keeps a read from taking git's locks.
"""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from gates.errors import GateError
from gates.text import excerpt

# Variables through which an outer git (a hook's parent, another repository) points a
# subprocess at a repository. Kept inside a hook, dropped when GATE_ROOT pins the repository.
REPO_ENV_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
)

RECENT = 16  # first-parent commits fetched at once for Meta-ref questions

# Config given on git's command line: it wins over every config file and include. Only switches off.
SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "color.ui=false",
    "log.showSignature=false",
    "credential.helper=",
    "core.askPass=",
)

_SAFE_ARGS = ("--no-pager", *(arg for item in SAFE_CONFIG for arg in ("-c", item)))

_GIT: list[str] = []  # git's absolute path, found once per process


def git_program() -> str:
    """git by absolute path, found through PATH's absolute entries only: a relative entry (`.`, or an
    empty one) is searched from the call's cwd, the work tree, where a committed `git` would answer."""
    if not _GIT:
        for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
            candidate = os.path.join(folder, "git")
            if os.path.isabs(folder) and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                _GIT.append(candidate)
                break
        else:
            raise GateError("cannot run git: git is not on PATH", reason="io-error")
    return _GIT[0]

# Environment variables through which a caller names a program for git to run.
PROGRAM_ENV_VARS = (
    "GIT_PAGER",
    "GIT_EXTERNAL_DIFF",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
)


def _env(base: Mapping[str, str], pinned: bool) -> dict[str, str]:
    env = {k: v for k, v in base.items()
           if not (pinned and k in REPO_ENV_VARS) and k not in PROGRAM_ENV_VARS}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ALLOW_PROTOCOL"] = "none"  # a list naming no transport: every one refused, config overridden
    env["GIT_NO_LAZY_FETCH"] = "1"
    env["LC_ALL"] = "C"
    return env


def _run(args: list[str], cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            [git_program(), *_SAFE_ARGS, *args],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
    except FileNotFoundError:
        what = f"no such directory: {cwd}" if not cwd.is_dir() else "git is not on PATH"
        raise GateError(f"cannot run git: {what}", reason="io-error") from None
    except OSError as exc:
        raise GateError(f"cannot run git in {cwd}: {exc.strerror}", reason="io-error") from None


def _text(proc: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    def decode(data: bytes) -> str:
        return data.decode("utf-8", "surrogateescape")

    return subprocess.CompletedProcess(proc.args, proc.returncode, decode(proc.stdout), decode(proc.stderr))


class Repo:
    """A discovered work tree: where its files and its git dirs are, and its HEAD."""

    def __init__(self, toplevel: Path, git_dir: Path, common_dir: Path, head: str | None,
                 env: Mapping[str, str]) -> None:
        self.toplevel = toplevel
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.head = head  # None while the branch has no commit yet
        self.env = env
        self.memo: dict[str, Any] = {}  # answers git gave this run

    def git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _text(_run(list(args), self.toplevel, self.env))

    def status(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`git status` that runs no program the repository names.

        Status re-reads a file whose stat changed and passes it through its clean filter, so every
        filter the repository's own config defines is switched off for this call (`-c
        filter.<x>.clean=` and its kin: an empty command is no filter); the user's global filters
        (git-lfs, say) are theirs and stay. Submodules are not entered: their config is not ours.
        """
        if "filters" not in self.memo:
            listed = self.git("config", "--show-scope", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$")
            keys = []
            for line in listed.stdout.splitlines():
                scope, _, rest = line.partition("\t")
                if scope not in ("global", "system"):
                    keys.append(rest.split(" ", 1)[0])
            self.memo["filters"] = [arg for key in keys for arg in ("-c", f"{key}=")]
        return self.git(*self.memo["filters"], "status", "--ignore-submodules=all", *args)

    def recent(self) -> list[str]:
        """HEAD's last first-parent commits (newest first): one git call answers most questions about a Meta ref."""
        if "recent" not in self.memo:
            proc = self.git("rev-list", "--first-parent", f"--max-count={RECENT}", "HEAD", "--")
            self.memo["recent"] = proc.stdout.split() if self.head and proc.returncode == 0 else []
        return list(self.memo["recent"])

    def resolve_commit(self, rev: str) -> str | None:
        """The full id of the commit `rev` names, or None when it names none."""
        if not rev or rev.startswith("-"):
            return None
        if len(rev) >= 7 and all(c in "0123456789abcdefABCDEF" for c in rev):
            near = [sha for sha in self.recent() if sha.startswith(rev.lower())]
            if len(near) == 1:
                return near[0]
        key = f"resolve:{rev}"
        if key not in self.memo:
            proc = self.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
            out = proc.stdout.strip()
            self.memo[key] = out if proc.returncode == 0 and out else None
        result = self.memo[key]
        return str(result) if result else None

    def branch(self) -> str | None:
        """The checked-out branch's short name, or None on a detached HEAD."""
        proc = self.git("symbolic-ref", "--short", "--quiet", "HEAD")
        return proc.stdout.strip() or None if proc.returncode == 0 else None

    def first_parent_distance(self, commit: str, limit: int) -> int | None:
        """How many first-parent steps HEAD is past `commit`, if `commit` is among HEAD's first `limit` + 1."""
        if limit + 1 <= RECENT:
            chain = self.recent()[: limit + 1]
        else:
            chain = self.git("rev-list", "--first-parent", f"--max-count={limit + 1}", "HEAD", "--").stdout.split()
        return chain.index(commit) if commit in chain else None

    def commits_between(self, ancestor: str) -> int | None:
        """First-parent commits from `ancestor` to HEAD, or None when `ancestor` is not in HEAD's history."""
        if self.git("merge-base", "--is-ancestor", ancestor, "HEAD").returncode != 0:
            return None
        proc = self.git("rev-list", "--first-parent", "--count", f"{ancestor}..HEAD", "--")
        return int(proc.stdout.strip() or 0)

    def is_shallow(self) -> bool:
        return self.git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"

    def log_oneline(self, count: int) -> list[str]:
        proc = self.git("log", "--no-decorate", "--no-show-signature", f"--max-count={count}", "--format=%h %s",
                        "HEAD", "--")
        return proc.stdout.splitlines() if proc.returncode == 0 else []

    def index_blob(self, path: str) -> bytes | None:
        """The staged content of `path` (the index, or GIT_INDEX_FILE in a hook), or None when it is not staged."""
        proc = _run(["cat-file", "blob", f":{path}"], self.toplevel, self.env)
        return proc.stdout if proc.returncode == 0 else None

    def changed(self, old: str | None, new: str | None, pathspecs: list[str]) -> list[tuple[str, str]]:
        """(status letter, path) of what differs from commit `old` to `new`; `new` None is the index."""
        base = ["--literal-pathspecs"]
        if new is None:
            args = [*base, "diff", "--cached", "--name-status", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"]
            args += [old] if old else []
        else:
            args = [*base, "diff-tree", "-r", "-z", "--name-status", "--no-renames", "--no-commit-id", "--no-ext-diff",
                    "--no-textconv"]
            args += [old, new] if old else ["--root", new]
        proc = self.git(*args, "--", *pathspecs)
        if proc.returncode != 0:
            raise GateError(f"git {args[1]} failed: {proc.stderr.strip()[:200]}", reason="io-error")
        fields = proc.stdout.split("\0")
        return [(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i]]

    def commits(self, spec: str) -> list[tuple[str, str | None, str]]:
        """(commit, first parent or None, subject) for every commit of `BASE..HEAD`, oldest first."""
        if spec.startswith("-") or ".." not in spec or any(c.isspace() for c in spec):
            raise GateError(f"--range {spec[:60]!r}: expected BASE..HEAD", code=2, reason="usage")
        proc = self.git("log", "--reverse", "--topo-order", "--no-decorate", "--no-show-signature",
                        "--format=%H %P%x1f%s", spec, "--")
        if proc.returncode != 0:
            base, _, tip = spec.partition("...") if "..." in spec else spec.partition("..")
            unknown = [side for side in (base, tip) if side and self.resolve_commit(side) is None]
            if unknown:
                raise GateError(f"--range {excerpt(spec)}: '{excerpt(unknown[0])}' names no commit of this repository "
                                "(BASE..HEAD takes two commits, e.g. origin/main..HEAD)", code=2, reason="usage")
            raise GateError(f"--range {spec}: {proc.stderr.strip()[:200] or 'git log failed'}", reason="io-error")
        out: list[tuple[str, str | None, str]] = []
        for line in proc.stdout.splitlines():
            ids, _, subject = line.partition("\x1f")
            parts = ids.split()
            out.append((parts[0], parts[1] if len(parts) > 1 else None, subject))
        return out

    def history(self) -> History:
        return History(self)

    def relpath(self, path: Path) -> str:
        """`path` as shown to a user: relative to the top of the work tree when inside it."""
        # The folder is resolved, the name is not: a symlink is shown where it is, not where it points.
        where = Path(os.path.realpath(path.parent)) / path.name
        try:
            return where.relative_to(self.toplevel).as_posix()
        except ValueError:
            return str(where)


def discover(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Repo:
    """Find the repository the way git does; GATE_ROOT pins it and drops inherited GIT_* pointers."""
    environ = os.environ if environ is None else environ
    pinned_root = environ.get("GATE_ROOT")
    if pinned_root:
        where = Path(pinned_root)
        if not where.is_dir():
            raise GateError(f"GATE_ROOT={pinned_root}: not a directory", reason="not-a-repository")
    else:
        where = Path.cwd() if cwd is None else cwd
    env = _env(environ, pinned=bool(pinned_root))
    proc = _text(_run(
        ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--verify", "--quiet", "HEAD"],
        where,
        env,
    ))
    lines = proc.stdout.splitlines()
    if proc.returncode not in (0, 1) or len(lines) < 3:
        detail = (proc.stderr.strip().splitlines() or ["git rev-parse failed"])[-1]
        label = f"GATE_ROOT={pinned_root}" if pinned_root else str(where)
        raise GateError(
            f"not inside a git work tree ({label}): {detail.removeprefix('fatal: ')}",
            reason="not-a-repository",
        )
    common = Path(lines[2])
    if not common.is_absolute():
        common = where / common
    head = lines[3].strip() if proc.returncode == 0 and len(lines) > 3 else None
    return Repo(
        toplevel=Path(os.path.realpath(lines[0])),
        git_dir=Path(os.path.realpath(lines[1])),
        common_dir=Path(os.path.realpath(common)),
        head=head,
        env=env,
    )


class History:
    """Blobs of past commits for `--range`, read through GitPython's one persistent `git cat-file`.

    GitPython starts git with the process environment, so that environment is swapped for this
    repository's cleaned one while it works: inherited GIT_* pointers and program variables never
    reach it, and transports and lazy fetches stay off. Its git gets SAFE_CONFIG as persistent `-c`
    options, set before it starts its first `cat-file`.
    """

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._gitpython: Any = None

    @contextmanager
    def _environment(self) -> Iterator[None]:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update({**self.repo.env, "GIT_DIR": str(self.repo.git_dir), "GIT_WORK_TREE": str(self.repo.toplevel),
                           "GIT_PYTHON_GIT_EXECUTABLE": git_program()})
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def blob(self, commit: str | None, path: str) -> bytes | None:
        if commit is None:
            return None
        with self._environment():
            if self._gitpython is None:
                import git as gitpython

                self._gitpython = gitpython.Repo(str(self.repo.toplevel))
                self._gitpython.git.set_persistent_git_options(c=list(SAFE_CONFIG))  # before its first git
            try:
                data: bytes = (self._gitpython.commit(commit).tree / path).data_stream.read()
            except KeyError:
                return None
            except ValueError as exc:  # an object the repository lacks (a partial or damaged clone)
                raise GateError(f"cannot read {path} at {commit[:12]}: {str(exc)[:200]}", reason="io-error") from None
            return data

    def close(self) -> None:
        if self._gitpython is not None:
            with self._environment():
                self._gitpython.close()
