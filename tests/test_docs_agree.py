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
from ruamel.yaml import YAML

from gates.checks import CATALOG
from gates.cli import COMMANDS
from gates.domain.flags import EVENT_REASONS

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


def _manifest_ids() -> dict[str, list[str]]:
    hooks = YAML(typ="safe").load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return {hook["id"]: list(hook.get("stages", [])) for hook in hooks}


def _expected_hook_ids() -> set[str]:
    """The catalog's gates, the `gate` hook, and any push-stage hook the manifest adds."""
    push = {hook for hook, stages in _manifest_ids().items() if "pre-push" in stages and hook not in CATALOG}
    return {"gate", *CATALOG, *push}


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

def test_hook_ids_are_the_catalog_and_the_gate_hook() -> None:
    hooks, expected = set(_manifest_ids()), _expected_hook_ids()
    assert hooks == expected, (f".pre-commit-hooks.yaml: hooks missing {sorted(expected - hooks)}, "
                               f"hooks of no gate {sorted(hooks - expected)}")


def test_the_schema_gates_keys_are_the_catalog() -> None:
    schema = json.loads((ROOT / "schemas" / "config.schema.json").read_text())
    keys = list(schema["properties"]["gates"]["properties"])
    assert keys == list(CATALOG), (f"schemas/config.schema.json: the `gates` properties {keys} are not the catalog's "
                                   f"ids, in its order {list(CATALOG)} (gates/infra/catalog.py)")


def _defaults() -> list[tuple[str, bool]]:
    return [(gate.id, gate.on) for gate in CATALOG.values()]


def init_config_gates(template: str) -> list[tuple[str, bool]]:
    """The `gates:` block of the commented `.gate.yaml` that `gate init` writes, uncommented and read."""
    lines = template.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("# gates:"))) + 1
    block = [line[1:] for line in lines[start:] if line.startswith("#   ")]
    return list(YAML(typ="safe").load("\n".join(block)).items())


def docs_default_gates(text: str) -> list[tuple[str, bool]]:
    """The `gates:` of the first YAML block under docs/configuration.md's '## The defaults'."""
    body = text.split("\n## The defaults\n", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", body, re.S)
    assert block, "docs/configuration.md: no ```yaml block under '## The defaults'"
    return list(YAML(typ="safe").load(block.group(1))["gates"].items())


def test_the_config_gate_init_writes_lists_every_gate_with_its_default() -> None:
    from gates.domain.scaffold import CONFIG_TEMPLATE

    assert init_config_gates(CONFIG_TEMPLATE) == _defaults(), \
        "gates/domain/scaffold.py: CONFIG_TEMPLATE's `gates:` are not the catalog's ids and `on` defaults, in its order"


def test_the_configuration_page_shows_every_gate_with_its_default() -> None:
    page = (DOCS / "configuration.md").read_text()
    assert docs_default_gates(page) == _defaults(), \
        "docs/configuration.md: the defaults block's `gates:` are not the catalog's ids and `on` defaults, in its order"
    rows = re.findall(r"^\| `gates\.([a-z-]+)` \| `(true|false)`", page, re.M)
    assert rows == [(gate_id, str(on).lower()) for gate_id, on in _defaults()], \
        "docs/configuration.md: the `gates.<id>` rows are not the catalog's ids and `on` defaults, in its order"


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


def test_a_gate_missing_from_a_gates_list_is_noticed() -> None:
    from gates.domain.scaffold import CONFIG_TEMPLATE

    assert ("mailbox", True) not in init_config_gates(CONFIG_TEMPLATE.replace("#   mailbox: true\n", ""))
    page = (DOCS / "configuration.md").read_text()
    assert ("heartbeat", True) in docs_default_gates(page.replace("  heartbeat: false\n", "  heartbeat: true\n"))


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
