"""The rules of the house (docs/architecture.md): what may import what, read from every module's imports.

Data flows one way: entry (gates/main.py) → gates/cli.py → gates/commands/ → gates/checks/ → gates/domain/ →
gates/infra/. Every import counts, those inside functions and under TYPE_CHECKING too; the cycle rule looks at
what runs when a module is imported (module level, not under TYPE_CHECKING).
"""

from __future__ import annotations

import ast
from pathlib import Path

from gates.checks import CATALOG
from gates.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gates"

GATE_MODULES = {f"gates.checks.{gate_id.replace('-', '_')}" for gate_id in CATALOG}
COMMAND_MODULES = {f"gates.commands.{entry.module}" for entry in COMMANDS.values()}
SHARED_COMMAND_HELPERS = {  # the modules of gates/commands that the commands share by design, and why
    "gates.commands": "the package: COMMANDS (the names), HIDDEN (argparse.SUPPRESS without argparse), Invocation (the "
                      "one invocation every command is given, its error boundary) and the gate-id list parser",
    "gates.commands._remote": "the remote half of claims, which `gate claim`/`release`/`claims` and `gate doctor` use",
    "gates.commands._hooks": "what `gate brief` and `gate closeout` share: the hook input read in the boundary, the "
                             "gates judged as a check judges them (off the check path)",
}
GATE_LOADER = ("gates.checks", "_Modules.__getitem__")  # where GATES imports a gate's module, by id, on first use


def room(module: str) -> str:
    """main, cli, commands, checks, domain, infra; or entry for the package root and `python -m gates`."""
    parts = module.split(".")
    if module in ("gates", "gates.__main__"):
        return "entry"
    return parts[1] if parts[1] in ("main", "cli", "commands", "checks", "domain", "infra") else "entry"


FORBIDDEN = {  # room -> the rooms it must not import from
    "commands": {"cli", "main"},
    "checks": {"commands", "cli", "main"},
    "domain": {"commands", "checks", "cli", "main"},
    "infra": {"domain", "commands", "checks", "cli", "main"},
}


def sources() -> dict[str, str]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path.read_text(encoding="utf-8")
    return found


def imports(module: str, source: str, known: set[str]) -> list[tuple[str, bool]]:
    """(module imported, at module level) for every import of a gates module in `source`."""
    package = module if source_is_package(module, known) else module.rpartition(".")[0]
    out: list[tuple[str, bool]] = []

    def resolve(name: str) -> str:
        while name not in known and "." in name:
            name = name.rpartition(".")[0]
        return name

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = False
            if isinstance(child, ast.Import):
                out.extend((resolve(a.name), top) for a in child.names if a.name.split(".")[0] == "gates")
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1] + ([base] if base else []))
                if base.split(".")[0] == "gates":
                    out.extend((resolve(f"{base}.{a.name}"), top) for a in child.names)
            visit(child, inner)

    visit(ast.parse(source), True)
    return [(name, top) for name, top in out if name != module]


def source_is_package(module: str, known: set[str]) -> bool:
    return any(other.startswith(module + ".") for other in known)


def violations(modules: dict[str, str], gates: set[str]) -> list[str]:
    """Every broken rule, one line each."""
    known = set(modules)
    found = []
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for module, source in modules.items():
        for target, top in imports(module, source, known):
            if top:
                edges[module].add(target)
            here, there = room(module), room(target)
            if there in FORBIDDEN.get(here, set()):
                found.append(f"{module} ({here}) imports {target} ({there})")
            if module in gates and target in gates:
                found.append(f"gate {module} imports another gate, {target}")
            if here == there == "checks" and module not in gates and target in gates:
                found.append(f"{module} imports the gate {target}: gates load through GATES, by id")
            if here == there == "commands" and target not in SHARED_COMMAND_HELPERS:
                found.append(f"command {module} imports another command, {target}")
    found.extend(f"{module} imports a module by name in {where}: only GATES loads a gate so" for module, where in
                 dynamic_imports(modules) if room(module) == "checks" and (module, where) != GATE_LOADER)
    found.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(edges))
    return found


def dynamic_imports(modules: dict[str, str]) -> list[tuple[str, str]]:
    """(module, the function) of every `__import__(...)` or `import_module(...)` call: an import by a computed name."""
    found = []

    def visit(node: ast.AST, scope: list[str], module: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope + [child.name] if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                else scope
            if isinstance(child, ast.Call):
                name = child.func.id if isinstance(child.func, ast.Name) else \
                    child.func.attr if isinstance(child.func, ast.Attribute) else ""
                if name in ("__import__", "import_module"):
                    found.append((module, ".".join(scope) or "<module>"))
            visit(child, inner, module)

    for module, source in modules.items():
        visit(ast.parse(source), [], module)
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected knot, found by depth-first search over module-level imports."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            walk(node)
    return found


def test_every_module_is_in_a_room() -> None:
    rooms = {module: room(module) for module in sources()}
    assert {m for m, r in rooms.items() if r == "entry"} == {"gates", "gates.__main__"}, rooms
    assert GATE_MODULES <= set(rooms), GATE_MODULES - set(rooms)
    assert COMMAND_MODULES <= set(rooms), COMMAND_MODULES - set(rooms)


def test_the_house_keeps_its_rules() -> None:
    assert violations(sources(), GATE_MODULES) == []


def test_the_shared_command_helpers_are_the_modules_no_command_is() -> None:
    """The allow-list of gates/commands names exactly its modules that COMMANDS does not (the shared helpers)."""
    modules = {module for module in sources() if room(module) == "commands"}
    assert set(SHARED_COMMAND_HELPERS) == modules - COMMAND_MODULES


def test_gates_load_only_through_the_catalog() -> None:
    """The runner reaches a gate as GATES[id]; GATES imports the module by its name, the one import by name in checks/."""
    loads = [found for found in dynamic_imports(sources()) if room(found[0]) == "checks"]
    assert loads == [GATE_LOADER], loads
    runner = sources()["gates.checks.runner"]
    assert "GATES[gate_id]" in runner and not [name for name, _ in imports("gates.checks.runner", runner, set(sources()))
                                               if name in GATE_MODULES]


def test_the_rules_can_fail() -> None:
    """A planted bad import of each kind is caught (in a copy of the sources; nothing is written)."""
    planted = {
        "gates.checks.heartbeat": "from gates.checks import handoff_fresh\n",
        "gates.commands.stamp": "def f():\n    from gates.commands import journal\n",
        "gates.domain.flags": "from gates.cli import COMMANDS\n",
        "gates.infra.text": "if True:\n    from gates.domain import handoff\n",
        "gates.infra.errors": "from gates.infra import git\n",  # git imports errors: a cycle
        "gates.commands._remote": "def g():\n    from gates.commands import claims\n",
        "gates.commands": "def i():\n    from gates.commands.check import run\n",
        "gates.checks.runner": "from gates.checks import heartbeat\n",
        "gates.checks.append_only": "def h():\n    __import__('gates.checks.mailbox')\n",
    }
    modules = sources()
    for module, line in planted.items():
        modules[module] = modules[module] + "\n" + line
    found = "\n".join(violations(modules, GATE_MODULES))
    assert "gate gates.checks.heartbeat imports another gate, gates.checks.handoff_fresh" in found
    assert "command gates.commands.stamp imports another command, gates.commands.journal" in found
    assert "gates.domain.flags (domain) imports gates.cli (cli)" in found
    assert "gates.infra.text (infra) imports gates.domain.handoff (domain)" in found
    assert "import cycle:" in found and "gates.infra.errors" in found, found
    assert "command gates.commands._remote imports another command, gates.commands.claims" in found
    assert "command gates.commands imports another command, gates.commands.check" in found
    assert "gates.checks.runner imports the gate gates.checks.heartbeat: gates load through GATES, by id" in found
    assert "gates.checks.append_only imports a module by name in h: only GATES loads a gate so" in found
    assert not [line for line in found.splitlines() if line.startswith("command gates.commands.claims ")], found


def test_every_gate_and_command_has_its_test_module_and_no_test_module_is_an_orphan() -> None:
    """tests/checks/ and tests/commands/ hold a test_<module>.py for every gate and every command module; tests/domain/
    and tests/infra/ hold them only for modules tested on their own, so each of theirs names an existing module
    (`test_<module>.py`, or `test_<module>_<aspect>.py` for a second one)."""
    tests = ROOT / "tests"
    missing = [f"tests/{folder}/test_{name.rpartition('.')[2]}.py" for folder, names in
               (("checks", GATE_MODULES), ("commands", COMMAND_MODULES))
               for name in sorted(names) if not (tests / folder / f"test_{name.rpartition('.')[2]}.py").is_file()]
    assert not missing, f"no test module: {missing}"
    orphans = []
    for folder in ("domain", "infra"):
        names = {path.stem for path in (PACKAGE / folder).glob("*.py")} - {"__init__"}
        for test in sorted((tests / folder).glob("test_*.py")):
            tested = test.stem.removeprefix("test_")
            if not any(tested == name or tested.startswith(f"{name}_") for name in names):
                orphans.append(f"tests/{folder}/{test.name}")
    assert not orphans, f"test modules of no gates/domain or gates/infra module: {orphans}"


GIT_DOOR = {"gates.infra.git", "gates.infra.gitnet"}  # the door and its network half, which a check never loads
# git; `ps`, where /proc is not there; and this interpreter again, bounding a committed schema's work
SUBPROCESS_DOORS = {*GIT_DOOR, "gates.domain.procscan", "gates.infra.validation"}


def test_one_door_to_git() -> None:
    """Only infra/git.py and its network half run git (subprocess and GitPython); procscan alone runs another
    program (`ps`), and infra/validation the gate's own interpreter (a project schema's bounded validation)."""
    for module, source in sources().items():
        for node in ast.walk(ast.parse(source)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            roots = {name.split(".")[0] for name in names}
            assert "git" not in roots or module in GIT_DOOR, module
            assert "subprocess" not in roots or module in SUBPROCESS_DOORS, module


def speaking(source: str) -> list[str]:
    """What in `source` writes to the terminal: print(), say(), sys.stdout/sys.stderr, an import of infra/console."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "say"):
            found.append(f"line {node.lineno}: {node.func.id}()")
        elif isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr", "say") \
                and isinstance(node.value, ast.Name) and node.value.id in ("sys", "console"):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("gates.infra.console", "gates.infra") \
                and any(alias.name in ("console", "say") for alias in node.names):
            found.append(f"line {node.lineno}: imports the console")
    return found


def test_nothing_below_the_commands_prints() -> None:
    """Gates, the domain and infra return what to say; only commands (and the CLI) print it. infra/console is the pen."""
    for module, source in sources().items():
        if room(module) in ("checks", "domain", "infra") and module != "gates.infra.console":
            assert speaking(source) == [], f"{module} writes to the terminal: {speaking(source)}"
    planted = "import sys\nfrom gates.infra.console import say\nprint(1)\nsys.stderr.write('x')\nsay('y')\n"
    assert len(speaking(planted)) == 4, speaking(planted)


def test_the_walk_through_adds_a_gate_with_its_module_and_a_registry_line(tmp_path: Path) -> None:
    """docs/architecture.md's walk-through, done: the page's own module and registry line, with the surfaces its
    command renders (the schema key among them), make a gate that `gate check` runs once `.gate.yaml` turns it on,
    reports (an over-cap file as OVER_CAP) and flags."""
    import re
    import shutil
    import subprocess
    import sys
    import textwrap

    from conftest import commit_all, handoff_text, init_repo

    from gates.checks import OVER_CAP

    page = (ROOT / "docs" / "architecture.md").read_text()
    module = textwrap.dedent(re.search(r"```python\n(.*?)```", page, re.S).group(1))  # type: ignore[union-attr]
    copy = tmp_path / "copy"
    shutil.copytree(PACKAGE, copy / "gates", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))  # gates/schemas: a link
    shutil.copytree(ROOT / "schemas", copy / "schemas")
    (copy / "gates" / "checks" / "handoff_owner.py").write_text(module)
    catalog = copy / "gates" / "infra" / "catalog.py"
    line = re.search(r'^ *(Gate\("handoff-owner", .*\),)$', page, re.M).group(1)  # type: ignore[union-attr]
    text = catalog.read_text()
    assert text.count("\n)}") == 1
    catalog.write_text(text.replace("\n)}", f"\n    {line}\n)}}"))
    (copy / "docs").mkdir()
    for name in (".pre-commit-hooks.yaml", "docs/configuration.md"):
        shutil.copyfile(ROOT / name, copy / name)
    env = {**__import__("os").environ, "PYTHONPATH": str(copy)}
    command = re.search(r"`(python -I -m gates\.infra\.surfaces --write)`", page).group(1).split()  # type: ignore[union-attr]
    # -I would leave out PYTHONPATH, which points this run at the copy of the package instead of the checkout's
    proc = subprocess.run([sys.executable, *(word for word in command[1:] if word != "-I")], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    for name in (".pre-commit-hooks.yaml", "docs/configuration.md", "gates/commands/init.py", "schemas/config.schema.json"):
        assert "handoff-owner" in (copy / name).read_text(), name  # the surfaces the page says the command writes
    work = init_repo(tmp_path / "work")
    (work / "README").write_text("x\n")
    head = commit_all(work, "first")
    (work / "HANDOFF.md").write_text(handoff_text(head))
    (work / ".gate.yaml").write_text("gates:\n  handoff-owner: true\n")
    on = sum(gate.on for gate in CATALOG.values()) + 1  # the gates on by default, and the new one
    proc = subprocess.run([sys.executable, "-m", "gates", "check"], cwd=work, env=env, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ("HANDOFF.md:1: [handoff-owner] no owner: add `owner:` to the Meta block\n"
                           f"gate check: failed: 1 error (handoff-owner: 1; {on} gates on HANDOFF.md in the work tree)\n")
    flags = subprocess.run([sys.executable, "-m", "gates", "flags"], cwd=work, env=env, capture_output=True, text=True)
    assert "handoff-owner" in flags.stdout  # flagged under its own id, as the registry line says
    (work / "HANDOFF.md").write_text(handoff_text(head).replace("## Meta\n", "## Meta\n- owner: ada\n"))
    proc = subprocess.run([sys.executable, "-m", "gates", "check", "--only", "handoff-owner"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "gate check: passed (1 gate on HANDOFF.md in the work tree)\n"), proc.stderr
    (work / "HANDOFF.md").write_text("x" * 70000)  # over handoff.max_bytes
    proc = subprocess.run([sys.executable, "-m", "gates", "check", "--only", "handoff-owner"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout.startswith(f"HANDOFF.md:1: [handoff-owner] {OVER_CAP}\n"), proc.stdout


# The one import of main by cli: `from gates.cli import main`, which hooks installed by earlier versions still run
CLI_TO_MAIN_SHIM = "__getattr__"


def test_cli_reaches_main_only_through_its_named_shim() -> None:
    """main drives cli; cli never imports main, but for the named shim that keeps old hooks working."""
    found = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("gates.main") or \
                    isinstance(child, ast.Import) and any(a.name.startswith("gates.main") for a in child.names):
                found.append(scope)
            visit(child, inner)

    visit(ast.parse(sources()["gates.cli"]), "<module>")
    assert found == [CLI_TO_MAIN_SHIM]
    from gates import cli, main

    assert cli.main is main.main  # the shim answers what old hooks ask for


def _invocation_writes(source: str) -> list[str]:
    """Where `source` writes a field of the invocation it is given (`run`) or reads one of its private fields."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "run" and (
                isinstance(node.ctx, (ast.Store, ast.Del)) or node.attr.startswith("_")):
            found.append(f"line {node.lineno}: run.{node.attr}")
    return found


def test_a_command_reports_through_its_invocations_methods() -> None:
    """No command writes a field of its invocation, or touches one of its private fields: it reports through the
    methods (decisions/: a command reports through its invocation's methods, not a return value)."""
    commands = {name: text for name, text in sources().items()
                if name.startswith("gates.commands.")}
    assert len(commands) > 10
    assert {name: found for name, text in commands.items() if (found := _invocation_writes(text))} == {}
    assert _invocation_writes("def f(run):\n    run.scope = 1\n    run._reasons.append(2)\n") == [
        "line 2: run.scope", "line 3: run._reasons"]  # the rule can fail


def test_flags_are_resolved_only_through_the_invocation() -> None:
    """The flag lifecycle is decided in one place (decisions/: a command reports through its invocation's methods):
    no module but the invocation calls flags.resolve or flags.resolve_event; a command ends flags by `run.settle`."""
    calls = {name: [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "resolve_event")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "flags"]
             for name, text in sources().items()}
    assert {name for name, lines in calls.items() if lines} == {"gates.commands"}
