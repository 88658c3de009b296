# Facts: what a file's classes declare (fields, defaults, constraints, docs) and which CLI flags it defines.
from __future__ import annotations

import ast
import inspect
import operator
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from extractor.model.scanned import ScannedClassFacts, ScannedFieldFacts, ScannedFlagFacts

__all__ = ["CONSTRAINTS", "file_facts", "may_define_flags", "reads_facts_from"]

# Keyword arguments of pydantic's Field / dataclasses' field that constrain a value.
CONSTRAINTS = ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern", "strict", "allow_inf_nan")


Segment = Callable[[ast.expr | ast.stmt], str]


def file_facts(
    body: Sequence[ast.stmt], segment: Segment, source: str
) -> tuple[list[ScannedClassFacts], ScannedFlagFacts | None]:
    """Read a parsed module's top-level classes and, if it defines CLI flags from configs, those."""
    constants = _constants(body, segment)
    classes = [_class_facts(node, segment, constants) for node in body if isinstance(node, ast.ClassDef)]
    flags = None
    if may_define_flags(source):
        flags = _flag_facts(ast.Module(body=list(body), type_ignores=[]), segment)
    return [c for c in classes if c.fields or c.postInit], flags


def may_define_flags(source: str) -> bool:
    """Whether a file's text may define CLI flags from configs: they need both a `get_kwargs(...)` and an
    `add_argument(...)` call, anywhere (in any def), and without both names in the text there are none
    (walking every node of a big module is not free)."""
    return "get_kwargs" in source and "add_argument" in source


def reads_facts_from(lines: Sequence[str]) -> bool:
    """Whether the facts of the file read anything from these lines of a def that holds no flags (see
    may_define_flags): of the defs, they read `__post_init__` alone (what it sets on `self`)."""
    return any("__post_init__" in line for line in lines)


def _constants(body: Sequence[ast.stmt], segment: Segment) -> dict[str, str]:
    """The names a module binds to a literal, as their values read (see _bind)."""
    constants: dict[str, str] = {}
    for statement in body:
        _bind(statement, segment, constants)
    return constants


def _bind(statement: ast.stmt, segment: Segment, constants: dict[str, str]) -> None:
    """Note the name a statement binds to a literal, as its value reads: `DEFAULT_MAX_NUM_BATCHED_TOKENS:
    ClassVar[int] = 2048` is 2048, `16 * 1024 * 1024` is 16777216. A default written as such a name is
    shown as its value: what a user passes on the command line."""
    target, value = None, None
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, value = statement.targets[0], statement.value
    elif isinstance(statement, ast.AnnAssign):
        target, value = statement.target, statement.value
    if isinstance(target, ast.Name) and value is not None:
        shown = _literal(value, segment, constants)
        if shown is None:
            constants.pop(target.id, None)  # (bound again to something else: no longer that value)
        else:
            constants[target.id] = shown


_ARITHMETIC: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
}


def _literal(value: ast.expr, segment: Segment, constants: dict[str, str]) -> str | None:
    """A literal's source, a name of one's value, or the value of whole-number arithmetic on them (kept
    small: nothing past 128 bits is worked out); None for anything else."""
    if isinstance(value, ast.Name):
        return constants.get(value.id)
    number = _whole_number(value, constants)
    if number is not None:
        return str(number)
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return " ".join(segment(value).split())


def _whole_number(value: ast.expr, constants: dict[str, str]) -> int | None:
    if isinstance(value, ast.Constant) and type(value.value) is int:
        return value.value
    if isinstance(value, ast.Name) and constants.get(value.id, "").lstrip("-").isdigit():
        return int(constants[value.id])
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        inner = _whole_number(value.operand, constants)
        return None if inner is None else -inner
    if not (isinstance(value, ast.BinOp) and type(value.op) in _ARITHMETIC):
        return None
    left, right = _whole_number(value.left, constants), _whole_number(value.right, constants)
    if left is None or right is None or (isinstance(value.op, ast.Pow | ast.LShift) and not 0 <= right <= 128):
        return None
    if isinstance(value.op, ast.FloorDiv) and right == 0:
        return None
    if isinstance(value.op, ast.Pow) and abs(left).bit_length() * right > 128:
        return None
    result = _ARITHMETIC[type(value.op)](left, right)
    return result if result.bit_length() <= 128 else None


def _class_facts(node: ast.ClassDef, segment: Segment, module_constants: dict[str, str]) -> ScannedClassFacts:
    fields: list[ScannedFieldFacts] = []
    body = node.body
    constants = dict(module_constants)  # and the class's own, as they are bound
    for index, statement in enumerate(body):
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            _bind(statement, segment, constants)
            continue
        if _is_classvar(statement.annotation, segment):
            _bind(statement, segment, constants)
            continue
        default, constraints, init = _default(statement.value, segment, constants)
        doc = None
        following = body[index + 1] if index + 1 < len(body) else None
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            doc = _written(inspect.cleandoc(following.value.value))
        fields.append(
            ScannedFieldFacts(
                name=statement.target.id,
                annotation=" ".join(segment(statement.annotation).split()),
                default=default,
                constraints=constraints,
                doc=doc,
                init=init,
            )
        )
    post_init: set[str] = set()
    for statement in body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__post_init__":
            for child in _walk(statement, _no_expression):
                targets: Sequence[ast.expr] = ()
                if isinstance(child, ast.Assign):
                    targets = child.targets
                elif isinstance(child, ast.AnnAssign | ast.AugAssign):
                    targets = [child.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and _is_self(target.value):
                        post_init.add(target.attr)
    bases = [segment(base) for base in node.bases]
    return ScannedClassFacts(name=node.name, bases=bases, fields=fields, postInit=sorted(post_init))


def _is_classvar(annotation: ast.expr, segment: Segment) -> bool:
    return bool(segment(annotation).replace("typing.", "").startswith("ClassVar"))


def _default(value: ast.expr | None, segment: Segment, constants: dict[str, str]) -> tuple[str | None, list[str], bool]:
    """Return a field's default as source, its constraints as `name=value` sources (a name bound to a
    literal, in either, as its value), and whether init sets it."""
    if value is None:
        return None, [], True

    def shown(default: ast.expr) -> str:
        return constants[default.id] if isinstance(default, ast.Name) and default.id in constants else segment(default)

    if isinstance(value, ast.Call) and _called(value) in ("Field", "field"):
        default = None
        constraints = []
        init = True
        if value.args:
            default = shown(value.args[0])
        for keyword in value.keywords:
            if keyword.arg == "default":
                default = shown(keyword.value)
            elif keyword.arg == "default_factory":
                default = f"{segment(keyword.value)}()"
            elif keyword.arg == "init" and isinstance(keyword.value, ast.Constant):
                init = bool(keyword.value.value)
            elif keyword.arg in CONSTRAINTS:
                constraints.append(f"{keyword.arg}={shown(keyword.value)}")
        return default, constraints, init
    return shown(value), [], True


def _called(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _flag_facts(tree: ast.Module, segment: Segment) -> ScannedFlagFacts | None:
    """Map `add_argument("--flag", **kwargs_of_Cls["field"])` calls to (class, field) and their flags."""
    kwargs_class: dict[str, str] = {}  # variable -> config class, from `x = get_kwargs(Cls)`
    aliases: dict[str, tuple[str, str]] = {}  # variable -> (class, field), from `y = x["field"]`
    calls: list[ast.Call] = []
    overwritten: set[tuple[str, str]] = set()
    for node in _walk(tree, lambda statement: not _names(segment(statement), _FLAG_CALLS)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
            if isinstance(value, ast.Call) and _called(value) == "get_kwargs" and value.args:
                kwargs_class[name] = segment(value.args[0]).rpartition(".")[2]
            elif (found := _subscript(value)) is not None:
                aliases[name] = found  # resolved against kwargs_class below
        elif isinstance(node, ast.Call):
            if _called(node) == "add_argument":
                calls.append(node)
            elif _called(node) == "update" and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if _self_attribute(owner) and node.args and isinstance(node.args[0], ast.Dict):
                    for key in node.args[0].keys:
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            overwritten.add((owner.attr, key.value))  # type: ignore[attr-defined]
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and _self_attribute(target.value)
                    and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str)
                ):
                    overwritten.add((target.value.attr, target.slice.value))  # type: ignore[attr-defined]
    if not kwargs_class or not calls:
        return None
    flags: list[tuple[str, str, list[str], bool]] = []
    own: dict[str, tuple[list[str], bool]] = {}  # a flag's dest -> its options, of flags added without kwargs
    for call in calls:
        options = [_written(a.value) for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not options or not all(option.startswith("-") for option in options):
            continue
        spread: tuple[str, str] | None = None
        explicit_bool = False
        for keyword in call.keywords:
            if keyword.arg is None:
                spread = spread or _kwargs_target(keyword.value, kwargs_class, aliases)
            elif keyword.arg == "action" and segment(keyword.value).endswith("BooleanOptionalAction"):
                explicit_bool = True
        if spread is not None:
            flags.append((spread[0], spread[1], options, explicit_bool))
        elif not any(keyword.arg is None for keyword in call.keywords):
            own.setdefault(_dest(call, options), (options, explicit_bool))
    flags += _passed_on(tree, own, segment)
    return ScannedFlagFacts(flags=flags, overwritten=sorted(overwritten))


def _dest(call: ast.Call, options: list[str]) -> str:
    """The attribute a flag sets, as argparse names it: `dest=`, else its first long option (`--a-b`: a_b),
    else its first short one."""
    for keyword in call.keywords:
        if keyword.arg == "dest" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            return _written(keyword.value.value)
    named = next((option for option in options if option.startswith("--")), options[0])
    return named.lstrip("-").replace("-", "_")


def _passed_on(
    tree: ast.Module, own: dict[str, tuple[list[str], bool]], segment: Segment
) -> list[tuple[str, str, list[str], bool]]:
    """The fields set by the flags a CLI file adds with an `add_argument` of their own (no config's kwargs):
    such a flag sets an attribute of the args (`--data-parallel-size-local`: data_parallel_size_local),
    which the file passes on to a config's constructor, `ParallelConfig(data_parallel_size_local=...)`, as
    `self.dest`, as a local of its name (computed from it), or as `self.dest or DEFAULT`."""
    if not own:
        return []
    found: list[tuple[str, str, list[str], bool]] = []
    dests = list(own)
    for node in _walk(tree, lambda statement: not _names(segment(statement), dests)):
        if not isinstance(node, ast.Call) or (called := _called(node)) is None:
            continue
        for keyword in node.keywords:
            value = keyword.value
            if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
                value = value.values[0]
            read = value.id if isinstance(value, ast.Name) else None
            if isinstance(value, ast.Attribute) and _is_self(value.value):
                read = value.attr
            if keyword.arg is not None and read in own:
                options, explicit_bool = own[read]
                found.append((called, keyword.arg, options, explicit_bool))
    return found


# The calls `_flag_facts` reads: only a statement whose text names one can hold one.
_FLAG_CALLS = ("add_argument", "update")
_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Match,
    ast.Try,
    ast.TryStar,
)


def _no_expression(_: ast.stmt) -> bool:
    return True


def _names(text: str, words: Sequence[str]) -> bool:
    return any(word in text for word in words)


def _walk(node: ast.AST, bare: Callable[[ast.stmt], bool]) -> Iterator[ast.AST]:
    """`ast.walk`, in its order, less the expressions of the simple statements `bare` says hold nothing
    wanted: they are given, their insides are not (reading every node of a big module is not free).
    Assignments are statements, so every one `ast.walk` finds is found; a simple statement holds no other
    statement, so only expressions are left out."""
    todo: deque[ast.AST] = deque([node])
    while todo:
        node = todo.popleft()
        if not (isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and bare(node)):
            todo.extend(ast.iter_child_nodes(node))
        yield node


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _subscript(node: ast.expr) -> tuple[str, str] | None:
    """Read `var["field"]` as (var, field)."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.value.id, _written(node.slice.value)
    return None


def _kwargs_target(
    node: ast.expr, kwargs_class: dict[str, str], aliases: dict[str, tuple[str, str]]
) -> tuple[str, str] | None:
    """Find which (class, field) a `**...` argument spreads: `kw["f"]`, `{**kw["f"], ...}` or an alias."""
    found = _subscript(node)
    if found is not None and found[0] in kwargs_class:
        return kwargs_class[found[0]], found[1]
    if isinstance(node, ast.Name) and node.id in aliases:
        variable, field = aliases[node.id]
        if variable in kwargs_class:
            return kwargs_class[variable], field
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                inner = _kwargs_target(value, kwargs_class, aliases)
                if inner is not None:
                    return inner
    return None


def _written(text: str) -> str:
    """A string constant as JSON can carry it: a lone surrogate (written `"\\ud800"` in the source, which
    no UTF-8 can hold) is shown as that escape rather than failing the run."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode()
