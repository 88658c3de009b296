# Definitions: what a name a raise's conditions read holds there, read from the record's own source (the lines the
# catalog keeps around the raise) with `ast`, nothing run: the one assignment before the raise on its path that
# nothing rebinds in between, and the field a pydantic field validator's value is. Anything less certain is None.
from __future__ import annotations

import ast
import functools
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Function", "read_function"]

_BLOCKS = ("body", "orelse", "finalbody")  # (the statement lists a path to the raise goes down)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_EXITS = (ast.Return, ast.Raise)
_MUTATORS = {"append", "extend", "insert", "add", "update", "pop", "popitem", "remove", "discard", "clear",
             "setdefault", "sort", "reverse"}  # fmt: skip
_MOST_TRIMMED = 40  # lines taken off the window's end until what is left parses (a statement cut in two)


@dataclass(frozen=True, slots=True)
class Function:
    """The raising function as the record's source window shows it: the statements on the path down to the raise,
    and the def itself when the window holds it (else the window's statements from the first that parses)."""

    path: tuple[ast.AST, ...]  # from the parsed module down to the Raise, the Raise last
    node: ast.FunctionDef | ast.AsyncFunctionDef | None
    offset: int  # what a node's line number is short of the source's

    def definition(self, name: str) -> ast.expr | None:
        """The value `name` holds at the raise: the last plain assignment to it (`name = value`, `name: T = value`)
        in a block the path goes through, before the path's statement; None when there is none, when anything
        binds `name` or rebinds what the value reads between it and the raise, or when a loop around the raise
        (and not around the assignment) binds either."""
        found: tuple[int, ast.expr] | None = None
        order = list(self._before())
        for at, statement in enumerate(order):
            value = _assigned(statement, name)
            if value is not None:
                found = (at, value)
        if found is None:
            return None
        at, value = found
        watched = {name} | _reads(value)
        later = order[at + 1 :]
        if any(_binds(statement, watched) for statement in later):
            return None
        assignment = order[at]
        for ancestor in self.path[:-1]:
            if isinstance(ancestor, _LOOPS) and not _within(assignment, ancestor) and _binds(ancestor, watched):
                return None
            if _header_binds(ancestor, watched):
                return None
        return value

    def exits(self) -> list[tuple[int, ast.expr]]:
        """The tests of the early exits before the raise on its path (`if self.x is None: return`, an `if` with no
        else whose body ends in a return or a raise), each with its line in the source: the raise runs only where
        each is false."""
        found = []
        for statement in self._before():
            if isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], _EXITS):
                found.append((statement.lineno + self.offset, statement.test))
        return found

    def unbound(self, name: str) -> bool:
        """Whether nothing before the raise on its path binds `name` (it holds what the function was given)."""
        return not any(_binds(statement, {name}) for statement in self._before()) and not any(
            _header_binds(ancestor, {name}) for ancestor in self.path
        )

    def parameter(self, name: str) -> bool:
        """Whether `name` is a parameter of the function (not self or cls) that holds what it was given."""
        if self.node is None:
            return False
        arguments = self.node.args
        names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
        return name in names and name not in ("self", "cls") and self.unbound(name)

    def validated_field(self) -> tuple[str, str] | None:
        """(the parameter, the field) of a pydantic field validator of one field: `@field_validator("x")` on
        `def v(cls, value)` is ("value", "x"); None for any other function."""
        if self.node is None:
            return None
        fields: list[str] = []
        for decorator in self.node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            called = decorator.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name == "field_validator":
                fields += [a.value for a in decorator.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        positional = [*self.node.args.posonlyargs, *self.node.args.args]
        if len(fields) != 1 or fields[0] == "*" or len(positional) < 2:
            return None
        return positional[1].arg, fields[0]

    def _before(self) -> Iterator[ast.stmt]:
        """The statements that run before the raise on its path, outer blocks first, each once."""
        for parent, child in zip(self.path, self.path[1:], strict=False):
            for block in _BLOCKS:
                statements = getattr(parent, block, None)
                if isinstance(statements, list) and child in statements:
                    yield from statements[: statements.index(child)]


@functools.lru_cache(maxsize=1024)  # (a record's check is built a few times: its window is read once)
def read_function(source: str, first_line: int, raise_line: int, raise_end: int) -> Function | None:
    """The function around the raise at `raise_line` (through `raise_end`), from a window of source whose first
    line is `first_line`; None when no part of the window around the raise parses."""
    lines = source.split("\n")
    at = raise_line - first_line
    if not 0 <= at < len(lines) or raise_end < raise_line:
        return None
    start = _def_start(lines, at)
    starts = [start] if start is not None else _block_starts(lines, at)
    for begin in starts:
        found = _parsed(lines, begin, raise_end - first_line, at, first_line)
        if found is not None:
            return found
    return None


def _block_starts(lines: list[str], at: int) -> list[int]:
    """The lines a window without its def may be read from: those indented no deeper than any line after them up
    to the raise (a block the raise is in, from there on)."""
    starts, lowest = [], _indent(lines[at])
    for index in range(at, -1, -1):
        if not lines[index].strip() or lines[index].strip().startswith("#"):
            continue
        if _indent(lines[index]) <= lowest:
            lowest = _indent(lines[index])
            starts.append(index)
    return starts[::-1]


def _def_start(lines: list[str], at: int) -> int | None:
    """The first line (its decorators') of the def around line `at`, when the window holds it."""
    limit = _indent(lines[at])
    for index in range(at - 1, -1, -1):
        text = lines[index].strip()
        if not text or text.startswith("#"):
            continue
        indent = _indent(lines[index])
        if indent >= limit:
            continue
        limit = indent
        if text.startswith(("def ", "async def ")):
            while index > 0 and lines[index - 1].strip().startswith("@") and _indent(lines[index - 1]) == indent:
                index -= 1
            return index
    return None


def _parsed(lines: list[str], begin: int, end: int, at: int, first: int) -> Function | None:
    """The window from `begin`, its end trimmed (never above the raise's end) until it parses, and the path down to
    the raise at line `at`."""
    for stop in range(len(lines), max(end, at, len(lines) - _MOST_TRIMMED - 1), -1):
        text = textwrap.dedent("\n".join(lines[begin:stop]))
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        path = _path_to(tree, at - begin + 1)
        if path is None:
            return None
        node = next((n for n in path if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)
        return Function(path=path, node=node, offset=first + begin - 1)
    return None


def _path_to(tree: ast.Module, line: int) -> tuple[ast.AST, ...] | None:
    """The nodes from the module down to the Raise at `line`; None when there is none there or it is inside a
    nested def or class (the raise would not run with the function's own statements)."""

    def down(node: ast.AST, path: tuple[ast.AST, ...]) -> tuple[ast.AST, ...] | None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Raise) and child.lineno == line:
                return (*path, child)
            nested = isinstance(child, ast.ClassDef) or (
                isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and node is not tree
            )  # (a def in the function, or a class: its raise does not run with the function's statements)
            if isinstance(child, ast.stmt | ast.excepthandler) and not nested:
                first, last = child.lineno, child.end_lineno or child.lineno
                if first <= line <= last:
                    return down(child, (*path, child))
        return None

    return down(tree, (tree,))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _assigned(statement: ast.stmt, name: str) -> ast.expr | None:
    """The value of `name = value` or `name: T = value`, else None."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Name) and target.id == name:
            return statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.value if statement.target.id == name else None
    return None


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` of a chain of names, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _reads(value: ast.expr) -> set[str]:
    """The names and whole attribute chains (`self.a.b`, not `self.a` of it) `value` reads."""
    inner = {id(node.value) for node in ast.walk(value) if isinstance(node, ast.Attribute)}
    found = {_dotted(node) for node in ast.walk(value) if isinstance(node, ast.Name | ast.Attribute)}
    found -= {_dotted(node) for node in ast.walk(value) if id(node) in inner}
    return {dotted for dotted in found if dotted is not None}


def _binds(node: ast.AST, watched: set[str]) -> bool:
    """Whether `node` (or anything in it) binds a name of `watched`, or stores into one (an attribute, an item, a
    method that changes it in place)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in _MUTATORS:
            inner = inner.func.value  # (`x.append(1)` changes x)
            dotted = _dotted(inner)
            if dotted is None or any(dotted == w or dotted.startswith(w + ".") for w in watched):
                return True
        elif isinstance(inner, ast.Subscript) and isinstance(inner.ctx, ast.Store | ast.Del):
            dotted = _dotted(inner.value)
            if dotted is None or any(dotted == w or dotted.startswith(w + ".") for w in watched):
                return True
        elif isinstance(inner, ast.Name | ast.Attribute) and isinstance(inner.ctx, ast.Store | ast.Del):
            dotted = _dotted(inner)
            if dotted is None or any(dotted == w or w.startswith(dotted + ".") or dotted.startswith(w + ".")
                                     for w in watched):  # fmt: skip
                return True
        elif _named_binding(inner) in watched:
            return True
    return False


def _named_binding(node: ast.AST) -> str | None:
    """The name a walrus, a def or class, an import or an except clause binds, else None."""
    if isinstance(node, ast.NamedExpr):
        return node.target.id
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.alias):
        return (node.asname or node.name).partition(".")[0]
    if isinstance(node, ast.ExceptHandler):
        return node.name
    return None


def _header_binds(node: ast.AST, watched: set[str]) -> bool:
    """Whether the header of a block on the path (an if's test, a loop's target, a with's items) binds one."""
    parts: list[ast.AST] = []
    if isinstance(node, ast.If | ast.While):
        parts = [node.test]
    elif isinstance(node, ast.For | ast.AsyncFor):
        parts = [node.target, node.iter]
    elif isinstance(node, ast.With | ast.AsyncWith):
        parts = list(node.items)
    return any(_binds(part, watched) for part in parts)


def _within(node: ast.AST, block: ast.AST) -> bool:
    return any(inner is node for inner in ast.walk(block))
