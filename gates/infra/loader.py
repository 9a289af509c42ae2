"""The gate's own modules, loaded from their compiled bytecode without importlib's Python-level steps.

A run of `gate` imports 40 to 60 of its own modules. importlib spends about 150,000 instructions on
each before its code runs (a lock object, the finders, a spec, a loader, the module's attributes,
the bytecode's checks in Python): a tenth of a check. `install()` (called by gates.main.launch, so
only a process started as `gate` uses it; the tests' in-process runs import the ordinary way) puts
a `__import__` in front of the interpreter's that loads a module of the package `gates` itself
when, and only when, its `__pycache__` holds bytecode that importlib would use as it is: the same
magic number, a time-stamped (not hash-checked) file whose recorded time and size are the source
file's. Anything else (no bytecode yet, a stale or unreadable file, a relative import, any other
package, a second thread running, an interpreter with a pycache prefix or an optimisation level)
goes to the interpreter's own import, unchanged, which writes the bytecode for the next run as it
always does.

A module is found as importlib's finder finds it, by the names its folder lists (their case too):
a package folder with its `__init__.py`, else `name.py`; a name an extension module could answer
goes to importlib. A module loaded here is the module importlib makes, less its loader and spec
(both None, as for code run with `exec`): its name, file, cached file, package and, for a package,
path are set; the code's file name is fixed to the source's place as importlib fixes it; a module
whose code raises is taken out of `sys.modules` again. What `sys.modules` already holds is the
answer, as in importlib: a module still running its code (an import cycle) is not run again, and
None (a blocked import) is refused by importlib; `import *` goes to importlib.
tests/infra/test_loader.py holds the two ways to the same modules and the same answers.
"""

from __future__ import annotations

import _io
import builtins
import marshal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable

PACKAGE = "gates"


def install() -> bool:
    """Load the package's modules this way from now on, when this interpreter allows it; whether it does."""
    external = sys.modules.get("_frozen_importlib_external")
    package = sys.modules.get(PACKAGE)
    tag = sys.implementation.cache_tag
    if external is None or package is None or tag is None or sys.flags.optimize or sys.pycache_prefix is not None \
            or sys.implementation.name != "cpython":
        return False
    import _imp

    importer = _Importer(builtins.__import__, external.MAGIC_NUMBER, tag, package.__path__[0], _imp.extension_suffixes())
    builtins.__import__ = importer.__call__
    return True


class _Importer:
    def __init__(self, original: Callable[..., ModuleType], magic: bytes, tag: str, root: str,
                 extensions: list[str]) -> None:
        self.original = original
        self.magic = magic
        self.suffix = f".{tag}.pyc"
        self.root = root
        self.extensions = extensions  # importlib prefers an extension module to a source file of the same name
        self.listings: dict[str, frozenset[str]] = {}  # a folder's names, as importlib's finder lists them once

    def __call__(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                 level: int = 0) -> ModuleType:
        modules = sys.modules
        threading = modules.get("threading")
        if level or not (name == PACKAGE or name.startswith("gates.")) or fromlist and "*" in fromlist \
                or threading is not None and threading.active_count() > 1:  # (importlib's locks, for threads)
            return self.original(name, globals, locals, fromlist, level)
        module = modules.get(name) or self.load(name)
        if module is None:
            return self.original(name, globals, locals, fromlist, level)
        if not fromlist:
            return modules[PACKAGE]
        path = getattr(module, "__path__", None)
        if path is not None:  # `from gates.infra import fsio`: a submodule not loaded yet is loaded first
            for attr in fromlist:
                if not hasattr(module, attr) and self.load(f"{name}.{attr}") is None:
                    return self.original(name, globals, locals, fromlist, level)
        return module

    def load(self, name: str) -> ModuleType | None:
        """The module from its bytecode, when importlib would use that bytecode as it is; else None. A module
        already in `sys.modules` is that entry, as importlib answers: one still running its code (an import
        cycle) is not run again, and None (an import blocked) goes to importlib, which refuses it."""
        import os
        import stat as kinds

        modules = sys.modules
        if name in modules:
            return modules[name]
        parent_name, _, child = name.rpartition(".")
        parent = modules.get(parent_name) or (self.load(parent_name) if parent_name != PACKAGE else None)
        folder = getattr(parent, "__path__", None)
        if not folder or folder[0] != self.root and not folder[0].startswith(self.root + os.sep):
            return None
        base = os.path.join(folder[0], child)
        # What importlib's finder would take, by the names the folder holds (their case too): a package folder
        # with its __init__.py, else child.py; anything an extension module could be goes to importlib.
        names = self.names(folder[0])
        if any(child + suffix in names for suffix in self.extensions):
            return None
        if child in names:
            inner = self.names(base)
            if "__init__.py" not in inner or any(f"__init__{suffix}" in inner for suffix in self.extensions):
                return None
            source, is_package = os.path.join(base, "__init__.py"), True
        elif child + ".py" in names:
            source, is_package = base + ".py", False
        else:
            return None
        try:
            stat = os.stat(source)
        except OSError:
            return None
        if not kinds.S_ISREG(stat.st_mode):
            return None
        where, _, filename = source.rpartition(os.sep)
        cached = os.path.join(where, "__pycache__", filename[:-3] + self.suffix)
        try:
            with _io.open_code(cached) as handle:  # the package's own bytecode, read as importlib reads it
                data = handle.read()
            if data[:4] != self.magic or data[4:8] != b"\0\0\0\0" \
                    or int.from_bytes(data[8:12], "little") != int(stat.st_mtime) & 0xFFFFFFFF \
                    or int.from_bytes(data[12:16], "little") != stat.st_size & 0xFFFFFFFF:
                return None
            code = marshal.loads(memoryview(data)[16:])
        except (OSError, ValueError, EOFError, TypeError):
            return None
        import _imp

        _imp._fix_co_filename(code, source)  # type: ignore[attr-defined]  # (what importlib calls; not in the stubs)
        module = type(sys)(name)
        module.__file__ = source
        module.__cached__ = cached  # type: ignore[attr-defined]
        if is_package:
            module.__path__ = [base]
            module.__package__ = name
        else:
            module.__package__ = parent_name
        modules[name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            if modules.get(name) is module:
                del modules[name]
            raise
        module = modules[name]  # what the module put there, as importlib returns
        setattr(parent, child, module)
        return module

    def names(self, folder: str) -> frozenset[str]:
        """The names in `folder` (none when it cannot be listed), listed once per run."""
        import os

        found = self.listings.get(folder)
        if found is None:
            try:
                found = frozenset(os.listdir(folder))
            except OSError:
                found = frozenset()
            self.listings[folder] = found
        return found
