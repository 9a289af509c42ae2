"""handoff-gate benchmarks: whole-process medians, ratios and peak memory, measured side by side.

Run through `bench/run` (which makes a fresh virtual environment with a plain install of this
checkout and check-jsonschema). Every pair is measured alternately in the same run, so machine
drift cancels; each row is the median of N runs. Fixtures are built in a temp dir.
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

BIN = Path(sys.executable).parent
GATE = str(BIN / "gate")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


def measure(argv: list[str], cwd: Path, before: Callable[[], None] | None = None) -> tuple[float, int]:
    """Wall time (s) and peak RSS (KiB) of one run of `argv`."""
    if before:
        before()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = 0
    return elapsed, usage.ru_maxrss


def pair(runs: int, a: tuple[list[str], Path, Callable[[], None] | None],
         b: tuple[list[str], Path, Callable[[], None] | None]) -> tuple[tuple[float, int], tuple[float, int]]:
    """Medians of `a` and `b`, measured alternately."""
    times_a, times_b, mem_a, mem_b = [], [], [], []
    for _ in range(2):  # warm caches (the gate's own included) before timing
        measure(*a)
        measure(*b)
    for _ in range(runs):
        t, m = measure(*a)
        times_a.append(t)
        mem_a.append(m)
        t, m = measure(*b)
        times_b.append(t)
        mem_b.append(m)
    return (statistics.median(times_a), max(mem_a)), (statistics.median(times_b), max(mem_b))


def handoff_text(head: str, threads: int) -> str:
    items = "\n".join(f"- [ ] thread {i}: look into part {i} of the parser — next: write the test for case {i}"
                      for i in range(threads))
    return (f"# Handoff\n\n## Meta\n- ref: {head}\n- updated: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n\n"
            f"## Current Target\nShip the benchmark.\n\n## Open Threads\n{items}\n\n## Decisions\n## Dead Ends\n"
            "## Verified\n## Assumed\n## Key References\n")


def make_repo(root: Path, name: str, *, lines: int = 200, worktrees: int = 10, records: int = 5,
              loose_refs: int = 0, config: str = "") -> Path:
    repo = root / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", "--template=")
    (repo / "code.py").write_text("print(1)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    head = git(repo, "rev-parse", "HEAD")
    (repo / "HANDOFF.md").write_text(handoff_text(head, max(1, lines - 20)))
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    (repo / ".gate.yaml").write_text(config or "handoff:\n  max_lines: 1000\n")
    decisions = repo / "decisions"
    decisions.mkdir()
    for i in range(records):
        (decisions / f"D-20261130T000000Z-{i:012x}-r.md").write_text(
            f"---\nid: D-20261130T000000Z-{i:012x}\ntitle: record {i}\nstatus: {'open' if i % 3 else 'closed'}\n"
            f"date: 2026-11-30\n---\n\n# record {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "handoff")
    for i in range(worktrees):
        git(repo, "worktree", "add", "-q", "-b", f"wt{i}", str(root / f"{name}-wt{i}"))
    for i in range(loose_refs):
        ref = repo / ".git" / "refs" / "heads" / "many" / f"r{i}"
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(head + "\n")
    subprocess.run([GATE, "claim", "--note", "bench"], cwd=repo, env=ENV, capture_output=True)
    for i in range(min(worktrees, 3)):
        subprocess.run([GATE, "claim"], cwd=root / f"{name}-wt{i}", env=ENV, capture_output=True)
    subprocess.run([GATE, "check"], cwd=repo, env=ENV, capture_output=True)  # fills the caches once
    return repo


class Bench:
    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.rows: list[dict[str, object]] = []
        self.floor = [sys.executable, "-c", "pass"]

    def row(self, name: str, value: str, target: str, met: bool | None, memory: int | None = None) -> None:
        self.rows.append({"name": name, "value": value, "target": target, "met": met, "memory_kib": memory})
        mark = {True: "met", False: "NOT MET", None: "-"}[met]
        print(f"{name:62} {value:34} {target:26} {mark}", flush=True)

    def against_floor(self, name: str, repo: Path, argv: list[str], limit: float | None,
                      before: Callable[[], None] | None = None) -> tuple[float, int, float, int]:
        (gate_t, gate_m), (floor_t, floor_m) = pair(self.runs, (argv, repo, before), (self.floor, repo, None))
        ratio = gate_t / floor_t
        target = f"<= {limit}x python -c pass" if limit else "(measured)"
        self.row(name, f"{gate_t * 1000:.1f} ms vs {floor_t * 1000:.1f} ms = {ratio:.2f}x", target,
                 ratio <= limit if limit else None, gate_m)
        return gate_t, gate_m, floor_t, floor_m


_EDITS = itertools.count(1)


def touch_handoff(repo: Path) -> Callable[[], None]:
    """A `before` step that really changes HANDOFF.md (one global counter: no two edits write the same text)."""
    def change() -> None:
        path = repo / "HANDOFF.md"
        old = path.read_text()
        new = re.sub(r"Ship the benchmark( \(\d+\))?\.", f"Ship the benchmark ({next(_EDITS)}).", old, count=1)
        if new == old:
            raise SystemExit(f"bench: could not change {path}: the 'after a change' rows would measure nothing")
        path.write_text(new)
    return change


def rewrite_index(repo: Path) -> Callable[[], None]:
    """What `git commit` does before its hook: the index written anew (new stat data), staging the same entries."""
    def rewrite() -> None:
        os.utime(repo / "code.py")
        git(repo, "update-index", "-q", "--really-refresh")
    return rewrite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--quick", action="store_true", help="fewer runs and the smaller scaling steps only")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    runs = 7 if args.quick else args.runs
    bench = Bench(runs)
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
          f"{git(Path.cwd(), 'version')}; median of {runs} runs, alternating\n")
    root = Path(tempfile.mkdtemp(prefix="gate-bench-"))
    try:
        typical(bench, root)
        scaling(bench, root, args.quick)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(bench.rows, indent=2) + "\n")
    return 0


def typical(bench: Bench, root: Path) -> None:
    repo = make_repo(root, "typical")
    _, gate_m, _, floor_m = bench.against_floor("gate check, typical repo, nothing changed", repo, [GATE, "check"], 1.5)
    bench.row("  peak memory, same run", f"{gate_m / 1024:.1f} MiB vs {floor_m / 1024:.1f} MiB = "
              f"{gate_m / floor_m:.2f}x", "<= 2x the floor's", gate_m <= 2 * floor_m)
    hook = [sys.executable, "-I", "-c", "import sys; from gates.cli import main; sys.exit(main())", "check"]
    bench.against_floor("  the same, as `gate install-hooks` runs it (python -I -c)", repo, hook, 1.5)
    bench.against_floor("  the same, index rewritten with the same entries (a commit hook)", repo, [GATE, "check"], None,
                        rewrite_index(repo))
    bench.against_floor("gate check, typical repo, right after HANDOFF.md changed", repo, [GATE, "check"], None,
                        touch_handoff(repo))
    model = root / "model.json"
    schema = root / "handoff.schema.json"
    subprocess.run([sys.executable, "-c", (
        "import json,sys; from gates import handoff, schemas; "
        f"lines=open({str(repo / 'HANDOFF.md')!r}).read().splitlines(); "
        "m,_=handoff.parse(lines,'HANDOFF.md').to_json('Meta'); "
        f"open({str(model)!r},'w').write(json.dumps(m)); "
        f"open({str(schema)!r},'w').write(json.dumps(schemas.load('handoff')))")], check=True, env=ENV)
    cj = str(BIN / "check-jsonschema")
    (gate_t, _), (cj_t, _) = pair(bench.runs, ([GATE, "check", "--only", "handoff-structure"], repo, touch_handoff(repo)),
                                  ([cj, "--schemafile", str(schema), str(model)], repo, None))
    bench.row("gate check --only handoff-structure after a change, vs check-jsonschema",
              f"{gate_t * 1000:.1f} ms vs {cj_t * 1000:.1f} ms = {gate_t / cj_t:.2f}x", "<= 0.5x check-jsonschema",
              gate_t / cj_t <= 0.5)
    bench.against_floor("gate brief, typical repo", repo, [GATE, "brief"], None)
    bench.against_floor("gate claim (renew), typical repo", repo, [GATE, "claim", "--note", "bench"], None)


def single(bench: Bench, repo: Path, argv: list[str], before: Callable[[], None] | None = None) -> tuple[float, int]:
    times, memory = [], 0
    for _ in range(max(3, bench.runs // 3)):
        t, m = measure(argv, repo, before)
        times.append(t)
        memory = max(memory, m)
    return statistics.median(times), memory


def scaling(bench: Bench, root: Path, quick: bool) -> None:
    big = "handoff:\n  max_lines: 1000000\n  max_bytes: 268435456\n  max_item_chars: 1000\n"
    for lines in (2_000, 20_000) if quick else (2_000, 20_000, 200_000):
        repo = make_repo(root, f"lines{lines}", lines=lines, worktrees=0, config=big)
        t, m = single(bench, repo, [GATE, "check"], touch_handoff(repo))
        limit = 2.0 if lines == 200_000 else None
        bench.row(f"HANDOFF.md of {lines:,} lines, after a change", f"{t * 1000:.0f} ms, {m / 1024:.0f} MiB",
                  "< 2 s" if limit else "(measured)", t < limit if limit else None)
    capped = make_repo(root, "capped", lines=200_000, worktrees=0)
    t, _ = single(bench, capped, [GATE, "check"], touch_handoff(capped))
    bench.row("HANDOFF.md of 200,000 lines refused by the default size cap", f"{t * 1000:.1f} ms", "(fast)", None)
    base = None
    for count in (1, 10) if quick else (1, 10, 100):
        repo = make_repo(root, f"wt{count}", worktrees=count)
        (t, _), (floor_t, _) = pair(bench.runs, ([GATE, "check"], repo, touch_handoff(repo)), (bench.floor, repo, None))
        base = base or t
        bench.row(f"{count} worktree(s) with claims, after a change", f"{t * 1000:.1f} ms ({t / base:.2f}x of 1)",
                  "<= 1.2x of 1 worktree", t / base <= 1.2)
        if count == 100:
            bench.against_floor("100 worktrees with claims, nothing changed", repo, [GATE, "check"], None)
    for count in (10, 1_000) if quick else (10, 1_000, 10_000):
        repo = make_repo(root, f"rec{count}", worktrees=0, records=count)
        t, _ = single(bench, repo, [GATE, "check"])
        bench.row(f"{count:,} records, nothing changed", f"{t * 1000:.0f} ms", "< 2 s", t < 2.0)
        t, _ = single(bench, repo, [GATE, "check"], _touch_record(repo))
        bench.row(f"{count:,} records, one record changed", f"{t * 1000:.0f} ms", "< 2 s", t < 2.0)
    repo = make_repo(root, "refs", worktrees=0, loose_refs=1_000 if quick else 10_000)
    t, _ = single(bench, repo, [GATE, "check"], touch_handoff(repo))
    bench.row(f"a .git with {1_000 if quick else 10_000:,} loose refs, after a change", f"{t * 1000:.1f} ms",
              "(measured)", None)


def _touch_record(repo: Path) -> Callable[[], None]:
    counter = [0]

    def change() -> None:
        counter[0] += 1
        path = next((repo / "decisions").glob("*.md"))
        path.write_text(path.read_text().rstrip("\n") + f"\nedit {counter[0]}\n")
    return change


if __name__ == "__main__":
    raise SystemExit(main())
