"""Bad input: a one-line error naming the file (and line), the documented exit code and a flag.

Never a traceback, never a hang, never a silent pass, and the input is left as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import flag_records, git, handoff_text, run_gate


def _assert_refused(repo: Path, code: int, stderr_line: str, reason: str, timeout: float = 60) -> None:
    before = {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}
    proc = run_gate(repo, "check", timeout=timeout)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [stderr_line]
    assert [r["reason"] for r in flag_records(repo / ".git")] == [reason]
    assert {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()} == before


def test_missing_handoff(repo: Path) -> None:
    (repo / "HANDOFF.md").unlink()
    _assert_refused(repo, 3, "gate: HANDOFF.md: file not found — create it with `gate init`", "input-unreadable")


def test_binary_handoff(repo: Path) -> None:
    (repo / "HANDOFF.md").write_bytes(b"# Handoff\n\n## Meta\x00\x01\x02\n")
    _assert_refused(repo, 3, "gate: HANDOFF.md:3: binary content (a NUL byte): expected UTF-8 text", "input-unreadable")


def test_non_utf8_handoff(repo: Path) -> None:
    (repo / "HANDOFF.md").write_bytes("# Handoff\n\n## Meta\n- note: caf\xe9\n".encode("latin-1"))
    _assert_refused(repo, 3, "gate: HANDOFF.md:4: not valid UTF-8 (byte 0xe9): save the file as UTF-8", "input-unreadable")


def test_utf16_handoff(repo: Path) -> None:
    (repo / "HANDOFF.md").write_bytes("# Handoff\n".encode("utf-16"))
    _assert_refused(repo, 3, "gate: HANDOFF.md:1: UTF-16 text is not supported: save the file as UTF-8", "input-unreadable")


def test_huge_handoff_is_refused_by_the_cap_before_it_is_read(repo: Path) -> None:
    with open(repo / "HANDOFF.md", "wb") as handle:
        line = b"- [ ] filler line that keeps going and going\n"
        handle.write(line * (50 * 1024 * 1024 // len(line) + 1))
    size = (repo / "HANDOFF.md").stat().st_size
    proc = run_gate(repo, "check", timeout=30)
    assert proc.returncode == 1
    findings = proc.stdout.splitlines()[:-1]
    structure = (f"HANDOFF.md:1: [handoff-structure] file is {size:,} bytes, over handoff.max_bytes (65,536): "
                 "not parsed — move history to the archive")
    assert structure in findings
    skipped = sorted(line.split("]")[0] + "]" for line in findings if line != structure)
    assert skipped == ["HANDOFF.md:1: [handoff-fresh]", "HANDOFF.md:1: [handoff-no-checked-items]",
                       "HANDOFF.md:1: [handoff-tables]"]
    assert all(line.endswith("] not checked: the file is over its size cap (see handoff-structure)")
               for line in findings if line != structure)
    assert sorted(r["reason"] for r in flag_records(repo / ".git")) == [
        "handoff-fresh", "handoff-no-checked-items", "handoff-structure", "handoff-tables"]


def test_fifo_does_not_hang(repo: Path) -> None:
    (repo / "HANDOFF.md").unlink()
    os.mkfifo(repo / "HANDOFF.md")
    proc = run_gate(repo, "check", timeout=20)
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == ["gate: HANDOFF.md: not a regular file"]


def test_directory_instead_of_file(repo: Path) -> None:
    (repo / "HANDOFF.md").unlink()
    (repo / "HANDOFF.md").mkdir()
    proc = run_gate(repo, "check")
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == ["gate: HANDOFF.md: not a regular file"]


def _findings(repo: Path) -> list[dict[str, object]]:
    proc = run_gate(repo, "check", "--format", "json")
    findings: list[dict[str, object]] = json.loads(proc.stdout)["findings"]
    return findings


def test_crlf_and_bom_are_the_same_document(repo: Path) -> None:
    text = handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done\n- [ ] open")
    text = text.replace("## Verified\n", "## Verified\n```\n- [x] fenced\n```\n")
    (repo / "HANDOFF.md").write_text(text)
    plain = _findings(repo)
    assert [f["line"] for f in plain] == [11]
    (repo / "HANDOFF.md").write_bytes(text.replace("\n", "\r\n").encode())
    assert _findings(repo) == plain
    (repo / "HANDOFF.md").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert _findings(repo) == plain
    (repo / "HANDOFF.md").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert _findings(repo) == plain


@pytest.mark.parametrize(
    ("content", "stderr_line"),
    [
        # the end of the stream, past the last newline, is named as the file's last line (a new user was sent to
        # line 58 of a 57-line file)
        (b"handoff: [\n", "gate: .gate.yaml:1: invalid YAML: expected the node content, but found '<stream end>'"),
        (b"handoff:\n  path: \"X.md\n\n", "gate: .gate.yaml:3: invalid YAML: found unexpected end of stream"),
        (b"handoff:\n  pth: X.md\n", "gate: .gate.yaml:2: unknown key 'handoff.pth' (did you mean 'path'?)"),
        (b"handoff:\n  max_lines: many\n", "gate: .gate.yaml:2: handoff.max_lines: 'many' is not of type 'integer'"),
        (b"handoff:\n  path: a.md\n  path: b.md\n", "gate: .gate.yaml:3: duplicate key 'path'"),
        (b"handoff: !!python/object/apply:os.system ['touch pwned']\n",
         "gate: .gate.yaml:1: YAML tag !!python/object/apply:os.system is not allowed: plain data only"),
        (b"handoff:\n  title: !custom x\n", "gate: .gate.yaml:2: YAML tag !custom is not allowed: plain data only"),
        (b"a: &x [1, 2]\nb: *x\n", "gate: .gate.yaml:2: YAML aliases are not allowed"),
        (b"gates:\n  <<: {handoff-structure: false}\n",
         "gate: .gate.yaml:2: YAML merge keys (<<) are not allowed: plain data only"),
        (b"handoff:\n  path: ../outside.md\n",
         "gate: .gate.yaml:2: handoff.path: '../outside.md' is not a relative path inside the repository "
         "(no leading '/', no '..', no control, bidi or zero-width characters)"),
        (b"handoff:\n  max_lines: .nan\n", "gate: .gate.yaml:2: '.nan' is not allowed: numbers must be finite"),
        (b"- just\n- a list\n", "gate: .gate.yaml:1: (top level): ['just', 'a list'] is not of type 'object'"),
        (b"handoff:\n  title: caf\xe9\n", "gate: .gate.yaml:2: not valid UTF-8 (byte 0xe9): save the file as UTF-8"),
        (b"[" * 5000 + b"]" * 5000, "gate: .gate.yaml:1: nested deeper than 64 levels"),
        (b"handoff:\n  sections: [Meta]\n",
         "gate: .gate.yaml:2: handoff.target_section 'Current Target' is not one of handoff.sections"),
    ],
    ids=["broken", "unclosed-quote", "unknown-key", "wrong-type", "duplicate-key", "python-tag", "custom-tag", "alias",
         "merge-key", "path-escape", "nan", "not-a-mapping", "non-utf8", "deep-nesting", "section-names"],
)
def test_malformed_config(repo: Path, content: bytes, stderr_line: str) -> None:
    (repo / ".gate.yaml").write_bytes(content)
    _assert_refused(repo, 3, stderr_line, "config-invalid")
    assert not (repo / "pwned").exists()


def test_config_problems_are_all_named_on_one_line(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: x\n  bogus: 1\n")
    _assert_refused(
        repo, 3,
        "gate: .gate.yaml:2: handoff.max_lines: 'x' is not of type 'integer'; line 3: unknown key 'handoff.bogus' "
        "(allowed: brief_sections, max_bytes, max_item_chars, max_lines, meta_section, path, schema, sections, "
        "target_section, title)",
        "config-invalid",
    )


def test_yaml_11_booleans_stay_strings(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  title: on\n")
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD")).replace("# Handoff", "# on"))
    proc = run_gate(repo, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_empty_and_comment_only_config_means_defaults(repo: Path) -> None:
    for content in (b"", b"# nothing here\n", b"\xef\xbb\xbf\r\n"):
        (repo / ".gate.yaml").write_bytes(content)
        proc = run_gate(repo, "check")
        assert proc.returncode == 0, proc.stderr


def test_project_schema_that_is_not_a_schema(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  schema: strict.json\n")
    (repo / "strict.json").write_text('{"type": 12}')
    _assert_refused(repo, 3, "gate: strict.json: handoff.schema: not a valid JSON Schema: 12 is not valid under any "
                    "of the given schemas", "config-invalid")
    (repo / "strict.json").write_text('{"type": "object", "type": "array"}')
    proc = run_gate(repo, "check")
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == ["gate: strict.json: duplicate key 'type'"]
