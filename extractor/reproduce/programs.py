# Programs: the one door between a catalog's text and what runs. A catalog is data: what it says is read as an
# expression of the few kinds allowed here (names, attributes, literals; no call, no subscript, no dunder) and
# evaluated by walking it, never by eval(); programs are built as ast nodes, each name checked as an identifier
# and each module path as one, then unparsed. The standard library only: the runtime's child imports it too.
from __future__ import annotations

import ast
import functools
import keyword
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "Refused",
    "call",
    "dotted",
    "evaluate",
    "expression",
    "imported",
    "is_name",
    "literal",
    "module_path",
    "unparsed",
]


class Refused(ValueError):
    """Text that is not what a catalog may hold: a call, a subscript, a dunder, a name that is no identifier."""


# The empty sets have no literal: `set()` and `frozenset()` are the only calls a value may hold (the builtins,
# whatever the namespace binds to those names).
_EMPTY: dict[str, Callable[[], Any]] = {"set": set, "frozenset": frozenset}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}  # fmt: skip


def is_name(text: object) -> bool:
    """Whether `text` is a plain Python name (ASCII, not a keyword)."""
    return isinstance(text, str) and text.isascii() and text.isidentifier() and not keyword.iskeyword(text)


def _plain(text: str, what: str) -> str:
    """A name a value may read: no dunder (`__class__`, `__globals__`, `__builtins__` lead to code)."""
    if text.startswith("__") and text.endswith("__"):
        raise Refused(f"{what} {text!r} is a dunder")
    return _checked(text, what)


def _checked(text: str, what: str) -> str:
    if not is_name(text):
        raise Refused(f"{what} {text!r} is not a Python name")
    return text


def module_path(text: str) -> str:
    """`text` when it is a dotted module path (`vllm.config.model`), each part a name; else Refused."""
    for part in text.split("."):
        _checked(part, f"the module path {text!r} has a part")
    return text


@functools.lru_cache(maxsize=4096)
def expression(text: str, *, tests: bool = False) -> ast.expr:
    """`text` parsed as one expression of the kinds allowed (see `_allowed`); Refused otherwise."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise Refused(f"not an expression: {text[:80]!r}") from None
    _allowed(node, tests=tests)
    return node


def _allowed(node: ast.AST, *, tests: bool) -> None:
    """Refused unless `node` is a literal, a name or an attribute of one (no dunder), a container of those, a
    negative number or an empty set; with `tests`, also comparisons, `and`, `or` and `not` of those."""
    if isinstance(node, ast.Constant):
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        _plain(node.id, "the name")
        return
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        _plain(node.attr, "the attribute")
        _allowed(node.value, tests=tests)
        return
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
        for element in node.elts:
            _allowed(element, tests=tests)
        return
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        for part in [*node.keys, *node.values]:
            _allowed(part, tests=tests)  # type: ignore[arg-type]
        return
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float, complex)
    ):
        return
    empty = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _EMPTY
    if empty and not node.args and not node.keywords:  # type: ignore[attr-defined]
        return
    if tests and isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        for part in [node.left, *node.comparators]:
            _allowed(part, tests=tests)
        return
    if tests and isinstance(node, ast.BoolOp):
        for part in node.values:
            _allowed(part, tests=tests)
        return
    if tests and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _allowed(node.operand, tests=tests)
        return
    raise Refused(f"{type(node).__name__} is not allowed in a catalog's value: {ast.unparse(node)[:80]!r}")


def evaluate(value: str | ast.expr, names: Mapping[str, Any], *, tests: bool = False) -> Any:
    """The value of an allowed expression (text, or a node `expression` returned), its names looked up in `names`
    (a module's, a frame's): no code of the text runs, only attribute lookups and comparisons of what the names
    hold. Refused for what is not allowed, or a name `names` does not hold."""
    node = expression(value, tests=tests) if isinstance(value, str) else value
    if not isinstance(value, str):
        _allowed(node, tests=tests)
    return _value(node, names)


def _value(node: ast.expr, names: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise Refused(f"no {node.id!r} here")
        return names[node.id]
    if isinstance(node, ast.Attribute):
        return getattr(_value(node.value, names), node.attr)
    if isinstance(node, ast.Tuple):
        return tuple(_value(element, names) for element in node.elts)
    if isinstance(node, ast.List):
        return [_value(element, names) for element in node.elts]
    if isinstance(node, ast.Set):
        return {_value(element, names) for element in node.elts}
    if isinstance(node, ast.Dict):
        return {_value(k, names): _value(v, names) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, names)
        return not operand if isinstance(node.op, ast.Not) else -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.Call):
        return _EMPTY[node.func.id]()  # type: ignore[attr-defined]
    if isinstance(node, ast.BoolOp):
        result: Any = None
        for part in node.values:
            result = _value(part, names)
            if bool(result) != isinstance(node.op, ast.And):
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _value(node.left, names)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _value(comparator, names)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise Refused(f"{type(node).__name__} is not allowed")


def literal(value: Any) -> ast.expr:
    """A value as the node that writes it: a constant, or a tuple, list, set or dict of them; Refused otherwise."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ast.Constant(value)
    if isinstance(value, tuple):
        return ast.Tuple([literal(v) for v in value], ast.Load())
    if isinstance(value, list):
        return ast.List([literal(v) for v in value], ast.Load())
    if isinstance(value, (set, frozenset)):
        if not value:
            return ast.Call(ast.Name(type(value).__name__, ast.Load()), [], [])
        written = ast.Set([literal(v) for v in value])
        return written if isinstance(value, set) else ast.Call(ast.Name("frozenset", ast.Load()), [written], [])
    if isinstance(value, dict):
        return ast.Dict([literal(k) for k in value], [literal(v) for v in value.values()])
    raise Refused(f"a {type(value).__name__} has no literal")


def dotted(text: str) -> ast.expr:
    """`A.b.c` as the node that names it, each part a name; Refused otherwise."""
    first, *rest = text.split(".")
    node: ast.expr = ast.Name(_checked(first, "the name"), ast.Load())
    for part in rest:
        node = ast.Attribute(node, _checked(part, "the attribute"), ast.Load())
    return node


def call(function: ast.expr, keywords: Mapping[str, ast.expr]) -> ast.Call:
    """`function(name=value, ...)`, each keyword's name checked."""
    return ast.Call(function, [], [ast.keyword(_checked(k, "the argument"), v) for k, v in keywords.items()])


def imported(module: str, names: Sequence[str]) -> ast.ImportFrom:
    """`from module import a, b`, the path and the names checked."""
    return ast.ImportFrom(module_path(module), [ast.alias(_checked(n, "the imported name")) for n in names], 0)


def unparsed(blocks: Sequence[Sequence[ast.stmt]]) -> str:
    """A program's statements as source, its blocks (imports, setup, the build) set apart by a blank line."""
    shown = []
    for block in blocks:
        if block:
            module = ast.fix_missing_locations(ast.Module(list(block), type_ignores=[]))
            shown.append(ast.unparse(module))
    return "\n\n".join(shown) + "\n"
