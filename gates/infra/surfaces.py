"""The surfaces that name every gate, rendered from the catalog (gates/infra/catalog.py): a development tool.

Each surface is the part of a committed file between its BEGIN and END marker comments; the config schema, JSON and
so without comments, has its whole `gates` object rendered (and compared as data). tests/test_docs_agree.py fails
while a committed surface is not its rendering; `python -I -m gates.infra.surfaces --write` rewrites them from the
repository this module sits in. Never imported by `gate check`.
"""

import json
import sys
from collections.abc import Callable
from pathlib import Path

from gates.infra import fsio
from gates.infra.catalog import CATALOG

ROOT = Path(__file__).resolve().parents[2]
WRITE = "python -I -m gates.infra.surfaces --write"
SCHEMA = "schemas/config.schema.json"
_COMMIT, _PUSH = "[pre-commit, pre-merge-commit, manual]", "[pre-push, manual]"


def _hook(hook_id: str, name: str, description: str, entry: str, stages: str) -> list[str]:
    if ": " in description or " #" in description:
        description = json.dumps(description)  # a JSON string is a YAML double-quoted scalar
    return [f"- id: {hook_id}", f"  name: {name}", f"  description: {description}", f"  entry: {entry}",
            "  language: python", "  pass_filenames: false", "  always_run: true", f"  stages: {stages}",
            "  minimum_pre_commit_version: 3.2.0"]


def hooks() -> list[str]:
    """.pre-commit-hooks.yaml: the `gate` hook, then one hook per gate that runs exactly `gate check --only ID`."""
    lines = _hook("gate", "handoff-gate (every enabled gate)", "Runs every gate enabled in .gate.yaml in one process.",
                  "gate check", _COMMIT)
    for gate in CATALOG.values():
        lines += _hook(gate.id, gate.id, gate.hook or f"{gate.summary[0].upper()}{gate.summary[1:]}.",
                       f"gate check --only {gate.id}" + " --fix" * gate.fix, _PUSH if gate.push else _COMMIT)
    return lines


def _gates_yaml(indent: str) -> list[str]:
    lines = [f"{indent}{gate.id}: {str(gate.on).lower()}" for gate in CATALOG.values()]
    return [f"{line:<{len(indent) + 27}} # {gate.note}" if gate.note else line
            for line, gate in zip(lines, CATALOG.values(), strict=True)]


def init_gates() -> list[str]:
    """gates/commands/init.py: the commented `gates:` lines of the `.gate.yaml` that `gate init` writes."""
    return [f"    {json.dumps(line + chr(10))}" for line in _gates_yaml("#   ")]


def default_gates() -> list[str]:
    """docs/configuration.md: the `gates:` lines of the defaults block."""
    return _gates_yaml("  ")


def gate_rows() -> list[str]:
    """docs/configuration.md: the table of each `gates.<id>` and its default."""
    return ["", "| key | default |", "| --- | --- |", *(
        f"| `gates.{gate.id}` | `{str(gate.on).lower()}`{f' ({gate.note})' if gate.note else ''} |"
        for gate in CATALOG.values()), ""]


def schema_gates() -> dict[str, object]:
    """schemas/config.schema.json: the `gates` property, one boolean per gate."""
    return {"description": "Which gates `gate check` runs; `--only` runs a named gate even when it is off here.",
            "type": "object", "additionalProperties": False,
            "properties": {gate_id: {"type": "boolean"} for gate_id in CATALOG}}


SURFACES: dict[str, tuple[str, Callable[[], list[str]]]] = {  # name: (file, renderer)
    "hooks": (".pre-commit-hooks.yaml", hooks),
    "init-gates": ("gates/commands/init.py", init_gates),
    "default-gates": ("docs/configuration.md", default_gates),
    "gate-rows": ("docs/configuration.md", gate_rows),
}
NAMES = [*SURFACES, "schema"]


def path(name: str) -> str:
    """The file that holds the surface `name`, relative to the repository root."""
    return SCHEMA if name == "schema" else SURFACES[name][0]


def markers(name: str) -> tuple[str, str]:
    return f"BEGIN generated from gates/infra/catalog.py: {name} (`{WRITE}`)", f"END generated: {name}"


def _lines(root: Path, file: str, cap: int = 1 << 20) -> list[str]:
    data = fsio.read_regular(root / file, cap)
    if len(data) > cap:
        raise ValueError(f"{file}: larger than {cap} bytes")
    return data.decode("utf-8").split("\n")


def _region(lines: list[str], name: str) -> tuple[int, int]:
    """The indexes of the marker lines of `name` (a line is `# MARKER` or `<!-- MARKER -->`, indented or not)."""
    found = [[i for i, line in enumerate(lines) if line.strip() in (f"# {mark}", f"<!-- {mark} -->")]
             for mark in markers(name)]
    if [len(each) for each in found] != [1, 1] or found[0][0] > found[1][0]:
        raise ValueError(f"{path(name)}: not one pair of the markers of {name}: {' / '.join(markers(name))}")
    return found[0][0], found[1][0]


def _schema_span(lines: list[str]) -> tuple[int, int]:
    """The first and last line of the schema's `gates` property (a key of the top-level `properties`)."""
    start = next((i for i, line in enumerate(lines) if line == '    "gates": {'), None)
    end = next((i for i in range(start or 0, len(lines)) if lines[i].rstrip(",") == "    }"), None)
    if start is None or end is None:
        raise ValueError(f'{SCHEMA}: no `    "gates": {{` … `    }}` lines to rewrite')
    return start, end


def generated(name: str) -> object:
    return schema_gates() if name == "schema" else SURFACES[name][1]()


def committed(name: str, root: Path = ROOT) -> object:
    """The committed surface: its lines between the markers; the schema's `gates` object, as data."""
    lines = _lines(root, path(name))
    if name == "schema":
        return json.loads("\n".join(lines))["properties"]["gates"]
    start, end = _region(lines, name)
    return lines[start + 1:end]


def _rendered(name: str, lines: list[str]) -> list[str]:
    """`lines` with the surface `name` replaced by its rendering."""
    if name != "schema":
        start, end = _region(lines, name)
        return [*lines[:start + 1], *SURFACES[name][1](), *lines[end:]]
    start, end = _schema_span(lines)
    spec = schema_gates()  # in the schema's form: its keys one a line, and each gate's property on one line
    gates = spec.pop("properties")
    assert isinstance(gates, dict)
    body = ['    "gates": {', *(f"      {json.dumps(key)}: {json.dumps(value)}," for key, value in spec.items()),
            '      "properties": {', *(f"        {json.dumps(key)}: {json.dumps(value)}," for key, value in gates.items()),
            "      }", "    }" + lines[end][5:]]
    body[-3] = body[-3].rstrip(",")
    return [*lines[:start], *body, *lines[end + 1:]]


def write(root: Path = ROOT) -> list[str]:
    """Rewrite every surface that is not its rendering; returns the files written."""
    written: list[str] = []
    for name in NAMES:
        lines = _lines(root, path(name))
        new = _rendered(name, lines)
        if new != lines:
            fsio.write_atomic(root / path(name), "\n".join(new).encode("utf-8"))
            written.append(path(name))
    return list(dict.fromkeys(written))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(f"usage: {WRITE}")
    try:
        write()
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
