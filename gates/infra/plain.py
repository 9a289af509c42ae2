"""`NamedTuple` without importing `typing` or `collections` at run time, and `Namespace` without `types`.

`typing` costs about 3 ms to import on every commit, and `collections` (where `namedtuple` lives,
with the OrderedDict, Counter and ChainMap it defines) a few more. The type checker sees
`typing.NamedTuple` itself; at run time a class declared the same way (annotated fields, trailing
defaults, methods, a docstring) becomes a subclass of `tuple` with a property per field: made,
compared, hashed, unpacked, shown and `_asdict`ed as the typing one is, and refused as it is when a
field without a default follows one with a default. That is all the package uses; the rest of
typing's API (`_replace`, `_make`, pickling, match patterns) is not here, and
tests/infra/test_plain.py fails on a use of it in gates/ (the type checker sees typing's class and
would not).
"""

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import SimpleNamespace
    from typing import NamedTuple as NamedTuple

    Namespace = SimpleNamespace
else:
    Namespace = type(sys.implementation)  # types.SimpleNamespace: the type of sys.implementation, already made
    from _operator import itemgetter  # operator's own, without operator.py's Python half

    class _Fields(tuple):
        """What every declared class shares (one copy of each method, not one per class: a check declares a
        dozen of them at import); the class holds its `_fields` and `_field_defaults`."""

        __slots__ = ()

        def __new__(cls, *args, **named):
            fields, name = cls._fields, cls.__name__
            if len(args) > len(fields):
                raise TypeError(f"{name}() takes {len(fields)} arguments but {len(args)} were given")
            values = list(args)
            for field in fields[len(args):]:
                if field in named:
                    values.append(named.pop(field))
                elif field in cls._field_defaults:
                    values.append(cls._field_defaults[field])
                else:
                    raise TypeError(f"{name}() missing required argument: '{field}'")
            if named:
                raise TypeError(f"{name}() got an unexpected or repeated argument: '{next(iter(named))}'")
            return tuple.__new__(cls, values)

        def __repr__(self):
            shown = ", ".join(f"{field}={value!r}" for field, value in zip(self._fields, self, strict=True))
            return f"{type(self).__name__}({shown})"

        def _asdict(self):
            return dict(zip(self._fields, self, strict=True))

    _ANNOTATIONS = ("__annotations__", "__annotate__", "__annotate_func__")

    def _annotated(namespace):
        """The annotations of a class body: the dict it holds (Python 3.13 and older, or a module that imports
        `from __future__ import annotations`), or from 3.14 on (PEP 649) what its annotate function gives in the
        VALUE format (1): the body holds that function instead, under one of the two names annotationlib looks for.
        The gate's annotations can be evaluated when the class is made, as every Python before 3.14 does."""
        if "__annotations__" in namespace:
            return namespace["__annotations__"]
        annotate = namespace.get("__annotate__", namespace.get("__annotate_func__"))
        return annotate(1) if annotate is not None else {}

    class _Declared(type):
        def __new__(mcs, name, bases, namespace):
            if not bases:  # NamedTuple itself
                return super().__new__(mcs, name, bases, namespace)
            fields = tuple(_annotated(namespace))
            defaults = {field: namespace[field] for field in fields if field in namespace}
            if any(field not in defaults for field in fields[len(fields) - len(defaults):]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            body = {key: value for key, value in namespace.items() if key not in fields and key not in _ANNOTATIONS}
            body.update({field: property(itemgetter(index), doc=f"field {index}: {field}")
                         for index, field in enumerate(fields)})
            body.update({"__slots__": (), "_fields": fields, "_field_defaults": defaults})
            return type(name, (_Fields,), body)

    class NamedTuple(metaclass=_Declared):
        """Subclass it as typing.NamedTuple is subclassed."""
