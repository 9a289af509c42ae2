"""The package's code and its tests are type-checked (mypy strict, `[tool.mypy] files`) and linted, inside the suite."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest
from conftest import ROOT


@pytest.mark.slow  # a minute without its cache (a fresh clone's CI)
def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "gates", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- the one door to the disk -----------------------------------------------------------------------------
# The repository is hostile input: a FIFO planted where the gate opens a file would make it wait forever, a huge
# file would be read whole. So no module but gates/infra/fsio.py opens a file itself. Each exception below names
# the one function it is in and why its open cannot meet a planted file (or cannot wait on one).
DOOR = "gates/infra/fsio.py"
ALLOWED = {
    "gates/infra/schemas.py:schema_bytes": "a schema shipped inside the package, never a file of the repository",
    "gates/infra/console.py:_silence": "os.devnull, opened for writing to point a broken stdout at it",
    "gates/domain/flags.py:_set_marker": "creates an empty marker with O_CREAT|O_EXCL and fsio.safe_flags: it never "
                                         "opens a file that is already there, and reads nothing",
    "gates/domain/locks.py:filesystem_now": "the clock probe of the state dir, opened with fsio.safe_flags (a FIFO: "
                                            "ENXIO at once) and refused unless a regular file; only touched, never read",
    "gates/domain/locks.py:quarantine": "pins the lock just judged a regular file, with fsio.safe_flags (never waits, "
                                        "never follows a link), to check that the very file judged is the one moved",
    "gates/commands/doctor.py:_move_one": "pins the temp file just lstat'ed as a regular file, with fsio.safe_flags, "
                                           "to check that the very file judged is the one moved",
}
_OPENERS = {"open", "fdopen", "read_text", "read_bytes", "write_text", "write_bytes"}  # as a name or a method


def raw_opens(source: str) -> list[tuple[str, int, str]]:
    """(enclosing function or <module>, line, what) for every call in `source` that opens a file itself: open(),
    os.open, io.open, os.fdopen, Path.open/read_text/read_bytes/write_text/write_bytes, and `from os import open`."""
    import ast

    found: list[tuple[str, int, str]] = []

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Call):
                func = child.func
                if isinstance(func, ast.Name) and func.id in ("open", "fdopen"):
                    found.append((inner, child.lineno, f"{func.id}()"))
                elif isinstance(func, ast.Attribute) and func.attr in _OPENERS:
                    found.append((inner, child.lineno, f"{ast.unparse(func)}()"))
            elif isinstance(child, ast.ImportFrom) and child.module in ("os", "io", "builtins", "pathlib", "codecs"):
                found.extend((inner, child.lineno, f"from {child.module} import {alias.name}")
                             for alias in child.names if alias.name in _OPENERS)
            walk(child, inner)

    walk(ast.parse(source), "<module>")
    return found


def test_no_module_but_fsio_opens_a_file_itself() -> None:
    """The class of the FIFO hangs (a raw open() of a worktree's gitdir, of a hook), kept closed: a new raw open
    anywhere under gates/ fails here until it goes through fsio, or is listed above with its reason."""
    seen, unexpected = set(), []
    for path in sorted((ROOT / "gates").rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        if module == DOOR:
            continue
        for where, line, what in raw_opens(path.read_text(encoding="utf-8")):
            key = f"{module}:{where}"
            if key in ALLOWED:
                seen.add(key)
            else:
                unexpected.append(f"{module}:{line} ({where}): {what} — read through gates/infra/fsio.py "
                                  "(read_regular, read_bytes_capped, open_state_fd, write_atomic)")
    assert unexpected == [], "\n".join(unexpected)
    assert sorted(set(ALLOWED) - seen) == [], "allowed but no longer there: remove these entries"


def test_the_door_check_sees_every_spelling_of_a_raw_open() -> None:
    planted = ("import io, os\nfrom pathlib import Path\nfrom os import open as o\n"
               "def a(p):\n    with open(p) as f:\n        return f.read()\n"
               "def b(p):\n    return os.open(p, os.O_RDONLY), io.open(p), os.fdopen(3)\n"
               "def c(p):\n    return Path(p).read_text(), Path(p).read_bytes(), Path(p).open()\n"
               "x = open('/etc/hostname')\n")
    assert raw_opens(planted) == [
        ("<module>", 3, "from os import open"),
        ("a", 5, "open()"),
        ("b", 8, "os.open()"), ("b", 8, "io.open()"), ("b", 8, "os.fdopen()"),
        ("c", 10, "Path(p).read_text()"), ("c", 10, "Path(p).read_bytes()"), ("c", 10, "Path(p).open()"),
        ("<module>", 11, "open()"),
    ]
    assert raw_opens("def d(fd):\n    return os.read(fd, 10), fsio.read_regular('x', 10)\n") == []


# ---- a module is never text ---------------------------------------------------------------------------------------
# `f"({state})"` where `how` was meant printed `<module 'gates.infra.state' from '/…/state.py'>` to a harness: a path of
# this machine's install, in words meant for a person. The type checker allows it (every object formats), so this does.

def modules_formatted(source: str, package: str) -> list[tuple[int, str]]:
    """(line, name) of every f-string field or str()/repr() that formats a name bound to a module in `source`: `import
    X`, or `from P import X` where P.X is a module of `package` (a name rebound in a function is its own)."""
    import ast

    tree = ast.parse(source)
    modules: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package) and not node.level:
            folder = ROOT.joinpath(*node.module.split("."))
            modules.update(alias.asname or alias.name for alias in node.names
                           if (folder / f"{alias.name}.py").is_file() or (folder / alias.name / "__init__.py").is_file())
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, shadowed: frozenset[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            bound = {arg.arg for arg in ast.walk(node.args) if isinstance(arg, ast.arg)}
            bound |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            shadowed = shadowed | bound
        if isinstance(node, ast.FormattedValue):
            fields = [node.value]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("str", "repr"):
            fields = list(node.args)
        else:
            fields = []
        found.extend((field.lineno, field.id) for field in fields
                     if isinstance(field, ast.Name) and field.id in modules and field.id not in shadowed)
        for child in ast.iter_child_nodes(node):
            walk(child, shadowed)

    walk(tree, frozenset())
    return found


def test_no_module_is_formatted_as_text() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in sorted((ROOT / "gates").rglob("*.py"))
             for line, name in modules_formatted(path.read_text(), "gates")]
    assert found == []


def test_the_module_check_sees_the_slip_it_is_for() -> None:
    slip = "from gates.infra import state\n\ndef steps(how: str) -> str:\n    return f'commit it ({state})'\n"
    assert modules_formatted(slip, "gates") == [(4, "state")]
    shadowed = "from gates.infra import state\n\ndef steps(state: str) -> str:\n    return f'commit it ({state})'\n"
    assert modules_formatted(shadowed, "gates") == []
    assert modules_formatted("import os\nx = str(os)\n", "gates") == [(2, "os")]


_PLANTED_GIT = re.compile(r"""/\s*["']git["']""")  # a path whose last part is `git`: a program of that name


def planted_gits(source: str) -> list[int]:
    """The lines of a test module that name a file `git` themselves, to plant a program of that name (the
    `git_wrapper` fixture is the one way: it takes the machine alone as it plants, so no other run's lock test meets it)."""
    return [number for number, line in enumerate(source.splitlines(), 1)
            if _PLANTED_GIT.search(line) and not line.lstrip().startswith("assert ")]


# Where a file named git is planted that runs only when the gate is wrong: no wrapper lives through a test.
_CANARIES = {"tests/test_no_programs.py": '(repo / "git").symlink_to(canary("PATH-relative-git"))'}


def test_a_git_wrapper_is_planted_only_by_the_fixture_that_takes_the_machine_alone() -> None:
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name in ("conftest.py", "test_code_quality.py"):
            continue
        name, lines = path.relative_to(ROOT).as_posix(), path.read_text().splitlines()
        found += [f"{name}:{number}" for number in planted_gits("\n".join(lines))
                  if lines[number - 1].strip() != _CANARIES.get(name)]
    assert found == [], "plant a git through the git_wrapper fixture (tests/conftest.py)"


def test_the_planted_git_check_sees_the_slip_it_is_for() -> None:
    assert planted_gits('x = 1\n(wrapper / "git").write_text(f"#!/bin/sh\\nexec git")\n') == [2]
    assert planted_gits("script = folder / 'git'\nscript.write_text('#!/bin/sh\\n')\n") == [1]
    assert planted_gits('assert argv[0] == str(tmp_path / "bin" / "git")\n') == []
    assert planted_gits('git(repo, "status")\n(repo / ".git" / "HEAD").read_text()\n(repo / "gitx").touch()\n') == []


# ---- annotations Python evaluates ---------------------------------------------------------------------------
# No module imports `from __future__ import annotations` (docs/architecture.md): Python evaluates an annotation when
# it defines the function or class, so one naming what exists for the type checker only (imported or assigned under
# `if TYPE_CHECKING:`) raises NameError there, in a nested function only when that path runs. ruff's TC004 sees the
# imports; this sees the assignments (`StrPath = …`, a TypeVar) and the `__future__` import too.


def _checker_only(tree: ast.Module) -> set[str]:
    """The names bound under a top-level `if TYPE_CHECKING:` and bound nowhere else at the top level."""
    def bound(nodes: list[ast.stmt]) -> set[str]:
        names: set[str] = set()
        for node in nodes:
            for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else [node]:
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    names |= {(alias.asname or alias.name).split(".")[0] for alias in sub.names}
                elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, (ast.Assign, ast.AnnAssign)):
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    names |= {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}
        return names

    guarded = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    rest = [node for node in tree.body if node not in guarded] + [else_ for node in guarded for else_ in node.orelse]
    return bound([sub for node in guarded for sub in node.body]) - bound(rest)


def evaluated_checker_names(source: str) -> list[tuple[int, str]]:
    """(line, what) of every annotation Python evaluates (a signature's, and a variable's at the top or in a class
    body) that names a type-checker-only name, or the class its class body is making, or joins a string to a type
    (`"X" | None`); and the line of a `from __future__ import annotations` (which would hide them, for 0.6 M
    instructions a process)."""
    tree = ast.parse(source)
    only = _checker_only(tree)
    found = [(node.lineno, "__future__") for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module == "__future__"]

    def judge(annotation: ast.expr | None, making: frozenset[str]) -> None:
        if annotation is None or isinstance(annotation, ast.Constant):
            return
        for part in ast.walk(annotation):
            if isinstance(part, ast.Name) and (part.id in only or part.id in making):
                found.append((part.lineno, part.id))
            elif isinstance(part, ast.Constant) and isinstance(part.value, str):
                found.append((part.lineno, repr(part.value)))

    def visit(body: list[ast.stmt], making: frozenset[str], evaluated: bool) -> None:
        """`making`: the classes whose bodies run around these statements; `evaluated`: whether a variable's
        annotation here is evaluated (the top level and a class body, not a function body)."""
        for node in body:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                visit(node.orelse, making, evaluated)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                for annotation in (*(arg.annotation for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                                                args.vararg, args.kwarg) if arg is not None),
                                   node.returns):
                    judge(annotation, making)
                visit(node.body, frozenset(), False)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, making | {node.name}, True)
            elif isinstance(node, ast.AnnAssign):
                if evaluated:
                    judge(node.annotation, making)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None) or []
                    visit([s for item in inner for s in (item.body if isinstance(item, ast.ExceptHandler) else [item])],
                          making, evaluated)

    visit(tree.body, frozenset(), True)
    return sorted(found)


def test_no_annotation_python_evaluates_names_a_type_checker_only_name() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in sorted((ROOT / "gates").rglob("*.py"))
             for line, name in evaluated_checker_names(path.read_text())]
    assert found == [], "quote the annotation (docs/architecture.md)"


def test_the_annotation_check_sees_the_slip_it_is_for() -> None:
    head = "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from os import PathLike\n    StrPath = str\n"
    nested = "def f():\n    def g(a: StrPath) -> 'PathLike[str]':\n        pass\n"
    assert evaluated_checker_names(head + nested) == [(6, "StrPath")]
    assert evaluated_checker_names(head + "class C:\n    x: 'StrPath'\n    y: list[PathLike[str]]\n") == [(7, "PathLike")]
    assert evaluated_checker_names(head + "X: PathLike[str] = 1\nclass C:\n    if X:\n        y: StrPath\n") == \
        [(5, "PathLike"), (8, "StrPath")]
    assert evaluated_checker_names("def f():\n    class D:\n        def m(self) -> D:\n            pass\n") == [(3, "D")]
    assert evaluated_checker_names("def f(a: 'X' | None) -> None:\n    pass\n") == [(1, "'X'")]
    fine = head + "else:\n    StrPath = str\ndef f(a: StrPath) -> 'D':\n    b: PathLike[str]\nclass D:\n    c: 'D'\n"
    assert evaluated_checker_names(fine) == []
    assert evaluated_checker_names("from __future__ import annotations\n") == [(1, "__future__")]


def module_containers(source: str) -> list[str]:
    """The names a module binds at its top level to an empty list, dict or set: state it keeps for a process's life."""
    found = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        empty = (isinstance(value, (ast.List, ast.Set, ast.Dict)) and not getattr(value, "elts", getattr(value, "keys", None))
                 or isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict", "set")
                 and not value.args)
        found += [target.id for target in targets if empty and isinstance(target, ast.Name)]
    return found


def test_every_state_a_process_keeps_is_known_to_the_in_process_runs() -> None:
    """run_gate runs the gate in the test's process as a new process would meet it: what the package keeps for a
    process's life must start empty there (conftest.PROCESS_STATE), or be emptied by the run's end or owned by the
    tests. A container added to a module and to none of the three would carry one run's state into the next."""
    import conftest

    known = {(module, name) for table in (conftest.PROCESS_STATE, conftest.RUN_END, conftest.TEST_OWNED)
             for module, names in table.items() for name in names}
    found = set()
    for path in sorted((ROOT / "gates").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found |= {(module, name) for name in module_containers(path.read_text())}
    assert found == known


def test_the_state_check_sees_the_slip_it_is_for() -> None:
    assert module_containers('_SEEN: dict[str, int] = {}\n_A = _B = []\nC = set()\nD = [1]\nE = frozenset()\n') == \
        ["_SEEN", "_A", "_B", "C"]
