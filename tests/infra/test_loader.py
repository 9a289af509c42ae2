"""The package's own modules loaded from their bytecode (gates/infra/loader.py): the same modules importlib makes,
and importlib's own way wherever the bytecode is not what importlib would use as it is.

Each test runs in a copy of the package in a temp dir, compiled here (time-stamped bytecode, as pip writes it),
in a new interpreter started without `site` as a plain install's hook starts it.
"""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import sys
from pathlib import Path

import pytest
from conftest import ROOT, bare_python


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A copy of gates/ under tmp_path/pkg, every module compiled in another folder first and moved with its
    bytecode (the file names inside the bytecode are then the old folder's, as after a copied install); the folder
    to put on the path."""
    build = tmp_path / "build"
    shutil.copytree(ROOT / "gates", build / "gates", ignore=shutil.ignore_patterns("__pycache__"))
    for source in (build / "gates").rglob("*.py"):
        compile_timestamped(source)
    top = tmp_path / "pkg"
    shutil.copytree(build, top)  # (times kept: the bytecode stays current)
    shutil.rmtree(build)
    shutil.copytree(ROOT / "schemas", top / "schemas")
    return top


def compile_timestamped(source: Path) -> None:
    py_compile.compile(str(source), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)


# importlib writes the bytecode it compiles, and pip's way of compiling (by time, not by hash) is the one meant
WRITING = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "SOURCE_DATE_EPOCH")}


def python(top: Path, code: str) -> str:
    """What `code` prints in a bare interpreter (conftest.bare_python) that finds the package under `top`."""
    proc = bare_python(code, None, top=top, env=WRITING)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def modules_of(top: Path) -> list[str]:
    names = []
    for source in sorted((top / "gates").rglob("*.py")):
        parts = list(source.relative_to(top).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return [name for name in names if name not in ("gates", "gates.__main__", "gates.main", "gates.infra", "gates.infra.loader")]


DESCRIBE = """
import json, sys
def describe(name):
    module = sys.modules[name]
    return {"names": sorted(k for k in vars(module) if k not in ("__loader__", "__spec__", "__builtins__")),
            "file": module.__file__, "cached": module.__cached__, "package": module.__package__,
            "path": getattr(module, "__path__", None), "co_file": _first_code_file(module),
            "by_importlib": module.__spec__ is not None}
def _first_code_file(module):
    for value in vars(module).values():
        code = getattr(value, "__code__", None)
        if code is not None and getattr(value, "__module__", None) == module.__name__:
            return code.co_filename
    return None
"""


def test_every_module_is_the_module_importlib_makes(package: Path) -> None:
    names = modules_of(package)
    load_all = f"for name in {names!r}:\n    __import__(name)\nprint(json.dumps({{n: describe(n) for n in {names!r}}}))\n"
    plain = json.loads(python(package, DESCRIBE + load_all))
    fast = json.loads(python(package, DESCRIBE + "from gates.infra import loader\nassert loader.install()\n" + load_all))
    assert all(plain[name].pop("by_importlib") for name in names)
    went = [name for name in names if fast[name].pop("by_importlib")]
    assert went == [], "went to importlib"
    assert fast == plain
    assert plain["gates.infra.fsio"]["co_file"] == str(package / "gates" / "infra" / "fsio.py")


def test_bytecode_importlib_would_not_use_as_it_is_goes_to_importlib(package: Path) -> None:
    """Stale (the source changed since), hash-checked, of another magic number or missing: importlib loads it (and
    writes what it would write), and once the bytecode is time-stamped and current the next run goes without."""
    infra = package / "gates" / "infra"
    for index, module in enumerate(("text", "plain", "digest", "errors")):
        (infra / f"{module}.py").write_text((infra / f"{module}.py").read_text() + f"\nSENTINEL = {index}\n")
    cache = infra / "__pycache__"
    for index, module in enumerate(("paths", "clock")):  # the same size, another time: stale all the same
        source = infra / f"{module}.py"
        compile_timestamped(source)
        stat = source.stat()
        source.write_text(source.read_text().replace('"""', f'"""{index}', 1)[:-1])
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
        assert source.stat().st_size == stat.st_size
    tag = sys.implementation.cache_tag
    plain = infra / "plain.py"  # hash-checked, then changed, its hash forged to read as the time and size it has
    py_compile.compile(str(plain), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    plain.write_text(plain.read_text().replace("SENTINEL = 1", "SENTINEL = 11"))
    forged = plain.stat()
    pyc = cache / f"plain.{tag}.pyc"
    pyc.write_bytes(pyc.read_bytes()[:8] + (int(forged.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                    + (forged.st_size & 0xFFFFFFFF).to_bytes(4, "little") + pyc.read_bytes()[16:])
    digest = cache / f"digest.{tag}.pyc"
    compile_timestamped(infra / "digest.py")
    digest.write_bytes(b"\0\0\r\n" + digest.read_bytes()[4:])
    (cache / f"errors.{tag}.pyc").unlink()
    each = "".join(f"from gates.infra import {name}\n" for name in ("text", "plain", "digest", "errors", "paths", "clock"))
    probe = ("from gates.infra import loader\nassert loader.install()\n" + each +
             "print(json.dumps({m.__name__: [m.__doc__[:1] if m in (paths, clock) else m.SENTINEL,"
             " m.__spec__ is not None] for m in (text, plain, digest, errors, paths, clock)}))")
    first = json.loads(python(package, DESCRIBE + probe))
    assert first == {"gates.infra.text": [0, True], "gates.infra.plain": [11, True], "gates.infra.digest": [2, True],
                     "gates.infra.errors": [3, True], "gates.infra.paths": ["0", True], "gates.infra.clock": ["1", True]}
    pyc.unlink()  # importlib wrote a hash-checked file again: it is importlib's to check, so make it time-stamped
    compile_timestamped(plain)
    again = json.loads(python(package, DESCRIBE + probe))
    assert again == {name: [sentinel, False] for name, (sentinel, _) in first.items()}


def test_a_module_whose_code_raises_is_not_kept(package: Path) -> None:
    broken = package / "gates" / "infra" / "broken.py"
    broken.write_text("import sys\nsys.modules['gates.infra'].SEEN = True\nraise RuntimeError('broken on purpose')\n")
    compile_timestamped(broken)
    probe = ("from gates.infra import loader\nassert loader.install()\n"
             "for attempt in range(2):\n"
             "    try:\n        import gates.infra.broken\n    except RuntimeError as exc:\n        print(exc)\n"
             "import gates.infra\n"
             "print('gates.infra.broken' in sys.modules, hasattr(gates.infra, 'broken'), gates.infra.SEEN)")
    assert python(package, probe).splitlines() == ["broken on purpose", "broken on purpose", "False False True"]


def test_what_is_not_the_package_and_a_run_with_threads_go_to_importlib(package: Path) -> None:
    probe = ("from gates.infra import loader\nassert loader.install()\n"
             "import json.decoder, gates.infra.text\nfrom gates import __version__\n"
             "try:\n    from gates.infra import no_such_module\nexcept ImportError:\n    print('ImportError')\n"
             "import threading\nimport gates.infra.digest\n"
             "threading.Thread(target=lambda: __import__('gates.infra.plain')).start()\nimport gates.infra.plain\n"
             "print(sys.modules['json.decoder'].__spec__ is not None, gates.infra.text.__spec__ is None,"
             " gates.infra.digest.__spec__ is None, gates.infra.plain.__spec__ is not None, __version__ == gates.__version__)")
    assert python(package, "import gates\n" + probe).splitlines() == ["ImportError", "True True True True True"]


def test_a_hook_process_loads_the_package_without_importlib(package: Path, repo: Path) -> None:
    """`python -X importtime` lists what importlib imports: a hook's check (launch) lists gates.main, the module
    that installs the loader, and none of the modules the check loads after it; an in-process main() lists them."""
    def imported(entry: str) -> set[str]:
        proc = bare_python(entry, repo, "check", top=package, flags=("-X", "importtime"), env=WRITING)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}

    hook = imported("from gates.main import launch; launch()")
    assert {"gates", "gates.main", "gates.infra", "gates.infra.loader"} <= hook
    assert not {"gates.cli", "gates.commands.check", "gates.checks.runner", "gates.domain.handoff"} & hook, hook
    in_process = imported("from gates.main import main; sys.exit(main(sys.argv[1:]))")
    assert {"gates.cli", "gates.commands.check", "gates.checks.runner", "gates.domain.handoff"} <= in_process


def test_cycles_blocked_imports_star_imports_and_extensions_answer_as_importlib(package: Path) -> None:
    """What importlib answers, the loader answers: a module still running its code (an import cycle) is not run
    again, an import blocked with None in sys.modules is refused, `import *` loads what `__all__` names, and a
    name an extension module could answer is left to importlib (here: a file that is no extension, refused)."""
    infra = package / "gates" / "infra"
    modules = {
        infra / "cyc_a.py": "print('exec a')\nfrom gates.infra import cyc_b\n",
        infra / "cyc_b.py": "print('exec b')\nfrom gates.infra import cyc_a\n",
        infra / "cyc_c.py": "print('exec c')\nimport gates.infra.cyc_d\n",
        infra / "cyc_d.py": "print('exec d')\nfrom gates.infra import cyc_c\n",
        infra / "blocked.py": "print('exec blocked')\n",
        infra / "ext.py": "print('exec ext.py')\n",
        package / "gates" / "star" / "__init__.py": "__all__ = ['sub']\n",
        package / "gates" / "star" / "sub.py": "VALUE = 1\n",
    }
    for path, text in modules.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        compile_timestamped(path)
    import importlib.machinery

    (infra / f"ext{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"not an extension")
    attempts = ["import gates.infra.cyc_a", "import gates.infra.cyc_c",
                "sys.modules['gates.infra.blocked'] = None\nimport gates.infra.blocked", "from gates.infra import blocked",
                "from gates.star import *\nassert sub.VALUE == 1", "import gates.infra.ext"]
    probe = ("def attempt(code):\n    try:\n        exec(code, {'sys': sys})\n        return 'ok'\n"
             "    except ImportError:\n        return 'ImportError'\n"
             f"for code in {attempts!r}:\n    print(attempt(code))\n")
    expected = ["exec a", "exec b", "ok", "exec c", "exec d", "ok", "ImportError", "ImportError", "ok", "ImportError"]
    assert python(package, probe).splitlines() == expected
    assert python(package, "from gates.infra import loader\nassert loader.install()\n" + probe).splitlines() == expected
