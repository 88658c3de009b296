# validationCode: a reproduced record's condition chain as a pre-flight check, `check(args: dict) -> str | None`,
# over the engine arguments a `vllm serve` line sets, returning the message vLLM raises. Translated from the
# catalog's text by an allow-list of ast nodes (reads.py names what each read is), built as nodes and unparsed,
# and kept only when it returns the pattern's message on the trigger's arguments and None on a fix's.
from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from extractor.reproduce.definitions import read_function
from extractor.reproduce.reads import CALLS, FieldTable, Reads, Untranslatable, translate

if TYPE_CHECKING:
    from extractor.model.records import CatalogLine, FieldRef, Reproduction, ServeLine

__all__ = [
    "CatalogFacts",
    "Miss",
    "Validation",
    "catalog_facts",
    "compiled_check",
    "serve_arguments",
    "validation",
    "validation_code",
]


class Miss(StrEnum):
    """Why a reproduced record has no validationCode."""

    NO_SERVE_LINE = "no vllm serve line reaches the check"
    NO_FIX_LINE = "no fix line ran"
    FLOW = "a loop, try, with or match around the raise that a check does not follow"
    CONDITION = "a condition reads what no flag sets"
    NO_CONDITION = "no condition"
    TRIGGER = "not the pattern's message on the trigger's arguments"
    FIX = "a message on a fix's arguments, or none decided"


@dataclass(frozen=True, slots=True)
class Validation:
    """A record's validationCode, or why it has none (`detail`: the read not translated, what the check said)."""

    code: str | None
    miss: Miss | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class CatalogFacts:
    """What a catalog's records tell the check of one of them: the fields they resolved, by (the class of the
    function that reads one, its expression), for a local no condition names; and the flags (`x`, a JSON flag's
    `holder.key`) whose source default a line that ran contradicted (vLLM works the value out)."""

    fields: FieldTable = field(default_factory=dict)
    undefaulted: frozenset[str] = frozenset()


def catalog_facts(lines: Iterable[CatalogLine]) -> CatalogFacts:
    """What a catalog's records tell each other's checks (see CatalogFacts): every reproduced record's check is built
    once to find the defaults its lines contradict."""
    lines = list(lines)
    table: dict[tuple[str, str], FieldRef] = {}
    for line in lines:
        owner = line.extraction.function.rpartition(".")[0]
        for ref in line.extraction.fields:
            if ref.resolved and ref.field:
                seen = table.get((owner, ref.expression))
                if seen is None or (not (seen.flags or seen.via) and (ref.flags or ref.via)):
                    table[(owner, ref.expression)] = ref
    first = CatalogFacts(fields=table)
    contradicted: set[str] = set()
    for line in lines:
        made = line.extraction.reproduction
        if made is not None and made.serve is not None:
            contradicted |= _checked(line, made, first)[1]
    return CatalogFacts(fields=table, undefaulted=frozenset(contradicted))


def serve_arguments(line: ServeLine) -> dict[str, Any]:
    """The engine arguments a line sets, as `check` takes them: `--max-model-len 8192` -> {"max_model_len": 8192},
    JSON for JSON flags, True/False for switches, a list for several values."""
    out: dict[str, Any] = {}
    for flag, *values in line.groups():
        name = flag.removeprefix("--")
        if not values:
            negative = name.startswith("no-")
            out[name.removeprefix("no-").replace("-", "_")] = not negative
            continue
        parsed = [_value(value) for value in values]
        out[name.replace("-", "_")] = parsed[0] if len(parsed) == 1 else parsed
    return out


def _value(text: str) -> Any:
    if text == "None":  # (vLLM's parser reads it as None for every flag that allows None: its optional_type)
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def validation(line: CatalogLine, reproduction: Reproduction, *, catalog: CatalogFacts | None = None) -> Validation:
    """The record's validationCode from its reproduction, verified on the serve line that raised and on every line
    of a fix that ran (the fix's and each solution's); or why there is none. `catalog`: what the catalog's other
    records tell it (see catalog_facts)."""
    return _checked(line, reproduction, catalog or CatalogFacts())[0]


def _checked(line: CatalogLine, reproduction: Reproduction, catalog: CatalogFacts) -> tuple[Validation, frozenset[str]]:
    if reproduction.serve is None:
        return Validation(None, Miss.NO_SERVE_LINE), frozenset()
    fixes = [*([reproduction.fix.serve] if reproduction.fix and reproduction.fix.serve else [])]
    fixes += [solution.serve for solution in reproduction.solutions or []]
    if not fixes:
        return Validation(None, Miss.NO_FIX_LINE), frozenset()
    trigger = serve_arguments(reproduction.serve)
    return _verified(line, reproduction, trigger, [serve_arguments(fix) for fix in fixes], catalog)


def validation_code(
    line: CatalogLine, trigger: dict[str, Any], fix: dict[str, Any], reproduction: Reproduction
) -> str | None:
    """`check(args) -> str | None` over the engine arguments `trigger` and `fix` (see serve_arguments), verified on
    both and on the reproduction's solutions; None where it cannot be built or does not hold (see validation)."""
    solutions = [serve_arguments(solution.serve) for solution in reproduction.solutions or []]
    return _verified(line, reproduction, trigger, [fix, *solutions], CatalogFacts())[0].code


def _verified(
    line: CatalogLine,
    reproduction: Reproduction,
    trigger: dict[str, Any],
    fixes: list[dict[str, Any]],
    catalog: CatalogFacts,
) -> tuple[Validation, frozenset[str]]:
    """The check built and run on the lines; where a fix line left out a flag whose source default made the check
    fire on it, that default is wrong on the serve path (vLLM works the value out): built again without it. With
    the early exits before the raise that translate first, else (one reads what the trigger's line leaves to vLLM)
    without them, as the function's other statements. And the defaults it found contradicted."""
    first: tuple[Validation, frozenset[str]] | None = None
    for exits in (True, False):
        undefaulted = catalog.undefaulted
        while True:
            built = _built(line, reproduction, [trigger, *fixes], catalog.fields, undefaulted, exits=exits)
            found, fired = _held(line, built, trigger, fixes)
            wider = undefaulted | _left_out(trigger, fired) if fired is not None else undefaulted
            if wider == undefaulted:
                break
            undefaulted = wider
        if found.code is not None:
            return found, undefaulted - catalog.undefaulted
        first = first or (found, undefaulted - catalog.undefaulted)
    assert first is not None
    return first


def _left_out(trigger: dict[str, Any], fix: dict[str, Any]) -> frozenset[str]:
    """The names (`x`, a JSON flag's `holder.key`) the trigger's line sets and the fix's does not."""
    out = {name for name in trigger if name not in fix}
    for holder, value in trigger.items():
        if isinstance(value, dict):
            kept = fix.get(holder)
            out |= {f"{holder}.{key}" for key in value if not (isinstance(kept, dict) and key in kept)}
    return frozenset(out)


def _held(
    line: CatalogLine, built: Validation, trigger: dict[str, Any], fixes: list[dict[str, Any]]
) -> tuple[Validation, dict[str, Any] | None]:
    """`built` when its check returns the pattern's message on the trigger's arguments, nothing but None (or, for a
    flag it needs and a line leaves out, KeyError: undecided) on each fix's, and None on one at least; and the fix's
    arguments it returned a message on, if it did."""
    if built.code is None:
        return built, None
    check = compiled_check(built.code)
    try:
        said = check(dict(trigger))
    except Exception as error:
        return Validation(None, Miss.TRIGGER, f"raised {type(error).__name__}"), None
    if not isinstance(said, str) or not re.fullmatch(line.record.messagePattern, said, re.S):
        return Validation(None, Miss.TRIGGER, repr(said)[:200]), None
    decided = False
    for args in fixes:
        try:
            after = check(dict(args))
        except KeyError:  # (a flag the line does not name, whose default the check does not know: undecided)
            continue
        except Exception as error:
            return Validation(None, Miss.FIX, f"raised {type(error).__name__} on {args}"), None
        if after is not None:
            return Validation(None, Miss.FIX, f"{after!r} on {args}"[:200]), args
        decided = True
    return (built if decided else Validation(None, Miss.FIX, "undecided on every fix")), None


def _built(
    line: CatalogLine,
    reproduction: Reproduction,
    lines: list[dict[str, Any]],
    fields: FieldTable,
    undefaulted: frozenset[str],
    *,
    exits: bool,
) -> Validation:
    """The check's source, or why the record's conditions and message do not translate."""
    record, extraction = line.record, line.extraction
    function = read_function(record.sourceCode, record.sourceCodeStart, record.lineNumber, extraction.endLineNumber)
    reads = Reads(line, lines, fields, function, undefaulted=undefaulted)
    steps: list[tuple[int, ast.expr | tuple[ast.expr, ast.expr]]] = []  # a test, or a loop's (target, iterable)
    try:
        for condition in extraction.conditions:
            if condition.kind == "else":  # (the branches before it are listed, negated)
                continue
            if condition.kind == "for":
                steps.append((condition.line, reads.loop(condition.test)))
            elif condition.kind in ("if", "elif"):
                test = translate(condition.test, reads)
                steps.append((condition.line, _not(test) if condition.negated else test))
            else:
                return Validation(None, Miss.FLOW, str(condition.kind))
    except Untranslatable as error:
        return Validation(None, Miss.CONDITION, str(error))
    except RecursionError:
        return Validation(None, Miss.CONDITION, "nested too deep")
    for at, exit_test in function.exits() if function is not None and exits else []:
        try:  # (an early exit the check cannot read is left out, as the source's other statements are)
            steps.append((at, _not(translate(ast.unparse(exit_test), reads))))
        except (Untranslatable, RecursionError):
            continue
    steps = sorted(steps, key=lambda step: step[0])
    if not any(isinstance(step, ast.expr) for _, step in steps):
        return Validation(None, Miss.NO_CONDITION)
    message, verbatim = _message(line, reads)
    body: list[ast.stmt] = [ast.Return(message)]
    tests: list[ast.expr] = []
    for _, step in reversed(steps):
        if isinstance(step, ast.expr):
            tests.insert(0, step)
            continue
        if tests:
            body = [ast.If(_all(tests), body, [])]
            tests = []
        target, iterable = step
        body = [ast.For(target, iterable, body, [])]
    if tests:
        body = [ast.If(_all(tests), body, [])]
    if reads.listed:  # (argparse gives a list for a flag of several values, one value given too)
        body = [*_listed(sorted(reads.listed)), *body]
    said = f"The check at {record.filePath}:{record.lineNumber} ({reproduction.verifiedWith}), over the engine "
    said += "arguments `vllm serve` flags set; its message, or None."
    if verbatim:
        said += f" What vLLM works out itself is left as its source writes it: {', '.join(verbatim)}."
    function_node = ast.FunctionDef(
        name="check",
        args=ast.arguments(posonlyargs=[], args=[ast.arg("args", ast.Name("dict", ast.Load()))], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=[ast.Expr(ast.Constant(said)), *body, ast.Return(ast.Constant(None))],
        decorator_list=[],
        returns=ast.BinOp(ast.Name("str", ast.Load()), ast.BitOr(), ast.Constant(None)),
    )  # fmt: skip
    module = ast.fix_missing_locations(ast.Module([function_node], []))
    if any(_nested(node) > _MOST_NESTED for node in ast.walk(module) if isinstance(node, _COMPREHENSIONS)):
        return Validation(None, Miss.CONDITION, "comprehensions nested too deep")  # (their work multiplies)
    try:
        source = ast.unparse(module) + "\n"
        compile(source, "<validationCode>", "exec")
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as error:
        return Validation(None, Miss.CONDITION, f"does not compile: {error}")
    return Validation(source)


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_MOST_NESTED = 2  # (generators in one comprehension, those nested in it counted: a literal's size to that power)


def _nested(node: ast.AST) -> int:
    return sum(isinstance(inner, ast.comprehension) for inner in ast.walk(node))


def _listed(names: list[str]) -> list[ast.stmt]:
    """`for flag in (...): if flag in args and not isinstance(args[flag], list | None): args = {**args, flag:
    [args[flag]]}` (as nodes): one value of a flag that takes several, as the list argparse makes of it."""

    def value() -> ast.expr:
        return ast.Subscript(ast.Name("args", ast.Load()), ast.Name("flag", ast.Load()), ast.Load())

    kinds = ast.BinOp(ast.Name("list", ast.Load()), ast.BitOr(), ast.Constant(None))
    test = ast.BoolOp(ast.And(), [
        ast.Compare(ast.Name("flag", ast.Load()), [ast.In()], [ast.Name("args", ast.Load())]),
        ast.UnaryOp(ast.Not(), ast.Call(ast.Name("isinstance", ast.Load()), [value(), kinds], [])),
    ])  # fmt: skip
    widened = ast.Dict(
        [None, ast.Name("flag", ast.Load())], [ast.Name("args", ast.Load()), ast.List([value()], ast.Load())]
    )
    update = ast.Assign([ast.Name("args", ast.Store())], widened)
    flags = ast.Tuple([ast.Constant(name) for name in names], ast.Load())
    return [ast.For(ast.Name("flag", ast.Store()), flags, [ast.If(test, [update], [])], [])]


def _not(test: ast.expr) -> ast.expr:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(ast.Not(), test)


def _all(tests: list[ast.expr]) -> ast.expr:
    return tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)


def _message(line: CatalogLine, reads: Reads) -> tuple[ast.expr, list[str]]:
    """The record's message as an f-string over `args`, its placeholders translated as conditions are; a placeholder
    that reads what no flag sets is kept as the template writes it (`{get_args(KVRole)}`), and named."""
    record, extraction = line.record, line.extraction
    template = record.errorMessage
    parts: list[ast.expr] = []
    verbatim: list[str] = []
    at = 0
    for placeholder in sorted(extraction.placeholders, key=lambda p: p.start):
        if placeholder.start > at:
            parts.append(ast.Constant(template[at : placeholder.start]))
        at = placeholder.end
        try:
            value = translate(placeholder.expression, reads, shown=True)
        except Untranslatable:
            kept = template[placeholder.start : placeholder.end]
            parts.append(ast.Constant(kept))
            verbatim.append(f"`{kept}`")
            continue
        if placeholder.debug:  # (`{x=}` prints `x=` and the value's repr)
            parts.append(ast.Constant(f"{placeholder.expression}="))
        conversion = ord(placeholder.conversion) if placeholder.conversion else ord("r") if placeholder.debug else -1
        spec = ast.JoinedStr([ast.Constant(placeholder.formatSpec)]) if placeholder.formatSpec else None
        parts.append(ast.FormattedValue(value, conversion, spec))
    if at < len(template):
        parts.append(ast.Constant(template[at:]))
    return ast.JoinedStr(parts), verbatim


def compiled_check(source: str) -> Callable[[dict[str, Any]], Any]:
    """A validationCode as its `check` function. Only validation's output is given here: built from allow-listed
    nodes (no calls but `args.get`, pure builtins and pure methods of the values: `len`, `any`, `isinstance`,
    `.startswith`, ...; no names but `args` and what a loop or comprehension binds), run with no builtins but those.
    What `check` raises (a key the arguments lack) is raised."""
    scope: dict[str, Any] = {"__builtins__": dict(CALLS)}
    exec(compile(source, "<validationCode>", "exec"), scope)
    return scope["check"]  # type: ignore[no-any-return]
