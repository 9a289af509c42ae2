"""The name `gates` is the installed package: `_handoff_gate_pin.pth` (a plain install's) and gates/__main__.py.

The attack (ADV-19): a repository commits `gates/__init__.py`; a user runs `python -m gates check` without `-I`
in it, and Python, which puts the current folder first on the path, imports the repository's package before any
installed code runs. A plain install's .pth puts a finder first that answers `gates` with the installed package;
`python -m gates` then takes the current folder off the path before it imports anything else, so no other module
(`__future__.py`, `json.py` committed there) comes from the repository either (docs/security.md).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, commit_all, handoff_text, init_repo, run_gate
from helpers import source_copy

from gates.domain import hooks

PTH = "_handoff_gate_pin.pth"
LINE = b"import _handoff_gate_pin\n"


def _canaries(folder: Path, canary: Path, *modules: str) -> None:
    """Each of `modules` (a path without .py) in `folder`, appending its name to `canary` when it runs."""
    for module in modules:
        (folder / module).parent.mkdir(parents=True, exist_ok=True)
        (folder / f"{module}.py").write_text(f"open({str(canary)!r}, 'a').write({module!r} + '\\n')\n")


def _good_repo_with_a_hostile_package(path: Path, canary: Path) -> Path:
    repo = init_repo(path)
    (repo / "x").write_text("x")
    (repo / "HANDOFF.md").write_text(handoff_text(commit_all(repo)))
    commit_all(repo, "hand-over")
    _canaries(repo, canary, "gates/__init__", "gates/__main__", "__future__", "json", "signal")
    commit_all(repo, "vendored")
    return repo


def test_the_pth_is_the_one_line_the_hooks_count_as_harmless() -> None:
    assert (ROOT / PTH).read_bytes() == LINE == hooks.HARMLESS_PTH[PTH]
    assert f'PTH = "{PTH}"' in (ROOT / "setup.py").read_text()
    assert f"include {PTH}" in (ROOT / "MANIFEST.in").read_text().splitlines()  # an sdist carries it too
    assert 'py-modules = ["_handoff_gate_pin"]' in (ROOT / "pyproject.toml").read_text()


def _site(tmp_path: Path, *, pin: bool = True, installed: bool = True) -> Path:
    """A site-packages folder as a plain install leaves it: the pin, and a `gates` package that says it ran."""
    site = tmp_path / "site-packages"
    site.mkdir()
    shutil.copy2(ROOT / "_handoff_gate_pin.py", site / "_handoff_gate_pin.py")
    if pin:
        shutil.copy2(ROOT / PTH, site / PTH)
    if installed:
        _canaries(site, tmp_path / "INSTALLED", "gates/__init__", "gates/sub")
    return site


def _import_in(folder: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`import gates, gates.sub, other` from `folder`, first on the path as Python puts a program's folder,
    after `site` has processed the site folder's .pth files (as at every start)."""
    program = (f"import sys, site; site.addsitedir({str(site)!r}); sys.path.insert(0, ''); import other, gates, gates.sub; "
               "print(gates.__file__, gates.sub.__file__, other.__file__, sep='\\n')")
    return subprocess.run([sys.executable, "-I", "-S", "-c", program], cwd=folder, capture_output=True, text=True,
                          timeout=60)


def test_the_pin_answers_gates_alone_with_the_package_beside_it(tmp_path: Path) -> None:
    hostile, canary = tmp_path / "hostile", tmp_path / "CANARY"
    _canaries(hostile, canary, "gates/__init__", "gates/sub", "other")
    proc = _import_in(hostile, _site(tmp_path))
    assert proc.returncode == 0, proc.stderr
    site = tmp_path / "site-packages"
    assert proc.stdout.splitlines() == [str(site / "gates" / "__init__.py"), str(site / "gates" / "sub.py"),
                                        str(hostile / "other.py")]  # submodules through its __path__; other names untouched
    assert canary.read_text() == "other\n"  # the folder's package never ran; its other module did, as without the pin
    assert (tmp_path / "INSTALLED").read_text() == "gates/__init__\ngates/sub\n"


@pytest.mark.parametrize("left", ["no-pin", "uninstalled"])
def test_without_the_pin_or_the_package_python_imports_as_it_would(tmp_path: Path, left: str) -> None:
    """No .pth: the folder's package is imported (what the pin prevents: the test above can fail). The package gone
    and the pin left behind: the pin answers nothing and changes nothing."""
    hostile, canary = tmp_path / "hostile", tmp_path / "CANARY"
    _canaries(hostile, canary, "gates/__init__", "gates/sub", "other")
    proc = _import_in(hostile, _site(tmp_path, pin=left != "no-pin", installed=left != "uninstalled"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(hostile / name) for name in ("gates/__init__.py", "gates/sub.py", "other.py")]
    assert canary.read_text() == "other\ngates/__init__\ngates/sub\n"


def test_python_dash_m_gates_imports_nothing_more_from_the_current_folder(repo: Path, tmp_path: Path) -> None:
    """The sibling past the package itself: `python -m gates` (the installed one found) in a repository that commits
    `__future__.py` and `json.py` imports neither; gates/__main__.py takes the folder off the path first."""
    canary = tmp_path / "CANARY"
    _canaries(repo, canary, "__future__", "json", "signal")
    commit_all(repo, "shadows")
    for command in ("check", "brief", "doctor"):
        proc = subprocess.run([sys.executable, "-m", "gates", command], cwd=repo, capture_output=True, text=True,
                              timeout=60)
        assert not canary.exists(), (command, canary.read_text(), proc.stderr[-600:])
        assert "Traceback" not in proc.stderr and proc.returncode == run_gate(repo, command, process=True).returncode, proc.stderr


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def _venv(tmp_path: Path, name: str) -> Path:
    venv = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    return venv


def _pip(venv: Path, *args: str) -> None:
    proc = subprocess.run([str(venv / "bin" / "pip"), *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _hook_flags(venv: Path, repo: Path) -> list[str]:
    """The interpreter's flags in the native pre-commit hook `gate install-hooks` writes now."""
    proc = subprocess.run([str(venv / "bin" / "gate"), "install-hooks"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return shlex.split((repo / ".git" / "hooks" / "pre-commit").read_text().splitlines()[-1])[2:4]


@pytest.mark.slow
def test_a_plain_install_pins_gates_against_the_repositorys_package(tmp_path: Path) -> None:
    source = source_copy(tmp_path / "src")
    venv = _venv(tmp_path, "venv")
    _pip(venv, "install", "-q", str(source))
    site, python = _site_packages(venv), str(venv / "bin" / "python")
    assert (site / PTH).read_bytes() == LINE and (site / "_handoff_gate_pin.py").is_file()
    canary = tmp_path / "CANARY"
    repo = _good_repo_with_a_hostile_package(tmp_path / "repo", canary)
    # The attack: `python -m gates check` without -I runs the real gate and nothing of the repository's.
    proc = subprocess.run([python, "-m", "gates", "check"], cwd=repo, capture_output=True, text=True, timeout=60)
    gate = subprocess.run([str(venv / "bin" / "gate"), "check"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert not canary.exists(), proc.stderr
    assert (proc.returncode, proc.stdout) == (gate.returncode, gate.stdout) == (0, gate.stdout), proc.stderr
    assert gate.stdout.startswith("gate check: passed")
    # Any other program of the environment, run from a folder that holds a `gates/` folder, gets the installed one.
    (repo / "prog.py").write_text("import gates; print(gates.__file__)\n")
    for argv in ([python, "-c", "import gates; print(gates.__file__)"], [python, "prog.py"]):
        shown = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=60)
        assert shown.stdout.strip() == str(site / "gates" / "__init__.py"), shown.stderr
    assert not canary.exists()
    # The hooks still start without site (-S): the pin counts as harmless, by name and exact content.
    assert _hook_flags(venv, repo) == ["-I", "-S"]
    (site / PTH).write_bytes(LINE + b"import os\n")  # another content under the same name: site must run
    assert _hook_flags(venv, repo) == ["-I", "-c"]
    # Without the .pth, the same command imports the repository's package (the test can fail).
    (site / PTH).unlink()
    subprocess.run([python, "-m", "gates", "check"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert canary.read_text().splitlines()[:2] == ["gates/__init__", "gates/__main__"]
    (site / PTH).write_bytes(LINE)
    # pip uninstall removes both files (they are in the wheel's RECORD).
    _pip(venv, "uninstall", "-y", "-q", "handoff-gate")
    assert not (site / PTH).exists() and not (site / "_handoff_gate_pin.py").exists() and not (site / "gates").exists()


@pytest.mark.slow
def test_an_editable_install_gets_no_pin(tmp_path: Path) -> None:
    source = source_copy(tmp_path / "src")
    venv = _venv(tmp_path, "venv")
    _pip(venv, "install", "-q", "--no-deps", "-e", str(source))
    site = _site_packages(venv)
    assert [p.name for p in site.rglob(PTH)] == [] and [p.name for p in source.rglob(PTH)] == [PTH]
    shown = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "import gates; print(gates.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == str(source / "gates" / "__init__.py"), shown.stderr
