"""The git door's network half (issue 18): every network git call of the product, and the objects it pushes.

Network calls never run inside the user's repository: they run in a private bare repository
made by this process in a private temp folder (removed at exit), with an empty
template, so the repository's `.git/config` is never read by them at all: no
`remote.<name>.receivepack`/`uploadpack`, `core.sshCommand`, `core.gitProxy`,
`credential.helper`, `core.askPass`, `url.<x>.insteadOf` or hook of the repository can take
effect. Only the URL is taken from the repository (`remote_url`) and it is judged first. The
user's own global and system config (credential helpers, ssh settings) still apply. On top:
hooks off, no protocol but file, git, http(s) and ssh, explicit receive-pack/upload-pack
programs, a time bound that kills the whole process group, and no prompt.

The local half, and the rules every call follows, are in gates/infra/git.py; nothing else runs git.
"""

from __future__ import annotations

import os

from gates.infra.errors import USAGE, GateError
from gates.infra.git import REPO_ENV_VARS, SAFE_CONFIG, Repo, _env, _run, git_program
from gates.infra.paths import within
from gates.infra.text import Pattern

_REMOTE_NAME = Pattern(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SCHEME = Pattern(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

TYPE_CHECKING = False
if TYPE_CHECKING:  # subprocess only where a network call runs: the names are for the type checker only
    import subprocess
    from typing import Mapping

NETWORK_PROTOCOLS = ("file", "git", "http", "https", "ssh")
NETWORK_TIMEOUT = 20.0
ZERO_OID = "0" * 40
GATE_IDENTITY = {"GIT_AUTHOR_NAME": "handoff-gate", "GIT_AUTHOR_EMAIL": "gate@handoff-gate.invalid",
                 "GIT_COMMITTER_NAME": "handoff-gate", "GIT_COMMITTER_EMAIL": "gate@handoff-gate.invalid"}

_NETWORK_ARGS = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "protocol.allow=never",
    *(arg for proto in NETWORK_PROTOCOLS for arg in ("-c", f"protocol.{proto}.allow=always")),
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "fetch.writeCommitGraph=false",
    "-c", "fetch.recurseSubmodules=false",
    "-c", "fetch.prune=false",
    "-c", "submodule.recurse=false",
    "-c", "push.recurseSubmodules=no",
    "-c", "push.followTags=false",
    "-c", "push.gpgSign=false",
    "-c", "commit.gpgSign=false",
    "-c", "transfer.fsckObjects=true",
)


class Unreachable(GateError):
    """The remote did not answer (in time, or at all): never to be read as "no claim"."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="remote-unreachable")


class Scratch:
    """The private bare repository where every network call runs and every pushed object is made."""

    def __init__(self, git_dir: str, base_env: Mapping[str, str], timeout: float) -> None:
        self.git_dir = git_dir
        self.timeout = timeout
        env = {k: v for k, v in _env(base_env, pinned=True).items() if not k.startswith("GIT_CONFIG_PARAMETERS")}
        env.update({"GIT_DIR": git_dir, "GIT_ALLOW_PROTOCOL": ":".join(NETWORK_PROTOCOLS),
                    "GIT_ASKPASS": "", "SSH_ASKPASS": "", "SSH_ASKPASS_REQUIRE": "never",
                    "GIT_TERMINAL_PROMPT": "0", "GIT_PROTOCOL_FROM_USER": "0", **GATE_IDENTITY})
        for name in ("GIT_EXEC_PATH_OVERRIDE", "GIT_TRACE", "GIT_TRACE_PACKET"):
            env.pop(name, None)
        self.env = env

    def local(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """A local call in the scratch repository (objects, private refs)."""
        return self._call([*_NETWORK_ARGS, *args], stdin, timeout=max(self.timeout, 10.0), network=False)

    def network(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        """A call that talks to a remote, bounded in time; a timeout raises Unreachable."""
        return self._call([*_NETWORK_ARGS, *args], None, timeout=self.timeout, network=True)

    def _call(self, args: list[str], stdin: bytes | None, timeout: float,
              network: bool) -> subprocess.CompletedProcess[bytes]:
        # The scratch repository has no config of the repository's: the user's own credential helper (for a
        # host that needs one) may answer here, unlike in every other call.
        safe = [arg for item in SAFE_CONFIG if item != "credential.helper=" for arg in ("-c", item)]
        argv = [git_program(), "--no-pager", *safe, *args]
        import subprocess

        try:
            proc = subprocess.Popen(argv, cwd=self.git_dir, env=self.env, start_new_session=True,
                                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise GateError(f"cannot run git: {exc.strerror}", reason="io-error") from None
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            what = f"git {args[len(_NETWORK_ARGS)]}"
            if network:
                raise Unreachable(f"{what} got no answer within {timeout:g}s") from None
            raise GateError(f"{what} did not finish within {timeout:g}s", reason="io-error") from None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)  # git and every helper it started (ssh, git-remote-http)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


_SCRATCH: dict[str, str] = {}  # this process's scratch repository per clone


def scratch(repo: Repo, timeout: float = NETWORK_TIMEOUT) -> Scratch:
    """A scratch repository of this process, made anew in a private temp folder and removed at exit.

    Never one kept under the git dir: anything there may have been written by whoever shaped the
    repository (a config with `core.sshCommand`, say), so nothing of it is trusted or reused.
    """
    key = str(repo.common_dir)
    if key not in _SCRATCH:
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="gate-remote-")  # 0700, a name nobody can guess or plant
        atexit.register(shutil.rmtree, folder, True)
        target = os.path.join(folder, "scratch.git")
        # The repository's object format (SHA-1 or SHA-256): git fetches and pushes only between equals.
        fmt = repo.git("rev-parse", "--show-object-format").stdout.strip() or "sha1"
        proc = _run(["init", "--quiet", "--bare", "--template=", f"--object-format={fmt}", target], folder,
                    {k: v for k, v in repo.env.items() if k not in REPO_ENV_VARS})
        if proc.returncode != 0:
            raise GateError(f"cannot make a scratch repository in {folder}: "
                            f"{proc.stderr.decode(errors='replace').strip()[:200]}", reason="io-error")
        _SCRATCH[key] = target
    return Scratch(_SCRATCH[key], repo.env, timeout)


def remote_url(repo: Repo, name: str) -> str:
    """`remote.<name>.url` exactly as configured (no rewriting), judged: only plain URLs of the allowed protocols."""
    if not _REMOTE_NAME.fullmatch(name) or ".." in name:
        raise GateError(f"remote name {name[:40]!r} refused: use 1-64 of A-Z a-z 0-9 . _ -", code=USAGE, reason="usage")
    proc = repo.git("config", "--get", f"remote.{name}.url")
    url = proc.stdout.strip()
    if proc.returncode != 0 or not url:
        raise GateError(f"no remote named {name!r} (git remote add {name} URL)", reason="remote-unreachable")
    return judge_url(repo, url)


def judge_url(repo: Repo, url: str) -> str:
    """The URL to use for `url`, or refuse it: no transport helper (`ext::`), no option, no control character."""
    shown = url[:80]
    if url.startswith("-") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in url) or len(url) > 2048:
        raise GateError(f"remote URL {shown!r} refused: it starts with '-' or holds control characters",
                        reason="remote-unreachable")
    scheme = _SCHEME.match(url)
    if scheme:
        if scheme.group(1).lower() not in NETWORK_PROTOCOLS:
            raise GateError(f"remote URL {shown!r} refused: protocol {scheme.group(1)!r} is not one of "
                            f"{', '.join(NETWORK_PROTOCOLS)}", reason="remote-unreachable")
        if scheme.group(1).lower() == "file":
            return _local_remote(repo, url[len("file://"):], shown)
        return url
    if "::" in url:
        raise GateError(f"remote URL {shown!r} refused: a transport helper (`<helper>::`) runs a program",
                        reason="remote-unreachable")
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        return url  # scp-like ssh: host:path
    return _local_remote(repo, url if os.path.isabs(url) else os.path.join(repo.toplevel, url), shown)


def _local_remote(repo: Repo, path: str, shown: str) -> str:
    """A remote on this machine: its receive-pack runs here, with its own config, so one inside this repository
    (a bare repository committed to the work tree, or this very git dir) is refused: whoever shaped the
    repository shaped it too."""
    real = os.path.realpath(path)
    inside = [str(repo.toplevel), str(repo.git_dir), str(repo.common_dir)]
    if any(within(real, root) for root in inside):
        raise GateError(f"remote URL {shown!r} refused: it leads into this repository (its work tree or git dir), "
                        "which cannot coordinate with itself and may be shaped by anyone who shaped the repository",
                        reason="remote-unreachable")
    return "file://" + real


def _programs(url: str) -> list[str]:
    """The programs the far side runs, named explicitly (never the repository's receivepack/uploadpack)."""
    if url.startswith("file://"):
        # A local push runs receive-pack here: with the far repository's hooks off as well.
        # core.alternateRefsCommand (the far repository's config) would run a program of its choosing: `true` instead.
        from gates.infra.text import shell_quote

        far = (f"{shell_quote(git_program())} -c core.hooksPath=/dev/null -c core.alternateRefsCommand=true "
               "-c core.fsmonitor=false")
        return [f"--receive-pack={far} -c receive.autogc=false receive-pack", f"--upload-pack={far} upload-pack"]
    return ["--receive-pack=git-receive-pack", "--upload-pack=git-upload-pack"]


def ls_remote(work: Scratch, url: str, patterns: list[str]) -> dict[str, str]:
    """{ref: oid} of the remote's refs matching `patterns`; Unreachable when it does not answer."""
    upload = [p for p in _programs(url) if p.startswith("--upload-pack")]
    proc = work.network("ls-remote", *upload, "--refs", "--end-of-options", url, *patterns)
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
    missing = [oid for oid in oids if work.local("cat-file", "-e", f"{oid}^{{commit}}").returncode != 0]
    if not missing:
        return
    upload = [p for p in _programs(url) if p.startswith("--upload-pack")]
    proc = work.network("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", *upload,
                        "--end-of-options", url, *missing)
    if proc.returncode != 0:
        raise Unreachable(f"git fetch {url}: {_last_line(proc.stderr)}")


def fetch_namespace(work: Scratch, url: str, source: str, private: str) -> None:
    """Fetch `source/*` into `private/*` of the scratch repository (one narrow refspec, pruned to what is there)."""
    upload = [p for p in _programs(url) if p.startswith("--upload-pack")]
    proc = work.network("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--prune",
                        *upload, "--end-of-options", url, f"+{source}/*:{private}/*")
    if proc.returncode != 0:
        raise Unreachable(f"git fetch {url}: {_last_line(proc.stderr)}")


class PushResult:
    __slots__ = ("ok", "reached", "status", "message")

    def __init__(self, ok: bool, reached: bool, status: dict[str, str], message: str) -> None:
        self.ok = ok  # every ref updated
        self.reached = reached  # the remote answered (a refusal is an answer)
        self.status = status  # ref -> porcelain summary
        self.message = message


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
    receive = [p for p in _programs(url) if p.startswith("--receive-pack")]
    proc = work.network("push", *(["--dry-run"] if dry_run else []), "--porcelain", "--no-verify", "--no-signed",
                        "--no-follow-tags", "--no-recurse-submodules", *atomic, *receive, *leases, "--end-of-options",
                        url, *specs)
    status: dict[str, str] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        flag, _, rest = line.partition("\t")
        spec, _, summary = rest.partition("\t")
        ref = spec.rpartition(":")[2]
        if ref in {u[0] for u in updates}:
            status[ref] = f"{flag} {summary}".strip()
    ok = proc.returncode == 0 and len(status) == len(updates) and all(not s.startswith("!") for s in status.values())
    return PushResult(ok, bool(status), status, _last_line(proc.stderr) if not ok else "")


def make_commit(work: Scratch, files: dict[str, bytes], message: str, parent: str | None = None,
                when: int | None = None) -> str:
    """A commit (no parent unless given) whose tree holds `files`, made in the scratch repository."""
    entries = []
    for name, data in sorted(files.items()):
        proc = work.local("hash-object", "-w", "--stdin", stdin=data)
        if proc.returncode != 0:
            raise GateError(f"git hash-object failed: {_last_line(proc.stderr)}", reason="io-error")
        entries.append(f"100644 blob {proc.stdout.decode().strip()}\t{name}\n")
    tree = work.local("mktree", stdin="".join(entries).encode())
    if tree.returncode != 0:
        raise GateError(f"git mktree failed: {_last_line(tree.stderr)}", reason="io-error")
    args = ["commit-tree", tree.stdout.decode().strip(), *(["-p", parent] if parent else []), "-F", "-"]
    saved = dict(work.env)
    if when is not None:
        work.env.update({"GIT_AUTHOR_DATE": f"{when} +0000", "GIT_COMMITTER_DATE": f"{when} +0000"})
    try:
        proc = work.local(*args, stdin=message.encode())
    finally:
        work.env.clear()
        work.env.update(saved)
    if proc.returncode != 0:
        raise GateError(f"git commit-tree failed: {_last_line(proc.stderr)}", reason="io-error")
    return proc.stdout.decode().strip()


def read_blob(work: Scratch, commit: str, name: str, limit: int) -> bytes | None:
    """The file `name` of `commit`'s tree in the scratch repository, or None when missing or over `limit` bytes."""
    spec = f"{commit}:{name}"
    size = work.local("cat-file", "-s", spec)
    if size.returncode != 0 or int(size.stdout.strip() or 0) > limit:
        return None
    proc = work.local("cat-file", "blob", spec)
    return proc.stdout if proc.returncode == 0 else None


def private_refs(work: Scratch, prefix: str) -> dict[str, str]:
    proc = work.local("for-each-ref", "--format=%(objectname) %(refname)", prefix)
    out = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        oid, _, ref = line.partition(" ")
        out[ref] = oid
    return out


def _last_line(data: bytes) -> str:
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    from gates.infra.text import excerpt

    return excerpt(lines[-1].removeprefix("fatal: ").removeprefix("error: "), 200) if lines else "no answer"
