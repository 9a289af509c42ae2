"""The docs and the code name the same things: hook ids, gate modules, config keys, flag reasons, commands, links.

Each check compares two lists that live in different files, so that a gate, key or page added or renamed in one
place and not the other fails here. The parsers are small and strict on purpose: a README gate table or a
docs/gates.md section that no longer has the expected shape fails too, instead of being skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

from gates.checks import CATALOG, Gate
from gates.cli import COMMANDS
from gates.domain.flags import EVENT_REASONS
from gates.infra import surfaces

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]


def _prose(text: str) -> Iterator[str]:
    """The lines of a Markdown text outside fenced code blocks."""
    fence: str | None = None
    for line in text.splitlines():
        marker = re.match(r"\s*(```+|~~~+)", line)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
                continue
            if line.strip().startswith(fence):
                fence = None
                continue
        if fence is None:
            yield line


def _section(text: str, heading: str) -> str:
    """The body of the level-2 section `heading` (up to the next level-2 heading)."""
    lines = list(_prose(text))
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def _expected_hook_ids() -> set[str]:
    """The `gate` hook and one per gate of the catalog (.pre-commit-hooks.yaml is rendered from it)."""
    return {"gate", *CATALOG}


def readme_gate_rows(text: str) -> list[str]:
    """The first column of the gate table under '## Gates and hook ids': `id` or [`id`](link)."""
    rows = []
    for line in _section(text, "## Gates and hook ids").splitlines():
        cell = re.match(r"\|\s*\[?`([a-z][a-z-]*)`(?:\]\([^)]*\))?\s*\|", line)
        if cell:
            rows.append(cell.group(1))
    return rows


def gates_doc_sections(text: str) -> list[str]:
    """The level-2 headings of docs/gates.md that are one gate id in backticks."""
    return [m.group(1) for line in _prose(text) if (m := re.fullmatch(r"## `([a-z][a-z-]*)`", line))]


def config_keys(schema: dict[str, object], prefix: str = "") -> Iterator[str]:
    """Every key of the config schema, dotted (`handoff.path`), objects and leaves alike."""
    properties = schema.get("properties", {})
    assert isinstance(properties, dict)
    for name, sub in properties.items():
        key = f"{prefix}{name}"
        yield key
        yield from config_keys(sub, f"{key}.")


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file, test) for every `file.py::test_name` a page names; `::test_name` is of the file named last before it.

    A name that ends in an ellipsis (`test_a_fault_at_each_step…`) stands for the tests it begins."""
    found, current = [], ""
    for file, name in re.findall(r"`((?:[a-z_]+/)*test_[a-z0-9_]+\.py)?(?:::(test_[a-z0-9_]+…?))?`", text):
        current = file or current
        if name:
            found.append((current, name))
    return found


def missing_tests(named: list[tuple[str, str]], tests: Path) -> list[str]:
    missing = []
    for file, name in named:
        path = tests / file
        defined = re.findall(r"^def (test_\w+)", path.read_text(), re.M) if path.is_file() else []
        if not any(test == name or (name.endswith("…") and test.startswith(name[:-1])) for test in defined):
            missing.append(f"{file}::{name}")
    return missing


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text.replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(path.read_text()):
        heading = re.match(r"#{1,6} (.+)", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(pages: list[Path], root: Path = ROOT) -> list[str]:
    problems = []
    for page in pages:
        lines = page.read_text().splitlines()
        prose = set(_prose(page.read_text()))
        for number, line in enumerate(lines, start=1):
            if line not in prose:
                continue
            for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z][a-z+.-]*:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = (page.parent / file_part).resolve() if file_part else page
                where = f"{page.relative_to(root)}:{number}: {target}"
                if not dest.exists():
                    problems.append(f"{where}: no such file")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    problems.append(f"{where}: no heading with that anchor")
    return problems


# --- the checks ----------------------------------------------------------------------------------------------------

def stale(name: str, root: Path = ROOT) -> str | None:
    """What is wrong with the committed surface `name` under `root`, or None when it is the catalog's rendering."""
    if surfaces.committed(name, root) == surfaces.generated(name):
        return None
    return (f"{surfaces.path(name)}: its `{name}` part is not what gates/infra/catalog.py makes (edited by hand, or "
            f"the catalog changed): run `{surfaces.WRITE}`")


@pytest.mark.parametrize("name", surfaces.NAMES)
def test_generated_equals_committed(name: str) -> None:
    """Each surface that names every gate (the hooks, the schema's `gates` keys, `gate init`'s `gates:`, the
    configuration page's defaults and rows) is the rendering of the catalog, in its order."""
    problem = stale(name)
    assert problem is None, problem


def test_every_gate_id_has_its_module() -> None:
    for gate_id in CATALOG:
        assert (ROOT / "gates" / "checks" / f"{gate_id.replace('-', '_')}.py").is_file(), gate_id


def test_the_readme_gate_table_has_one_row_per_hook() -> None:
    rows = readme_gate_rows(README.read_text())
    assert len(rows) == len(set(rows)), f"README.md: a gate table row repeats: {rows}"
    assert set(rows) == _expected_hook_ids(), f"README.md: the gate table's rows {rows} are not the hooks"


def test_docs_gates_has_one_section_per_hook() -> None:
    sections = gates_doc_sections((DOCS / "gates.md").read_text())
    assert len(sections) == len(set(sections)), f"docs/gates.md: a gate section repeats: {sections}"
    assert set(sections) == _expected_hook_ids(), f"docs/gates.md: the gate sections {sections} are not the hooks"


def test_every_config_key_is_documented() -> None:
    schema = json.loads((ROOT / "schemas" / "config.schema.json").read_text())
    page = (DOCS / "configuration.md").read_text()
    missing = [key for key in config_keys(schema) if f"`{key}`" not in page]
    assert not missing, f"docs/configuration.md does not name these config keys: {missing}"


def test_every_flag_reason_is_documented() -> None:
    page = (DOCS / "flags-and-journal.md").read_text()
    missing = sorted(reason for reason in EVENT_REASONS if f"| `{reason}` |" not in page)
    assert not missing, f"docs/flags-and-journal.md has no row for these flag reasons: {missing}"


def test_every_command_is_documented() -> None:
    page = (DOCS / "commands.md").read_text()
    missing = sorted(name for name in COMMANDS if f"| `gate {name}" not in page)
    assert not missing, f"docs/commands.md has no row for these commands: {missing}"


def test_every_relative_link_resolves() -> None:
    assert not broken_links(PAGES)


def test_every_test_the_security_page_names_exists() -> None:
    """docs/security.md names the tests that hold each promise (paths under tests/): a moved or renamed test is noticed."""
    named = named_tests((DOCS / "security.md").read_text())
    assert len(named) > 20, named
    assert not missing_tests(named, ROOT / "tests")


def test_the_readme_stays_a_readme() -> None:
    """Issue 16: a README a user reads to the end; the reference lives in docs/."""
    assert len(README.read_bytes()) <= 12 * 1024


# --- the checks can fail -------------------------------------------------------------------------------------------

def test_a_removed_table_row_or_section_is_noticed() -> None:
    readme = README.read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| [`mailbox`]"))
    assert "mailbox" not in readme_gate_rows(readme.replace(row + "\n", ""))
    gates_doc = (DOCS / "gates.md").read_text()
    assert "heartbeat" not in gates_doc_sections(gates_doc.replace("## `heartbeat`", "## heartbeat"))


SURFACE_FILES = sorted({surfaces.path(name) for name in surfaces.NAMES})


def _copy_surfaces(root: Path) -> Path:
    for name in SURFACE_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text((ROOT / name).read_text())
    return root


@pytest.mark.parametrize(("name", "old", "new"), [
    ("hooks", "--only handoff-no-checked-items --fix\n", "--only handoff-no-checked-items\n"),
    ("hooks", "  stages: [pre-push, manual]\n", "  stages: [pre-commit, pre-merge-commit, manual]\n"),
    ("schema", '"mailbox": {"type": "boolean"},\n', ""),
    ("init-gates", '    "#   mailbox: true\\n"\n', ""),
    ("default-gates", "  heartbeat: false\n", "  heartbeat: true\n"),
    ("gate-rows", "| `gates.heartbeat` | `false` |", "| `gates.heartbeat` | `true` |"),
])
def test_a_surface_edited_by_hand_is_noticed_and_rewritten(tmp_path: Path, name: str, old: str, new: str) -> None:
    root = _copy_surfaces(tmp_path)
    file = root / surfaces.path(name)
    before = file.read_text()
    assert before.count(old) == 1
    file.write_text(before.replace(old, new))
    assert stale(name, root) == (f"{surfaces.path(name)}: its `{name}` part is not what gates/infra/catalog.py makes "
                                 f"(edited by hand, or the catalog changed): run `python -I -m gates.infra.surfaces --write`")
    assert [other for other in surfaces.NAMES if stale(other, root)] == [name]
    assert surfaces.write(root) == [surfaces.path(name)]
    assert file.read_text() == before and surfaces.write(root) == []


def test_a_catalog_change_is_noticed_by_every_surface(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gate added to the catalog (off by default, with a note) is missing from every committed surface; the
    rewrite adds it to each, in order, and touches nothing outside the surfaces."""
    root = _copy_surfaces(tmp_path)
    before = {name: (root / name).read_text() for name in SURFACE_FILES}
    owner = Gate("handoff-owner", "the Meta block names an owner", None, on=False, note="gate init's hand-over names none")
    monkeypatch.setitem(CATALOG, "handoff-owner", owner)  # the catalog gates.infra.surfaces renders
    assert [name for name in surfaces.NAMES if stale(name, root)] == surfaces.NAMES
    assert surfaces.write(root) == [".pre-commit-hooks.yaml", "gates/commands/init.py", "docs/configuration.md",
                                    "schemas/config.schema.json"]
    assert [name for name in surfaces.NAMES if stale(name, root)] == []
    after = {name: (root / name).read_text() for name in SURFACE_FILES}
    assert "  handoff-owner: false        # gate init's hand-over names none\n" in after["docs/configuration.md"]
    assert "| `gates.handoff-owner` | `false` (gate init's hand-over names none) |" in after["docs/configuration.md"]
    assert '"#   handoff-owner: false        # gate init\'s hand-over names none\\n"' in \
        after["gates/commands/init.py"]
    assert '"heartbeat": {"type": "boolean"},\n        "handoff-owner": {"type": "boolean"}\n' in \
        after["schemas/config.schema.json"]
    hook = ("- id: handoff-owner\n  name: handoff-owner\n  description: The Meta block names an owner.\n"
            "  entry: gate check --only handoff-owner\n  language: python\n  pass_filenames: false\n  always_run: true\n"
            "  stages: [pre-commit, pre-merge-commit, manual]\n  minimum_pre_commit_version: 3.2.0\n")
    assert after[".pre-commit-hooks.yaml"].endswith(hook + "# END generated: hooks\n")
    after[".pre-commit-hooks.yaml"] = after[".pre-commit-hooks.yaml"].replace(hook, "")
    for name in SURFACE_FILES:  # nothing else changed but lines naming the new gate (and the comma before the schema's)
        kept = "".join(line for line in after[name].splitlines(True) if "handoff-owner" not in line)
        assert kept.replace('"heartbeat": {"type": "boolean"},', '"heartbeat": {"type": "boolean"}') == before[name]


def test_a_surface_without_its_markers_is_refused(tmp_path: Path) -> None:
    root = _copy_surfaces(tmp_path)
    page = root / "docs" / "configuration.md"
    page.write_text(page.read_text().replace("<!-- END generated: gate-rows -->\n", ""))
    with pytest.raises(ValueError, match=r"^docs/configuration.md: not one pair of the markers of gate-rows: BEGIN "):
        surfaces.committed("gate-rows", root)
    with pytest.raises(ValueError, match="gate-rows"):
        surfaces.write(root)


def test_a_test_named_where_it_is_not_is_noticed() -> None:
    text = ("`domain/test_locks.py::test_nothing_planted…`, `::test_no_such_test`, `test_cli.py` (all), "
            "`::test_interrupt_is_exit_130…`")
    named = named_tests(text)
    assert named == [("domain/test_locks.py", "test_nothing_planted…"), ("domain/test_locks.py", "test_no_such_test"),
                     ("test_cli.py", "test_interrupt_is_exit_130…")]
    assert missing_tests(named, ROOT / "tests") == ["domain/test_locks.py::test_no_such_test"]
    assert missing_tests([("test_locks.py", "test_nothing_planted…")], ROOT / "tests") == ["test_locks.py::test_nothing_planted…"]


@pytest.mark.parametrize("target", ["gates.md#no-such-heading", "no-such-page.md", "../NO_SUCH_FILE"])
def test_a_broken_link_is_noticed(tmp_path: Path, target: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "gates.md").write_text("# Gates\n\n## `gate`\n\nSee [this](#gate).\n")
    page = docs / "page.md"
    page.write_text(f"# Page\n\nSee [there]({target}), and [fine](gates.md#gate).\n\n```\n[code](nowhere.md)\n```\n")
    problems = broken_links([page], tmp_path)
    assert problems == [f"docs/page.md:3: {target}: " + ("no heading with that anchor" if "#" in target else "no such file")]


def framework_snippets(pages: list[Path] = PAGES) -> list[tuple[str, str]]:
    """(page, snippet) for every fenced `.pre-commit-config.yaml` example a page shows."""
    found = []
    for page in pages:
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S):
            if block.startswith("# .pre-commit-config.yaml"):
                found.append((page.name, block))
    return found


def test_the_framework_snippets_show_a_passing_hooks_warnings() -> None:
    """Issue 27: the framework prints a passing hook's output only with `verbose: true`, so a warning (the placeholder
    target, a stale `updated`) would go unseen; every snippet the docs show sets it on the hook."""
    snippets = framework_snippets()
    assert len(snippets) >= 2, snippets
    missing = [page for page, block in snippets if not re.search(r"^ +verbose: true\b", block, re.M)]
    assert not missing, f"these pages show a .pre-commit-config.yaml without `verbose: true`: {missing}"


def test_the_framework_snippets_say_how_rev_is_filled_in() -> None:
    """Issue 27: `rev: v0.3.0` named a tag the hook repository may not have; each snippet says what `rev:` may be and
    that `pre-commit autoupdate` fills it in (with the newest tag, or HEAD's sha when there is none)."""
    lines = [next(line for line in block.splitlines() if line.strip().startswith("rev:"))
             for _, block in framework_snippets()]
    assert lines and all(line.endswith("   # a tag or commit sha; `pre-commit autoupdate` fills it in") for line in lines), lines
