"""The entry point as a process: `launch()` ends the run without the interpreter's teardown, and only when
nothing is left for that teardown to do; every answer is still written out in full."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, git, run_gate


def _launch(prelude: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`prelude`, then `gate ARGV` as `_bin/gate` starts it, in a new interpreter, its stdout a pipe."""
    code = (f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n{prelude}\n"
            f"sys.argv = ['gate', *{list(argv)!r}]\nfrom gates.main import launch\nlaunch()\n")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60)


TEARDOWN = "class Witness:\n    def __del__(self):\n        print('torn down', flush=True)\nwitness = Witness()"


def test_a_run_ends_without_the_teardown_and_writes_everything(repo: Path) -> None:
    proc = _launch(TEARDOWN, "check", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "gate check: passed (9 gates on HANDOFF.md in the work tree)\n"  # all of it, though stdout is a pipe
    assert "torn down" not in proc.stdout + proc.stderr  # sys.exit() would finalize the module and say it


COLLECTOR = ("import gc, gates.cli\nreal_run = gates.cli.run\n"
             "def run(argv, invocation):\n    print('collector on:', gc.isenabled())\n    return real_run(argv, invocation)\n"
             "gates.cli.run = run")


def test_the_ordinary_exit_switch_runs_the_collector_and_the_teardown(repo: Path) -> None:
    """GATE_ORDINARY_EXIT=1 (for debugging) keeps the collector on and ends through the interpreter's own exit."""
    plain = _launch(f"{TEARDOWN}\n{COLLECTOR}", "check", cwd=repo)
    ordinary = _launch(f"import os\nos.environ['GATE_ORDINARY_EXIT'] = '1'\n{TEARDOWN}\n{COLLECTOR}", "check", cwd=repo)
    passed = "gate check: passed (9 gates on HANDOFF.md in the work tree)"
    assert plain.stdout.splitlines() == ["collector on: False", passed], plain.stderr
    assert ordinary.stdout.splitlines() == ["collector on: True", passed, "torn down"], ordinary.stderr


def test_the_exit_code_is_the_commands(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "\n<<<<<<< ours\n")
    proc = _launch("", "check", cwd=repo)
    assert proc.returncode == 1 and "conflict" in proc.stdout, proc.stdout + proc.stderr


def test_an_exit_handler_still_runs(repo: Path) -> None:
    proc = _launch("import atexit\natexit.register(print, 'handler ran')", "check", cwd=repo)
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (0, "handler ran")


def test_a_thread_still_running_is_waited_for(repo: Path) -> None:
    prelude = ("import threading, time\n"
               "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True))).start()")
    proc = _launch(prelude, "check", cwd=repo)
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (0, "thread done")


def test_a_closed_stdout_is_still_exit_3(repo: Path) -> None:
    """The guard turns the lost output into exit 3 before launch() ends the process."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv = ['gate', 'check']; from gates.main import launch; launch()"
    proc = subprocess.run(f"{sys.executable} -c \"{code}\" >&-", shell=True, cwd=repo, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3 and "stdout" in proc.stderr, proc.stderr


def test_the_installed_command_and_python_dash_m_end_the_same_way(repo: Path) -> None:
    first = run_gate(repo, "check", process=True)
    second = subprocess.run([sys.executable, "-I", "-m", "gates", "check"], cwd=repo, capture_output=True, text=True,
                            timeout=60)
    assert (first.returncode, first.stdout) == (second.returncode, second.stdout) == (0, first.stdout)
    assert git(repo, "status", "--porcelain") == ""


# ---- `python -m gates` never runs the repository's own gates/ (issue 25) -----------------------------------

def _vendored_copy(repo: Path, canary: Path) -> None:
    """A copy of this very package committed in the repository, one of its modules a canary."""
    shutil.copytree(ROOT / "gates", repo / "gates", ignore=shutil.ignore_patterns("__pycache__"))
    main = repo / "gates" / "main.py"
    main.write_text(f"open({str(canary)!r}, 'w').write('ran')\n" + main.read_text())


def test_python_dash_m_refuses_a_copy_of_the_package_in_the_current_folder(repo: Path, tmp_path: Path) -> None:
    canary = tmp_path / "CANARY"
    _vendored_copy(repo, canary)
    proc = subprocess.run([sys.executable, "-m", "gates", "check"], cwd=repo, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and "python -I -m gates" in proc.stderr
    assert not canary.exists()  # refused before anything else of the package was imported


def test_python_dash_i_dash_m_runs_the_installed_gate_not_the_repositorys(repo: Path, tmp_path: Path) -> None:
    """The attack: a gates/__init__.py committed in the repository; `python -I -m gates` (the documented form)
    never imports it, and answers as the installed `gate` does."""
    canary = tmp_path / "CANARY"
    (repo / "gates").mkdir()
    (repo / "gates" / "__init__.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n")
    (repo / "gates" / "__main__.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n")
    proc = subprocess.run([sys.executable, "-I", "-m", "gates", "check"], cwd=repo, capture_output=True, text=True,
                          timeout=60)
    assert not canary.exists(), proc.stderr
    installed = run_gate(repo, "check", process=True)
    assert (proc.returncode, proc.stdout) == (installed.returncode, installed.stdout)
    plain = subprocess.run([sys.executable, "-m", "gates", "check"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert canary.exists(), plain.stderr  # what -I prevents: without it Python imports the folder (the test can fail)


def test_no_command_the_gate_writes_or_documents_runs_python_dash_m_gates_without_dash_i(repo: Path) -> None:
    """Every `-m gates` in the docs, the README, the pre-commit manifest and what the installers write carries -I;
    the hooks and harness commands run `-I -c` (gates/domain/hooks.py)."""
    import re

    from gates.domain import agents, hooks

    texts = {str(path.relative_to(ROOT)): path.read_text() for path in
             [ROOT / "README.md", ROOT / ".pre-commit-hooks.yaml", *sorted((ROOT / "docs").glob("*.md")),
              *sorted((ROOT / "gates").rglob("*.py"))]}
    texts["hook"] = hooks.script("pre-commit") + hooks.script("pre-push", everywhere=True)
    texts["harness"] = agents.command_line("brief", "claude") + agents.command_line("closeout", "codex")
    texts["agents-md"] = agents.AGENTS_BLOCK
    command = re.compile(r"(python[\w.]*|executable\}?)\s+-m\s+gates\b")  # a command line, not `-I -m gates`
    bare = {name: found for name, text in texts.items()  # (a line that names the bare form beside -I explains it)
            if (found := [line for line in text.splitlines() if command.search(line) and "-I" not in line])}
    assert bare == {}
    assert " -I " in texts["hook"] and " -I " in texts["harness"]


def test_the_suites_in_process_runs_answer_as_the_installed_command_does(repo: Path, tmp_path: Path) -> None:
    """Most tests run the gate in their own process (conftest.run_gate: 30 ms less a run). The same story told to the
    installed command and in process, each in its own copy of one repository, gives the same exit codes and outputs
    at every step: failing gates, the flags they leave, the brief and the stop that read them, a stamp, a claim."""
    import conftest

    for n in range(4):
        (repo / "work.txt").write_text(f"{n}\n")
        git(repo, "add", "work.txt")
        git(repo, "commit", "-q", "--no-verify", "-m", f"work {n}")
    story = [["check"], ["check", "--format", "json"], ["flags"], ["brief"], ["closeout", "--format", "text"],
             ["closeout", "--format", "claude"], ["stamp"], ["check"], ["claim", "--session", "s1"], ["claims"],
             ["check", "--only", "nope"], ["nope"], ["locks"], ["doctor"]]
    copies = {way: Path(shutil.copytree(repo, tmp_path / way, symlinks=True)) for way in ("process", "in-process")}
    for argv in story:
        answers = {"process": run_gate(copies["process"], *argv, process=True),  # the in-process way itself, always:
                   "in-process": conftest._gate_in_process(copies["in-process"], argv)}  # GATE_TESTS_PROCESS or not
        process, inside = ((a.returncode, _plain(a.stdout, copies[way]), _plain(a.stderr, copies[way]))
                           for way, a in answers.items())
        assert inside == process, argv


def _plain(text: str, where: Path) -> str:
    """`text` with what differs between two runs of one story told twice: the folder, times, ages, random ids."""
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\d{8}T\d{6}Z|\bage \d+s\b", "TIME", text.replace(str(where), "REPO"))
    return re.sub(r"\b[0-9a-f]{64}\b|\b[0-9a-f]{8,12}\b(?![0-9a-f])", "ID", text)  # a stamp's sha256 holds its time


def test_a_run_in_process_that_hangs_fails_its_test_instead_of_stopping_the_suite(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process run has a timeout; an in-process run is interrupted at conftest.IN_PROCESS_BOUND, even while it waits
    in a blocking call (here a sleep far longer than the bound)."""
    import time

    import conftest

    import gates.cli

    monkeypatch.setattr(conftest, "IN_PROCESS_BOUND", 0.5)
    monkeypatch.setattr(gates.cli, "run", lambda argv, run: time.sleep(60))
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="ran in process for more than 0 s"):
        conftest._gate_in_process(repo, ["check"])  # the in-process way itself, whatever GATE_TESTS_PROCESS says
    assert time.monotonic() - started < 30
