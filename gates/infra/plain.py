"""`NamedTuple` without importing `typing` at run time.

`typing` costs about 3 ms to import, on every commit. The type checker sees `typing.NamedTuple`
itself; at run time a class declared the same way (annotated fields, trailing defaults, methods,
a docstring) becomes a subclass of a `collections.namedtuple` of those fields: a real tuple,
compared, hashed, unpacked and `_replace`d as the typing one is. `collections` is loaded anyway
(`re` and `pathlib` import it).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import namedtuple

    class _Declared(type):
        def __new__(mcs, name, bases, namespace):
            if not bases:  # NamedTuple itself
                return super().__new__(mcs, name, bases, namespace)
            fields = list(namespace.get("__annotations__", {}))
            defaults = [namespace[field] for field in fields if field in namespace]
            if any(field not in namespace for field in fields[len(fields) - len(defaults):]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            base = namedtuple(name, fields, defaults=defaults, module=namespace.get("__module__"))
            body = {key: value for key, value in namespace.items() if key not in fields and key != "__annotations__"}
            return type(name, (base,), {**body, "__slots__": ()})

    class NamedTuple(metaclass=_Declared):
        """Subclass it as typing.NamedTuple is subclassed."""
