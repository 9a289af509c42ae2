"""The git door's network half (issue 18): every network git call of the product, and the objects it pushes.

Every call runs in a private scratch bare repository, never in the user's, so nothing of the repository's config
takes effect; only a remote's URL is taken from it, judged as git will read it. What that promises, and the tests
that hold it: docs/security.md ("Network calls read nothing of the repository's config" and "Remote URLs, far
repositories and the scratch repository"). The local half, and the rules every call follows, are in
gates/infra/git.py; nothing else runs git.
"""

import os
import time

from gates.infra import fsio
from gates.infra.errors import USAGE, GateError
from gates.infra.git import REPO_ENV_VARS, SAFE_CONFIG, Repo, _env, failed, git_program
from gates.infra.paths import git_dirs, within
from gates.infra.plain import NamedTuple
from gates.infra.text import Pattern, excerpt, shell_quote

_REMOTE_NAME = Pattern(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SCHEME = Pattern(r"^([A-Za-z][A-Za-z0-9+.-]*)://")  # git's is_url()
_HELPER = Pattern(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")  # git's transport_get(): `<helper>::` runs git-remote-<helper>
_PROBE = "gate-probe"  # the name under which the scratch repository is asked how git rewrites a URL
GIT_SUFFIXES = ("/.git", "", ".git/.git", ".git")  # the folders git's enter_repo() tries for a local path, in order
PATH_MAX = 4096

TYPE_CHECKING = False
if TYPE_CHECKING:  # subprocess only where a network call runs: the names are for the type checker only
    import subprocess
    from typing import Any, Mapping

NETWORK_PROTOCOLS = ("file", "git", "http", "https", "ssh")
NETWORK_TIMEOUT = 20.0
ZERO_OID = "0" * 40
GATE_IDENTITY = {"GIT_AUTHOR_NAME": "handoff-gate", "GIT_AUTHOR_EMAIL": "gate@handoff-gate.invalid",
                 "GIT_COMMITTER_NAME": "handoff-gate", "GIT_COMMITTER_EMAIL": "gate@handoff-gate.invalid"}

_NETWORK_ARGS = tuple(arg for item in (
    # The scratch repository has no config of the repository's: the user's own credential helper (for a host that
    # needs one) may answer here, unlike in every other call.
    *(item for item in SAFE_CONFIG if item != "credential.helper="),
    "core.hooksPath=/dev/null", "protocol.allow=never", *(f"protocol.{proto}.allow=always" for proto in NETWORK_PROTOCOLS),
    "gc.auto=0", "maintenance.auto=false",
    "fetch.writeCommitGraph=false", "fetch.recurseSubmodules=false", "fetch.prune=false",
    "submodule.recurse=false", "push.recurseSubmodules=no", "push.followTags=false",
    "push.gpgSign=false", "commit.gpgSign=false", "transfer.fsckObjects=true",
) for arg in ("-c", item))


class Unreachable(GateError):
    """The remote did not answer (in time, or at all): never to be read as "no claim"."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="remote-unreachable")


class Unwritten(Unreachable):
    """The remote answered reads but did not take a push: it refused a ref for another reason than a lost lease, or
    gave no answer for it and still holds what was read. Never a lost race: reading again changes nothing."""


class Scratch:
    """The private bare repository where every network call runs and every pushed object is made."""

    def __init__(self, git_dir: str, base_env: "Mapping[str, str]", timeout: float) -> None:
        self.git_dir = git_dir
        self.timeout = timeout
        dropped = ("GIT_EXEC_PATH_OVERRIDE", "GIT_TRACE", "GIT_TRACE_PACKET")
        self.env = {k: v for k, v in _env(base_env, pinned=True).items()
                    if not k.startswith("GIT_CONFIG_PARAMETERS") and k not in dropped}
        self.env.update({"GIT_DIR": git_dir, "GIT_ALLOW_PROTOCOL": ":".join(NETWORK_PROTOCOLS),
                         "GIT_ASKPASS": "", "SSH_ASKPASS": "", "SSH_ASKPASS_REQUIRE": "never",
                         "GIT_TERMINAL_PROMPT": "0", "GIT_PROTOCOL_FROM_USER": "0", **GATE_IDENTITY})

    def local(self, *args: str, stdin: bytes | None = None,
              env: "Mapping[str, str] | None" = None) -> "subprocess.CompletedProcess[bytes]":
        """A local call in the scratch repository (objects, private refs); `env` is added to its environment."""
        return self._call(args, stdin, max(self.timeout, 10.0), False, {**self.env, **(env or {})})

    def network(self, *args: str) -> "subprocess.CompletedProcess[bytes]":
        """A call that talks to a remote (the argument after `--end-of-options`), bounded in time; a timeout raises
        Unreachable, and the remote is not asked again in this run: a second call would wait out the bound again
        (a brief that reads the claim and the flags of a silent remote would outlast its harness's hook timeout)."""
        url = args[args.index("--end-of-options") + 1]
        if url in _SILENT:
            raise Unreachable(f"{_SILENT[url]} (not asked again in this run)")
        timeout, shared = self.timeout, None  # `shared`: why, when the run's one bound is what cuts this call short
        left = _DEADLINE[0] - time.monotonic() if _DEADLINE else timeout  # bound_run: what is left of the run's bound
        if left < timeout:
            timeout, shared = left, f"git {args[0]} got no answer within this run's {_DEADLINE[1]:g}s for the remote"
            if left <= 0:
                raise Unreachable(shared)
        try:
            return self._call(args, None, timeout, True, self.env)
        except Unreachable as exc:
            _SILENT[url] = shared or exc.message
            raise Unreachable(_SILENT[url]) from None

    def _call(self, args: tuple[str, ...], stdin: bytes | None, timeout: float, network: bool,
              env: dict[str, str]) -> "subprocess.CompletedProcess[bytes]":
        if _SIGNALLED:  # a signal ended the network work: nothing new starts while the run unwinds
            raise KeyboardInterrupt
        argv = [git_program(), "--no-pager", *_NETWORK_ARGS, *args]
        try:
            return _guarded(argv, self.git_dir, env, stdin, timeout)
        except TimeoutError:
            what = f"git {args[0]}"
            if network:
                raise Unreachable(f"{what} got no answer within {timeout:g}s") from None
            raise GateError(f"{what} did not finish within {timeout:g}s", reason="io-error") from None


def _guarded(argv: list[str], cwd: str, env: dict[str, str], stdin: bytes | None,
             timeout: float) -> "subprocess.CompletedProcess[bytes]":
    """Run a git that works in a scratch folder, known to the signal handler from its start to its end: a signal
    kills it (its whole group) before its folder is removed, so it cannot write there again. A timeout kills it
    and raises TimeoutError."""
    import subprocess

    with _Held() as mask:  # a signal that comes meanwhile is handled once the git is in _LIVE
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_child_setup(mask))
        except OSError as exc:
            raise GateError(f"cannot run git: {exc.strerror}", reason="io-error") from None
        _LIVE.add(proc)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise TimeoutError from None
    finally:
        _LIVE.discard(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


_LIVE: "set[Any]" = set()  # the network git processes running now, each the leader of its own process group
_FOLDERS: list[str] = []  # the scratch folders this process made
_SIGNALLED: list[int] = []  # the signal that ended this run's network work


class _Held:
    """`with _Held() as mask:` SIGTERM, SIGHUP and SIGINT wait (blocked, not lost) until the block ends, where the
    handler then runs: what the handler must clean up (a git started, a scratch folder made) is registered before
    it can run. `mask` is the signal mask from before."""

    def __enter__(self) -> "Any":
        import signal

        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTERM, signal.SIGHUP, signal.SIGINT))
        return self.mask

    def __exit__(self, *exc: object) -> None:
        import signal

        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)


def _child_setup(mask: "Any") -> "Any":
    """The pre-exec step of a network git: the signal mask its parent had before it blocked the guarded signals
    for the start (git must get them as usual), and, on Linux, the kernel's promise to kill the child when this
    process dies, even by SIGKILL (PR_SET_PDEATHSIG). The child runs in its own session (so a timeout can kill its
    whole group), and so would not get the signal its parent's process group got."""
    import signal
    import sys

    prctl = None
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            prctl = None
    parent = os.getpid()

    def step() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if prctl is not None:
            prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the parent died before the line above: nobody would kill this child
                os._exit(1)

    return step


def _guard() -> None:
    """SIGTERM, SIGHUP and SIGINT (a harness's timeout, a closed terminal, ^C) kill this process's network git
    processes (each its own group, helpers included) and remove its scratch folders before the run ends as
    interrupted (exit 130, through the CLI's KeyboardInterrupt boundary). A signal already ignored stays ignored."""
    import signal

    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        try:
            if signal.getsignal(number) is not signal.SIG_IGN:
                signal.signal(number, _on_signal)
        except (ValueError, OSError):  # not the main thread: the caller owns the signals
            return


def _on_signal(number: int, frame: object) -> None:
    _SIGNALLED.append(number)
    cleanup()
    raise KeyboardInterrupt


def cleanup() -> None:
    """Kill every network git process still running and remove every scratch folder of this process."""
    import shutil

    for proc in list(_LIVE):
        _kill_group(proc, reap=False)
        _LIVE.discard(proc)
    while _FOLDERS:
        shutil.rmtree(_FOLDERS.pop(), True)
    _SCRATCH.clear()


def _kill_group(proc: "subprocess.Popen[bytes]", reap: bool = True) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)  # git and every helper it started (ssh, git-remote-http)
    except (ProcessLookupError, PermissionError):
        pass
    if reap:
        proc.communicate()
    else:
        try:
            proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - a signal handler reaps what it can and goes on
            pass


_SCRATCH: dict[str, str] = {}  # this process's scratch repository per clone
_SILENT: dict[str, str] = {}  # url -> why: a remote that gave no answer in time this run (Scratch.network)
_DEADLINE: list[float] = []  # [monotonic end, seconds]: every network call of this run ends by then (bound_run)


def bound_run(seconds: float) -> None:
    """From now on this run's network calls end within `seconds`, together: a remote that answers each call slowly
    cannot make a run that asks it several things (the brief: the other clones' flags, the claim) outlast a hook's
    timeout. Each call still has its own bound too."""
    _DEADLINE[:] = [time.monotonic() + seconds, seconds]


def scratch(repo: Repo, timeout: float = NETWORK_TIMEOUT) -> Scratch:
    """A scratch repository of this process, made anew in a private temp folder and removed at exit: never one kept
    under the git dir, where whoever shaped the repository may have planted a config (`core.sshCommand`, say)."""
    key = str(repo.common_dir)
    if _SIGNALLED:
        raise KeyboardInterrupt
    if key not in _SCRATCH:
        import atexit
        import tempfile

        if not _FOLDERS:  # the first scratch folder of this process: its handlers and its clean-up at exit
            _guard()
            atexit.register(cleanup)
        with _Held():  # made and known to the handler at once: a signal between the two would leave it behind
            folder = tempfile.mkdtemp(prefix="gate-remote-")  # 0700, a name nobody can guess or plant
            _FOLDERS.append(folder)
        target = os.path.join(folder, "scratch.git")
        # The repository's object format (SHA-1 or SHA-256): git fetches and pushes only between equals.
        fmt = repo.ask("rev-parse", "--show-object-format").stdout.strip() or "sha1"
        # git init writes in the scratch folder: like every git there, it is killed before a signal removes it
        try:
            proc = _guarded([git_program(), "init", "--quiet", "--bare", "--template=", f"--object-format={fmt}",
                             target], folder, {k: v for k, v in repo.env.items() if k not in REPO_ENV_VARS},
                            None, max(timeout, 10.0))
        except TimeoutError:
            raise GateError(f"git init of a scratch repository in {folder} did not finish", reason="io-error") from None
        if proc.returncode != 0:
            raise GateError(f"cannot make a scratch repository in {folder}: "
                            f"{proc.stderr.decode(errors='replace').strip()[:200]}", reason="io-error")
        _SCRATCH[key] = target
    return Scratch(_SCRATCH[key], repo.env, timeout)


def remote_url(repo: Repo, name: str) -> str:
    """The one URL git uses for remote `name` (after every url.<base>.insteadOf/pushInsteadOf and pushurl of its
    config, as git itself reports it), judged and made canonical; refused, naming remote.<name>.url, when it is
    not a plain URL of the allowed protocols, leads into this repository, or cannot be known."""
    if not _REMOTE_NAME.fullmatch(name) or ".." in name:
        raise GateError(f"remote name {name[:40]!r} refused: use 1-64 of A-Z a-z 0-9 . _ -", code=USAGE, reason="usage")
    key = f"remote.{name}.url"
    fetch, push = _rewritten(repo.git("remote", "-v"), name)
    if fetch is None and not push:
        raise GateError(f"no remote named {name!r} (git remote add {name} URL)", reason="remote-unreachable")
    if len(push) != 1:
        raise _refused(key, f"git pushes remote {name!r} to {len(push)} URLs; the gate's compare-and-swap needs one")
    url = judge_url(repo, push[0], key)
    work = scratch(repo)
    again = _rewritten(work.local("-c", f"remote.{_PROBE}.url={url}", "remote", "-v"), _PROBE)
    if again != (url, [url]):  # the user's own url.<base>.insteadOf would rewrite the judged URL once more
        raise _refused(key, f"a url.<base>.insteadOf rule of your git config rewrites {url[:80]!r} again: the URL git "
                       "would use cannot be known")
    return url


def _rewritten(proc: "Any", name: str) -> tuple[str | None, list[str]]:
    """(the fetch URL, the push URLs) of remote `name` in a `git remote -v` listing."""
    if proc.returncode != 0:
        stderr = proc.stderr if isinstance(proc.stderr, bytes) else proc.stderr.encode("utf-8", "surrogateescape")
        raise GateError(f"git remote -v failed: {_last_line(stderr)}", reason="io-error")
    stdout = proc.stdout if isinstance(proc.stdout, str) else proc.stdout.decode("utf-8", "surrogateescape")
    fetch, push = None, []
    for line in stdout.splitlines():
        listed, _, rest = line.partition("\t")
        url, _, kind = rest.rpartition(" ")
        if listed != name:
            continue
        if kind == "(fetch)" and fetch is None:
            fetch = url
        elif kind == "(push)":
            push.append(url)
    return fetch, push


def _refused(key: str, why: str) -> GateError:
    return GateError(f"{key} refused: {why}", reason="remote-unreachable")


def judge_url(repo: Repo, url: str, key: str) -> str:
    """The URL to use for `url` (as git would read it), or refuse it: no transport helper (`<helper>::`), no
    option, no control character, no protocol but file, git, http(s) and ssh, no local repository inside this one."""
    shown = url[:80]
    if url.startswith("-") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in url) or len(url) > 2048:
        raise _refused(key, f"{shown!r} starts with '-', holds control characters or is too long")
    if _HELPER.match(url):
        raise _refused(key, f"{shown!r} names a transport helper (`<helper>::`), which runs a program")
    scheme = _SCHEME.match(url)
    if scheme:
        if scheme.group(1) not in NETWORK_PROTOCOLS:  # git's own names are lower case: `FILE://` is a helper
            raise _refused(key, f"{shown!r}: protocol {scheme.group(1)!r} is not one of {', '.join(NETWORK_PROTOCOLS)}")
        if scheme.group(1) == "file":
            return _local_remote(repo, _file_path(url, key), key)
        return url
    colon, slash = url.find(":"), url.find("/")
    if colon >= 0 and (slash < 0 or colon < slash):
        return url  # scp-like ssh (host:path, [host]:path), as git's url_is_local_not_ssh() reads it
    if url.startswith("~"):
        expanded = os.path.expanduser(url)  # as receive-pack's enter_repo() expands ~ and ~user
        if expanded.startswith("~"):
            raise _refused(key, f"{shown!r}: the home folder it names is unknown here")
        url = expanded
    return _local_remote(repo, url if os.path.isabs(url) else os.path.join(repo.toplevel, url), key)


def _file_path(url: str, key: str) -> str:
    """The path git's connect.c takes from a file:// URL: the whole URL percent-decoded (url.c's url_decode: %XX of
    two hex digits becomes that byte, anything else, `+` included, stays), the host part (a [bracketed] one whole)
    skipped, the path from the first '/' after it."""
    from urllib.parse import unquote_to_bytes

    rest = unquote_to_bytes(url[len("file://"):].encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rest):  # NUL included
        raise _refused(key, f"{url[:80]!r} decodes to a control character or NUL")
    start = rest.find("]") + 1 if rest.startswith("[") else 0
    slash = rest.find("/", start)
    if slash < 0:
        raise _refused(key, f"{url[:80]!r} names no path")
    return rest[slash:]


def _local_remote(repo: Repo, path: str, key: str) -> str:
    """A remote on this machine: its receive-pack runs here, with its own config, so one inside this repository
    (a bare repository committed to the work tree, or this very git dir) is refused: whoever shaped the
    repository shaped it too. Judged as git will find it: the path through every symlink, then each of
    GIT_SUFFIXES, a gitfile's target and a `commondir`."""
    if len(path) >= PATH_MAX:
        raise _refused(key, "the path is too long")
    base = os.path.realpath(path.rstrip("/") or "/")
    roots = [os.path.realpath(p) for p in (str(repo.toplevel), *git_dirs(repo))]

    def judge(candidate: str) -> None:
        if any(within(candidate, root) for root in roots):
            raise _refused(key, f"{base[:80]!r} leads into this repository (its work tree or git dir), which "
                           "cannot coordinate with itself and may be shaped by anyone who shaped the repository")

    for suffix in GIT_SUFFIXES:
        candidate = base + suffix
        if not os.path.exists(candidate):
            continue
        real = os.path.realpath(candidate)
        judge(real)
        pointed = _pointer(real, "", key) if os.path.isfile(real) else real
        judge(pointed)
        judge(_pointer(pointed, "commondir", key))
    return "file://" + base.replace("%", "%25")  # git decodes a file:// URL once: this one decodes to `base`


def _pointer(where: str, name: str, key: str) -> str:
    """Where a gitfile (`where` itself, name "") or a git dir's `commondir` file leads, resolved; `where` when
    there is no such file; refused when it cannot be read."""
    path = os.path.join(where, name) if name else where
    try:
        data = fsio.read_regular(path, PATH_MAX, follow=True)
    except OSError as exc:
        if name and (isinstance(exc, FileNotFoundError) or not os.path.lexists(path)):
            return where
        raise _refused(key, f"{path[:80]!r} cannot be read") from None
    text = data.decode("utf-8", "surrogateescape").strip()
    if not name:
        if not text.startswith("gitdir:"):
            return where  # a file git does not take as a repository (a bundle, at most): nothing runs there
        text = text[len("gitdir:"):].strip()
    if not text or len(data) > PATH_MAX or "\0" in text:
        raise _refused(key, f"{path[:80]!r} cannot be read as git reads it")
    return os.path.realpath(os.path.join(os.path.dirname(path), text))


# What a local far repository's own config could make its receive-pack/upload-pack run, switched off on its command
# line (which outranks its config); each mechanism is named in docs/security.md ("A local far repository runs none of
# its programs").
FAR_SIDE_CONFIG = (
    "core.hooksPath=/dev/null",
    "receive.denyCurrentBranch=refuse",
    "receive.denyDeleteCurrent=refuse",
    "receive.autogc=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.alternateRefsCommand=true",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
)


def _program(url: str, side: str) -> str:
    """The option naming the program the far side runs for `side` (receive-pack or upload-pack), explicitly: never
    the repository's receivepack/uploadpack."""
    if url.startswith("file://"):
        far = " ".join([shell_quote(git_program()), *(f"-c {shell_quote(item)}" for item in FAR_SIDE_CONFIG)])
        return f"--{side}={far} {side}"
    return f"--{side}=git-{side}"


def ls_remote(work: Scratch, url: str, patterns: list[str]) -> dict[str, str]:
    """{ref: oid} of the remote's refs matching `patterns`; Unreachable when it does not answer."""
    proc = work.network("ls-remote", _program(url, "upload-pack"), "--refs", "--end-of-options", url, *patterns)
    if proc.returncode != 0:
        raise Unreachable(f"git ls-remote {url}: {_last_line(proc.stderr)}")
    found = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        oid, _, ref = line.partition("\t")
        if len(oid) in (40, 64) and not oid.strip("0123456789abcdef") and ref.startswith("refs/"):
            found[ref] = oid  # SHA-1 or SHA-256: a fetch into the scratch repository refuses the other
    return found


def fetch_objects(work: Scratch, url: str, oids: list[str]) -> None:
    """Fetch these objects by id into the scratch repository (no ref of it, no FETCH_HEAD, is written)."""
    present = _batch_check(work, oids)
    missing = [oid for oid in oids if present.get(oid, ("", 0))[0] != "commit"]
    if not missing:
        return
    proc = work.network("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                        _program(url, "upload-pack"), "--end-of-options", url, *missing)
    if proc.returncode != 0:
        raise Unreachable(f"git fetch {url}: {_last_line(proc.stderr)}")


class PushResult(NamedTuple):
    ok: bool  # every ref updated
    reached: bool  # the remote answered for every ref (a refusal is an answer; git's "[remote failure]" is none)
    status: dict[str, str]  # ref -> porcelain summary, cleaned and cut
    message: str  # what git said on stderr when not ok: a few lines, cleaned and cut
    refused: dict[str, str]  # ref -> summary: refused for another reason than a lost lease (a hook, an unpacker
    # error, a hidden ref): the remote will not take it, and reading it again changes nothing


# A ref whose compare-and-swap was lost (its value no longer the one leased), in the client's words (judging the
# advertisement) and receive-pack's (under its lock), whole: a reason is remote text, so no part of one counts. Every
# other "!" line is the remote refusing the ref, but NO_ANSWER's: git had no answer for it.
LEASE_LOST = frozenset(("! [rejected] (stale info)", "! [rejected] (atomic push failed)", *(
    f"! [remote rejected] ({why})" for why in ("failed to update ref", "failed to delete", "atomic push failure",
                                               "atomic transaction failed", "failed to lock"))))
NO_ANSWER = "! [remote failure] "
MAX_OUTPUT = 256 * 1024  # of git's porcelain or stderr, read for an answer: a remote's text past it is not read
MAX_STATUS = 200  # characters of one ref's status kept (its reason is remote text)


def push_refs(work: Scratch, url: str, updates: list[tuple[str, str | None, str | None]],
              dry_run: bool = False) -> PushResult:
    """Compare-and-swap the named refs, all or nothing: each (ref, new oid or None to delete, expected oid or None
    for "must not exist"). Never a glob, never a ref not named; the lease is always pinned. `dry_run` sends
    nothing: the leases are judged against what receive-pack advertises."""
    specs, leases = [], []
    for ref, new, expected in updates:
        if not ref.startswith("refs/gate/") or "*" in ref:
            raise ValueError(f"refusing to push {ref!r}")
        specs.append(f"{new or ''}:{ref}")
        leases.append(f"--force-with-lease={ref}:{expected or ''}")
    atomic = ["--atomic"] if len(updates) > 1 else []
    proc = work.network("push", *(["--dry-run"] if dry_run else []), "--porcelain", "--no-verify", "--no-signed",
                        "--no-follow-tags", "--no-recurse-submodules", *atomic, _program(url, "receive-pack"), *leases,
                        "--end-of-options", url, *specs)
    return _pushed(proc.returncode, proc.stdout, proc.stderr, [ref for ref, _, _ in updates])


def _pushed(returncode: int, stdout: bytes, stderr: bytes, names: list[str]) -> PushResult:
    """What a `git push --porcelain` said for each of the refs `names`. A ref's reason is the remote's text, which
    may hold a newline of its own (and so a status line of its making): the first line for a ref is its answer."""
    status: dict[str, str] = {}
    for line in stdout[:MAX_OUTPUT].decode("utf-8", "replace").splitlines():
        flag, _, rest = line.partition("\t")
        spec, _, summary = rest.partition("\t")
        ref = spec.rpartition(":")[2]
        if ref in names and ref not in status and len(flag) == 1:
            status[ref] = excerpt(f"{flag} {summary}".strip(), MAX_STATUS)
    failed = {ref: said for ref, said in status.items() if said.startswith("!")}
    refused = {ref: said for ref, said in failed.items() if not said.startswith(NO_ANSWER) and said not in LEASE_LOST}
    reached = len(status) == len(names) and not any(said.startswith(NO_ANSWER) for said in failed.values())
    ok = returncode == 0 and len(status) == len(names) and not failed
    return PushResult(ok, reached, status, "" if ok else _said(stderr), refused)


def _said(data: bytes, lines: int = 3) -> str:
    """What git said on stderr, for a message: its first few lines that say something (the "failed to push some
    refs" that every failed push ends with is left out), each cleaned and cut."""
    said: list[str] = []
    for line in data[:MAX_OUTPUT].decode("utf-8", "replace").splitlines():
        text = line.strip().removeprefix("fatal: ").removeprefix("error: ")
        if not text or text == "remote:" or text.startswith("failed to push some refs"):
            continue
        shown = excerpt(text, 160)
        if shown not in said:
            said.append(shown)
        if len(said) == lines:
            break
    return "; ".join(said) or "no answer"


def make_commit(work: Scratch, files: dict[str, bytes], message: str, when: int, parent: str | None = None) -> str:
    """A commit (no parent unless given) whose tree holds `files`, dated `when` (seconds, UTC), made in the scratch
    repository."""
    entries = [f"100644 blob {_made(work, 'hash-object', '-w', '--stdin', stdin=data)}\t{name}\n"
               for name, data in sorted(files.items())]
    tree = _made(work, "mktree", stdin="".join(entries).encode())
    dated = {"GIT_AUTHOR_DATE": f"{when} +0000", "GIT_COMMITTER_DATE": f"{when} +0000"}
    return _made(work, "commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-", stdin=message.encode(), env=dated)


def _made(work: Scratch, *args: str, stdin: bytes, env: "Mapping[str, str] | None" = None) -> str:
    """The object id `git args` printed in the scratch repository; its failure is raised."""
    proc = work.local(*args, stdin=stdin, env=env)
    if proc.returncode != 0:
        raise GateError(f"git {args[0]} failed: {_last_line(proc.stderr)}", reason="io-error")
    return proc.stdout.decode().strip()


def _batch_check(work: Scratch, specs: list[str]) -> dict[str, tuple[str, int]]:
    """{spec: (type, size)} of the objects the scratch repository has, for all `specs` in one git process."""
    if not specs:
        return {}
    proc = _answered(work.local("cat-file", "--batch-check=%(objecttype) %(objectsize) %(rest)", "--buffer",
                                stdin="".join(f"{spec} {spec}\n" for spec in specs).encode()))
    found = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        kind, _, rest = line.partition(" ")
        size, _, spec = rest.partition(" ")
        if size.isdigit() and spec in specs:
            found[spec] = (kind, int(size))
    return found


def read_blobs(work: Scratch, commits: list[str], name: str, limit: int) -> dict[str, bytes | None]:
    """{commit: the file `name` of its tree, or None when missing or over `limit` bytes}, in two git processes
    however many commits there are (one asks the sizes, one reads the blobs within the limit)."""
    specs = {f"{commit}:{name}": commit for commit in commits}
    sizes = _batch_check(work, list(specs))
    wanted = [spec for spec in specs if sizes.get(spec, ("", 0))[0] == "blob" and sizes[spec][1] <= limit]
    out: dict[str, bytes | None] = dict.fromkeys(commits)
    if not wanted:
        return out
    proc = _answered(work.local("cat-file", "--batch", "--buffer", stdin="".join(f"{spec}\n" for spec in wanted).encode()))
    data, at = proc.stdout, 0
    for spec in wanted:  # each answer: "<oid> blob <size>\n" then the bytes then "\n" (or "<spec> missing\n")
        end = data.find(b"\n", at)
        if end < 0:
            break
        header = data[at:end].split()
        if len(header) != 3 or header[1] != b"blob" or not header[2].isdigit():
            at = end + 1
            continue
        size = int(header[2])
        out[specs[spec]] = data[end + 1:end + 1 + size]
        at = end + 1 + size + 1
    return out


def _answered(proc: "subprocess.CompletedProcess[bytes]") -> "subprocess.CompletedProcess[bytes]":
    """A scratch repository's `cat-file --batch` that answered: a failed one is raised, never read as "missing"."""
    if proc.returncode != 0:
        raise failed([str(arg) for arg in proc.args][1:], proc.returncode, proc.stderr)  # (past git's own path)
    return proc


def _last_line(data: bytes) -> str:
    """git's last word on stderr, for a message: from its last MAX_OUTPUT bytes (a remote's text can be long)."""
    lines = [line for line in data[-MAX_OUTPUT:].decode("utf-8", "replace").splitlines() if line.strip()]
    return excerpt(lines[-1].removeprefix("fatal: ").removeprefix("error: "), 200) if lines else "no answer"
