# Triggers: from a record's condition chain and the fields it reads, the arguments that make every condition on
# the raise's path true (a trigger), and the smallest change to them that makes its own check false (a fix).
from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extractor.model.records import CatalogLine, FieldRef, ReproductionReason
from extractor.reproduce import programs

__all__ = ["Attempt", "Code", "Unsolvable", "lessons", "trigger", "vocabulary"]

_UNSET = object()
# What a condition that names them needs, beyond arguments: the reasons a record is not reproduced.
_PLATFORM = re.compile(r"\b(?:current_platform|torch\.cuda|is_cuda|is_rocm|is_tpu|is_xpu|envs\.)")
_MODEL = re.compile(r"\b(?:hf_config|hf_text_config|model_config\.|architectures|tokenizer)\b")


class Unsolvable(Exception):
    """Why no arguments can be derived for a record: one of a few named classes."""

    def __init__(self, reason: ReproductionReason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class Attempt:
    """A program that builds the record's config with arguments meant to raise it, and one meant not to."""

    module: str
    cls: str
    method: str | None  # a method to call after building (None: the check runs when the object is built)
    arguments: dict[str, Any]
    fix: dict[str, Any] = field(default_factory=dict)  # the arguments changed by the fix
    change: str = ""  # the fix in words
    held: dict[str, str] = field(default_factory=dict)  # a field holding a config -> that config's class

    def program(self, arguments: dict[str, Any] | None = None) -> str:
        """A short self-contained program: import the class, build it (and call the check). Built as nodes, each
        name checked (`trigger` refuses a record whose names are not Python's)."""
        given = self.arguments if arguments is None else arguments
        flat: dict[str, ast.expr] = {}
        held: dict[str, dict[str, Any]] = {}  # a config a field holds: built with its own arguments
        names: list[str] = []  # what the program imports beside the class
        for name, value in given.items():
            holder, _, inner = name.partition(".")
            if inner:
                held.setdefault(holder, {})[inner] = value
            else:
                flat[name] = _written(value)
                names += [value.name] if isinstance(value, Code) else []
        for holder, inner_arguments in held.items():
            written = {name: _written(value) for name, value in inner_arguments.items()}
            flat[holder] = programs.call(programs.dotted(self.held[holder]), written)
            names.append(self.held[holder])
        head = [programs.imported(self.module, [self.cls, *sorted(set(names) - {self.cls})])]
        body: list[ast.stmt] = [
            ast.Assign([ast.Name("config", ast.Store())], programs.call(programs.dotted(self.cls), flat))
        ]
        if self.method is not None:
            body.append(ast.Expr(programs.call(programs.dotted(f"config.{self.method}"), {})))
        return programs.unparsed([head, body])

    def fixed(self) -> str:
        return self.program({**self.arguments, **self.fix})


def _written(value: Any) -> ast.expr:
    """An argument's value as the node that writes it: a literal, or a constant the module names (`Mode.FAST`)."""
    return programs.dotted(value.text) if isinstance(value, Code) else programs.literal(value)


def trigger(
    line: CatalogLine, known: dict[tuple[str, str], list[Any]] | None = None, learned: dict[str, Any] | None = None
) -> Attempt:
    """The attempt for a record, or Unsolvable with the reason none can be derived. `known`: the values each
    field is compared with across the catalog (see `vocabulary`); `learned`: what the runtime's validation
    said of fields in an attempt before (see `lessons`)."""
    record, extraction = line.record, line.extraction
    owner, _, method = extraction.function.rpartition(".")
    if not owner or "." in owner:
        raise Unsolvable(ReproductionReason.NOT_SOLVABLE, f"raised in {extraction.function}, not a config's method")
    module = record.filePath.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    try:  # (what the program names: a catalog's text, never code)
        programs.module_path(module)
        for name in (owner, *([method] if method not in ("__post_init__", "__init__") else [])):
            programs.dotted(name)
    except programs.Refused as refused:
        raise Unsolvable(ReproductionReason.NOT_SOLVABLE, str(refused)) from None
    fields = _fields_of(line, owner)
    words = {name: values for (cls, name), values in (known or {}).items() if cls == owner}
    learned = learned or {}
    for name, lesson in learned.items():
        if lesson[0] == "choices":
            words[name] = [*lesson[1], *words.get(name, [])]
        elif lesson[0] == "floor":
            fields = {
                text: _floored(ref, lesson[1]) if _path(text, ref) == name else ref for text, ref in fields.items()
            }
    solver = _Solver(fields, words)
    tests = [c for c in extraction.conditions if c.kind in ("if", "elif") and c.test]
    if len(tests) != len([c for c in extraction.conditions if c.kind != "else"]):
        raise Unsolvable(ReproductionReason.NOT_SOLVABLE, "a loop, a with or an except on the path")
    for condition in tests:
        if _PLATFORM.search(condition.test):
            raise Unsolvable(ReproductionReason.GPU_PLATFORM, condition.test)
        if _MODEL.search(condition.test):
            raise Unsolvable(ReproductionReason.REAL_MODEL, condition.test)
    atoms: list[tuple[ast.expr, bool]] = []
    for condition in tests:
        atoms += solver.require(_parsed(condition.test), not condition.negated)
    values = solver.finish()
    for name, lesson in learned.items():  # a field validation requires that the conditions leave free
        if lesson[0] == "required" and name not in values:
            values[name] = lesson[1]
        elif lesson[0] == "choices" and name in values and values[name] not in lesson[1] and name not in solver.domains:
            raise Unsolvable(ReproductionReason.NOT_SOLVABLE, f"{name} must be one of {lesson[1]}")
    if not values:
        raise Unsolvable(ReproductionReason.NOT_SOLVABLE, "no field of its own class decides it")
    attempt = Attempt(module, owner, None if method in ("__post_init__", "__init__") else method, values)
    attempt.held = {m[1]: str(ref.class_) for text, ref in fields.items() if (m := _NESTED.fullmatch(text))}
    fix = _fix(fields, values, atoms, words)
    if fix is not None:
        attempt.fix, attempt.change = fix
    return attempt


def lessons(result: dict[str, Any]) -> dict[str, Any]:
    """What pydantic's validation of an attempt says of its fields (its `errors()`, as the runtime reports
    them): the choices of a Literal, the least number allowed, a required argument (an InitVar)."""
    out: dict[str, Any] = {}
    for error in result.get("errors") or []:
        loc = [part for part in error.get("loc") or [] if not part.isdigit()]
        if len(loc) != 1:
            continue
        name, kind, ctx = loc[0], error.get("type"), error.get("ctx") or {}
        if kind == "literal_error" and "expected" in ctx:
            out[name] = ("choices", re.findall(r"'([^']*)'", ctx["expected"]))
        elif kind in ("greater_than", "greater_than_equal"):
            bound = str(ctx.get("gt", ctx.get("ge", "")))
            if re.fullmatch(r"-?\d+", bound):
                out[name] = ("floor", int(bound) + (kind == "greater_than"))
        elif kind == "missing":
            out[name] = ("required", 1)
        elif kind in _TYPED:  # the value's type, which the field's annotation (an alias) did not say
            out[name] = ("choices", _TYPED[kind])
    return out


# pydantic's error types that name what a field takes, and values of it to try.
_TYPED: dict[str, list[Any]] = {
    "int_type": [1, 2, 8, 0], "int_parsing": [1, 2, 8, 0], "float_type": [1.0, 0.5, 0.0],
    "float_parsing": [1.0, 0.5, 0.0], "bool_type": [True, False], "bool_parsing": [True, False],
    "string_type": ["x"], "list_type": [[], ["x"]], "dict_type": [{}], "tuple_type": [()], "set_type": [set()],
}  # fmt: skip


def _floored(ref: FieldRef, floor: int) -> FieldRef:
    return ref.model_copy(update={"constraints": [*ref.constraints, f"ge={floor}"]})


_NESTED = re.compile(r"self\.(\w+)\.\w+")  # a field of a config this one holds: `self.eplb_config.use_async`


def _fields_of(line: CatalogLine, owner: str) -> dict[str, FieldRef]:
    """The fields a record's conditions may set, by expression: the owner's own, and those of a config one of
    its fields holds (set by building that config with them)."""
    out: dict[str, FieldRef] = {}
    for ref in line.extraction.fields:
        if not (ref.resolved and ref.field and ref.class_):
            continue
        nested = _NESTED.fullmatch(ref.expression)
        if not (programs.is_name(ref.field) and all(programs.is_name(part) for part in str(ref.class_).split("."))):
            continue  # (a name a program could not write: never one that is code)
        if nested and not programs.is_name(nested[1]):
            continue
        if (ref.class_ == owner and ref.expression == f"self.{ref.field}") or nested:
            out[ref.expression] = ref
    return out


def _path(expression: str, ref: FieldRef) -> str:
    """The argument a field is set by: its name, or `holder.name` for a field of a config held."""
    nested = _NESTED.fullmatch(expression)
    return f"{nested[1]}.{ref.field}" if nested else str(ref.field)


def _parsed(test: str) -> ast.expr:
    """A condition's test as an expression (a walrus as written, `x := f()`, read in parentheses)."""
    for text in (test, f"({test})"):
        try:
            return ast.parse(text, mode="eval").body
        except SyntaxError:
            continue
    raise Unsolvable(ReproductionReason.NOT_SOLVABLE, f"a test that does not parse: {test}")


class _Solver:
    """Values of a class's own fields that make conditions come out as wanted, chosen greedily in order."""

    def __init__(self, fields: dict[str, FieldRef], vocabulary: dict[str, list[Any]] | None = None) -> None:
        self.fields = fields
        self.values: dict[str, Any] = {}
        # Equality and membership constraints, settled together at the end (`finish`): an `elif` chain
        # excludes several values before its own test names one.
        self.domains: dict[str, list[tuple[str, Any]]] = {}
        self.vocabulary = vocabulary or {}

    def finish(self) -> dict[str, Any]:
        """The values chosen: each field's equality and membership constraints settled, with a value the
        catalog's conditions compare the field with (valid where a field takes only some) when they exclude."""
        out = dict(self.values)
        for name, constraints in self.domains.items():
            wanted = [v for kind, v in constraints if kind == "eq"]
            candidates: list[Any] = wanted[:1]
            for kind, v in constraints:
                if kind == "in" and not candidates:
                    candidates = sorted(v, key=repr)
            if not candidates:
                candidates = [*self.vocabulary.get(name, []), *_fallbacks(self._ref(name))]
            if name in out:  # a value a comparison chose already: kept when it meets these too
                candidates = [out[name]]
            chosen = next((c for c in candidates if all(_holds(kind, c, v) for kind, v in constraints)), _UNSET)
            if chosen is _UNSET or (name in out and out[name] != chosen):
                raise Unsolvable(ReproductionReason.NOT_SOLVABLE, f"no value of {name} meets {constraints}")
            out[name] = chosen
        return out

    def require(self, node: ast.expr, want: bool) -> list[tuple[ast.expr, bool]]:
        """Make `node` evaluate to `want`; the atoms decided, with what each must be."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.require(node.operand, not want)
        if isinstance(node, ast.BoolOp):
            every = isinstance(node.op, ast.And) == want  # `a and b` true, `a or b` false: each operand
            if every:
                return [atom for value in node.values for atom in self.require(value, want)]
            for value in node.values:  # one operand decides: the first that can be made so
                saved = dict(self.values)
                try:
                    return self.require(value, want)
                except Unsolvable:
                    self.values = saved
            raise Unsolvable(ReproductionReason.NOT_SOLVABLE, ast.unparse(node))
        self._atom(node, want)
        return [(node, want)]

    def _field(self, node: ast.expr) -> str | None:
        text = ast.unparse(node)
        ref = self.fields.get(text)
        return _path(text, ref) if ref is not None else None

    def _atom(self, node: ast.expr, want: bool) -> None:
        name = self._field(node)
        if name is not None:  # truthiness of a field
            self._set(name, _truthy(self._ref(name), want))
            return
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, op, right = node.left, node.ops[0], node.comparators[0]
            left_name, right_name = self._field(left), self._field(right)
            if left_name is not None and right_name is None and (constant := _literal(right)) is not _UNSET:
                self._compare_constant(left_name, op, constant, want)
                return
            if right_name is not None and left_name is None and (constant := _literal(left)) is not _UNSET:
                self._compare_constant(right_name, _flipped(op), constant, want)
                return
            if left_name is not None and right_name is not None:
                self._pair(left_name, op, right_name, want)
                return
        raise Unsolvable(ReproductionReason.NOT_SOLVABLE, ast.unparse(node))

    def _compare_constant(self, name: str, op: ast.cmpop, constant: Any, want: bool) -> None:
        kind = _KINDS.get(type(op))
        ordered = isinstance(constant, (int, float)) and not isinstance(constant, bool)
        if kind is None or (ordered and kind in ("eq", "ne")) or name in self.values:
            self._set(name, _satisfying(op, constant, want, self._ref(name)))
            return
        if not want:
            kind = _OPPOSITE[kind]
        self.domains.setdefault(name, []).append((kind, constant))

    def _ref(self, name: str) -> FieldRef:
        return next(ref for text, ref in self.fields.items() if _path(text, ref) == name)

    def _set(self, name: str, value: Any) -> None:
        if name in self.values and self.values[name] != value:
            both = f"{name} must be both {self.values[name]!r} and {value!r}"
            raise Unsolvable(ReproductionReason.NOT_SOLVABLE, both)
        self.values[name] = value

    def _pair(self, left: str, op: ast.cmpop, right: str, want: bool) -> None:
        """Two fields compared: numbers chosen for them (the one already chosen kept)."""
        if left in self.values and right in self.values:
            if _compare(op, self.values[left], self.values[right]) != want:
                raise Unsolvable(ReproductionReason.NOT_SOLVABLE, f"{left} and {right}")
            return
        if left in self.values:
            self._set(right, _satisfying(_flipped(op), self.values[left], want, self._ref(right)))
        elif right in self.values:
            self._set(left, _satisfying(op, self.values[right], want, self._ref(left)))
        else:
            base = _floor(self._ref(right)) + 8
            self._set(right, base)
            self._set(left, _satisfying(op, base, want, self._ref(left)))


_KINDS = {ast.Eq: "eq", ast.Is: "eq", ast.NotEq: "ne", ast.IsNot: "ne", ast.In: "in", ast.NotIn: "notin"}
_OPPOSITE = {"eq": "ne", "ne": "eq", "in": "notin", "notin": "in"}


def _holds(kind: str, value: Any, constant: Any) -> bool:
    try:
        if kind in ("in", "notin"):
            return (value in constant) == (kind == "in")
        return bool(value == constant) == (kind == "eq")
    except TypeError:
        return False


def _fallbacks(ref: FieldRef) -> list[Any]:
    """Values to try for a field whose conditions only exclude some: None where it may be, then plain ones, those of
    the type its annotation names first (an int field is not given a text where a number would do)."""
    annotation = ref.annotation or ""
    out: list[Any] = [None] if "None" in annotation else []
    found = _TYPE.search(annotation)
    kind = found[1] if found else None
    plain = ["other", 1, 1.0, True, False]
    return [*out, *sorted(plain, key=lambda value: type(value).__name__ != kind)]


def vocabulary(lines: Any) -> dict[tuple[str, str], list[Any]]:
    """Per (class, field), the constants the catalog's conditions compare it with (`==`, `in`): the values a
    field takes, in the order first seen."""
    out: dict[tuple[str, str], list[Any]] = {}
    for line in lines:
        owner = line.extraction.function.rpartition(".")[0]
        fields = {ref.expression: ref.field for ref in line.extraction.fields if ref.resolved and ref.class_ == owner}
        for condition in line.extraction.conditions:
            try:
                tree = ast.parse(condition.test, mode="eval")
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Compare) or len(node.ops) != 1:
                    continue
                name = fields.get(ast.unparse(node.left))
                constant = _literal(node.comparators[0])
                if name is None or constant is _UNSET:
                    continue
                found = out.setdefault((owner, name), [])
                members = constant if isinstance(constant, (tuple, list, set, frozenset)) else [constant]
                for member in sorted(members, key=repr) if isinstance(constant, (set, frozenset)) else members:
                    if member not in found:
                        found.append(member)
    return out


@dataclass(frozen=True)
class Code:
    """A constant the program names as the module does (`CompilationMode.VLLM_COMPILE`), imported from it."""

    text: str

    def __repr__(self) -> str:
        return self.text

    @property
    def name(self) -> str:
        """The name the program imports for it: the first of the text (`Mode` of `Mode.FAST`, `X` of `X(a=1)`)."""
        found = re.match(r"[A-Za-z_]\w*", self.text)
        return found[0] if found else self.text


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    text = ast.unparse(node)  # an enum member, a class's constant: `Name.MEMBER`, the name capitalized
    if isinstance(node, ast.Attribute) and re.fullmatch(r"[A-Z]\w*(?:\.\w+)+", text):
        return Code(text)
    return _UNSET


def _flipped(op: ast.cmpop) -> ast.cmpop:
    """The operator with its sides swapped (`1 < x` is `x > 1`)."""
    swap = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
    return swap.get(type(op), type(op))()


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool:
    table: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
        ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
        ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
        ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
        ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    }  # fmt: skip
    return bool(table[type(op)](left, right))


def _floor(ref: FieldRef) -> int:
    """The least number a field's constraints allow (`ge=1`, `gt=0`), else 0."""
    for constraint in ref.constraints:
        found = re.fullmatch(r"(ge|gt)=(-?\d+)", constraint)
        if found:
            return int(found[2]) + (found[1] == "gt")
    return 0


def _satisfying(op: ast.cmpop, constant: Any, want: bool, ref: FieldRef) -> Any:
    """A value `v` for which `v OP constant` is `want`."""
    if not want:  # the negation of each operator
        negation = {
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE,
            ast.GtE: ast.Lt, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In,
        }  # fmt: skip
        return _satisfying(negation[type(op)](), constant, True, ref)
    number = isinstance(constant, (int, float)) and not isinstance(constant, bool)
    step = 1 if isinstance(constant, int) else 0.5
    if isinstance(op, (ast.Eq, ast.Is, ast.LtE, ast.GtE)):
        return constant
    if isinstance(op, ast.Lt) and number:
        return constant - step
    if isinstance(op, ast.Gt) and number:
        return constant + step
    if isinstance(op, ast.In) and isinstance(constant, (tuple, list, set, frozenset)) and constant:
        return sorted(constant, key=repr)[0]
    if isinstance(op, ast.NotIn) and isinstance(constant, (tuple, list, set, frozenset)):
        if all(isinstance(c, str) for c in constant):
            return "not-a-choice"
        if all(isinstance(c, int) for c in constant):
            return max(constant, default=0) + 1
    if isinstance(op, (ast.NotEq, ast.IsNot)):
        if constant is None:
            return _truthy(ref, True)
        if number:
            return constant + step
        if isinstance(constant, str):
            return constant + "-other"
        if isinstance(constant, bool):
            return not constant
    raise Unsolvable(ReproductionReason.NOT_SOLVABLE, f"{ref.expression} {type(op).__name__} {constant!r}")


# The types an annotation names that a value is written for, each with a value true and one false as a condition
# reads it; a container's true value holds one item of the type it names next (`list[int]`: [1]).
_TYPE = re.compile(r"\b(bool|int|float|str|list|tuple|set|dict)\b")
_PLAIN: dict[str, tuple[Any, Any]] = {"bool": (True, False), "int": (1, 0), "float": (1.0, 0.0), "str": ("x", "")}
_CONTAINERS: dict[str, Callable[[list[Any]], Any]] = {"list": list, "tuple": tuple, "set": set, "dict": dict}


def _truthy(ref: FieldRef, want: bool) -> Any:
    """A value of the field's annotation that is true (or false) as a condition reads it: of its outer type (a
    `list[str]` is a list, not a text)."""
    annotation = ref.annotation or ""
    if not want and "None" in annotation:
        return None
    value = _of_type(annotation, want)
    if value is _UNSET:
        raise Unsolvable(ReproductionReason.NOT_SOLVABLE, f"{ref.expression}: {annotation or 'no annotation'}")
    return value


def _of_type(annotation: str, want: bool) -> Any:
    """A value of the first type `annotation` names, true or false; _UNSET where it names none of _TYPE's."""
    found = _TYPE.search(annotation)
    if found is None:
        return _UNSET
    kind, rest = found[1], annotation[found.end() :]
    if kind in _PLAIN:
        return _PLAIN[kind][0 if want else 1]
    if not want:
        return _CONTAINERS[kind]([])
    item = _of_type(rest, True)  # (what the brackets after it name; a text where they name nothing known)
    item = "x" if item is _UNSET else item
    try:
        return _CONTAINERS[kind]([(item, item)] if kind == "dict" else [item])
    except TypeError:  # (an item no set or dict can hold: a list)
        return _UNSET


def _fix(
    fields: dict[str, FieldRef],
    values: dict[str, Any],
    atoms: list[tuple[ast.expr, bool]],
    words: dict[str, list[Any]],
) -> tuple[dict[str, Any], str] | None:
    """The smallest change that makes the raise's own test false: one atom of it turned, the others kept (the
    last atoms first, the raise's own `if`); the arguments it changes and the change in words."""
    for node, want in reversed(atoms):
        solver = _Solver(fields, words)
        kept = dict(values)
        try:
            for part in ast.walk(node):  # the fields the atom reads: free to change
                name = solver._field(part) if isinstance(part, ast.expr) else None
                if name is not None:
                    kept.pop(name, None)
            solver.values = kept
            solver.require(node, not want)
            settled = solver.finish()
        except Unsolvable:
            continue
        changed = {k: v for k, v in settled.items() if values.get(k, _UNSET) != v}
        if changed:
            said = ", ".join(f"{name}={value!r}" for name, value in changed.items())
            return changed, f"set {said} (so that `{ast.unparse(node)}` is {str(not want).lower()})"
    return None
