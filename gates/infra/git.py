"""The only door to git: every git call of the product goes through this module and its network half,
gates/infra/gitnet.py (remote claims and travelling flags), which a check never loads.

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

import _signal  # type: ignore[import-not-found,unused-ignore]  # signal itself builds enums at import
import os

from gates.infra.errors import GateError
from gates.infra.paths import below, real_from, within
from gates.infra.text import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and subprocess stay off the check path: the names are for the type checker only
    from typing import Any, Mapping

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
# The most of one blob a gate reads (a staged or committed ARCHIVE.md, a record): a commit may name a blob of
# gigabytes that packs to kilobytes, and a CI job judges commits anyone could push. A reader that knows a tighter
# cap passes it; past this one, the read stops and the check says so in one line (over_blob_cap).
BLOB_CAP = 64 << 20
RECENT_ARGS = ("rev-list", "--first-parent", f"--max-count={RECENT}", "HEAD", "--")
FILTER_ARGS = ("config", "--show-scope", "-z", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$")  # Repo.status
NO_STATUS = "could not ask git for uncommitted work"


class GitFailed(GateError):
    """A git question git could not answer (a non-zero exit, a kill, an error said where only silence means "no"):
    what it would have said is unknown, and nobody may read that as "nothing there"."""


class StatusFailed(GitFailed):
    """`git status` failed, was killed, or said what cannot be read: nobody may take that for a clean tree."""


def _subcommand(args: tuple[str, ...] | list[str]) -> str:
    """The git subcommand among `args` (past `-c key=value` and options such as `--literal-pathspecs`)."""
    at = 0
    while at < len(args) and args[at].startswith("-"):
        at += 2 if args[at] == "-c" else 1
    return args[at] if at < len(args) else "(no subcommand)"


def over_blob_cap(shown: str) -> GateError:
    """The one-line error for a blob over BLOB_CAP (`shown`: which blob, as `_blob` names it)."""
    return GateError(f"{shown} is over {BLOB_CAP >> 20} MiB, the most a gate reads of one file: not judged — a file "
                     "the gates judge must stay under it", reason="input-unreadable")


def failed(args: tuple[str, ...] | list[str], code: int, stderr: str | bytes) -> GitFailed:
    """The one-line error of a git call that did not answer: the command, how it ended, its stderr's first line."""
    said = stderr.decode("utf-8", "surrogateescape") if isinstance(stderr, bytes) else stderr
    first = next((line.strip() for line in said.splitlines() if line.strip()), "")
    how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    return GitFailed(f"git {excerpt(_subcommand(args), 40)} failed ({how}" + (f": {excerpt(first, 200)}" if first else "")
                     + "): its answer is unknown, and is not taken as none")


def log_args(count: int) -> tuple[str, ...]:
    """`git log --oneline -COUNT` of HEAD, as Repo.log_oneline asks it."""
    return ("log", "--no-decorate", "--no-show-signature", f"--max-count={count}", "--format=%h %s", "HEAD", "--")

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


def _env(base: "Mapping[str, str]", pinned: bool) -> dict[str, str]:
    env = {k: v for k, v in base.items()
           if not (pinned and k in REPO_ENV_VARS) and k not in PROGRAM_ENV_VARS}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ALLOW_PROTOCOL"] = "none"  # a list naming no transport: every one refused, config overridden
    env["GIT_NO_LAZY_FETCH"] = "1"
    env["LC_ALL"] = "C"
    return env


class Raw:
    """A finished git call: its exit code and the bytes it wrote."""

    __slots__ = ("args", "returncode", "stdout", "stderr")

    def __init__(self, args: list[str], returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


class Output:
    """A finished git call, its output decoded (undecodable bytes kept as surrogates)."""

    __slots__ = ("args", "returncode", "stdout", "stderr")

    def __init__(self, raw: Raw) -> None:
        self.args = raw.args
        self.returncode = raw.returncode
        self.stdout = raw.stdout.decode("utf-8", "surrogateescape")
        self.stderr = raw.stderr.decode("utf-8", "surrogateescape")


# Python ignores these two at start-up and a spawned child would inherit that; git gets the defaults.
_DEFAULT_SIGNALS = (_signal.SIGPIPE, _signal.SIGXFSZ)
_OURS_ONLY: list[bool] = []  # set once the descriptors this process was given are kept from git


def _keep_inherited_descriptors() -> None:
    """Mark every descriptor above 2 that this process inherited close-on-exec, once: a pipe, a lock or a file
    that a hook's or harness's parent passed the gate reaches no git it starts (subprocess closed them all)."""
    if _OURS_ONLY:
        return
    try:
        listed = os.listdir("/dev/fd")  # Linux and macOS; the descriptor of the listing itself is gone by now
    except OSError:
        listed = []
    for name in listed:
        fd = int(name) if name.isdigit() else -1
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    os.set_inheritable(fd, False)
            except OSError:
                pass  # closed meanwhile (the listing's own)
    _OURS_ONLY.append(True)


def _run(args: list[str], cwd: str, env: "Mapping[str, str]", stdin: bytes | None = None) -> Raw:
    """git with `args` in `cwd`, given `stdin` (else nothing), both outputs captured: os.posix_spawn, not subprocess.

    A call on every commit: subprocess with its threading, signal and selectors imports costs more
    than the call. The folder is given as git's own `-C` (posix_spawn has no cwd), which git
    applies before it reads any GIT_* path of the environment, as a start in that folder would.
    """
    return _Running(args, cwd, env, stdin).wait()


_CHILDREN: set[int] = set()  # git processes this gate started and has not reaped (their pids cannot be reused)


def own_processes() -> frozenset[int]:
    """This process and the git processes it started that still run: none of them is another writer."""
    return frozenset({os.getpid(), *_CHILDREN})


class _Running:
    """A git process started and not yet waited for: `wait()` feeds it, reads it to its end and reaps it."""

    def __init__(self, args: list[str], cwd: str, env: "Mapping[str, str]", stdin: bytes | None = None) -> None:
        self.cwd, self.stdin = cwd, stdin
        self.argv, self.pid, self.out_r, self.err_r, self.feed = _spawn(args, cwd, env, stdin)
        _CHILDREN.add(self.pid)

    def wait(self, limit: int | None = None) -> Raw:
        """The finished call; with `limit`, stdout is read no further than `limit` + 1 bytes: past that git is
        stopped (its exit code then says nothing) and the answer holds those bytes alone."""
        try:
            out, err = _drain(self.out_r, self.err_r, self.feed, self.stdin or b"", limit)
        finally:
            os.close(self.out_r)
            os.close(self.err_r)
        if limit is not None and len(out) > limit:
            try:
                os.kill(self.pid, _signal.SIGKILL)  # a read-only git of our own: nothing of it is left half done
            except ProcessLookupError:
                pass
        code = self._reap()
        if code == 128 and not os.path.isdir(self.cwd):
            raise GateError(f"cannot run git: no such directory: {self.cwd}", reason="io-error")
        return Raw(self.argv, code, out, err)

    def abandon(self) -> None:
        """Stop a call whose answer nobody will read, and reap it: no descriptor, no zombie, no wait for git."""
        for fd in (self.out_r, self.err_r, *((self.feed,) if self.feed is not None else ())):
            os.close(fd)
        try:
            os.kill(self.pid, _signal.SIGKILL)  # a read-only git of our own: nothing of it is left half done
        except ProcessLookupError:
            pass
        self._reap()

    def _reap(self) -> int:
        code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        _CHILDREN.discard(self.pid)
        return code


def _spawn(args: list[str], cwd: str, env: "Mapping[str, str]",
           stdin: bytes | None) -> tuple[list[str], int, int, int, int | None]:
    """(argv, pid, stdout's read end, stderr's read end, stdin's write end or None) of a git just started."""
    argv = [git_program(), "-C", cwd, *_SAFE_ARGS, *args]
    _keep_inherited_descriptors()
    out_r, out_w = os.pipe()  # every end is close-on-exec: dup2 gives the child its own
    err_r, err_w = os.pipe()
    given = os.pipe() if stdin is not None else None
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0) if given is None else (os.POSIX_SPAWN_DUP2, given[0], 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    feed = given[1] if given else None  # ours to close: at once when spawning fails, else when all is written
    try:
        pid = os.posix_spawn(argv[0], argv, dict(env), setsigdef=_DEFAULT_SIGNALS, file_actions=actions)
    except OSError as exc:
        for fd in (out_r, err_r, *((feed,) if feed is not None else ())):
            os.close(fd)
        raise GateError(f"cannot run git in {cwd}: {exc.strerror}", reason="io-error") from None
    finally:
        for fd in (out_w, err_w, *(given[:1] if given else ())):
            os.close(fd)
    return argv, pid, out_r, err_r, feed


def _drain(out_fd: int, err_fd: int, in_fd: int | None, data: bytes,
           limit: int | None = None) -> tuple[bytes, bytes]:
    """Feed `data` to `in_fd` (then close it) and read both outputs to their end, as each is ready: one pipe
    left alone could fill and stall git. With `limit`, reading stops once stdout holds more than `limit` bytes
    (its first `limit` + 1 are kept): an answer past a size cap is never held whole."""
    import select

    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    taken = 0
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    view = memoryview(data)
    try:
        if in_fd is not None:
            os.set_blocking(in_fd, False)
            poller.register(in_fd, select.POLLOUT)
        live = len(chunks) + (in_fd is not None)
        while live:
            for fd, _ in poller.poll():
                if fd != in_fd:
                    read = os.read(fd, 1 << 16)
                    if read:
                        chunks[fd].append(read)
                        if fd == out_fd and limit is not None:
                            taken += len(read)
                            if taken > limit:  # the last piece cut first: the answer is copied once, not twice
                                chunks[out_fd][-1] = read[: len(read) - (taken - limit - 1)]
                                return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])
                        continue
                else:
                    try:
                        view = view[os.write(fd, view[: 1 << 16]):]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        view = view[:0]  # git stopped reading: what it said is in its output
                    if view:
                        continue
                    os.close(fd)  # all written: git reads its end of input
                    in_fd = None
                poller.unregister(fd)
                live -= 1
    finally:
        if in_fd is not None:
            os.close(in_fd)
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


class Repo:
    """A discovered work tree: where its files and its git dirs are, and its HEAD."""

    def __init__(self, toplevel: str, git_dir: str, common_dir: str, head: str | None,
                 env: "Mapping[str, str]", recent: list[str] | None = None) -> None:
        self.toplevel = toplevel
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.head = head  # None while the branch has no commit yet
        self.env = env
        self.memo: dict[str, Any] = {}  # answers git gave this run, and what is made of them
        if recent is not None:  # (discover() asks for HEAD's recent line with HEAD itself)
            self.memo["recent"] = recent
        self.started: dict[tuple[str, ...], _Running] = {}  # calls prefetch started, by their arguments

    def git(self, *args: str) -> Output:
        """git with `args` in the work tree; the answer of a call `prefetch` started, when it started this one."""
        return Output(self._raw(*args))

    def _raw(self, *args: str, limit: int | None = None) -> Raw:
        """`git(*args)`'s answer as bytes (a blob is not text); with `limit`, its stdout read no further than
        `limit` + 1 bytes (_Running.wait)."""
        running = self.started.pop(args, None)
        return (running or _Running(list(args), self.toplevel, self.env)).wait(limit)

    def ask(self, *args: str, answers: tuple[int, ...] = (0,)) -> Output:
        """`git(*args)` that answered: exit 0, or another of `answers` (a "no", such as 1 for an unset config key)
        with nothing on stderr but git's advice (`hint:` lines, such as the deprecation of info/grafts). Anything
        else raises GitFailed: a failed question is never read as "nothing"."""
        proc = self.git(*args)
        if proc.returncode == 0 or (proc.returncode in answers
                                    and all(line.startswith("hint:") for line in proc.stderr.split("\n") if line)):
            return proc
        raise failed(args, proc.returncode, proc.stderr)

    def prefetch(self, *calls: tuple[str, ...]) -> None:
        """Start these git calls now, side by side, to be read by the `git` calls with the same arguments: a
        command that knows what it will ask waits for the slowest answer, not for the sum of them. Each
        reads no input, changes nothing and writes what it answers only to its pipe; one never asked for is
        stopped when the invocation ends (drop_started)."""
        for args in calls:
            if args not in self.started:
                self.started[args] = _Running(list(args), self.toplevel, self.env)

    def drop_started(self) -> None:
        """Stop and reap every call `prefetch` or `prefetch_blobs` started that nobody read (a command that failed half
        way, a check that judged the work tree)."""
        while self.started:
            self.started.popitem()[1].abandon()
        batch = self.memo.get("batch")
        if batch is not None and len(batch) == 3:
            batch[1].abandon()
            batch[:] = [{}]

    def status(self, *args: str) -> Output:
        """`git status` that runs no program the repository names.

        Status re-reads a file whose stat changed and passes it through its clean filter, so every
        filter the repository's own config defines is switched off for this call (`filter.<x>.clean`
        and its kin set to an empty command, which is no filter); the user's global filters (git-lfs,
        say) are theirs and stay. The filters are listed with `-z` and switched off through
        GIT_CONFIG_COUNT/KEY_n/VALUE_n, so a value holding a newline or a name holding `=` cannot
        turn into another key. Submodules are not entered: their config is not ours. StatusFailed
        when the filters cannot be listed: then status is not run at all.
        """
        return Output(_run(["status", "--ignore-submodules=all", *args], self.toplevel, self._status_env()))

    def uncommitted(self, *args: str) -> list[tuple[str, str]]:
        """(XY, path) of every change `git status --porcelain=v1 -z` lists for `args` (given with them): XY is
        porcelain's two-letter status (`M `: staged, ` M`: unstaged, `??`: untracked). StatusFailed when git could
        not be asked: a non-zero exit, a kill, or output that is not porcelain."""
        if "--porcelain=v1" not in args or "-z" not in args:
            raise ValueError("uncommitted() reads --porcelain=v1 -z only")
        proc = self.status(*args)
        if proc.returncode != 0:
            how = (f"git status was killed by signal {-proc.returncode}" if proc.returncode < 0
                   else f"git status exited {proc.returncode}")
            said = next((line for line in proc.stderr.splitlines() if line.strip()), "")
            raise StatusFailed(f"{NO_STATUS}: {how}" + (f" ({excerpt(said, 200)})" if said else ""))
        fields = proc.stdout.split("\0")
        if fields and fields[-1] == "":
            fields.pop()
        out, at = [], 0
        while at < len(fields):
            item = fields[at]
            at += 1
            if len(item) < 4 or item[2] != " ":
                raise StatusFailed(f"{NO_STATUS}: git status printed {excerpt(item, 60)!r}, which is not a porcelain "
                                   "entry")
            code, path = item[:2], item[3:]
            if code[0] in "RC":
                if at >= len(fields):
                    raise StatusFailed(f"{NO_STATUS}: git status printed a rename without its source")
                at += 1  # the rename's source follows
            out.append((code, path))
        return out

    def _status_env(self) -> "Mapping[str, str]":
        """The environment of `git status`: the repository's own filters switched off (see status)."""
        if "status_env" not in self.memo:
            listed = self.git(*FILTER_ARGS)
            if listed.returncode not in (0, 1):  # 1: no filter is defined
                said = next((line for line in listed.stderr.splitlines() if line.strip()), "")
                raise StatusFailed(f"{NO_STATUS}: the repository's filters cannot be listed to switch them off "
                                   f"(git config exited {listed.returncode}"
                                   + (f": {excerpt(said, 200)})" if said else ")"))
            fields = listed.stdout.split("\0")
            keys = [fields[i + 1].partition("\n")[0] for i in range(0, len(fields) - 1, 2)
                    if fields[i] not in ("global", "system")]
            env = dict(self.env)
            given = env.get("GIT_CONFIG_COUNT", "") or "0"
            if not given.isdigit():
                raise StatusFailed(f"{NO_STATUS}: GIT_CONFIG_COUNT in the environment is not a number")
            count = int(given)
            for key in keys:
                env[f"GIT_CONFIG_KEY_{count}"], env[f"GIT_CONFIG_VALUE_{count}"] = key, ""
                count += 1
            env["GIT_CONFIG_COUNT"] = str(count)
            self.memo["status_env"] = env
        env_: Mapping[str, str] = self.memo["status_env"]
        return env_

    def recent(self) -> list[str]:
        """HEAD's last first-parent commits (newest first): they answer most questions about a Meta ref. The
        discovery read them with HEAD (DISCOVER_ARGS); a Repo made otherwise asks git once."""
        if "recent" not in self.memo:
            self.memo["recent"] = self.ask(*RECENT_ARGS).stdout.split() if self.head else []
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
            proc = self.ask("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", answers=(0, 1))
            out = proc.stdout.strip()
            self.memo[key] = out if proc.returncode == 0 and out else None
        result = self.memo[key]
        return str(result) if result else None

    def branch(self) -> str | None:
        """The checked-out branch's name (without `refs/heads/`), or None on a detached HEAD.

        Read from the git dir's HEAD when git wrote it as a plain file of one of its two shapes (`ref:
        refs/heads/<name>`, or a commit id when detached); anything else (a symlink, reftable's
        `refs/heads/.invalid` placeholder, a ref outside refs/heads/) is asked of git."""
        if "branch" not in self.memo:
            self.memo["branch"] = _head_branch(self.git_dir)
            if self.memo["branch"] is _ASK:
                # A name to show and record, never a verdict: a HEAD git cannot read names no branch.
                proc = self.git("symbolic-ref", "--short", "--quiet", "HEAD")
                self.memo["branch"] = proc.stdout.strip() or None if proc.returncode == 0 else None
        branch = self.memo["branch"]
        return str(branch) if branch else None

    def is_shallow(self) -> bool:
        return self.ask("rev-parse", "--is-shallow-repository").stdout.strip() == "true"

    def id_length(self) -> int:
        """How many hex digits this repository's object ids have: 40 (SHA-1) or 64 (SHA-256), by its own format
        (HEAD's id says it; git is asked only while the branch has no commit)."""
        if self.head:
            return len(self.head)
        if "id-length" not in self.memo:
            proc = self.ask("rev-parse", "--show-object-format")
            self.memo["id-length"] = 64 if proc.stdout.strip() == "sha256" else 40
        found: int = self.memo["id-length"]
        return found

    def log_oneline(self, count: int) -> list[str]:
        """HEAD's last `count` commits as `git log --oneline` shows them; GitFailed when git cannot list them."""
        proc = self.ask(*log_args(count))
        # "\n" only: a subject may hold "\r", "\v" or U+2028, which splitlines() would turn into forged lines
        return [line for line in proc.stdout.split("\n") if line]

    def blob_at(self, commit: str, path: str, limit: int | None = None) -> bytes | None:
        """The content of the file `path` in `commit`, or None when the commit has no such file (or a folder there);
        an object the repository lacks (a partial or damaged clone) is an error. `limit`: as for `_blob`."""
        return self._blob(f"{commit}:{path}", f"{excerpt(path)} at {commit[:12]}", limit)

    def index_blob(self, path: str, limit: int | None = None) -> bytes | None:
        """The staged content of `path` (the index, or GIT_INDEX_FILE in a hook), or None when it is not staged;
        a staged blob the repository lacks is an error. `limit`: as for `_blob` (`index_size` tells the size of
        one over it)."""
        return self._blob(self.index_spec(path), f"the staged {excerpt(path)}", limit)

    def index_mode(self, path: str) -> str | None:
        """The mode of the index's stage-0 entry at `path` (`100644`, `120000` for a link, ...), None when it has
        none."""
        return next((mode for _, mode, _, stage in self.index_entries([path]).get(path, []) if stage == "0"), None)

    @staticmethod
    def entries_args(paths: list[str]) -> tuple[str, ...]:
        """The git call of `index_entries(paths)`, for `prefetch`."""
        return ("--literal-pathspecs", "ls-files", "--stage", "-t", "-z", "--", *paths)

    def index_entries(self, paths: list[str]) -> dict[str, list[tuple[str, str, str, str]]]:
        """{path: [(tag, mode, object id, stage), ...]} of the index's entries at these paths: tag `H`, or `S` where
        the entry is outside a sparse checkout; stages 1-3 in a conflict. Where the index holds files below a path
        instead, a folder, its one entry has mode `040000` and no id."""
        found: dict[str, list[tuple[str, str, str, str]]] = {}
        for entry in self.ask(*self.entries_args(paths)).stdout.split("\0"):
            fields, _, named = entry.partition("\t")
            parts = fields.split(" ")
            if named in paths and len(parts) == 4:
                found.setdefault(named, []).append((parts[0], parts[1], parts[2], parts[3]))
            elif len(parts) == 4:
                for path in paths:
                    if named.startswith(f"{path}/") and path not in found:
                        found[path] = [("H", "040000", "", "0")]
        return found

    def index_size(self, path: str) -> int:
        """The size of the staged blob of `path`, unread (one `index_blob` found over its limit)."""
        proc = self.ask("cat-file", "-s", self.index_spec(path))
        return int(proc.stdout.strip())

    @staticmethod
    def index_spec(path: str) -> str:
        """The staged `path` as git names it: stage 0 said, so that a path that begins `1:` is read as itself."""
        return f":0:{path}"

    @staticmethod
    def blob_args(spec: str) -> tuple[str, ...]:
        """The git call that reads the blob `spec`, for `prefetch`."""
        return ("cat-file", "blob", spec)

    def prefetch_blobs(self, specs: list[str], cap: int) -> None:
        """Start one `git cat-file --batch` for these blobs, which `_blob` (`index_blob`, `blob_at`) takes from as they
        are asked: one process for what a check reads first (the staged `.gate.yaml` and hand-over), its answer read
        no further than `cap` bytes in all. A blob it does not give whole and plain (missing, no blob, cut by the
        cap) is asked alone, as before; so is every one of a list holding a newline (the batch reads a name a line)."""
        if "batch" not in self.memo and not any("\n" in spec for spec in specs):
            feed = "".join(f"{spec}\n" for spec in specs).encode("utf-8", "surrogateescape")
            self.memo["batch"] = [specs, _Running(["cat-file", "--batch"], self.toplevel, self.env, feed), cap]

    def _batched(self, spec: str) -> tuple[bytes, int] | None:
        """(what the batch gave for `spec`: its bytes, or its first ones where the cap cut it; its size), or None."""
        batch = self.memo.get("batch")
        if batch is None:
            return None
        if len(batch) == 3:  # read once, at the first question
            specs, running, cap = batch
            out, at, answers = running.wait(cap).stdout, 0, {}
            for asked in specs:
                end = out.find(b"\n", at)
                line = out[at:end] if end >= 0 else b""
                if line in (f"{asked} missing".encode("utf-8", "surrogateescape"),
                            f"{asked} ambiguous".encode("utf-8", "surrogateescape")):
                    at = end + 1
                    continue  # asked alone: there git says what it is (no such path, a folder, a lacking object)
                header = line.split(b" ")
                if len(header) != 3 or header[1] != b"blob" or not header[2].isdigit():
                    break  # no blob, or cut in its header: this and the rest are asked alone
                size = int(header[2])
                answers[asked] = (out[end + 1:end + 1 + size], size)
                at = end + 2 + size
            batch[:] = [answers]
        found: tuple[bytes, int] | None = batch[0].get(spec)
        return found

    def _blob(self, spec: str, shown: str, limit: int | None = None) -> bytes | None:
        """The blob `spec` names; None when it names no file (no such path, or a folder); GateError when git cannot
        read it. `bad file` is git's word both for a folder and for a blob it lacks: the type tells them apart.
        With `limit`, a blob over it is cut to its first `limit` + 1 bytes (git was stopped there); without, one
        over BLOB_CAP is refused. A blob the batch read (prefetch_blobs) is taken from it."""
        batched = self._batched(spec)
        if batched is not None:
            data, size = batched
            if limit is not None and len(data) > limit:
                return data[:limit + 1]
            if len(data) == size and size <= (BLOB_CAP if limit is None else limit):
                return data
        proc = self._raw(*self.blob_args(spec), limit=BLOB_CAP if limit is None else limit)
        if limit is None and len(proc.stdout) > BLOB_CAP:
            raise over_blob_cap(shown)
        if proc.returncode == 0 or limit is not None and len(proc.stdout) > limit:
            return proc.stdout
        # git's last word, past its advice (`hint: Did you mean ':1:PATH'?` follows "but not at stage 0")
        why = [line for line in proc.stderr.decode("utf-8", "replace").strip().splitlines()
               if not line.startswith("hint:")] or ["git cat-file failed"]
        if any(words in why[-1] for words in ("does not exist in", "does not exist (neither", "but not in", "but not at stage")):
            return None  # (LC_ALL=C: git's own words)
        if why[-1].endswith(": bad file"):
            kind = _run(["cat-file", "-t", spec], self.toplevel, self.env)
            if kind.returncode == 0 and kind.stdout.strip() in (b"tree", b"commit"):  # a folder, a submodule
                return None
            why = kind.stderr.decode("utf-8", "replace").strip().splitlines() or why
        raise GateError(f"cannot read {shown}: git cat-file failed ({excerpt(why[-1].removeprefix('fatal: '), 200)}): "
                        "the repository lacks the object", reason="io-error")

    @staticmethod
    def changed_args(old: str | None, new: str | None, pathspecs: list[str]) -> tuple[str, ...]:
        """The git call of `changed(old, new, pathspecs)`, for `prefetch`."""
        base = ["--literal-pathspecs"]
        if new is None:
            args = [*base, "diff", "--cached", "--name-status", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"]
            args += [old] if old else []
        else:
            args = [*base, "diff-tree", "-r", "-z", "--name-status", "--no-renames", "--no-commit-id", "--no-ext-diff",
                    "--no-textconv"]
            args += [old, new] if old else ["--root", new]
        return (*args, "--", *pathspecs)

    def changed(self, old: str | None, new: str | None, pathspecs: list[str]) -> list[tuple[str, str]]:
        """(status letter, path) of what differs from commit `old` to `new`; `new` None is the index."""
        args = self.changed_args(old, new, pathspecs)
        key = "\0".join(args)  # asked once a run: the choice of the configuration and the gates ask alike
        if key not in self.memo:
            proc = self.git(*args)
            if proc.returncode != 0:
                raise failed(args, proc.returncode, proc.stderr)
            fields = proc.stdout.split("\0")
            self.memo[key] = [(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i]]
        return list(self.memo[key])

    def changed_in(self, commits: list[tuple[str | None, str]]) -> dict[str, list[tuple[str, str]]]:
        """Repo.changed(parent, commit) for every (parent, commit) pair at once: one `git diff-tree --stdin`."""
        if not commits:
            return {}
        lines = "".join(f"{new} {old}\n" if old else f"{new}\n" for old, new in commits)
        proc = _run(["--literal-pathspecs", "diff-tree", "--stdin", "--always", "-r", "-z", "--name-status",
                     "--no-renames", "--root", "--no-ext-diff", "--no-textconv", "--"], self.toplevel, self.env,
                    stdin=lines.encode())
        if proc.returncode != 0:
            raise failed(["diff-tree"], proc.returncode, proc.stderr)
        out: dict[str, list[tuple[str, str]]] = {}
        fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        current: list[tuple[str, str]] = []
        at = 0
        while at < len(fields) - 1:  # "<commit>", then ("<status letter>", "<path>") pairs, per commit
            if len(fields[at]) == 1:
                current.append((fields[at], fields[at + 1]))
                at += 2
            else:
                current = out.setdefault(fields[at], [])
                at += 1
        return out

    def first_parent_line(self, count: int) -> tuple[list[str], dict[str, int]]:
        """HEAD's last `count` first-parent commits, newest first, and each one's distance from HEAD (--range reads
        them once, not a rev-list per commit; a commit further back is asked of git as before)."""
        key = f"line:{count}"
        if key not in self.memo:
            args = ("rev-list", "--first-parent", f"--max-count={count}", "HEAD", "--")
            chain = self.ask(*args).stdout.split() if self.head else []
            self.memo[key] = (chain, {sha: at for at, sha in enumerate(chain)})
        found: tuple[list[str], dict[str, int]] = self.memo[key]
        return found

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
            raise GateError(f"--range {excerpt(spec)}: {failed(('log',), proc.returncode, proc.stderr).message}",
                            reason="io-error")
        out: list[tuple[str, str | None, str]] = []
        for line in filter(None, proc.stdout.split("\n")):  # "\n" only: subjects may hold other line breaks
            ids, _, subject = line.partition("\x1f")
            parts = ids.split()
            out.append((parts[0], parts[1] if len(parts) > 1 else None, subject))
        return out

    def history(self) -> "History":
        return History(self)

    def path(self, relative: str) -> str:
        """The work-tree path of `relative` (a POSIX path from the top of the work tree)."""
        return os.path.join(self.toplevel, relative)

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """`path` as shown to a user: relative to the top of the work tree when inside it."""
        # The folder is resolved, the name is not: a symlink is shown where it is, not where it points.
        folder, name = os.path.split(os.fspath(path))
        where = os.path.join(real_from(os.path.abspath(folder or "."), self.toplevel, self.toplevel), name)
        return below(where, self.toplevel).replace(os.sep, "/") if within(where, self.toplevel) else where


_ASK = object()  # HEAD's file does not say: git is asked


def _head_branch(git_dir: str) -> object:
    from gates.infra import fsio

    try:  # a FIFO, a symlink or anything but a regular file there: git is asked
        data = fsio.read_regular(os.path.join(git_dir, "HEAD"), 511)
    except OSError:
        return _ASK
    text = data.decode("utf-8", "surrogateescape")
    if text.endswith("\n") and text.count("\n") == 1:
        line = text[:-1]
        if len(line) in (40, 64) and not line.strip("0123456789abcdef"):
            return None  # detached
        name = line.removeprefix("ref: refs/heads/")
        if name != line and _plain_branch(name):
            return name
    return _ASK


_BRANCH_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/+-")


def _plain_branch(name: str) -> bool:
    """A branch name of plain characters that git itself would accept (no component empty, starting with `.` or
    ending in `.lock`, no `..`); any other (a control character a hostile HEAD carries, reftable's `.invalid`, a
    name of other scripts) is asked of git, which judges it by its own rules."""
    parts = name.split("/")
    return bool(name) and not set(name) - _BRANCH_CHARS and ".." not in name and not name.endswith(".") \
        and all(part and not part.startswith(".") and not part.endswith(".lock") for part in parts)


# Where the repository is, its HEAD, and HEAD's last RECENT first-parent commits (`HEAD~0` to `HEAD~15`: what
# `git rev-list --first-parent --max-count=16 HEAD` lists, replacements and grafts included), in one process.
# --revs-only leaves out what does not resolve: an unborn HEAD, an ancestor past the root or a shallow boundary,
# one whose object is missing (`^{commit}` reads each), and `HEAD~0` when HEAD names no commit (HEAD is then
# printed, as `rev-parse --verify HEAD` prints it, and no line). A corrupt object among them stops git: the
# discovery then asks PLAIN_DISCOVER_ARGS, and Repo.recent() asks rev-list, which says what is wrong.
_WHERE_ARGS = ("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
DISCOVER_ARGS = (*_WHERE_ARGS, "--revs-only", "HEAD", *(f"HEAD~{n}^{{commit}}" for n in range(RECENT)))
PLAIN_DISCOVER_ARGS = (*_WHERE_ARGS, "--verify", "--quiet", "HEAD")


def _discovery(cwd: str | os.PathLike[str] | None,
               environ: "Mapping[str, str] | None") -> tuple[str, dict[str, str], str | None]:
    """(the folder git is asked from, git's environment, GATE_ROOT or None) of a discovery."""
    environ = os.environ if environ is None else environ
    pinned_root = environ.get("GATE_ROOT")
    if pinned_root:
        where = pinned_root
        if not os.path.isdir(where):
            raise GateError(f"GATE_ROOT={pinned_root}: not a directory", reason="not-a-repository")
    else:
        where = os.getcwd() if cwd is None else os.fspath(cwd)
    return where, _env(environ, pinned=bool(pinned_root)), pinned_root


class Early:
    """discover()'s git call, started when a check (or a plain brief) begins, so git answers while the gate
    imports the modules of its command. Read once, by the discovery of the same folder and environment;
    asked from elsewhere, or never asked, it is stopped: never kept past the invocation that started it.
    Only a command that asks for the repository as soon as its modules are imported may start one: a
    command that first waits for its input (a harness's hook reads stdin for up to 2 s) would read a
    HEAD older than its other answers."""

    def __init__(self) -> None:
        self.asked: tuple[str, dict[str, str], str | None] | None = None  # (folder, git's environment, GATE_ROOT)
        self.cwd = ""
        try:
            self.cwd = os.getcwd()
            self.asked = _discovery(None, None)
            self.where, self.env = self.asked[:2]
            self.running: _Running | None = _Running(list(DISCOVER_ARGS), self.where, self.env)
        except (GateError, OSError):  # discover() meets the same failure and says it
            self.running = None

    def take(self, where: str, env: dict[str, str]) -> Raw | None:
        if self.running is not None and (where, env) != (self.where, self.env):
            self.drop()  # asked from elsewhere: that answer is no answer
        running, self.running = self.running, None
        return running.wait() if running is not None else None

    def drop(self) -> None:
        """The invocation ends and nothing read the answer: git is stopped and reaped, not waited for."""
        running, self.running = self.running, None
        if running is not None:
            running.abandon()


def discover(cwd: str | os.PathLike[str] | None = None, environ: "Mapping[str, str] | None" = None,
             early: Early | None = None) -> Repo:
    """Find the repository the way git does; GATE_ROOT pins it and drops inherited GIT_* pointers.
    `early`: the same call started before, read if it was asked from the same folder and environment."""
    # Asked for this process's own environment (which nothing in one invocation changes) from the folder the early
    # call was made in, that call's answers stand (working the environment out again is a third of a discovery).
    asked = early.asked if early is not None and cwd is None and environ is None and early.cwd == os.getcwd() \
        else None
    where, env, pinned_root = asked or _discovery(cwd, environ)
    raw = early.take(where, env) if early is not None else None
    proc = Output(raw or _run(list(DISCOVER_ARGS), where, env))
    lines = proc.stdout.splitlines()
    recent: list[str] | None = None
    if proc.returncode == 0 and len(lines) >= 3:
        recent = [line.strip() for line in lines[4:4 + RECENT]] if len(lines) > 3 else []
    else:  # not a repository, or an object of HEAD's recent line is corrupt: asked as before, and said as before
        proc = Output(_run(list(PLAIN_DISCOVER_ARGS), where, env))
        lines = proc.stdout.splitlines()
    if proc.returncode not in (0, 1) or len(lines) < 3:
        detail = (proc.stderr.strip().splitlines() or ["git rev-parse failed"])[-1]
        label = f"GATE_ROOT={pinned_root}" if pinned_root else str(where)
        raise GateError(
            f"not inside a git work tree ({label}): {detail.removeprefix('fatal: ')}",
            reason="not-a-repository",
        )
    common = os.path.join(where, lines[2])  # as git prints it: absolute, or relative to `where`
    head = lines[3].strip() if proc.returncode == 0 and len(lines) > 3 else None
    toplevel = os.path.realpath(lines[0])
    start = real_from(where, lines[0], toplevel)
    if "GIT_WORK_TREE" not in env and not within(start, toplevel):
        # `core.worktree` in a repository's own config can name any folder (the user's home): the gate would read
        # and write there. A work tree that does not contain the folder git was asked from is refused.
        from gates.infra.text import excerpt

        raise GateError(f"git says the work tree is {excerpt(toplevel, 200)}, which does not contain "
                        f"{excerpt(start, 200)} (core.worktree in the repository's config?): refused",
                        reason="not-a-repository")
    return Repo(
        toplevel=toplevel,
        git_dir=real_from(lines[1], lines[0], toplevel),
        common_dir=real_from(common, lines[0], toplevel),
        head=head,
        env=env,
        recent=recent,
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

    def _swap(self) -> dict[str, str]:
        """Give the process this repository's cleaned environment; returns the one to put back."""
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update({**self.repo.env, "GIT_DIR": str(self.repo.git_dir), "GIT_WORK_TREE": str(self.repo.toplevel),
                           "GIT_PYTHON_GIT_EXECUTABLE": git_program()})
        return saved

    @staticmethod
    def _restore(saved: dict[str, str]) -> None:
        os.environ.clear()
        os.environ.update(saved)

    def blob(self, commit: str | None, path: str, limit: int | None = None) -> bytes | None:
        """`path` as `commit` holds it, None where it has none. With `limit`, one over it is read no further than
        `limit` + 1 bytes; without, one over BLOB_CAP is refused, unread."""
        if commit is None:
            return None
        if self.repo.id_length() != 40:  # GitPython reads SHA-1 repositories only: a SHA-256 one's are asked of git
            return self.repo.blob_at(commit, path, limit)
        saved = self._swap()
        try:
            if self._gitpython is None:
                import git as gitpython

                self._gitpython = gitpython.Repo(str(self.repo.toplevel))
                self._gitpython.git.set_persistent_git_options(c=list(SAFE_CONFIG))  # before its first git
            try:
                blob = self._gitpython.commit(commit).tree / path
                if limit is None and blob.size > BLOB_CAP:
                    raise over_blob_cap(f"{excerpt(path)} at {commit[:12]}")
                data: bytes = blob.data_stream.read(limit + 1 if limit is not None and blob.size > limit else -1)
            except KeyError:
                return None
            except ValueError as exc:  # an object the repository lacks (a partial or damaged clone)
                raise GateError(f"cannot read {path} at {commit[:12]}: {str(exc)[:200]}", reason="io-error") from None
            return data
        finally:
            self._restore(saved)

    def close(self) -> None:
        if self._gitpython is not None:
            saved = self._swap()
            try:
                self._gitpython.close()
            finally:
                self._restore(saved)
