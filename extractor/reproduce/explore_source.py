# Explore's reading of the raise's function as the runtime's own source writes it (the installed package): the
# lines its path's steps cover, what it reads before the raise, the constants it writes, the operands of each test
# and how many come out as the raise needs in a running frame. The standard library only (runs in the runtime).
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import os
import re
import types
import typing
from collections.abc import Iterator
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import programs
else:  # run beside child.py in a runtime, from its folder
    programs = importlib.import_module("programs")

_Node = typing.TypeVar("_Node", bound=ast.AST)
# A test's operands joined by `and`/`or` (the test itself when it is not joined), and whether they are the
# package's own source (run as its code) or a catalog's text (evaluated only as programs.evaluate allows).
Operands = tuple[list[ast.expr], bool]


@functools.lru_cache(maxsize=8)
def _tree(path: str) -> ast.Module | None:
    """A source file parsed, once for the readers below (None: it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as file:
            return ast.parse(file.read())
    except (OSError, SyntaxError, ValueError):
        return None


def _function_at(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function around a line."""
    functions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or 0)
    ]
    return max(functions, key=lambda node: node.lineno, default=None)


def located(relative: str, roots: list[str]) -> str:
    """A path below the package's folder's parent (`vllm/config/model.py`) as the file the code runs from."""
    for root in roots:
        candidate = os.path.join(os.path.dirname(root), relative)
        if os.path.exists(candidate):
            return candidate
    return relative


def path_spans(path: str, lines: list[int]) -> dict[int, int]:
    """Each line a statement's head covers (an `if`'s test over several lines, a `raise` over several) -> the line
    it starts on: where the tracer sees a step of the path run."""
    out = {line: line for line in lines}
    tree = _tree(path)
    if tree is None:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno in lines:
            head = getattr(node, "test", None) or getattr(node, "iter", None) or node
            for line in range(node.lineno, (getattr(head, "end_lineno", None) or node.lineno) + 1):
                out.setdefault(line, node.lineno)
    return out


def read_before(path: str, line: int) -> list[str]:
    """What the raise's function reads of its object before the raise, in order: `self.a` as `a`, `self.a.b` (or
    `a.b` after `a = self.a`) as `a.b`, and its parameters: more arguments for the search to try."""
    tree = _tree(path)
    function = _function_at(tree, line) if tree is not None else None
    if tree is None or function is None:
        return []
    out = [a.arg for a in [*function.args.args, *function.args.kwonlyargs] if a.arg not in ("self", "cls")]
    # The environment variables it reads (`envs.VLLM_X`), and those of the properties and methods it calls.
    called = {n.attr for n in ast.walk(function) if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "self"}
    for scanned in [function, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in called)]:
        for part in ast.walk(scanned):
            if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "envs":
                out.append(f"env.{part.attr}")
            named = _environment_name(part)
            if named:
                out.append(f"env.{named}")
    aliases: dict[str, str] = {}
    for step in ast.walk(function):
        if isinstance(step, ast.Assign) and len(step.targets) == 1:
            value = ast.unparse(step.value)
            if re.fullmatch(r"self\.\w+", value) and isinstance(step.targets[0], ast.Name):
                aliases[step.targets[0].id] = value.removeprefix("self.")
    for attribute in sorted(  # (what it reads before the raise first, then after: other checks it must pass)
        (n for n in ast.walk(function) if isinstance(n, ast.Attribute)), key=lambda n: (n.lineno > line, n.lineno)
    ):
        text = ast.unparse(attribute)
        found = re.match(r"(\w+)\.(\w+)(?:\.(\w+))?", text)
        if found is None:
            continue
        base, first, second = found.groups()
        if base in out and base not in aliases:  # a parameter's field: `parallel_config.tensor_parallel_size`
            out.append(f"{base}.{first}")
        if base == "self":
            out += [first] + ([f"{first}.{second}"] if second else [])
        elif base in aliases:
            out += [aliases[base], f"{aliases[base]}.{first}"]
    return list(dict.fromkeys(out))


def _environment_name(node: ast.AST) -> str | None:
    """The variable `os.environ.get("X")`, `os.environ["X"]` or `os.getenv("X")` reads."""
    getters = ("os.environ.get", "os.getenv", "environ.get", "getenv")
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value) if ast.unparse(node.func) in getters else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value) if ast.unparse(node.value) in ("os.environ", "environ") else None
    return None


def constants_in(path: str, line: int) -> list[str]:
    """The strings and numbers the function around a line writes, as source, in order (at most 30)."""
    tree = _tree(path)
    function = _function_at(tree, line) if tree is not None else None
    if function is None:
        return []
    out: list[str] = []
    nodes = [n for n in ast.walk(function) if isinstance(n, ast.Constant)]
    # Nearest the line first: those just above it (what the check compares with), then below.
    for node in sorted(nodes, key=lambda n: (n.lineno > line, abs(line - n.lineno), n.col_offset)):
        if type(node.value) in (str, int, float) and len(repr(node.value)) < 40:
            text = repr(node.value)
            if text not in out and not (isinstance(node.value, str) and " " in node.value):
                out.append(text)
    return out[:30]


def operands(path: str, line: int, test: str) -> Operands:
    """The operands of the test at a line of the path joined by `and`/`or` (the test itself when it is not
    joined), as the runtime's own source writes it (True: code of the package, run as such); where the source
    has no test at that line, the catalog's text (False: data, evaluated only as programs.evaluate allows)."""
    node = _test_at(path, line)
    own = node is not None
    if node is None:
        try:
            node = programs.expression(test, tests=True)
        except programs.Refused:
            try:
                node = programs.expression(f"({test})", tests=True)
            except programs.Refused:
                return [], False
    return (list(node.values) if isinstance(node, ast.BoolOp) else [node]), own


def _test_at(path: str, line: int) -> ast.expr | None:
    """What the statement at a line of the source tests: an `if`'s or `while`'s test, `target in iter` of a `for`."""
    tree = _tree(path)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.If, ast.While)) and node.lineno == line:
            return node.test
        if isinstance(node, ast.For) and node.lineno == line and isinstance(node.target, ast.Name):
            name = ast.Name(node.target.id, ast.Load())
            return ast.fix_missing_locations(ast.copy_location(ast.Compare(name, [ast.In()], [node.iter]), node))
    return None


def helpful(frame: types.FrameType, tests: Operands, want: bool) -> int:
    """How many of a condition's operands come out as the raise needs, read in the frame about to test them: the
    package's own test run as its code, a catalog's text only as data (names, attributes, literals, comparisons)."""
    count = 0
    nodes, own = tests
    scope = dict(frame.f_locals)
    names = {**frame.f_globals, **scope}
    for operand in nodes:
        try:
            if own:
                value = eval(compile(ast.Expression(operand), "<test>", "eval"), frame.f_globals, scope)
            else:
                value = programs.evaluate(operand, names, tests=True)
        except BaseException:
            continue
        count += bool(value) == want
    return count


def in_tests(parsed: dict[int, Operands], kind: type[_Node]) -> Iterator[_Node]:
    """The nodes of a kind in the tests of the raise's path (`ast.Compare`: its comparisons)."""
    for nodes, _ in parsed.values():
        for operand in nodes:
            yield from (node for node in ast.walk(operand) if isinstance(node, kind))


def compared_with(parsed: dict[int, Operands], namespace: dict[str, Any]) -> dict[str, list[str]]:
    """The values the path's conditions compare a parameter or field with, where they are the module's own
    names, as source: `dtype == torch.float16` -> `torch.float16`, `model_type in _NOT_SUPPORTED` -> its members."""
    out: dict[str, list[str]] = {}
    for node in in_tests(parsed, ast.Compare):
        left = node.left
        name = left.id if isinstance(left, ast.Name) else None
        if isinstance(left, ast.Attribute) and ast.unparse(left.value) == "self":
            name = left.attr
        if name is None or len(node.ops) != 1 or isinstance(node.comparators[0], ast.Constant):
            continue
        text = ast.unparse(node.comparators[0])
        try:  # (the module's names, attributes, literals: no call runs here)
            value = programs.evaluate(node.comparators[0], namespace)
        except Exception:
            continue
        containers = (dict, list, tuple, set, frozenset)
        if isinstance(node.ops[0], (ast.In, ast.NotIn)) and isinstance(value, containers):
            members = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
            found = [repr(m) for m in members[:10] if type(m) in (str, int, float)]
        elif isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            found = [text] if not isinstance(value, (types.FunctionType, types.MethodType)) else []
        else:
            found = []
        out.setdefault(name, []).extend(v for v in found if v not in out.get(name, []))
    return out


def looked_for(parsed: dict[int, Operands], namespace: dict[str, Any]) -> list[str]:
    """Texts the module's functions a condition calls look for in a text (`"://" in path`,
    `path.startswith("s3://")`), each in a text that has it, as source: `'xx://x'`, `'s3://x'`."""
    out: list[str] = []
    for node in in_tests(parsed, ast.Call):
        helper = namespace.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if not isinstance(helper, types.FunctionType):
            continue
        try:
            tree = ast.parse(inspect.getsource(helper).strip())
        except (OSError, TypeError, SyntaxError):
            continue
        for part in ast.walk(tree):
            if isinstance(part, ast.Compare) and isinstance(part.left, ast.Constant):
                if isinstance(part.left.value, str) and isinstance(part.ops[0], ast.In):
                    out.append(repr(f"xx{part.left.value}x"))
            elif isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.args:
                first, how = part.args[0], part.func.attr
                if (
                    how in ("startswith", "endswith")
                    and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                ):
                    text = f"{first.value}x" if how == "startswith" else f"x{first.value}"
                    out.append(repr(text))
    return list(dict.fromkeys(out))[:10]
