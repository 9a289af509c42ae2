"""The package's code and its tests are type-checked (mypy strict, `[tool.mypy] files`) and linted, inside the suite."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "gates", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
