"""Every `gate check --format` renderer (gates/infra/report.py's RENDERERS), compared whole to a golden file.

A CI tool reads these outputs, so each is pinned byte for byte: for a real repository whose check finds an
error and warnings, and for one whose check passes, in every format, from the installed `gate` command run as
a process and from `gate` called in this process. Only what legitimately varies between runs is normalised
first (see `normalise`: temp paths, commit ids, UTC times, the package version); everything else must match.

The goldens live in tests/data/golden/, one per state and format: `check-<state>-<format>.<ext>`.

After an intended change of an output, rewrite the goldens and review the diff before committing it:

    GATE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/infra/test_report.py

Without GATE_UPDATE_GOLDEN a difference fails with a unified diff of the golden against the output.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Callable
from xml.etree import ElementTree

import pytest
from conftest import GATE_BIN, ROOT, call_gate, git, handoff_text

from gates import __version__
from gates.domain.handoff import PLACEHOLDER
from gates.infra import schemas, validation
from gates.infra.report import RENDERERS

GOLDEN = ROOT / "tests" / "data" / "golden"
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-2.1.0.schema.json"
UPDATE = os.environ.get("GATE_UPDATE_GOLDEN") == "1"
EXTENSIONS = {"text": "txt", "github": "txt", "json": "json", "sarif": "sarif", "junit": "xml"}
TEMP_FILE = ".tmp-HANDOFF.md-0123456789ab"  # the exact name a killed atomic writer leaves (fsio.is_temp_name)

_STAMP = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b")
_VERSION = re.compile(r'("(?:tool_)?version": )"' + re.escape(__version__) + '"')


def normalise(output: str, repo: Path) -> str:
    """The output with what differs from run to run replaced by a marker, and nothing else touched."""
    for root in sorted({str(repo.parent), os.path.realpath(repo.parent)}, key=len, reverse=True):
        output = output.replace(root, "<TMP>")  # the temp dir the repository was made in
    for sha in git(repo, "rev-list", "--all").split():
        output = output.replace(sha, "<COMMIT>").replace(sha[:12], "<COMMIT>")  # this repository's own commits
    output = _STAMP.sub("<TIME>", output)  # UTC times such as the Meta block's `updated`
    return _VERSION.sub(r'\1"<VERSION>"', output)  # the package version, in JSON and SARIF only


def failing_state(repo: Path) -> None:
    """One error and two warnings from real gates: a checked item (handoff-no-checked-items, with characters
    each format must escape), the `gate init` placeholder (handoff-structure's warning) and a temp file a
    killed writer left in the work tree (the environment's warning)."""
    text = handoff_text(git(repo, "rev-parse", "HEAD"), threads='- [x] <b> & "q" 100%, ok: yes\n- [ ] next item')
    (repo / "HANDOFF.md").write_text(text.replace("## Decisions\n", f"## Decisions\n- pick one {PLACEHOLDER}\n"))
    (repo / TEMP_FILE).write_text("half a write\n")


def passing_state(repo: Path) -> None:
    """The `repo` fixture as it is: a committed hand-over naming HEAD, nothing to find."""


STATES: dict[str, tuple[Callable[[Path], None], int]] = {"findings": (failing_state, 1), "passed": (passing_state, 0)}


def gate_process(repo: Path, *args: str) -> tuple[int, str, str]:
    """The installed `gate` as a process, its output read as bytes (no newline translation)."""
    assert GATE_BIN, "the gate console script is not installed"
    proc = subprocess.run([GATE_BIN, *args], cwd=repo, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def compare_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual.encode("utf-8"))
    assert path.is_file(), f"no golden {path.relative_to(ROOT)}: create it with GATE_UPDATE_GOLDEN=1"
    expected = path.read_bytes().decode("utf-8")
    if actual != expected:
        diff = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                    fromfile=f"golden/{name}", tofile="output")
        pytest.fail(f"output differs from golden/{name} (GATE_UPDATE_GOLDEN=1 rewrites it):\n" + "".join(diff),
                    pytrace=False)


def check_parses(fmt: str, output: str) -> None:
    """Beyond the golden: the machine formats parse, and JSON and SARIF follow their schemas."""
    if fmt == "json":
        assert validation.validate(schemas.load("check-result"), json.loads(output), {}) == []
    elif fmt == "sarif":
        from jsonschema import Draft4Validator

        schema = json.loads(SARIF_SCHEMA.read_text())
        assert sorted(str(e) for e in Draft4Validator(schema).iter_errors(json.loads(output))) == []
    elif fmt == "junit":
        assert ElementTree.fromstring(output.encode("utf-8")).tag == "testsuite"


def test_every_renderer_has_a_golden_case() -> None:
    assert sorted(RENDERERS) == sorted(EXTENSIONS)


@pytest.mark.parametrize("state", sorted(STATES))
@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_check_output_matches_its_golden(repo: Path, state: str, fmt: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    prepare, exit_code = STATES[state]
    prepare(repo)
    name = f"check-{state}-{fmt}.{EXTENSIONS[fmt]}"
    code, out, err = gate_process(repo, "check", "--format", fmt)
    assert (code, err) == (exit_code, ""), out
    check_parses(fmt, out)
    compare_golden(name, normalise(out, repo))
    in_code, in_out, in_err = call_gate(repo, "check", "--format", fmt, capsys=capsys, monkeypatch=monkeypatch)
    assert (in_code, in_err) == (exit_code, ""), in_out
    compare_golden(name, normalise(in_out, repo))


def test_the_normaliser_replaces_only_what_varies(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    raw = (f'"tool_version": "{__version__}", "version": "2.1.0", {repo}/HANDOFF.md, {head}, {head[:12]}, '
           f"2024-05-06T07:08:09Z, {TEMP_FILE}, line 12, {__version__}")
    assert normalise(raw, repo) == ('"tool_version": "<VERSION>", "version": "2.1.0", <TMP>/repo/HANDOFF.md, '
                                    f"<COMMIT>, <COMMIT>, <TIME>, {TEMP_FILE}, line 12, {__version__}")


def test_junit_counts_the_cases_it_writes() -> None:
    """`tests` is the number of test cases in the suite: none when no gate ran (it said 1), one for a run that
    could not start."""
    from gates.infra.errors import GateError
    from gates.infra.findings import CheckResult
    from gates.infra.report import junit

    for result, error, cases in ((CheckResult([], ["HANDOFF.md"]), None, 0),
                                 (CheckResult(["heartbeat", "mailbox"], ["HANDOFF.md"]), None, 2),
                                 (None, GateError("bad", reason="config-invalid"), 1)):
        suite = ElementTree.fromstring(junit(result, error))
        assert (suite.get("tests"), len(suite.findall("testcase"))) == (str(cases), cases)


def test_the_check_command_offers_every_renderer_and_only_those() -> None:
    """`gate check --format` names the formats without loading this module (every commit's text format does
    without it): its list and the renderers are one set, in one order."""
    from gates.commands.check import FORMATS

    assert FORMATS == tuple(RENDERERS)
