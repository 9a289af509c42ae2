"""handoff-gate benchmarks: whole-process times, ratios and peak memory, each from one alternating pair.

Run through `bench/run`, which makes a fresh virtual environment with a plain install of this
checkout, check-jsonschema, pre-commit and pre-commit-hooks. Every row comes from ONE pair: side A
and side B run alternately in the same loop (A, B, A, B, ...) after warm-up runs, so machine drift
cancels; a side's time is its median, its memory the largest `ru_maxrss` of the measured process
itself (`os.wait4` on the direct child). A `before` step runs outside the timed part; the steps
that promise a change fail the bench when nothing changed, and a measured command that exits with
an unexpected code fails it too (a failing gate would otherwise be measured as a fast failure).
Fixtures are built in a temp dir.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

CHECKOUT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GATE = str(BIN / "gate")
FLOOR = [sys.executable, "-c", "pass"]
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
for _name in ("GATE_ROOT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "PRE_COMMIT_HOME"):
    ENV.pop(_name, None)
# The typical repository's config: the defaults, with room for the commits the commit rows make.
TYPICAL_CONFIG = "handoff:\n  max_lines: 1000\nfresh:\n  max_behind: 100000\n"
# A hand-over at the default caps (max_lines 600, max_bytes 65536): 600 lines of the bench's items, about 51 KB.
CAPS_CONFIG = "fresh:\n  max_behind: 100000\n"
CAPS_LINES = 600


class BenchError(Exception):
    """The bench cannot trust what it would measure: it stops, loudly."""


# ---------------------------------------------------------------- processes

def run(argv: list[str], cwd: Path, expect: tuple[int, ...] = (0,)) -> str:
    """An untimed setup command; its exit code is checked."""
    proc = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
    if proc.returncode not in expect:
        raise BenchError(f"setup step `{' '.join(argv)}` in {cwd} exited {proc.returncode} (expected "
                         f"{expect}):\n{(proc.stdout + proc.stderr).strip()[-2000:]}")
    return proc.stdout.strip()


def git(cwd: Path, *args: str) -> str:
    return run(["git", *args], cwd)


class Cmd(NamedTuple):
    """One side of a pair: what runs, where, the untimed step before each run, the exit codes allowed."""

    argv: list[str]
    cwd: Path
    before: Callable[[], None] | None = None
    expect: tuple[int, ...] = (0,)


class Sample(NamedTuple):
    seconds: float
    rss_kib: int


class Launcher:
    """bench/spawn.py, a small process that starts each measured command as its own direct child.

    A child's ru_maxrss counts its parent's resident pages until its exec, so commands started by
    the bench itself would report the bench's size; the launcher's size is what `floor_kib` reports.
    """

    def __init__(self, scratch: Path) -> None:
        self.err = scratch / "stderr"
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", str(Path(__file__).with_name("spawn.py"))],
                                     env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.floor_kib = self.run(["true"], scratch)[2]

    def run(self, argv: list[str], cwd: Path) -> tuple[float, int, int]:
        """(seconds, exit code, ru_maxrss KiB) of one run, measured by the launcher around fork and wait4."""
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(b"\0".join(os.fsencode(part) for part in [str(cwd), str(self.err), *argv]) + b"\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().split()
        if len(answer) != 3:
            raise BenchError(f"the launcher (bench/spawn.py) stopped answering while running {argv}")
        return float(answer[0]), int(answer[1]), int(answer[2])

    def stderr_tail(self) -> str:
        return self.err.read_text(errors="replace").strip()[-2000:]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


LAUNCHER: Launcher | None = None  # started in main(), once ENV is final


def measure(cmd: Cmd) -> Sample:
    """One run: wall time and the measured process's own peak RSS (wait4 on it, by the launcher)."""
    assert LAUNCHER is not None
    if cmd.before:
        cmd.before()
    seconds, code, rss = LAUNCHER.run(cmd.argv, cmd.cwd)
    if code not in cmd.expect:
        raise BenchError(f"`{' '.join(cmd.argv)}` in {cmd.cwd} exited {code}, expected {cmd.expect}: "
                         f"it would be measured as a fast failure.\n{LAUNCHER.stderr_tail()}")
    return Sample(seconds, rss)


class Side(NamedTuple):
    seconds: float  # median
    rss_kib: int  # largest
    runs: int


def summarize(samples: list[Sample]) -> Side:
    return Side(statistics.median(s.seconds for s in samples), max(s.rss_kib for s in samples), len(samples))


def pair(runs: int, a: Cmd, b: Cmd, warmup: int = 2) -> tuple[Side, Side]:
    """`a` and `b` alternately in one loop (A, B, A, B, ...), after `warmup` runs of each."""
    for _ in range(warmup):
        measure(a)
        measure(b)
    samples_a, samples_b = [], []
    for _ in range(runs):
        samples_a.append(measure(a))
        samples_b.append(measure(b))
    return summarize(samples_a), summarize(samples_b)


# ---------------------------------------------------------------- before steps (untimed)

_EDITS = itertools.count(1)  # one counter for the whole bench: no two edits write the same text


def _rewrite(path: Path, text: str) -> None:
    old = path.read_bytes() if path.exists() else None
    path.write_text(text)
    if path.read_bytes() == old:
        raise BenchError(f"the before step did not change {path}: the row would measure an unchanged state")


def edit_files(repo: Path) -> None:
    """Change one tracked code file and one tracked YAML file (new text every time); nothing is staged."""
    n = next(_EDITS)
    _rewrite(repo / "src" / "churn.py", f"VALUE = {n}\n")
    _rewrite(repo / "conf" / "churn.yaml", f"value: {n}\n")


class StageFresh:
    """A `before` step: edit files and `git add` them, then prove the staged tree is one never staged before."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.seen = {git(repo, "write-tree")}

    def __call__(self) -> None:
        edit_files(self.repo)
        git(self.repo, "add", "src/churn.py", "conf/churn.yaml")
        tree = git(self.repo, "write-tree")
        if tree in self.seen:
            raise BenchError(f"the staged state in {self.repo} is one already checked: not a new staged state")
        self.seen.add(tree)


class EditForCommit:
    """A `before` step for `git commit -a`: a fresh unstaged change (and, with `stamp`, `gate stamp` too)."""

    def __init__(self, repo: Path, stamp: bool = False) -> None:
        self.repo = repo
        self.stamp = stamp

    def __call__(self) -> None:
        handoff = (self.repo / "HANDOFF.md").read_bytes()
        if self.stamp:
            run([GATE, "stamp"], self.repo)
            if (self.repo / "HANDOFF.md").read_bytes() == handoff:
                raise BenchError(f"`gate stamp` did not change {self.repo / 'HANDOFF.md'}")
        edit_files(self.repo)
        changed = git(self.repo, "diff", "--name-only")
        wanted = {"src/churn.py", "conf/churn.yaml"} | ({"HANDOFF.md"} if self.stamp else set())
        if not wanted <= set(changed.splitlines()):
            raise BenchError(f"the before step left {self.repo} with changes {changed!r}, expected {sorted(wanted)}")


def edit_target(repo: Path) -> Callable[[], None]:
    """A `before` step: the Current Target text of HANDOFF.md changes (in the work tree)."""
    def change() -> None:
        path = repo / "HANDOFF.md"
        old = path.read_text()
        new = re.sub(r"Ship the benchmark( \(\d+\))?\.", f"Ship the benchmark ({next(_EDITS)}).", old, count=1)
        _rewrite(path, new)
    return change


# ---------------------------------------------------------------- fixtures

def handoff_text(head: str, lines: int) -> str:
    items = "\n".join(f"- [ ] thread {i}: look into part {i} of the parser — next: write the test for case {i}"
                      for i in range(max(1, lines - 20)))
    return (f"# Handoff\n\n## Meta\n- ref: {head}\n- updated: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n\n"
            f"## Current Target\nShip the benchmark.\n\n## Open Threads\n{items}\n\n## Decisions\n## Dead Ends\n"
            "## Verified\n## Assumed\n## Key References\n")


def record_text(rid: str, n: int, status: str) -> str:
    return f"---\nid: {rid}\ntitle: record {n}\nstatus: {status}\ndate: 2026-11-30\n---\n\n# record {n}\n"


def write_tree_files(repo: Path, files: int, records: int) -> None:
    """`files` tracked files (a tenth YAML, the rest Python, two of them the churn files) and the records."""
    (repo / "src").mkdir()
    (repo / "conf").mkdir()
    (repo / "src" / "churn.py").write_text("VALUE = 0\n")
    (repo / "conf" / "churn.yaml").write_text("value: 0\n")
    for i in range(files - 2):
        if i % 10 == 0:
            (repo / "conf" / f"c{i:04}.yaml").write_text(f"name: c{i}\nitems: [1, 2, 3]\n")
        else:
            (repo / "src" / f"m{i:04}.py").write_text(f"def f{i}():\n    return {i}\n")
    (repo / "decisions").mkdir()
    for i in range(records):
        rid = f"D-20261130T000000Z-{i:012x}"
        (repo / "decisions" / f"{rid}-r.md").write_text(record_text(rid, i, "open" if i % 3 else "closed"))


def make_repo(root: Path, name: str, *, lines: int = 200, worktrees: int = 10, records: int = 20,
              files: int = 300, config: str = TYPICAL_CONFIG, claims: bool = True) -> Path:
    """The typical repository by default: HANDOFF.md of 200 lines, 10 worktrees, 4 claims, 20 records, 300 files.

    A clone has one claim per state file: the main worktree holds it and three linked worktrees
    ask for it too (denied, exit 1), so 4 claims are made and one is held.
    """
    repo = root / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", "--template=")
    write_tree_files(repo, files, records)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), lines))
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    (repo / ".gate.yaml").write_text(config)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "handoff")
    for i in range(worktrees):
        git(repo, "worktree", "add", "-q", "-b", f"wt{i}", str(root / f"{name}-wt{i}"))
    if claims:
        run([GATE, "claim", "--note", "bench"], repo)
        for i in range(min(worktrees, 3)):
            run([GATE, "claim"], root / f"{name}-wt{i}", expect=(1,))  # held by the main worktree
    run([GATE, "check"], repo)  # the fixture must pass before anything is measured
    return repo


def add_history(repo: Path, commits: int) -> str:
    """`commits` commits on main (fast-import): code changes, archive appends, new records; returns the base."""
    base = git(repo, "rev-parse", "HEAD")
    archive = (repo / "ARCHIVE.md").read_text()
    stream = []
    for n in range(1, commits + 1):
        blobs = [("src/churn.py", f"VALUE = -{n}\n")]
        if n % 10 == 0:
            archive += f"- archived item {n}\n"
            blobs.append(("ARCHIVE.md", archive))
        if n % 100 == 0:
            rid = f"D-20261201T000000Z-{n:012x}"
            blobs.append((f"decisions/{rid}-h.md", record_text(rid, n, "open")))
        message = f"history {n}\n"
        stream.append(f"commit refs/heads/main\nmark :{n}\ncommitter bench <bench@example.invalid> {1764460800 + n} +0000\n"
                      f"data {len(message.encode())}\n{message}from {base if n == 1 else f':{n - 1}'}\n")
        for path, text in blobs:
            stream.append(f"M 100644 inline {path}\ndata {len(text.encode())}\n{text}\n")
    proc = subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, env=ENV, input="".join(stream).encode(),
                          capture_output=True)
    if proc.returncode:
        raise BenchError(f"git fast-import failed: {proc.stderr.decode()[-2000:]}")
    git(repo, "reset", "-q", "--hard", "main")
    return base


def hook_repo(root: Path) -> tuple[Path, str]:
    """This checkout's files (as `pip install .` sees them) committed in a temp repository: a pre-commit hook repo."""
    repo = root / "hook-repo"
    repo.mkdir()
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], CHECKOUT)
    for rel in filter(None, listed.split("\0")):
        src = CHECKOUT / rel
        if rel.startswith(("bench/", "tests/", "fuzz/")):
            continue
        if src.is_symlink():  # gates/schemas, the link to schemas/
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).symlink_to(os.readlink(src))
        elif src.is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)
    git(repo, "init", "-q", "-b", "main", "--template=")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hook repo")
    return repo, git(repo, "rev-parse", "HEAD")


def local_hook(hook_id: str, entry: str, extra: str = "") -> str:
    return f"  - id: {hook_id}\n    name: {hook_id}\n    entry: {json.dumps(entry)}\n    language: system\n{extra}"


def framework_configs(root: Path) -> dict[str, str]:
    """The .pre-commit-config.yaml of each side: the gate from its hook repo, the two standard hooks, a trivial hook."""
    repo, sha = hook_repo(root)
    return {
        "gate": f"repos:\n- repo: {repo}\n  rev: {sha}\n  hooks:\n  - id: gate\n",
        "standard": ("repos:\n- repo: local\n  hooks:\n"
                     + local_hook("check-yaml", str(BIN / "check-yaml"), "    types: [yaml]\n")
                     + local_hook("end-of-file-fixer", str(BIN / "end-of-file-fixer"), "    types: [text]\n")),
        "trivial": ("repos:\n- repo: local\n  hooks:\n"
                    + local_hook("trivial", "true", "    pass_filenames: false\n    always_run: true\n")),
    }


def framework_repo(root: Path, name: str, config: str) -> Path:
    repo = make_repo(root, name, worktrees=0, claims=False)
    (repo / ".pre-commit-config.yaml").write_text(config)
    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-q", "-m", "pre-commit config")
    pre_commit = str(BIN / "pre-commit")
    run([pre_commit, "install", "-t", "pre-commit"], repo)
    run([pre_commit, "install-hooks"], repo)
    return repo


# ---------------------------------------------------------------- report

def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


class Report:
    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.rows: list[dict[str, object]] = []

    def row(self, name: str, value: str, target: str, met: bool | None, **data: object) -> None:
        self.rows.append({"name": name, "value": value, "target": target, "met": met, **data})
        mark = {True: "met", False: "NOT MET", None: "measured"}[met]
        print(f"{name:72} {value:42} {target:50} {mark}", flush=True)

    def ratio(self, name: str, a: Side, b: Side, limit: float | None, against: str,
              stretch: float | None = None) -> float:
        """A row for the time ratio a/b of one pair, judged against `limit` (and `stretch`) when given."""
        ratio = a.seconds / b.seconds
        target = "(measured)" if limit is None else f"<= {limit}x {against}"
        met = None if limit is None else ratio <= limit
        if stretch is not None:
            target += f" (stretch {stretch}x: {'met' if ratio <= stretch else 'not met'})"
        self.row(name, f"{ms(a.seconds)} vs {ms(b.seconds)} = {ratio:.2f}x", target, met,
                 a_seconds=a.seconds, b_seconds=b.seconds, ratio=ratio, a_rss_kib=a.rss_kib, b_rss_kib=b.rss_kib,
                 runs=a.runs)
        return ratio

    def memory(self, name: str, a: Side, b: Side, limit: float | None) -> None:
        ratio = a.rss_kib / b.rss_kib
        self.row(name, f"{mib(a.rss_kib)} vs {mib(b.rss_kib)} = {ratio:.2f}x",
                 "(measured)" if limit is None else f"<= {limit}x the floor's", None if limit is None else ratio <= limit,
                 a_rss_kib=a.rss_kib, b_rss_kib=b.rss_kib, ratio=ratio)

    def seconds(self, name: str, a: Side, floor: Side, limit: float | None) -> None:
        """A row for an absolute time (the floor of the same pair shown beside it)."""
        self.row(name, f"{ms(a.seconds)} ({a.seconds / floor.seconds:.1f}x the floor's {ms(floor.seconds)}), "
                 f"{mib(a.rss_kib)}", "(measured)" if limit is None else f"< {limit:g} s",
                 None if limit is None else a.seconds < limit,
                 a_seconds=a.seconds, floor_seconds=floor.seconds, a_rss_kib=a.rss_kib, runs=a.runs)


# ---------------------------------------------------------------- scenarios

def typical_checks(report: Report, root: Path) -> Path:
    repo = make_repo(root, "typical")
    run([GATE, "install-hooks"], repo)  # so `gate doctor` finds its commit hook
    runs = report.runs
    gate, floor = pair(runs, Cmd([GATE, "check"], repo, StageFresh(repo)), Cmd(FLOOR, repo))
    report.ratio("gate check, typical repo, new staged state", gate, floor, 2.0, "python -c pass", stretch=1.5)
    report.memory("  peak RSS, same pair (the full path)", gate, floor, 1.5)
    gate, floor = pair(runs, Cmd([GATE, "check"], repo), Cmd(FLOOR, repo))
    report.ratio("gate check, typical repo, nothing changed", gate, floor, 2.0, "python -c pass", stretch=1.5)
    hook = Cmd([str(repo / ".git" / "hooks" / "pre-commit")], repo, StageFresh(repo))
    gate, floor = pair(runs, hook, Cmd(FLOOR, repo))
    report.ratio("native hook script run directly, new staged state", gate, floor, None, "")
    report.memory("  peak RSS of the gate as the hook runs it (direct child)", gate, floor, 1.5)
    return repo


def commands(report: Report, repo: Path) -> None:
    for name, argv, limit in (("gate brief", [GATE, "brief"], 2.5),
                              ("gate claim (renew)", [GATE, "claim", "--note", "bench"], 2.5),
                              ("gate locks", [GATE, "locks"], 3.0),
                              ("gate doctor", [GATE, "doctor"], 3.0)):
        gate, floor = pair(report.runs, Cmd(argv, repo), Cmd(FLOOR, repo))
        report.ratio(f"{name}, typical repo", gate, floor, limit, "python -c pass")


def structure_vs_jsonschema(report: Report, root: Path, repo: Path) -> None:
    model, schema = root / "model.json", root / "handoff.schema.json"
    run([sys.executable, "-c", (
        "import json; from gates.domain import handoff; from gates.infra import schemas; "
        f"lines=open({str(repo / 'HANDOFF.md')!r}).read().splitlines(); "
        "m,_=handoff.parse(lines,'HANDOFF.md').to_json('Meta'); "
        f"open({str(model)!r},'w').write(json.dumps(m)); "
        f"open({str(schema)!r},'w').write(json.dumps(schemas.load('handoff')))")], root)
    gate, cj = pair(report.runs, Cmd([GATE, "check", "--only", "handoff-structure"], repo, edit_target(repo)),
                    Cmd([str(BIN / "check-jsonschema"), "--schemafile", str(schema), str(model)], repo))
    report.ratio("gate check --only handoff-structure after a change, vs check-jsonschema", gate, cj, 0.25,
                 "check-jsonschema")


def commits(report: Report, root: Path) -> None:
    hooked, plain = make_repo(root, "commit-hook"), make_repo(root, "commit-plain")
    run([GATE, "install-hooks"], hooked)
    commit = ["git", "commit", "-q", "-a", "-m", "bench"]
    with_hook, without = pair(report.runs, Cmd(commit, hooked, EditForCommit(hooked)),
                              Cmd(commit, plain, EditForCommit(plain)))
    report.ratio("git commit -a, native hook vs no hook", with_hook, without, 3.5, "the no-hook commit")
    with_hook, without = pair(report.runs, Cmd(commit, hooked, EditForCommit(hooked, stamp=True)),
                              Cmd(commit, plain, EditForCommit(plain, stamp=True)))
    report.ratio("  the same, stamping HANDOFF.md (gate stamp in before)", with_hook, without, None, "")


def framework(report: Report, root: Path) -> None:
    """The pre-commit framework, through real `git commit -a` runs with `pre-commit install`."""
    configs = framework_configs(root)
    repos = {name: framework_repo(root, f"fw-{name}", text) for name, text in configs.items()}
    plain = make_repo(root, "fw-none", worktrees=0, claims=False)
    commit = ["git", "commit", "-q", "-a", "-m", "bench"]
    side = {name: Cmd(commit, repo, EditForCommit(repo)) for name, repo in {**repos, "none": plain}.items()}
    runs = max(5, report.runs // 2)
    gate, standard = pair(runs, side["gate"], side["standard"])
    report.ratio("pre-commit: gate hook vs check-yaml + end-of-file-fixer", gate, standard, None, "")
    trivial, none = pair(runs, side["trivial"], side["none"])
    report.ratio("pre-commit running a trivial hook vs no framework", trivial, none, None, "")
    report.row("  the framework's own overhead per commit", ms(trivial.seconds - none.seconds), "(measured)", None,
               overhead_seconds=trivial.seconds - none.seconds)


def with_handoff(repo: Path, source: str) -> Path:
    """`repo` with its HANDOFF.md replaced: `gate init`'s template (its seven HTML comments, the placeholder filled
    in as a new user fills it) or this checkout's own HANDOFF.md and records; stamped, committed, passing."""
    (repo / "HANDOFF.md").unlink()
    if source == "template":
        run([GATE, "init"], repo)
        text = (repo / "HANDOFF.md").read_text()
        (repo / "HANDOFF.md").write_text("\n".join("Ship the benchmark." if "gate:placeholder" in line else line
                                                   for line in text.splitlines()) + "\n")
    else:  # with its records: its decisions are a table generated from them
        (repo / "HANDOFF.md").write_text((CHECKOUT / "HANDOFF.md").read_text())
        shutil.rmtree(repo / "decisions")
        shutil.copytree(CHECKOUT / "decisions", repo / "decisions")
    run([GATE, "stamp"], repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"hand-over: {source}")
    run([GATE, "check"], repo)
    return repo


def hand_overs(report: Report, root: Path) -> None:
    """The hand-overs people have: `gate init`'s template, this repository's own, and one at its caps."""
    for source, label in (("template", "gate init's template"), ("own", "this repository's HANDOFF.md")):
        repo = with_handoff(make_repo(root, f"handoff-{source}", worktrees=0, claims=False), source)
        gate, floor = pair(report.runs, Cmd([GATE, "check"], repo, StageFresh(repo)), Cmd(FLOOR, repo))
        report.ratio(f"gate check, {label}, new staged state", gate, floor, 2.0, "python -c pass", stretch=1.5)
    typical = make_repo(root, "caps-typical", worktrees=0, claims=False, config=CAPS_CONFIG)
    caps = make_repo(root, "caps", lines=CAPS_LINES, worktrees=0, claims=False, config=CAPS_CONFIG)
    gate, usual = pair(report.runs, Cmd([GATE, "check"], caps, StageFresh(caps)),
                       Cmd([GATE, "check"], typical, StageFresh(typical)))
    report.ratio(f"gate check, HANDOFF.md at its caps ({CAPS_LINES} lines, default max_lines), vs 200 lines",
                 gate, usual, 1.3, "the 200-line check")


def many_records(report: Report, root: Path) -> None:
    few = make_repo(root, "rec10", worktrees=0, records=10)
    many = make_repo(root, "rec10000", worktrees=0, records=10_000)
    gate, floor = pair(heavy(report), Cmd([GATE, "check"], many, StageFresh(many)), Cmd(FLOOR, many), warmup=1)
    report.seconds("10,000 records, new staged state", gate, floor, 0.5)
    big, small = pair(report.runs, Cmd([GATE, "check"], many), Cmd([GATE, "check"], few))
    report.ratio("10,000 vs 10 records, nothing changed", big, small, 1.1, "of 10 records")


def history(report: Report, root: Path) -> None:
    repo = make_repo(root, "history", worktrees=0)
    base = add_history(repo, 999)
    EditForCommit(repo, stamp=True)()
    git(repo, "commit", "-q", "-a", "-m", "stamp")
    count = int(git(repo, "rev-list", "--count", f"{base}..HEAD"))
    gate, floor = pair(heavy(report), Cmd([GATE, "check", "--range", f"{base}..HEAD"], repo), Cmd(FLOOR, repo), warmup=1)
    report.seconds(f"gate check --range over {count:,} commits", gate, floor, 1.0)


def worktrees(report: Report, root: Path) -> None:
    count = 100
    one, hundred = make_repo(root, "wt1", worktrees=1), make_repo(root, f"wt{count}", worktrees=count)
    big, small = pair(report.runs, Cmd([GATE, "check"], hundred, StageFresh(hundred)),
                      Cmd([GATE, "check"], one, StageFresh(one)))
    report.ratio(f"{count} worktrees vs 1, new staged state", big, small, 1.1, "of 1 worktree")


# ---------------------------------------------------------------- instructions

def instructions(argv: list[str], cwd: Path, before: Callable[[], None] | None = None,
                 env: dict[str, str] | None = None) -> int:
    """The instructions one run of `argv` executes in its own process (valgrind's callgrind counts them exactly;
    the git processes it starts are not included): what does not drift with the machine."""
    if before:
        before()
    subprocess.run(argv, cwd=cwd, env={**ENV, **(env or {})}, capture_output=True, timeout=600)  # a warm-up
    if before:
        before()
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={os.devnull}", *argv], cwd=cwd,
                          env={**ENV, **(env or {})}, capture_output=True, text=True, timeout=600)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if found is None:
        raise BenchError(f"valgrind counted nothing for `{' '.join(argv)}` (exit {proc.returncode}): "
                         f"{proc.stderr.strip()[-500:]}")
    return int(found.group(1))


def counts(root: Path) -> None:
    """`--count`: the instructions of each command on the commit path and around it, against `python -c pass`."""
    if shutil.which("valgrind") is None:
        raise BenchError("--count needs valgrind (its callgrind tool) on PATH")
    typical = make_repo(root, "typical")
    run([GATE, "install-hooks"], typical)
    template = with_handoff(make_repo(root, "handoff-template", worktrees=0, claims=False), "template")
    own = with_handoff(make_repo(root, "handoff-own", worktrees=0, claims=False), "own")
    caps = make_repo(root, "caps", lines=CAPS_LINES, worktrees=0, claims=False, config=CAPS_CONFIG)
    floor = instructions(FLOOR, typical)
    print(f"python -c pass: {floor / 1e6:.1f} M instructions\n")
    print("| command | instructions | x `python -c pass` |\n| --- | --- | --- |")
    for name, argv, repo, before in (
            ("`gate check`, typical repository, a new staged state", [GATE, "check"], typical, StageFresh(typical)),
            ("`gate check`, `gate init`'s template", [GATE, "check"], template, StageFresh(template)),
            ("`gate check`, this repository's HANDOFF.md and records", [GATE, "check"], own, StageFresh(own)),
            (f"`gate check`, a hand-over at its caps ({CAPS_LINES} lines)", [GATE, "check"], caps, StageFresh(caps)),
            ("`gate brief`", [GATE, "brief"], typical, None),
            ("`gate claim` (renew)", [GATE, "claim", "--note", "bench"], typical, None),
            ("`gate locks`", [GATE, "locks"], typical, None),
            ("`gate doctor`", [GATE, "doctor"], typical, None)):
        count = instructions(argv, repo, before)
        print(f"| {name} | {count / 1e6:.1f} M | {count / floor:.2f}x |", flush=True)
    ordinary = instructions([GATE, "check"], typical, StageFresh(typical), {"GATE_ORDINARY_EXIT": "1"})
    kept = instructions([GATE, "check"], typical, StageFresh(typical))
    print(f"\nthe collector off and os._exit (GATE_ORDINARY_EXIT=1 turns both off): {(ordinary - kept) / 1e6:.1f} M")
    bare = instructions([sys.executable, "-I", "-S", "-c", "pass"], typical)
    print("what importing each module the check path does without costs (python -I -S -c 'import X', less pass):")
    for module in ("subprocess", "json", "hashlib", "typing", "re", "argparse", "pathlib", "dataclasses"):
        count = instructions([sys.executable, "-I", "-S", "-c", f"import {module}"], typical) - bare
        print(f"  {module}: {count / 1e6:.1f} M", flush=True)


def heavy(report: Report) -> int:
    """Runs for the rows whose one run costs up to a second."""
    return max(3, report.runs // 3)


# ---------------------------------------------------------------- main

def machine() -> dict[str, object]:
    return {"python": platform.python_version(), "machine": platform.machine(), "cores": os.cpu_count(),
            "git": git(Path.cwd(), "version"), "platform": platform.platform()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21, help="runs of each side of a pair (default 21)")
    parser.add_argument("--quick", action="store_true", help="7 runs a side and only the target size of each scaling row")
    parser.add_argument("--json", metavar="FILE", help="also write the machine, the command and the rows as JSON")
    parser.add_argument("--count", action="store_true",
                        help="instead, count each command's instructions with valgrind (callgrind), a Markdown table")
    args = parser.parse_args()
    if args.count:
        root = Path(tempfile.mkdtemp(prefix="gate-count-"))
        try:
            counts(root)
        except BenchError as error:
            print(f"\nbench: FAILED: {error}", file=sys.stderr)
            return 2
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return 0
    runs = 7 if args.quick else args.runs
    report = Report(runs)
    info = machine()
    command = os.environ.get("BENCH_COMMAND") or " ".join([sys.argv[0], *sys.argv[1:]])
    print(f"command: {command}\nmachine: python {info['python']} on {info['machine']}, {info['cores']} cores, "
          f"{info['git']} ({info['platform']})\neach row: one pair, run alternately, {runs} runs a side "
          f"(heavy rows {heavy(report)}) after warm-up; time = median, memory = largest ru_maxrss of the measured "
          "process", flush=True)
    root = Path(tempfile.mkdtemp(prefix="gate-bench-"))
    ENV["PRE_COMMIT_HOME"] = str(root / "pre-commit-home")
    global LAUNCHER
    LAUNCHER = Launcher(root)
    print(f"launcher: bench/spawn.py starts every measured command; its own {mib(LAUNCHER.floor_kib)} is the least "
          "any ru_maxrss can show\n", flush=True)
    try:
        repo = typical_checks(report, root)
        commands(report, repo)
        structure_vs_jsonschema(report, root, repo)
        commits(report, root)
        framework(report, root)
        hand_overs(report, root)
        many_records(report, root)
        history(report, root)
        worktrees(report, root)
    except BenchError as error:
        print(f"\nbench: FAILED: {error}", file=sys.stderr)
        return 2
    finally:
        LAUNCHER.close()
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "machine": info, "runs": runs,
                                               "launcher_floor_kib": LAUNCHER.floor_kib,
                                               "rows": report.rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
