"""Real git repositories in temp dirs, and the `gate` command run as a process and in-process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from hypothesis import settings

from gates.infra.git import REPO_ENV_VARS
from gates.main import main  # the command's entry point

# The fixtures of the topic helper modules (worktrees for claims, liveness sources for locks, real remotes)
# serve tests in more than one folder (a gate's, a command's, the domain's), so they are plugins of the suite.
pytest_plugins = ["claims_helpers", "locks_helpers", "remote_helpers"]

# CI runs the same examples every time (a red run must be reproducible); local runs explore anew.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
_BIN = Path(sys.executable).parent
# What an agent harness's shell sets (gates/domain/loopwatch.py), and its trust settings (gates/domain/trust.py): a
# suite run from inside an agent's session must not see them.
AGENT_ENV_VARS = ("CLAUDECODE", "CODEX_THREAD_ID", "GEMINI_CLI", "CODEX_HOME", "GEMINI_CLI_TRUST_WORKSPACE",
                  "COPILOT_ALLOW_ALL")
GATE_BIN = str(_BIN / "gate") if (_BIN / "gate").exists() else shutil.which("gate")


class MachineTurn:
    """Test runs side by side on one machine (`.ci/run` runs a fast set per Python version at once): a lock's
    verdict weighs every process of this user, and a process whose target cannot be established keeps an aged lock
    live. A test that keeps such a process running (a planted `git` wrapper, a git in another namespace or with
    paths that cannot be followed) takes the machine alone from then on (`alone()`; from its start when it is
    marked `machine`); every other test shares it. The turnstile lets a waiting test in before tests that come
    after it."""

    def __init__(self, alone: bool) -> None:
        import fcntl

        self._flock = fcntl.flock
        self._ex, self._sh, self._un = fcntl.LOCK_EX, fcntl.LOCK_SH, fcntl.LOCK_UN
        base = os.path.join(tempfile.gettempdir(), f"handoff-gate-tests-{os.geteuid()}")
        self._turnstile, self._lock = open(f"{base}.turnstile", "a"), open(f"{base}.lock", "a")
        self.is_alone = False
        if alone:
            self.alone()
        else:
            self._flock(self._turnstile, self._ex)
            self._flock(self._lock, self._sh)
            self._flock(self._turnstile, self._un)

    def alone(self) -> None:
        if self.is_alone:
            return
        self._flock(self._lock, self._un)  # never wait at the turnstile holding the lock: a waiting test holds it
        self._flock(self._turnstile, self._ex)
        self._flock(self._lock, self._ex)
        self.is_alone = True

    def close(self) -> None:
        self._lock.close()  # closing releases the locks
        self._turnstile.close()


@pytest.fixture(autouse=True)
def machine_turn(request: pytest.FixtureRequest) -> Iterator[MachineTurn]:
    turn = MachineTurn(request.node.get_closest_marker("machine") is not None)
    yield turn
    turn.close()


@pytest.fixture
def alone(machine_turn: MachineTurn) -> Callable[[], None]:
    """Call it just before starting a process no other run's lock scan can follow: the machine is this test's
    alone from then until it ends (see MachineTurn)."""
    return machine_turn.alone


@pytest.fixture(autouse=True)
def no_git_left_running() -> Iterator[None]:
    """Every git the gate started in this process (a check run in process, a prefetch) is read or stopped and
    reaped by the time the test ends, as an invocation's end does (Repo.drop_started): none outlives its test."""
    from gates.infra import git as door

    before = set(door._CHILDREN)
    yield
    left = door._CHILDREN - before
    for pid in left:  # reaped here, so that the next test starts clean; the test fails all the same
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except OSError:
            pass
        door._CHILDREN.discard(pid)
    assert not left, f"git processes started by the gate in this test were never read or stopped: {sorted(left)}"


@pytest.fixture(autouse=True)
def clean_git_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No user or system git config, a fixed identity, and no inherited repository pointers."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for name, value in (("NAME", "Gate Test"), ("EMAIL", "gate@example.invalid")):
        monkeypatch.setenv(f"GIT_AUTHOR_{name}", value)
        monkeypatch.setenv(f"GIT_COMMITTER_{name}", value)
    for name in (*REPO_ENV_VARS, "GATE_ROOT", "GITHUB_ACTIONS", *AGENT_ENV_VARS):
        monkeypatch.delenv(name, raising=False)


REAL_GIT = shutil.which("git") or "git"


@pytest.fixture
def git_wrapper(tmp_path: Path, machine_turn: MachineTurn) -> Callable[..., Path]:
    """`plant(body, folder="bin")`: a folder of tmp_path holding a `git` that runs the shell program `body`, to put
    first on PATH (REAL_GIT is the real one). While it runs it is a process named git whose target no lock scan can
    establish, so the test takes the machine alone when it plants one (MachineTurn)."""
    def plant(body: str, folder: str = "bin") -> Path:
        machine_turn.alone()
        where = tmp_path / folder
        where.mkdir(exist_ok=True)
        (where / "git").write_text(f"#!/bin/sh\n{body}")
        (where / "git").chmod(0o755)
        return where

    return plant


def bare_python(code: str, cwd: Path | None = None, *args: str, top: Path = ROOT, flags: tuple[str, ...] = (),
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`code` in a new interpreter started without `site` (-S), as a plain install's hook meets it: this test
    environment's editable install loads pathlib, re and more through its import hook before any line of ours
    runs. The package (the one under `top`) and its dependencies are found on the path `code` is given instead;
    `args` follow `-c`, `flags` precede it."""
    import site

    prelude = f"import sys\nsys.path[:0] = {[str(top), *site.getsitepackages()]!r}\n"
    return subprocess.run([sys.executable, "-S", *flags, "-c", prelude + code, *args], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=120)


def imported_by(code: str, watched: tuple[str, ...], cwd: Path | None = None) -> list[str]:
    """Which of the `watched` modules running `code` (in `cwd`) imports, in a bare interpreter (see bare_python)."""
    probe = (f"import sys\nbefore = set(sys.modules)\n{code}\n"
             f"print('IMPORTED=' + ','.join(m for m in {watched!r} if m in set(sys.modules) - before))")
    proc = bare_python(probe, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("IMPORTED="))
    return [name for name in line.removeprefix("IMPORTED=").split(",") if name]


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout.strip()


def init_repo(path: Path, *extra: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main", "--template=", *extra)
    return path


def commit_all(path: Path, message: str = "work") -> str:
    git(path, "add", "-A")
    git(path, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)
    return git(path, "rev-parse", "HEAD")


def write_target(repo: Path, text: str = "Adopt handoff-gate.") -> None:
    """What a new user does after `gate init`: write the Current Target over the template's placeholder."""
    from gates.domain.handoff import PLACEHOLDER

    path = repo / "HANDOFF.md"
    lines = [text if PLACEHOLDER in line else line for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def now_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def handoff_text(head: str, *, target: str = "Build the thing.", threads: str = "- [ ] next item — next: write it") -> str:
    return f"""# Handoff

## Meta
- ref: {head}
- updated: {now_stamp()}

## Current Target
{target}

## Open Threads
{threads}

## Decisions
## Dead Ends
## Verified
## Assumed
## Key References
"""


@pytest.fixture(scope="session")
def _repo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `repo` fixture's repository, made once a run: each test gets a copy (git processes are most of the
    fixture's cost, and a run has hundreds of tests that start from it)."""
    path = init_repo(tmp_path_factory.mktemp("template") / "repo")
    (path / "README").write_text("hello\n")
    head = commit_all(path, "first")
    (path / "HANDOFF.md").write_text(handoff_text(head))
    commit_all(path, "handoff")
    return path


@pytest.fixture
def repo(tmp_path: Path, _repo_template: Path) -> Path:
    """A repository with one commit and a valid HANDOFF.md (committed) naming that commit: a copy of one made at the
    run's start (its `updated` is that start)."""
    return Path(shutil.copytree(_repo_template, tmp_path / "repo", symlinks=True))


def run_gate(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float | None = None,
             process: bool = False) -> subprocess.CompletedProcess[str]:
    """`gate ARGS` in `cwd`, as the installed command would run it with stdin from /dev/null: its exit code and
    outputs. It runs in this process (gates.main.main, as a fresh process would meet it: see `_gate_in_process`)
    unless the test is about the process: `process=True`, an `env` of its own (PATH's git, HOME, a variable the
    start reads) or a `timeout` (a run that might hang), and always when GATE_TESTS_PROCESS=1 (a whole run through
    the console script, for a doubt about the in-process way)."""
    if process or env is not None or timeout is not None or os.environ.get("GATE_TESTS_PROCESS") == "1":
        assert GATE_BIN, "the gate console script is not installed"
        return subprocess.run([GATE_BIN, *args], cwd=cwd, capture_output=True, text=True, env=env,
                              timeout=60 if timeout is None else timeout, stdin=subprocess.DEVNULL)
    return _gate_in_process(cwd, list(args))


# What a `gate` process keeps for its life, by module: emptied before each run in this process, as a new process
# starts without it. The rest of the package's module-level containers are emptied by the run's own end
# (RUN_END) or belong to the tests (TEST_OWNED); tests/test_code_quality.py finds each one in one of the three.
PROCESS_STATE = {"gates.infra.git": ("_GIT", "_OURS_ONLY"), "gates.infra.cache": ("_SECRETS", "_KEY_DIRS"),
                 "gates.infra.schemas": ("_READ", "_LOADED"),
                 "gates.infra.gitnet": ("_SCRATCH", "_SIGNALLED", "_SILENT", "_DEADLINE")}
RUN_END = {"gates.infra.gitnet": ("_LIVE", "_FOLDERS")}  # gitnet.cleanup(), at exit: _gate_in_process calls it
TEST_OWNED = {"gates.infra.git": ("_CHILDREN",),  # every one reaped by the run's end: no_git_left_running holds it
              "gates.infra.fsio": ("RACE_HOOKS",)}  # a test's own hooks into the atomic writer


IN_PROCESS_BOUND = 120.0  # seconds: an in-process run still going then is interrupted (a process run has a timeout)


def _gate_in_process(cwd: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`gate ARGS` through gates.main.main in this process, a few milliseconds instead of a process's 30: what a new
    process starts with is set up, and what its end does is done. What the package keeps for a process's life
    starts empty (PROCESS_STATE); the working folder is `cwd`; descriptors 0, 1 and 2 are /dev/null and two files
    (so none is a terminal, and whatever a child writes there is kept); sys.argv names the console script; the
    signal handlers and the scratch folders a run leaves are put back and removed, as its exit would. A run that
    hangs is interrupted after IN_PROCESS_BOUND seconds with a TimeoutError (SIGUSR1 from a timer: it ends a
    blocking call too), so a hang fails its test instead of stopping the suite."""
    import io
    import signal
    import threading

    def overrun(number: int, frame: object) -> None:
        raise TimeoutError(f"gate {' '.join(args)} ran in process for more than {IN_PROCESS_BOUND:.0f} s")

    for name, fields in PROCESS_STATE.items():
        module = sys.modules.get(name)
        for field in fields if module is not None else ():
            getattr(module, field).clear()
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                                                                  signal.SIGALRM, signal.SIGPIPE, signal.SIGUSR1)}
    streams, argv, here = (sys.stdin, sys.stdout, sys.stderr), sys.argv, os.getcwd()
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    files = [open(os.devnull, "rb"), tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    out, err = io.BytesIO(), io.BytesIO()
    wrappers = (io.TextIOWrapper(open(os.devnull, "rb"), encoding="utf-8"),  # kept here: closing one closes its bytes
                io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True),
                io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True))
    try:
        for fd, handle in enumerate(files):
            os.dup2(handle.fileno(), fd)
        sys.stdin, sys.stdout, sys.stderr = wrappers
        sys.argv = [GATE_BIN or "gate", *args]
        os.chdir(cwd)
        signal.signal(signal.SIGUSR1, overrun)
        watchdog = threading.Timer(IN_PROCESS_BOUND, os.kill, (os.getpid(), signal.SIGUSR1))
        watchdog.daemon = True
        watchdog.start()
        try:
            code = main(args)
        finally:
            watchdog.cancel()
    finally:
        wrappers[1].flush()
        wrappers[2].flush()
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.argv = argv
        os.chdir(here)
        for fd, copy in enumerate(saved):
            os.dup2(copy, fd)
            os.close(copy)
        if "gates.infra.gitnet" in sys.modules:  # what the end of a process does for its remote work (RUN_END)
            sys.modules["gates.infra.gitnet"].cleanup()
        for number, handler in handlers.items():
            signal.signal(number, handler)
    wrappers[0].close()
    left = []
    for handle in files:
        handle.seek(0)
        left.append(handle.read())
        handle.close()
    text = [(stream.getvalue() + extra).decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
            for stream, extra in ((out, left[1]), (err, left[2]))]
    return subprocess.CompletedProcess([GATE_BIN or "gate", *args], code, text[0], text[1])


def call_gate(cwd: Path, *args: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """`gate` in this process: (exit code, stdout, stderr)."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def flag_records(common_dir: Path, sub: str = "") -> list[dict[str, Any]]:
    """Every flag in the folder; each must follow the shipped flag schema."""
    from gates.infra import schemas, validation

    folder = common_dir / "gate" / "flags" / sub
    if not folder.is_dir():
        return []
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    for record in records:
        assert validation.validate(schemas.load("flag"), record, {}) == [], record
    return records


def run_processes(tmp_path: Path, script: str, argvs: list[list[str]], timeout: float) -> list[int]:
    """Run `script` in one process per argv, all at once; their exit codes, in order."""
    path = tmp_path / "concurrent.py"
    path.write_text(script)
    procs = [subprocess.Popen([sys.executable, str(path), *argv]) for argv in argvs]
    return [proc.wait(timeout=timeout) for proc in procs]
