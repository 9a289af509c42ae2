"""Real remotes on this machine for the issue-18 tests: a bare repository over file://, git daemon (git://),
and smart HTTP (git http-backend behind http.server, http://)."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import threading
import urllib.parse
from pathlib import Path
from typing import Callable, Iterator

import pytest
from conftest import commit_all, git, handoff_text, init_repo

from gates.domain.remote import key_for


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed_bare(tmp_path: Path, config: str = "claims:\n  remote: origin\n") -> Path:
    """A bare repository holding one branch with a valid hand-over and a .gate.yaml naming `origin`."""
    seed = init_repo(tmp_path / "seed")
    (seed / "README").write_text("hello\n")
    head = commit_all(seed, "first")
    (seed / "HANDOFF.md").write_text(handoff_text(head))
    (seed / ".gate.yaml").write_text(config)
    commit_all(seed, "handoff")
    bare = tmp_path / "srv" / "remote.git"
    bare.parent.mkdir(exist_ok=True)
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(bare, "config", "receive.denyDeleteCurrent", "warn")
    return bare


class Daemon:
    """git daemon serving every repository under `base` at git://127.0.0.1:<free port>, pushes allowed.

    The listening socket is ours and each connection gets `git daemon --inetd`, the way inetd or a systemd socket
    runs it: git daemon's own listener has a backlog of 5, and a race that connects 16 clones at once overflows it
    into SYN cookies, which the kernel answers with "Connection reset by peer" (the transport's limit, not the
    product's: tests/commands/test_claims_remote.py::test_the_git_daemon_takes_a_burst_of_connections)."""

    def __init__(self, base: Path) -> None:
        exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()
        if not (Path(exec_path) / "git-daemon").is_file():
            pytest.skip("git daemon is not installed")
        self.base = base
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self._served: list[subprocess.Popen[bytes]] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        argv = ["git", "daemon", "--inetd", "--enable=receive-pack", f"--base-path={self.base}", "--export-all",
                "--informative-errors", str(self.base)]
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                self._served = [proc for proc in self._served if proc.poll() is None]
                continue
            except OSError:
                return
            with conn:  # the child holds its own copy of the socket; ours only closes (never shuts down)
                conn.setblocking(True)
                self._served.append(subprocess.Popen(argv, stdin=conn.fileno(), stdout=conn.fileno(),
                                                     stderr=subprocess.DEVNULL, start_new_session=True))

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)
        self._listener.close()
        for proc in self._served:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    (tmp_path / "srv").mkdir(exist_ok=True)
    running = Daemon(tmp_path / "srv")
    try:
        yield running
    finally:
        running.stop()


def clone(url: str, where: Path) -> Path:
    git(where.parent, "clone", "-q", url, str(where))
    return where


def refs(bare: Path) -> dict[str, str]:
    out = git(bare, "for-each-ref", "--format=%(objectname) %(refname)")
    return {line.split(" ", 1)[1]: line.split(" ", 1)[0] for line in out.splitlines()}


def claim_ref(tree: Path, prefix: str = "refs/gate/claims") -> str:
    from gates.infra.git import discover

    return f"{prefix}/{key_for(discover(tree, {}), 'HANDOFF.md')}"


def remote_record(bare: Path, ref: str) -> dict[str, object]:
    return dict(json.loads(git(bare, "cat-file", "blob", f"{ref}:claim.json")))


def clone_id(tree: Path) -> str:
    return (tree / ".git" / "gate" / "clone-id").read_text().strip()


# -- Smart HTTP: git http-backend as CGI behind a tiny bridge of http.server (every Python version, no package). --

def http_backend() -> str:
    """The path of git-http-backend, or skip."""
    proc = subprocess.run(["git", "--exec-path"], capture_output=True, text=True)
    for candidate in (Path(proc.stdout.strip()) / "git-http-backend", Path("/usr/lib/git-core/git-http-backend")):
        if proc.returncode == 0 and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.skip("git-http-backend is not installed")


class _Bridge(http.server.BaseHTTPRequestHandler):
    """One request: run git-http-backend as CGI, the request body on its stdin, its CGI answer sent back."""

    server: _BridgeServer
    timeout = 30  # seconds of silence on the socket before the handler gives up

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        if self.path.partition("?")[0].endswith("/git-receive-pack") and self.server.receive_pack is not None:
            self.server.receive_pack(self)  # a push: as the test's server policy answers it
            return
        self._cgi()

    def log_message(self, format: str, *args: object) -> None:
        self.server.log.append(format % args)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(self, answer: bool = True) -> None:
        """Run the request through git-http-backend; with `answer` False its answer is dropped (the caller sends
        another)."""
        path, _, query = self.path.partition("?")
        body = self._body() if self.command == "POST" else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.server.root),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_PROJECT_ROOT": str(self.server.root), "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": self.request_version, "SERVER_SOFTWARE": "gate-test",
            "REQUEST_METHOD": self.command, "PATH_INFO": urllib.parse.unquote(path), "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0], "REMOTE_USER": "gate-test",
        }
        for header, name in (("Git-Protocol", "GIT_PROTOCOL"), ("Content-Encoding", "HTTP_CONTENT_ENCODING"),
                             ("Accept", "HTTP_ACCEPT")):
            if self.headers.get(header):
                env[name] = self.headers[header]
        try:
            proc = subprocess.run([self.server.backend], input=body, capture_output=True, env=env, timeout=60)
        except subprocess.TimeoutExpired:
            self.send_error(504, "git-http-backend took too long")
            return
        head, sep, out = proc.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, sep, out = proc.stdout.partition(b"\n\n")
        if not sep:
            self.send_error(502, f"git-http-backend: {proc.stderr.decode('utf-8', 'replace')[-200:]}")
            return
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.strip().lower() == "status":
                status = int(value.split()[0])
            elif name.strip():
                headers.append((name.strip(), value.strip()))
        if proc.stderr:
            self.server.log.append(proc.stderr.decode("utf-8", "replace"))
        if not answer:
            return
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(out)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(out)


class _BridgeServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # a race connects many clones at once

    def __init__(self, root: Path, backend: str) -> None:
        self.root, self.backend, self.log = root, backend, list[str]()
        self.receive_pack: Callable[[_Bridge], None] | None = None  # how a push is answered (None: git's answer)
        super().__init__(("127.0.0.1", 0), _Bridge)


class HttpServer:
    """git http-backend on 127.0.0.1 at a free port, serving every repository under `base`; pushes allowed."""

    def __init__(self, base: Path) -> None:
        self.base = base
        for bare in base.glob("*.git"):
            git(bare, "config", "http.receivepack", "true")  # anonymous pushes (http-backend refuses them by default)
        self.server = _BridgeServer(base, http_backend())
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def answer_pushes(self, policy: Callable[[_Bridge], None] | None) -> None:
        """From now on every push (a POST to git-receive-pack; the GET of its advertisement is served as ever) is
        answered by `policy` (refused_with, cut_off, answer_lost, reported, moved_first); None: by git again."""
        self.server.receive_pack = policy

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


# -- How a smart-HTTP server may answer a push other than by applying it: the whole push refused, no per-ref answer. --

def refused_with(status: int) -> Callable[[_Bridge], None]:
    """The POST answered with this HTTP status (a proxy's 403, a server's 500): receive-pack never runs."""

    def answer(bridge: _Bridge) -> None:
        bridge._body()
        bridge.send_error(status, "refused by the test server")

    return answer


def cut_off(bridge: _Bridge) -> None:
    """The connection closed with no answer at all: receive-pack never runs."""
    bridge._body()
    bridge.close_connection = True
    bridge.connection.shutdown(socket.SHUT_RDWR)


def answer_lost(bridge: _Bridge) -> None:
    """receive-pack runs (the push is applied), then its answer is lost: a 500 is sent instead."""
    bridge._cgi(answer=False)
    bridge.send_error(500, "the answer was lost")


def reported(lines: list[bytes]) -> Callable[[_Bridge], None]:
    """receive-pack never runs; the answer is a report-status of these lines (`unpack …`, `ng <ref> <reason>`),
    as any server may send it: what git prints from it is remote text."""

    def pkt(data: bytes) -> bytes:
        return b"%04x" % (len(data) + 4) + data

    def answer(bridge: _Bridge) -> None:
        bridge._body()
        inner = b"".join(pkt(line + b"\n") for line in lines) + b"0000"
        body = b"".join(pkt(b"\x01" + inner[at:at + 65000]) for at in range(0, len(inner), 65000)) + b"0000"
        bridge.send_response(200)
        bridge.send_header("Content-Type", "application/x-git-receive-pack-result")
        bridge.send_header("Content-Length", str(len(body)))
        bridge.end_headers()
        bridge.wfile.write(body)

    return answer


def moved_first(change: Callable[[], None]) -> Callable[[_Bridge], None]:
    """`change` runs on the server (another clone's push, say) between the advertisement and receive-pack's lock:
    the compare-and-swap is lost at the server, not judged stale by the client."""

    def answer(bridge: _Bridge) -> None:
        change()
        bridge._cgi()

    return answer


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    """Start it after seed_bare (it enables pushes in every bare repository under srv/)."""
    (tmp_path / "srv").mkdir(exist_ok=True)
    running = HttpServer(tmp_path / "srv")
    try:
        yield running
    finally:
        running.stop()


def serve(request: pytest.FixtureRequest, tmp_path: Path, config: str = "claims:\n  remote: origin\n") -> str:
    """A fresh bare repository (tmp_path/srv/remote.git) and its URL over the transport `request.param`."""
    bare = seed_bare(tmp_path, config)
    if request.param == "file":
        return f"file://{bare}"
    running = request.getfixturevalue({"git": "daemon", "http": "http_server"}[request.param])
    return str(running.url("remote.git"))


# The local remote runs in the fast set; a git daemon or an HTTP server (the same code paths, other transports,
# a server process each) in the slow set.
GIT = pytest.param("git", marks=pytest.mark.slow)
HTTP = pytest.param("http", marks=pytest.mark.slow)


@pytest.fixture(params=["file", GIT, HTTP])
def remote_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return serve(request, tmp_path)


@pytest.fixture(params=["file", HTTP])
def file_or_http(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """For the tests that the git daemon adds nothing to: the local remote and smart HTTP."""
    return serve(request, tmp_path)


def bare_repository(tmp_path: Path) -> Path:
    return tmp_path / "srv" / "remote.git"
