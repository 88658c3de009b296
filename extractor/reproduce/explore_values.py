# Explore's values: an argument's value as source (a literal, a name of the module, a class called with values),
# the bindings a search evaluates them in and its programs import, and a class's arguments read from its
# annotations (a dataclass's fields, a pydantic model's, those it cannot be built without). The standard library
# only (runs in the runtime, beside child.py).
from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import sys
import types
import typing
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import programs
else:  # run beside child.py in a runtime, from its folder
    programs = importlib.import_module("programs")


@dataclasses.dataclass(frozen=True)
class Src:
    """A value written as source (`True`, `'fp8'`, `CompilationMode.VLLM_COMPILE`, `MODEL`)."""

    text: str

    def source(self) -> str:
        return self.text

    def node(self) -> ast.expr:
        """The value's allowed text as a node (a literal, a name, an attribute: programs.expression)."""
        return programs.expression(self.text)


@dataclasses.dataclass
class Call:
    """A value built by calling a class with arguments (themselves values): a sub-config, the config itself."""

    name: str  # the class's name, as the program imports it
    arguments: dict[str, Value]

    def source(self) -> str:
        return ast.unparse(self.node())

    def node(self) -> ast.expr:
        """The call of the class the search imports, with its arguments' nodes."""
        return programs.call(programs.dotted(self.name), {k: v.node() for k, v in self.arguments.items()})


Value = Src | Call  # (None, where a value may be: the argument left at its default)


@dataclasses.dataclass
class Bindings:
    """The names a search's values are evaluated with (the module's own, its enums and constants, the tiny models'
    folders, the classes it came to use) and those its programs import, each from its module."""

    namespace: dict[str, Any]
    imports: dict[str, str]  # an imported name -> its module

    def value(self, value: Value) -> Any:
        """A value made: a class called with its arguments made, a text evaluated as data (no call: a literal, a
        name of the module, an attribute)."""
        if isinstance(value, Call):
            return self.namespace[value.name](**{k: self.value(v) for k, v in value.arguments.items()})
        return programs.evaluate(value.text, self.namespace)

    def note(self, cls: type) -> None:
        """A class offered as a value: known by its name, unless that name is bound already."""
        self.imports.setdefault(cls.__name__, cls.__module__)
        self.namespace.setdefault(cls.__name__, cls)

    def bind(self, cls: type) -> None:
        """A class the search builds: its name stands for it, over what the module binds there (`X = Any`)."""
        self.imports.setdefault(cls.__name__, cls.__module__)
        self.namespace[cls.__name__] = cls

    def constant(self, value: Any) -> Src:
        """A class, an enum member or a literal as source (the class, or the member's enum, noted)."""
        if inspect.isclass(value):
            self.note(value)
            return Src(value.__name__)
        if isinstance(value, enum.Enum):
            self.note(type(value))
            return Src(f"{type(value).__name__}.{value.name}")
        return Src(repr(value))


def number(text: str) -> int | float | None:
    """The number a source text writes (None: it writes none, a boolean included)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def fields(cls: type | None) -> dict[str, Any]:
    """A class's arguments (a dataclass's fields and InitVars, a pydantic model's fields) with their types."""
    if cls is None:
        return {}
    annotated = hints(cls)
    out: dict[str, Any] = {}
    for name, spec in getattr(cls, "__dataclass_fields__", {}).items():
        if spec.init and getattr(spec, "_field_type", None) is not dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
            kind = annotated.get(name, spec.type)
            out[name] = kind.type if isinstance(kind, dataclasses.InitVar) else kind
    for name, info in (getattr(cls, "model_fields", None) or {}).items():
        out.setdefault(name, info.annotation)
    return out


def required(cls: type | None) -> list[str]:
    """The arguments a class cannot be built without."""
    out = []
    for name, spec in getattr(cls, "__dataclass_fields__", {}).items():
        missing = spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        if spec.init and missing and getattr(spec, "_field_type", None) is not dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
            out.append(name)
    for name, info in (getattr(cls, "model_fields", None) or {}).items():
        if name not in out and info.is_required():
            out.append(name)
    return out


def config_class(kind: Any) -> type | None:
    """The class of a sub-config argument (a dataclass or pydantic model), through Optional."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        found = [a for a in args if a is not type(None)]
        return config_class(found[0]) if len(found) == 1 else None
    if inspect.isclass(kind) and (dataclasses.is_dataclass(kind) or hasattr(kind, "model_fields")):
        return kind
    return None


def unbound(cls: type, method: str | None) -> bool:
    """Whether a class's method is a static or class method, called on the class with no config built (not one
    of pydantic's validators, which building the config runs)."""
    if method is None:
        return False
    decorators = getattr(cls, "__pydantic_decorators__", None)  # (its validators, by kind, each by name)
    kinds = [getattr(decorators, name) for name in dir(decorators) if not name.startswith("_")] if decorators else []
    if any(method in kind for kind in kinds if isinstance(kind, dict)):
        return False
    return isinstance(inspect.getattr_static(cls, method, None), (staticmethod, classmethod))


def hints(owner: Any) -> dict[str, Any]:
    """A class's or function's annotations as types; a name imported only for type checkers (`if TYPE_CHECKING:`)
    looked up in the modules of the same package."""
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except Exception:
        pass
    raw: dict[str, Any] = {}
    for klass in reversed(getattr(owner, "__mro__", [owner])):
        raw.update(getattr(klass, "__annotations__", None) or {})
    module = sys.modules.get(getattr(owner, "__module__", "") or "")
    namespace = {**vars(typing), **(vars(module) if module else {})}
    top = (getattr(module, "__name__", "") or "").partition(".")[0]
    out: dict[str, Any] = {}
    for name, annotation in raw.items():
        for _ in range(4):  # (each missing name found, then the annotation read again)
            try:
                out[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation
                break
            except NameError as error:
                found = lookup(str(error.name), top, anywhere=True) if error.name else None
                if found is None:
                    out[name] = Any
                    break
                namespace[str(error.name)] = found
            except Exception:
                out[name] = Any
                break
    return out


def camel(name: str) -> str:
    """`parallel_config` -> `ParallelConfig`."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def lookup(name: str, top: str, *, anywhere: bool = False) -> Any:
    """A class of that name defined in a module of the package already imported (with `anywhere`, of any
    package, when the package has none: `PretrainedConfig`, imported for type checkers only)."""
    package = f"{top}." if top else ""
    for prefix in (package, "") if anywhere else (package,):
        for module in list(sys.modules.values()):
            value = getattr(module, name, None)
            if inspect.isclass(value) and value.__name__ == name and value.__module__.startswith(prefix):
                return value  # (defined there: not `X = Any`, an alias for type checkers)
    return None
