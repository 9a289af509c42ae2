"""Network work and signals (issue 25): a harness's timeout (SIGTERM), a closed terminal (SIGHUP) or ^C (SIGINT)
leaves no scratch repository in TMPDIR and no git process behind; SIGKILL leaves no git process behind; a
`gate claim` killed anywhere never leaves a local claim the remote does not hold; a flood of flag refs costs
the brief a bounded number of git processes."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

import pytest
from conftest import GATE_BIN, REAL_GIT, git, run_gate
from remote_helpers import Daemon, clone, daemon, seed_bare

assert daemon  # a fixture, used by name

CONFIG = "claims:\n  remote: origin\n  remote_timeout: 20s\n"


def _serve(take: Callable[[socket.socket], None]) -> tuple[int, threading.Event]:
    """A TCP port on 127.0.0.1 whose every connection `take` is given, in a thread of its own, until the event is
    set; then the port closes."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            threading.Thread(target=take, args=(conn,), daemon=True).start()
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(server.getsockname()[1]), stop


def _relay(stop: threading.Event, stopped: threading.Event) -> None:
    """Set `stopped` once `stop` is set (the connections' threads wait on it)."""

    def wait() -> None:
        stop.wait()
        stopped.set()

    threading.Thread(target=wait, daemon=True).start()


def _silent_remote() -> tuple[int, threading.Event]:
    """A TCP port on 127.0.0.1 that accepts connections and never answers (a remote that hangs)."""
    stopped = threading.Event()

    def hold(conn: socket.socket) -> None:
        stopped.wait()
        conn.close()

    port, stop = _serve(hold)
    _relay(stop, stopped)
    return port, stop


def _gits_in(folder: Path) -> list[int]:
    """The git processes whose working folder lies in `folder` (the scratch repository's)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if comm.startswith("git") and cwd.startswith(str(folder)):
            found.append(int(entry))
    return found


def _wait_for(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _hanging_brief(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, threading.Event]:
    bare = seed_bare(tmp_path, CONFIG)
    tree = clone(f"file://{bare}", tmp_path / "a")
    port, stop = _silent_remote()
    git(tree, "remote", "set-url", "origin", f"git://127.0.0.1:{port}/x.git")
    scratch_tmp = tmp_path / "tmp"
    scratch_tmp.mkdir()
    assert GATE_BIN
    # A run started in the background by a shell without job control (`pytest &` in a script) ignores SIGINT, and
    # one started by `nohup` ignores SIGHUP; so would the gate it starts: the gate keeps an ignored signal ignored,
    # so this test's signal would be lost. A handler here (for the moment of the start) is what makes the child
    # start with both at their default.
    previous = {number: signal.signal(number, signal.default_int_handler) for number in (signal.SIGINT, signal.SIGHUP)}
    try:
        proc = subprocess.Popen([GATE_BIN, "brief"], cwd=tree, env={**os.environ, "TMPDIR": str(scratch_tmp)},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if not _wait_for(lambda: _gits_in(scratch_tmp), 30):
        proc.kill()
        proc.communicate()
        stop.set()
        pytest.fail("the brief never started its network git")
    return proc, scratch_tmp, stop


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_network_work_leaves_nothing_behind(number: int, tmp_path: Path) -> None:
    proc, scratch_tmp, stop = _hanging_brief(tmp_path)
    try:
        proc.send_signal(number)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        assert os.listdir(scratch_tmp) == []
        # a git the handler killed can still be in /proc for a moment (its parent reaps it): an orphan stays
        assert _wait_for(lambda: _gits_in(scratch_tmp) == [], 5), _gits_in(scratch_tmp)
    finally:
        stop.set()


def test_a_signal_while_the_scratch_repository_is_made_leaves_nothing_behind(tmp_path: Path,
                                                                             git_wrapper: Callable[..., Path]) -> None:
    """The scratch repository's own `git init` writes in the scratch folder too: a signal that comes while it
    runs must kill it before the folder is removed (a CI run left `gate-remote-*` behind this way). The git on
    PATH here is real git that, after its init, goes on writing for a while, as a slow disk makes git do."""
    bare = seed_bare(tmp_path, CONFIG)
    tree = clone(f"file://{bare}", tmp_path / "a")
    port, stop = _silent_remote()
    git(tree, "remote", "set-url", "origin", f"git://127.0.0.1:{port}/x.git")
    scratch_tmp, marker = tmp_path / "tmp", tmp_path / "in-init"
    scratch_tmp.mkdir()
    wrapper = git_wrapper(f'case " $* " in *" init "*) for last; do :; done\n  {REAL_GIT} "$@" || exit\n'
                          f'  echo $$ > {marker}\n  sleep 2\n  mkdir -p "$last/objects/late"\n  exit 0;;\nesac\n'
                          f'exec {REAL_GIT} "$@"\n')
    env = {**os.environ, "TMPDIR": str(scratch_tmp), "PATH": f"{wrapper}:{os.environ['PATH']}"}
    assert GATE_BIN
    proc = subprocess.Popen([GATE_BIN, "brief"], cwd=tree, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if not _wait_for(lambda: marker.exists() and marker.read_text().strip(), 30):
            proc.kill()
            pytest.fail("the brief never made its scratch repository")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        init = marker.read_text().strip()  # the git that goes on writing after its init: stopped, so it never will
        assert _wait_for(lambda: not os.path.exists(f"/proc/{init}"), 10), f"git {init} still runs"
        assert os.listdir(scratch_tmp) == []
    finally:
        proc.kill()
        proc.communicate()
        stop.set()


def test_sigkill_during_network_work_leaves_no_git_behind(tmp_path: Path) -> None:
    """SIGKILL runs no handler: the kernel kills the network git with its parent (PR_SET_PDEATHSIG)."""
    proc, scratch_tmp, stop = _hanging_brief(tmp_path)
    try:
        proc.kill()
        proc.communicate(timeout=30)
        assert _wait_for(lambda: not _gits_in(scratch_tmp), 10), _gits_in(scratch_tmp)
    finally:
        for pid in _gits_in(scratch_tmp):
            os.kill(pid, signal.SIGKILL)
        stop.set()


@pytest.mark.slow  # a torture test: twelve claims killed at random points
def test_a_claim_killed_anywhere_leaves_no_local_claim_without_the_remote_one(tmp_path: Path) -> None:
    bare = seed_bare(tmp_path, CONFIG)
    tree = clone(f"file://{bare}", tmp_path / "a")
    assert GATE_BIN
    # A gate killed in its network work keeps its scratch folder (no handler runs on SIGKILL): here, not in /tmp.
    scratch_tmp = tmp_path / "tmp"
    scratch_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch_tmp)}
    deadline, rounds, half = time.monotonic() + 90, 0, []
    while rounds < 12 and time.monotonic() < deadline:
        rounds += 1
        proc = subprocess.Popen([GATE_BIN, "claim", "--session", "A"], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(random.uniform(0.05, 0.6))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        local = json.loads(run_gate(tree, "claims", "--format", "json").stdout or "{}").get("claims")
        held = git(bare, "for-each-ref", "refs/gate/claims").strip()
        if local and not held:
            half.append(rounds)
        run_gate(tree, "release", "--session", "A")
    assert half == []


def test_a_flood_of_flag_refs_costs_the_brief_a_bounded_number_of_git_processes(tmp_path: Path,
                                                                                 git_wrapper: Callable[..., Path]) -> None:
    bare = seed_bare(tmp_path, CONFIG)
    tree = clone(f"file://{bare}", tmp_path / "b")
    payload = json.dumps({"version": 1, "clone": "x", "host": "h", "pushed": "now",
                          "flags": [{"id": "f1", "reason": "io-error", "count": 1, "message": "m"}]})
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=bare, input=payload, capture_output=True,
                          text=True, check=True).stdout.strip()
    tree_oid = subprocess.run(["git", "mktree"], cwd=bare, input=f"100644 blob {blob}\tflags.json\n",
                              capture_output=True, text=True, check=True).stdout.strip()
    commit = git(bare, "commit-tree", tree_oid, "-m", "flags").strip()
    subprocess.run(["git", "update-ref", "--stdin"], cwd=bare, check=True, text=True,
                   input="".join(f"create refs/gate/flags/{i:032x} {commit}\n" for i in range(3000)))
    count = tmp_path / "git-calls"
    wrapper = git_wrapper(f'echo x >> {count}\nexec {REAL_GIT} "$@"\n')
    env = {**os.environ, "PATH": f"{wrapper}:{os.environ['PATH']}"}
    proc = run_gate(tree, "brief", env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "2968 more clones' flag refs were not read" in proc.stdout
    assert "clone 00000000000000000000000000000000 on host h" in proc.stdout
    assert len(count.read_text().splitlines()) < 40


def _brief_through(tree: Path, url: str, stop: threading.Event) -> subprocess.CompletedProcess[str]:
    """`gate brief` in `tree` with its origin at `url` (a test's own server, stopped after): it exits 0."""
    try:
        git(tree, "remote", "set-url", "origin", url)
        brief = run_gate(tree, "brief", timeout=60)
    finally:
        stop.set()
    assert brief.returncode == 0, brief.stderr
    return brief


def test_a_silent_remote_costs_the_brief_one_time_bound_not_one_a_read(tmp_path: Path) -> None:
    """The brief reads the remote twice (other clones' flags, then the claim), each bounded by
    claims.remote_timeout: a remote that never answers made it wait out the bound twice, past a harness's hook
    timeout (30 s for Claude Code's start hook as installed) at the default 20 s. A remote that gave no answer in time
    is not asked again in the same run: both sections say why, and the brief takes one bound."""
    bare = seed_bare(tmp_path, "claims:\n  remote: origin\n  remote_timeout: 3s\n")
    tree = clone(f"file://{bare}", tmp_path / "a")
    port, stop = _silent_remote()
    brief = _brief_through(tree, f"git://127.0.0.1:{port}/x.git", stop)
    said = "git ls-remote got no answer within this run's 3s for the remote"  # its brief's one bound
    assert f"Flags of other clones: remote origin could not be read ({said})" in brief.stdout, brief.stdout
    assert (f"On remote origin: the claim cannot be read ({said} (not asked again in this run)) — unknown, never "
            "free.") in brief.stdout, brief.stdout  # no second wait: not asked


def _slow_proxy(target_port: int, delay: float) -> tuple[int, list[int], threading.Event]:
    """A TCP port on 127.0.0.1 that forwards each connection to `target_port` after `delay` seconds (a remote that
    answers every call, each slowly); the list counts the connections it took."""
    taken: list[int] = []
    stopped = threading.Event()

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def forward(conn: socket.socket) -> None:
        taken.append(1)
        if stopped.wait(delay):
            conn.close()
            return
        far = socket.create_connection(("127.0.0.1", target_port))
        threading.Thread(target=pipe, args=(conn, far), daemon=True).start()
        pipe(far, conn)

    port, stop = _serve(forward)
    _relay(stop, stopped)
    return port, taken, stop


def test_a_slow_remote_costs_the_brief_one_bound_for_all_its_reads(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """An adversarial review: a remote that answers every call, each within its own bound but slowly, made the brief
    (the other clones' flags, then the claim: three calls) take three times that, past a harness's 30 s start-hook
    timeout at the default bound. The brief's network work shares one bound (claims.remote_timeout, at most 20 s):
    with calls 3 s apart and a 4 s bound, no third call is ever started, and the claim is said unknown."""
    seed_bare(tmp_path, "claims:\n  remote: origin\n  remote_timeout: 4s\n")
    served: Daemon = request.getfixturevalue("daemon")
    tree = clone(served.url("remote.git"), tmp_path / "a")
    port, taken, stop = _slow_proxy(served.port, 3.0)
    brief = _brief_through(tree, f"git://127.0.0.1:{port}/remote.git", stop)
    assert len(taken) <= 2, len(taken)  # three or more without the shared bound
    section = brief.stdout.split("## 3. Claim and locks\n", 1)[1]
    assert "On remote origin: the claim cannot be read (" in section and "unknown, never free" in section, section
