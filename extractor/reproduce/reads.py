# Reads: what a check's conditions and message read, translated from the catalog's text to expressions over `args`
# (the engine arguments a `vllm serve` line sets) by an allow-list of ast nodes: literals, names a flag sets
# (`self.max_loras` -> `args.get("max_loras", 1)`, a JSON flag's key through it), locals by the assignment that
# defines them (definitions.py), comparisons, operators, comprehensions, pure builtins and pure methods of values.
# No other call, no dunder, no name but `args` and what the check itself binds; nothing is evaluated here.
from __future__ import annotations

import ast
import copy
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from extractor.model.records import CatalogLine, FieldRef
    from extractor.reproduce.definitions import Function

__all__ = ["CALLS", "FieldTable", "Reads", "Untranslatable", "translate"]

# The fields a catalog's records resolved, by (the class of the function that reads one, its expression).
FieldTable = Mapping[tuple[str, str], "FieldRef"]

# The builtins a check may call (pure; `type` only as `type(x).__name__`), and the types isinstance may name.
_TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "str": str, "list": list, "tuple": tuple,
                           "set": set, "frozenset": frozenset, "dict": dict}  # fmt: skip
CALLS: dict[str, Any] = {"len": len, "any": any, "all": all, "min": min, "max": max, "abs": abs, "sorted": sorted,
                         "sum": sum, "isinstance": isinstance, "type": type, **_TYPES}  # fmt: skip
# The methods a check may call on a value (a JSON value of the arguments, or a literal): none runs code of its own.
_METHODS = {"startswith", "endswith", "lower", "upper", "casefold", "strip", "lstrip", "rstrip", "split", "rsplit",
            "join", "removeprefix", "removesuffix", "partition", "rpartition", "isdigit", "isnumeric", "isdecimal",
            "isalpha", "isalnum", "isspace", "islower", "isupper", "keys", "values", "items", "get", "count",
            "find"}  # fmt: skip
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
_RESERVED = {"args", "check", *CALLS}  # (names a loop or comprehension of the check may not bind)
_DEEPEST = 6  # locals defined by locals, at most


class Untranslatable(Exception):
    """What a check cannot read: the node kind or the name, as its message."""


class Reads:
    """What the names a record's check reads stand for over `args`, for one record and the lines it is verified on
    (a flag a line names, a JSON flag's keys), with the catalog's resolved fields and the raising function's source."""

    def __init__(
        self,
        line: CatalogLine,
        lines: list[dict[str, Any]],
        fields: FieldTable,
        function: Function | None,
        *,
        undefaulted: frozenset[str] = frozenset(),
    ) -> None:
        self.where = line.extraction.function
        self.owner = self.where.rpartition(".")[0]
        self.refs = {ref.expression: ref for ref in line.extraction.fields}
        self.fields = fields
        self.function = function
        self.trigger = lines[0]
        self.named = {name for args in lines for name in args}  # (the flags the lines set, as `args` names them)
        holders: dict[str, set[str]] = {}
        for args in lines:
            for holder, value in args.items():
                if isinstance(value, dict):
                    for key in value:
                        holders.setdefault(key, set()).add(holder)
        self.keyed = {key: next(iter(found)) for key, found in holders.items() if len(found) == 1}
        self.undefaulted = undefaulted  # (`x`, `holder.key`: a line that ran contradicts their source's default)
        self.listed: set[str] = set()  # (flags of list fields: one value given is a list of one)
        self.bound: set[str] = set()  # (names the check's loops bind)
        self.walrus: dict[str, ast.expr] = {}  # (`if x := self.x:` -> x reads as self.x does)
        self.resolving: list[str] = []

    def loop(self, text: str) -> tuple[ast.expr, ast.expr]:
        """A `for` around the raise (`op in self.custom_ops`): its target, bound from then on, and its iterable."""
        try:
            statement = ast.parse(f"for {text.strip()}:\n    pass").body[0]
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            raise Untranslatable("for") from None
        if not isinstance(statement, ast.For):
            raise Untranslatable("for")
        iterable = _Translator(self, frozenset(self.bound)).expr(statement.iter)
        names = _targets(statement.target)
        self.bound |= names
        return _stored(statement.target), iterable

    def read(self, dotted: str, *, member: bool = False) -> ast.expr:
        """`dotted` (`self.x`, `self.a.b`, a local's name) as an expression over `args`; `member`: compared with an
        enum's member, whose default may be one (`MambaBackendEnum.TRITON`, read as its name)."""
        if dotted in self.walrus:
            return copy.deepcopy(self.walrus[dotted])
        ref = self._ref(dotted)
        if ref is not None:
            found = self._field(ref, member=member)
            if found is not None:
                return found
        if "." not in dotted:
            return self._local(dotted)
        root, _, rest = dotted.partition(".")
        through = self.function.definition(root) if self.function is not None and root != "self" else None
        chain = _dotted(through) if through is not None else None
        if chain is not None and chain != root:  # (`spec = self.speculative_config` then `spec.method`)
            return self.read(f"{chain}.{rest}", member=member)
        head, _, name = dotted.rpartition(".")
        if head.split(".")[0] == "self":  # (a field no record resolved: the flag of its name, or a key of one)
            if name in self.named:
                return _required(name)
            if name in self.keyed:
                return _required(self.keyed[name], name)
        raise Untranslatable(dotted)

    def _ref(self, dotted: str) -> FieldRef | None:
        own = self.refs.get(dotted)
        if own is not None and own.resolved:
            return own
        return self.fields.get((self.owner, dotted)) or own

    def _field(self, ref: FieldRef, *, member: bool = False) -> ast.expr | None:
        """A resolved field as `args` holds it: its flag, its JSON flag's key, the flag of its name a line sets; a
        config on the serve path (`self.model_config`: a class no None is allowed for) as present."""
        if not (ref.resolved and ref.field):
            return None
        longs = [flag for flag in ref.flags if flag.startswith("--")]
        if longs:
            name = longs[0].removeprefix("--").replace("-", "_")
            if (ref.annotation or "").startswith(("list[", "List[")):
                self.listed.add(name)
            return _lookup(name, None, self._default(ref, name, member=member))
        if ref.via and ref.key:
            holder = ref.via.removeprefix("--").replace("-", "_")
            return _lookup(holder, ref.key, self._default(ref, f"{holder}.{ref.key}"))
        if ref.field in self.keyed:  # (a field of a config held, set through its JSON flag)
            holder = self.keyed[ref.field]
            return _lookup(holder, ref.field, self._default(ref, f"{holder}.{ref.field}"))
        if ref.field in self.named:
            return _lookup(ref.field, None, self._default(ref, ref.field))
        if self.present(ref.expression):
            return ast.Constant(True)
        return None

    def _default(self, ref: FieldRef, name: str, *, member: bool = False) -> ast.expr | None:
        """The field's default as a literal node, when its source's default is one, no line that ran contradicts
        it, and vLLM does not set the field itself before the check reads it: a field vLLM sets or derives in
        another function, or before the raise in this one, has none."""
        reason = ref.reason or ""
        if name in self.undefaulted:
            return None
        if reason.startswith(_NOT_DEFAULT):
            mine = f"in {self.where}," in f"{reason},"  # (vLLM sets it in the function that checks it)
            if not (mine and self.function is not None and self.function.unbound(ref.expression)):
                return None
        if member and ref.default and _MEMBER.fullmatch(ref.default):
            return ast.Constant(ref.default.rpartition(".")[2])
        return _literal(ref.default)

    def present(self, dotted: str) -> bool:
        """Whether `dotted` is a config the serve path always builds: its annotation a class that allows no None,
        and this check reads a field of it through a flag."""
        ref = self._ref(dotted)
        if ref is None or not ref.resolved or ref.flags or ref.via:
            return False
        annotation = ref.annotation or ""
        if not (annotation.isidentifier() and annotation[0].isupper()):
            return False
        inside = [r for r in self.refs.values() if r.expression.startswith(ref.expression + ".")]
        return any(r.resolved and (r.flags or (r.via and r.key)) for r in inside)

    def _local(self, name: str) -> ast.expr:
        """A name of the function: a local by its defining assignment, a field validator's value by its field, a
        parameter by the flag of its name the trigger sets."""
        function = self.function
        if function is None or name in self.resolving or len(self.resolving) >= _DEEPEST:
            raise Untranslatable(name)
        value = function.definition(name)
        if value is not None:
            self.resolving.append(name)
            try:
                return _Translator(self, frozenset()).expr(value)
            finally:
                self.resolving.pop()
        validated = function.validated_field()
        if validated is not None and validated[0] == name and function.unbound(name):
            return self.read(f"self.{validated[1]}")
        if name in self.trigger and function.parameter(name):
            return _required(name)
        raise Untranslatable(name)


def translate(text: str, reads: Reads, *, shown: bool = False) -> ast.expr:
    """A condition (or, `shown`, a placeholder of the message) of the source as an expression over `args` (see the
    module's head)."""
    try:
        tree = ast.parse(f"(\n{text.strip()}\n)", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise Untranslatable("not an expression") from None
    return _Translator(reads, frozenset(reads.bound), shown=shown).expr(tree.body)


class _Translator:
    """One expression's nodes, each rebuilt if its kind is allowed; `bound`: the names loops and comprehensions
    around it bind (read as themselves)."""

    def __init__(self, reads: Reads, bound: frozenset[str], *, shown: bool = False) -> None:
        self.reads = reads
        self.bound = bound
        self.shown = shown  # (a value the message prints: a config is no value to print)

    def expr(self, node: ast.expr) -> ast.expr:  # (one branch per node kind: the allow-list itself)
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, bool | int | float | str):
                return ast.Constant(node.value)
            raise Untranslatable(type(node.value).__name__)
        if isinstance(node, ast.Name):
            return ast.Name(node.id, ast.Load()) if node.id in self.bound else self.reads.read(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            values = [self.expr(value) for value in node.values]
            if isinstance(node.op, ast.And):  # (`self.model_config is not None and ...`: a config always built)
                values = [v for v in values if not (isinstance(v, ast.Constant) and v.value is True)] or values[:1]
            return values[0] if len(values) == 1 else ast.BoolOp(node.op, values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
            return ast.UnaryOp(node.op, self.expr(node.operand))
        if isinstance(node, ast.BinOp) and isinstance(node.op, _OPERATORS):
            if isinstance(node.op, ast.Mult) and any(_sized(side) for side in (node.left, node.right)):
                raise Untranslatable("a repeated sequence")  # (`"x" * n`: memory, not a check)
            return ast.BinOp(self.expr(node.left), node.op, self.expr(node.right))
        if isinstance(node, ast.IfExp):
            return ast.IfExp(self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elements = [self.expr(element) for element in node.elts]
            if isinstance(node, ast.Set):
                return ast.Set(elements)
            return ast.Tuple(elements, ast.Load()) if isinstance(node, ast.Tuple) else ast.List(elements, ast.Load())
        if isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise Untranslatable("**")
            return ast.Dict([self.expr(k) for k in node.keys if k is not None], [self.expr(v) for v in node.values])
        if isinstance(node, ast.Subscript):
            return ast.Subscript(self.expr(node.value), self._slice(node.slice), ast.Load())
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self._comprehension(node)
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value)
            self.reads.walrus[node.target.id] = value
            return copy.deepcopy(value)
        raise Untranslatable(type(node).__name__)

    def _attribute(self, node: ast.Attribute) -> ast.expr:
        called = node.value
        typed = isinstance(called, ast.Call) and _named(called.func, "type") and len(called.args) == 1
        if node.attr == "__name__" and isinstance(called, ast.Call) and typed and not called.keywords:
            # (`type(x).__name__`: the name of a value's type)
            typed_value = ast.Call(ast.Name("type", ast.Load()), [self.expr(called.args[0])], [])
            return ast.Attribute(typed_value, "__name__", ast.Load())
        dotted = _dotted(node)
        if dotted is None or dotted.split(".")[0] in self.bound or "__" in dotted:
            raise Untranslatable(ast.unparse(node)[:80])
        if self.shown and self.reads.present(dotted):
            raise Untranslatable(dotted)
        return self.reads.read(dotted)

    def _compare(self, node: ast.Compare) -> ast.expr:
        """A comparison; `config is None` of a config the serve path always builds is False; an enum member
        (`self.backend != MambaBackendEnum.FLASHINFER`) is compared by its name with the text a flag sets, in
        any case (a value that is no text cannot be told apart: `check` raises)."""
        operands = [node.left, *node.comparators]
        dotted = _dotted(node.left)
        single = len(node.ops) == 1 and isinstance(node.ops[0], ast.Is | ast.IsNot) and _none(node.comparators[0])
        if single and dotted and not self.shown and self.reads.present(dotted):
            return ast.Constant(isinstance(node.ops[0], ast.IsNot))
        members = [_member(operand) for operand in operands]
        if (
            len(node.ops) != 1
            or not any(members)
            or not isinstance(node.ops[0], ast.Eq | ast.NotEq | ast.In | ast.NotIn)
        ):
            return ast.Compare(self.expr(node.left), list(node.ops), [self.expr(c) for c in node.comparators])
        left, right = operands
        if isinstance(node.ops[0], ast.In | ast.NotIn):
            names = [_member(e) for e in right.elts] if isinstance(right, ast.Tuple | ast.List | ast.Set) else []
            if not names or not all(names) or members[0]:
                raise Untranslatable(ast.unparse(right)[:60])
            return ast.Compare(
                _upper(self.expr(left)), list(node.ops), [ast.Tuple([ast.Constant(n) for n in names], ast.Load())]
            )
        value, name = (right, members[0]) if members[0] else (left, members[1])
        if (members[0] and members[1]) or name is None:
            raise Untranslatable(ast.unparse(node)[:60])
        return ast.Compare(_upper(self._operand(value)), list(node.ops), [ast.Constant(name)])

    def _operand(self, node: ast.expr) -> ast.expr:
        """What is compared with an enum's member: a field (its default may be a member), else any value."""
        dotted = _dotted(node)
        if dotted is not None and dotted.split(".")[0] not in self.bound and "__" not in dotted:
            return self.reads.read(dotted, member=True)
        return self.expr(node)

    def _call(self, node: ast.Call) -> ast.expr:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise Untranslatable("keywords")
        function = node.func
        if isinstance(function, ast.Name) and function.id == "isinstance" and len(node.args) == 2:
            kinds = node.args[1]
            names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
            if not all(isinstance(n, ast.Name) and n.id in _TYPES for n in names):
                raise Untranslatable(f"isinstance of {ast.unparse(kinds)[:60]}")
            return ast.Call(ast.Name("isinstance", ast.Load()), [self.expr(node.args[0]), copy.deepcopy(kinds)], [])
        if isinstance(function, ast.Name) and function.id in CALLS and function.id not in ("type", "isinstance"):
            return ast.Call(ast.Name(function.id, ast.Load()), [self.expr(a) for a in node.args], [])
        if isinstance(function, ast.Attribute) and function.attr in _METHODS:
            method = ast.Attribute(self.expr(function.value), function.attr, ast.Load())
            return ast.Call(method, [self.expr(a) for a in node.args], [])
        raise Untranslatable(f"call of {ast.unparse(function)[:60]}")

    def _slice(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Slice):
            parts = [None if part is None else self.expr(part) for part in (node.lower, node.upper, node.step)]
            return ast.Slice(*parts)
        return self.expr(node)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> ast.expr:
        inner = _Translator(self.reads, self.bound)
        generators = []
        for generator in node.generators:
            if generator.is_async:
                raise Untranslatable("async")
            iterable = inner.expr(generator.iter)
            inner = _Translator(self.reads, inner.bound | _targets(generator.target))
            ifs = [inner.expr(test) for test in generator.ifs]
            generators.append(ast.comprehension(_stored(generator.target), iterable, ifs, 0))
        if isinstance(node, ast.DictComp):
            return ast.DictComp(inner.expr(node.key), inner.expr(node.value), generators)
        kind = {ast.ListComp: ast.ListComp, ast.SetComp: ast.SetComp, ast.GeneratorExp: ast.GeneratorExp}[type(node)]
        return kind(inner.expr(node.elt), generators)


def _targets(target: ast.expr) -> frozenset[str]:
    """The names a loop's target binds: a name, or a tuple of names (none the check itself uses)."""
    names = target.elts if isinstance(target, ast.Tuple) else [target]
    if not all(isinstance(n, ast.Name) and n.id.isidentifier() and n.id not in _RESERVED for n in names):
        raise Untranslatable(f"the loop target {ast.unparse(target)[:40]}")
    return frozenset(n.id for n in names if isinstance(n, ast.Name))


def _stored(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Tuple):
        return ast.Tuple([_stored(element) for element in target.elts], ast.Store())
    assert isinstance(target, ast.Name)  # (checked by _targets)
    return ast.Name(target.id, ast.Store())


def _member(node: ast.expr) -> str | None:
    """`NAME` of `SomeEnum.NAME` (a class's name, then a member's in capitals), else None."""
    enum = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id[:1].isupper()
    if enum and isinstance(node, ast.Attribute) and node.attr.isupper() and not node.attr.startswith("_"):
        return node.attr
    return None


def _upper(value: ast.expr) -> ast.expr:
    """`value.upper() if value is not None else None`: a flag's text as an enum member's name (a number raises)."""
    method = ast.Call(ast.Attribute(value, "upper", ast.Load()), [], [])
    test = ast.Compare(copy.deepcopy(value), [ast.IsNot()], [ast.Constant(None)])
    return ast.IfExp(test, method, ast.Constant(None))


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _named(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _sized(node: ast.expr) -> bool:
    return isinstance(node, ast.List | ast.Tuple | ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
    )


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


# The fields vLLM may set itself, or derives: what the check reads is not their default when no flag sets them.
_NOT_DEFAULT = ("vLLM may set it itself", "derived by vLLM")
_MEMBER = re.compile(r"[A-Z]\w*\.[A-Z][A-Z0-9_]*")  # (an enum member: `MambaBackendEnum.TRITON`)
_EMPTY = {"list()": "[]", "dict()": "{}", "tuple()": "()", "set()": "set()"}


def _literal(default: str | None) -> ast.expr | None:
    """A source's default as a literal node (`list()` as `[]`), or None when it is no literal."""
    text = _EMPTY.get(default or "", default)
    if text is None:
        return None
    try:
        ast.literal_eval(text)
        return ast.parse(text, mode="eval").body
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _lookup(name: str, key: str | None, default: ast.expr | None) -> ast.expr:
    """`args.get("x", DEFAULT)`, or `args["x"]` with no default known; a JSON flag's key through its argument
    (`args.get("profiler_config", {}).get("profiler", DEFAULT)`)."""
    args: ast.expr = ast.Name("args", ast.Load())
    if key is not None:
        args = ast.Call(ast.Attribute(args, "get", ast.Load()), [ast.Constant(name), ast.Dict([], [])], [])
    looked = key if key is not None else name
    if default is None:
        return ast.Subscript(args, ast.Constant(looked), ast.Load())
    return ast.Call(ast.Attribute(args, "get", ast.Load()), [ast.Constant(looked), copy.deepcopy(default)], [])


def _required(name: str, key: str | None = None) -> ast.expr:
    return _lookup(name, key, None)
