# Resolve: what a name holds where a raise reads it, from the statements the walk passed on the way there.
from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Protocol

__all__ = ["Chain", "Source", "bindings", "bound_in", "bound_names", "resolve_list", "resolve_name", "substitute"]

# Statement lists from the function body down to the current statement, with its index in each, and
# the compound statement that owns each list (None for the function body).
Chain = tuple[tuple[Sequence[ast.stmt], int, ast.stmt | None], ...]
Located = ast.expr | ast.stmt | ast.pattern | ast.keyword


class Source(Protocol):
    """The text of a parsed file, by node (the walk's visitor is one)."""

    def segment(self, node: Located) -> str: ...

    def column(self, node: Located) -> int: ...


def resolve_name(name: str, chain: Chain, source: Source) -> list[str]:
    """Return the sources of what was assigned (then `+=`-ed) to `name` before the raise on every path,
    or nothing.

    Walks back through the statements that precede the raise in its block, then in each enclosing
    block up to the function body. Any other binding of the name on the way (inside a branch, a loop,
    an unpacking, a `def`, an import, a match pattern, a walrus) makes the value path-dependent, and the
    name stays unresolved; so does a value that is not a string when anything on the way may change it
    (`errors = []` then `errors.append(...)`). A value built from the name's earlier value
    (`msg = msg.format(n)`) is that value put in its place; an `if` whose every branch assigns a string
    gives one of those strings.
    """
    pieces: list[ast.expr] = []
    used: set[int] = set()
    passed: list[ast.AST] = []  # what ran on the way: it may change a value that is not a string in place
    augmented = False
    for level in range(len(chain) - 1, -1, -1):
        body, index, owner = chain[level]
        for position in range(index - 1, -1, -1):
            statement = body[position]
            value = _plain_assignment(statement, name)
            if value is not None:
                if not _stringy(value) and (augmented or any(_may_change(node, name) for node in passed)):
                    return []
                rest = [source.segment(piece) for piece in pieces]
                if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)):
                    return [source.segment(value), *rest]
                if not _built_on(value, name):
                    return [source.segment(value), *rest]  # one placeholder, reading the earlier value
                # Built from its own earlier value: that value, resolved where this statement stands.
                earlier = resolve_name(name, (*chain[:level], (body, position, owner)), source)
                if not earlier:
                    return []
                return [substitute(source, value, name, "(" + " + ".join(earlier) + ")"), *rest]
            if (
                isinstance(statement, ast.AugAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id == name
                and isinstance(statement.op, ast.Add)
            ):
                pieces.insert(0, statement.value)
                used.add(id(statement))
                augmented = True
                continue
            if any(True for _ in bindings(statement, name)):
                branches = _branches(statement, name, source) if not pieces else None
                return [branches] if branches is not None else []
            passed.append(statement)
        if owner is None:
            continue
        # A loop or try may have run other bindings of the name before reaching the raise.
        if isinstance(owner, ast.If | ast.Match):
            if any(True for header in _headers(owner) for _ in bindings(header, name)):
                return []
            passed += [header for header in _headers(owner) if not _harmless_test(header, name)]
        elif any(id(binding) not in used for binding in bindings(owner, name)):
            return []
        else:
            passed += _ran_before(owner, body)
    return []


def _ran_before(owner: ast.stmt, body: Sequence[ast.stmt]) -> list[ast.AST]:
    """What of a compound statement may have run before its block `body` (besides the statements of
    `body` above the raise): a `with`'s items, the other blocks of a `try`, all of a loop (an earlier
    turn)."""
    if isinstance(owner, ast.With | ast.AsyncWith):
        return list(owner.items)
    if isinstance(owner, ast.Try | ast.TryStar):
        if body is owner.body:
            return []
        handlers = [handler for handler in owner.handlers if handler.body is not body]
        return [*owner.body, *handlers, *(owner.orelse if body is owner.finalbody else [])]
    return [owner]


def _built_on(value: ast.expr, name: str) -> bool:
    """Tell whether `value` formats or extends the string `name` holds (`name.format(...)`, `name % x`)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "format":
        base = value.func.value
    elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod | ast.Add):
        base = value.left
    else:
        return False
    return isinstance(base, ast.Name) and base.id == name


def _branches(statement: ast.stmt, name: str, source: Source) -> str | None:
    """The strings an `if`/`else` assigns to `name`, one per branch, as one conditional expression's
    source; None unless every branch binds the name exactly once, by a plain assignment of a string."""
    if not isinstance(statement, ast.If) or not statement.orelse:
        return None
    values: list[str] = []
    for branch in (statement.body, statement.orelse):
        if len(branch) == 1 and isinstance(branch[0], ast.If) and branch is statement.orelse:
            inner = _branches(branch[0], name, source)
            if inner is None or any(True for _ in bindings(branch[0].test, name)):
                return None
            values.append(inner)
            continue
        assigned = [_plain_assignment(inner, name) for inner in branch]
        found = [value for value in assigned if value is not None]
        bound = sum(1 for inner in branch for _ in bindings(inner, name))
        if len(found) != 1 or bound != 1 or not _stringy(found[0]):
            return None
        values.append(source.segment(found[0]))
    if any(True for _ in bindings(statement.test, name)):
        return None
    return f"({values[0]}) if _ else ({values[1]})"


def bound_in(name: str, defs: Sequence[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]) -> bool:
    """Tell whether `name` is local to one of the functions around a raise (so not the module's)."""
    if isinstance(defs[-1], ast.ClassDef):
        return True  # a class body's own names: not worth the trouble
    for node in defs:
        if isinstance(node, ast.ClassDef):
            continue
        arguments = node.args
        parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        if any(parameter.arg == name for parameter in parameters):
            return True
        if any(True for statement in node.body for _ in bindings(statement, name)):
            return True
    return False


def bound_names(node: ast.AST) -> list[str]:
    """The names a binding node (as `bindings` yields them) binds."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.AugAssign):
        return [node.target.id] if isinstance(node.target, ast.Name) else []
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [alias.asname or alias.name.partition(".")[0] for alias in node.names]
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    bound = getattr(node, "name", None)
    return [bound] if isinstance(bound, str) else []


# What a list joined into a message holds: the expression it started from when that is not a list
# display (its items unknown), then each item's expression and whether it is there on every path.
JoinedList = tuple[ast.expr | None, list[tuple[ast.expr, bool]]]


def resolve_list(name: str, chain: Chain) -> JoinedList | None:
    """Return how the list `name` was filled before the raise (`x = [...]`, then `x.append(...)` in
    straight-line code or under `if`s), or None when anything else on the way may bind or change it."""
    items: list[tuple[ast.expr, bool]] = []
    for body, index, owner in reversed(chain):
        for statement in reversed(body[:index]):
            value = _plain_assignment(statement, name)
            if value is not None:
                if isinstance(value, ast.List):
                    if any(isinstance(element, ast.Starred) for element in value.elts):
                        return None
                    return None, [(element, True) for element in value.elts] + items
                return value, items
            found = _appends(statement, name, certain=True)
            if found is None:
                return None
            items[:0] = found
        if owner is not None:
            headers = _headers(owner) if isinstance(owner, ast.If | ast.Match) else _ran_before(owner, body)
            if any(_mentions(header, name) for header in headers if not _harmless_test(header, name)):
                return None
    return None


def _appends(statement: ast.stmt, name: str, *, certain: bool) -> list[tuple[ast.expr, bool]] | None:
    """The items `statement` appends to the list `name` (under an `if`, maybe not), or None when it
    touches the name otherwise."""
    if (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr == "append"
        and isinstance(statement.value.func.value, ast.Name)
        and statement.value.func.value.id == name
        and len(statement.value.args) == 1
        and not statement.value.keywords
        and not isinstance(statement.value.args[0], ast.Starred)
        and not _mentions(statement.value.args[0], name)
    ):
        return [(statement.value.args[0], certain)]
    if isinstance(statement, ast.If):
        if _mentions(statement.test, name) and not _harmless_test(statement.test, name):
            return None
        found: list[tuple[ast.expr, bool]] = []
        for inner in [*statement.body, *statement.orelse]:
            more = _appends(inner, name, certain=False)
            if more is None:
                return None
            found += more
        return found
    return None if _mentions(statement, name) else []


def _harmless_test(node: ast.AST, name: str) -> bool:
    """Tell whether a condition only asks about the value `name` holds (whether it is empty, how long
    it is, what it equals, its type), which changes nothing in place."""
    if isinstance(node, ast.Name | ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _harmless_test(node.operand, name)
    if isinstance(node, ast.BoolOp):
        return all(_harmless_test(value, name) or not _mentions(value, name) for value in node.values)
    if isinstance(node, ast.Compare):
        return all(_harmless_test(part, name) or not _mentions(part, name) for part in [node.left, *node.comparators])
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("len", "bool", "isinstance", "callable", "type")
        and all(isinstance(arg, ast.Name) or not _mentions(arg, name) for arg in node.args)
    )


def _headers(owner: ast.If | ast.Match) -> list[ast.AST]:
    """The parts of an `if` or `match` that run before any of its branches: the test, or the subject
    with the patterns and guards of its cases."""
    if isinstance(owner, ast.If):
        return [owner.test]
    headers: list[ast.AST] = [owner.subject]
    for case in owner.cases:
        headers.append(case.pattern)
        if case.guard is not None:
            headers.append(case.guard)
    return headers


def _stringy(value: ast.expr) -> bool:
    """Tell whether an expression certainly gives a str, which nothing can change in place."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, ast.JoinedStr):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _stringy(value.left) or _stringy(value.right)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
        return _stringy(value.left)
    if isinstance(value, ast.IfExp):
        return _stringy(value.body) and _stringy(value.orelse)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("format", "join")
        and _stringy(value.func.value)
    )


def _may_change(node: ast.AST, name: str) -> bool:
    """Tell whether `node` may change the value `name` holds in place (it uses the name other than as a
    test of emptiness or length)."""
    if isinstance(node, ast.If | ast.While):
        return (_mentions(node.test, name) and not _harmless_test(node.test, name)) or any(
            _may_change(inner, name) for inner in [*node.body, *node.orelse]
        )
    return _mentions(node, name)


def _mentions(node: ast.AST, name: str) -> bool:
    """Tell whether `name` appears under `node` (nested scopes included: a closure may change it)."""
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)) or any(
        True for _ in bindings(node, name)
    )


def _plain_assignment(statement: ast.stmt, name: str) -> ast.expr | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Name) and target.id == name:
            return statement.value
    if (
        isinstance(statement, ast.AnnAssign)
        and statement.value is not None
        and isinstance(statement.target, ast.Name)
        and statement.target.id == name
    ):
        return statement.value
    return None


def bindings(node: ast.AST, name: str | None) -> Iterator[ast.AST]:
    """Yield the statements, expressions or patterns under node that bind `name` (any name for None),
    not in nested scopes, whose own name is bound here all the same."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Lambda):
            stack.extend(_evaluated_here(current))
            continue
        if any(name is None or bound == name for bound in _binds(current)):
            yield current
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(_evaluated_here(current))
            continue
        if isinstance(current, ast.AugAssign):
            continue
        stack.extend(ast.iter_child_nodes(current))


def _evaluated_here(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda) -> list[ast.AST]:
    """The parts of a nested scope's definition run where it is defined, not inside it (a walrus there
    binds here): decorators, default values, base classes and class keywords."""
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    defaults: list[ast.AST] = [*node.args.defaults, *(value for value in node.args.kw_defaults if value is not None)]
    return defaults if isinstance(node, ast.Lambda) else [*node.decorator_list, *defaults]


def _binds(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id] if isinstance(node.ctx, ast.Store | ast.Del) else []
    if isinstance(
        node,
        ast.AugAssign
        | ast.Global
        | ast.Nonlocal
        | ast.Import
        | ast.ImportFrom
        | ast.MatchMapping
        | ast.FunctionDef
        | ast.AsyncFunctionDef
        | ast.ClassDef
        | ast.ExceptHandler
        | ast.MatchAs
        | ast.MatchStar,
    ):
        return bound_names(node)
    return []


def substitute(source: Source, value: ast.expr, name: str, replacement: str) -> str:
    """The source of `value` with each use of `name` in it replaced by `replacement`."""
    text = source.segment(value)
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    spans = []
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and node.id == name:
            row = node.lineno - value.lineno
            column = source.column(node) - (source.column(value) if row == 0 else 0)
            spans.append(starts[row] + column)
    for start in sorted(spans, reverse=True):
        text = text[:start] + replacement + text[start + len(name) :]
    return text
