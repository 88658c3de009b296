# Filled: a record's second half (schema v2's exampleFix, triggerScenarios, solutions, validationCode,
# tryCatchPattern, documentation, tags, handlingStrategy) written from what `reproduce` ran, never from prose:
# each field says what a run showed, or stays null. commonSituations, preventionTips, typeGuard and
# backgroundTag have no run behind them and stay null.
from __future__ import annotations

import ast
import contextlib
import json
import re
import shlex
from collections.abc import Callable
from typing import Any

from extractor.model.records import CatalogLine, FieldRef, Reproduction, ServeLine

__all__ = ["compiled_check", "fill", "serve_arguments", "serve_command", "validation_code"]

_MODEL = "./model"  # the model folder a published line names: one holding only the config.json it ran with


def serve_command(line: ServeLine) -> str:
    """A `vllm serve` line as a person types it (see ServeLine.command)."""
    return line.command(_MODEL)


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
    try:
        return json.loads(text)
    except ValueError:
        return text


def fill(line: CatalogLine, reproduction: Reproduction | None) -> CatalogLine:
    """The line with its record's second half written from its reproduction (unchanged when there is none)."""
    if reproduction is None or not reproduction.reproduced:
        return line
    record = line.record
    serve = reproduction.serve
    fix_line = reproduction.fix.serve if reproduction.fix is not None else None
    if fix_line is None and reproduction.solutions:
        fix_line = reproduction.solutions[0].serve
    ran = reproduction.verifiedWith
    where = f"{record.filePath}:{record.lineNumber}"
    if serve is not None:
        flags = " ".join(shlex.quote(token) for token in serve.argv) or "no flags"
        scenario = f"`vllm serve` with {flags} raises this error at {where} (run against {ran})."
    else:
        scenario = (
            f"Building the config in Python as below raises this error at {where} (run against {ran}); no "
            f"`vllm serve` line was found that reaches it.\n\n{(reproduction.python or '').strip()}"
        )
    if serve is not None and fix_line is not None:
        example = f"# before\n{serve_command(serve)}\n\n# after\n{serve_command(fix_line)}"
    elif reproduction.fix is not None and reproduction.python is not None:
        example = f"# before\n{reproduction.python.strip()}\n\n# after\n{reproduction.fix.python.strip()}"
    else:
        example = None
    solutions = [_solution(s.change, ran) for s in reproduction.solutions or []]
    if not solutions and reproduction.fix is not None:
        solutions = [f"{reproduction.fix.change} (run in Python against {ran}; no `vllm serve` flag was run for it)."]
    code = None
    if serve is not None and fix_line is not None:
        code = validation_code(line, serve_arguments(serve), serve_arguments(fix_line), reproduction)
    update: dict[str, Any] = {
        "triggerScenarios": scenario,
        "exampleFix": example,
        "solutions": solutions or None,
        "validationCode": code,
        "tryCatchPattern": _try_catch(line, reproduction),
        "documentation": _documentation(line, serve),
        "tags": _tags(line, serve),
        "handlingStrategy": "validation",  # (a config check: it fails at start-up, before any request)
    }
    return line.model_copy(update={"record": record.model_copy(update=update)})


def _solution(change: str, ran: str) -> str:
    """One change that ran and passed, in words: raise, lower, set, drop."""
    words: list[str] = []
    for part in change.split("; "):
        found = re.fullmatch(r"set (--\S+) (.+) \(was (.+)\)", part)
        keyed = re.fullmatch(r"set (--\S+) key (\S+) to (.+?)(?: \(was (.+)\))?", part)
        taken = re.fullmatch(r"remove key (\S+) from (--\S+)", part)
        if keyed:
            flag, key, new, old = keyed.groups()
            words.append(f"Set `{key}` to `{new}` in `{flag}`" + (f" (from `{old}`)" if old else ""))
        elif taken:
            words.append(f"Leave `{taken[1]}` out of `{taken[2]}` (its default)")
        elif found:
            flag, new, old = found.groups()
            try:
                direction = "Raise" if float(new) > float(old) else "Lower"
            except ValueError:
                direction = "Set"
            words.append(f"{direction} `{flag}` to `{new}` (from `{old}`)")
        elif part.startswith("remove --no-"):
            words.append(f"Drop `{part.removeprefix('remove ')}` (leave it on)")
        elif part.startswith("remove "):
            words.append(f"Drop `{part.removeprefix('remove ')}` (its default)")
        elif part.startswith("add "):
            words.append(f"Add `{part.removeprefix('add ')}`")
        else:
            words.append(part)
    return f"{'; '.join(words)}: the `vllm serve` line then starts past this check (run against {ran})."


def _try_catch(line: CatalogLine, reproduction: Reproduction) -> str | None:
    """Catching this error by class and pattern, kept only when the pattern finds the message vLLM printed."""
    record = line.record
    pattern = record.messagePattern.removeprefix("^").removesuffix("$")
    try:
        if not reproduction.message or not re.search(pattern, reproduction.message, re.S):
            return None
    except re.error:
        return None
    caught = "ValueError" if record.errorClass in ("ValueError", "ValidationError") else record.errorClass
    body = [
        "import re",
        "",
        f"PATTERN = re.compile({pattern!r}, re.S)",
        "",
        "try:",
        "    engine_config = engine_args.create_engine_config()  # or LLM(...), or the vllm serve entry point",
        f"except {caught} as error:  # pydantic's ValidationError, which wraps it, is a ValueError too",
        "    if not PATTERN.search(str(error)):",
        "        raise",
        f"    ...  # this check ({record.filePath}:{record.lineNumber}): apply one of the record's solutions",
    ]
    return "\n".join(body)


def _involved(line: CatalogLine, serve: ServeLine | None) -> list[FieldRef]:
    """The fields the check reads that a flag sets, those the line sets first."""
    refs = [ref for ref in line.extraction.fields if ref.resolved and ref.field]
    if serve is None:
        return refs
    flags = {token for token in serve.argv if token.startswith("--")}
    return sorted(refs, key=lambda ref: not (set(ref.flags) & flags or (ref.via and ref.via in flags)))


def _documentation(line: CatalogLine, serve: ServeLine | None) -> str | None:
    """What vLLM's source says of the fields and flags involved (their docstrings), each named with its flag."""
    parts: list[str] = []
    seen: set[str] = set()
    for ref in _involved(line, serve):
        if not ref.doc or ref.field in seen:
            continue
        seen.add(str(ref.field))
        flag = f" (`{ref.flags[0]}`)" if ref.flags else f" (`{ref.via}` key `{ref.key}`)" if ref.via else ""
        parts.append(f"`{ref.class_}.{ref.field}`{flag}: {ref.doc.strip()}")
    return "\n\n".join(parts) or None


def _tags(line: CatalogLine, serve: ServeLine | None) -> list[str] | None:
    owner = line.extraction.function.rpartition(".")[0]
    tags = [owner] if owner else []
    for ref in _involved(line, serve):
        tags += [t for t in [ref.field, *(ref.flags[:1] or ([ref.via] if ref.via else []))] if t]
    return list(dict.fromkeys(tags)) or None


# -- validationCode: the condition chain as a pre-flight check over the serve line's arguments ---------------------

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.Compare, ast.Eq, ast.NotEq,
    ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.BinOp, ast.Add, ast.Sub, ast.Mult,
    ast.FloorDiv, ast.Mod, ast.Div, ast.Constant, ast.Attribute, ast.Name, ast.Load, ast.Tuple, ast.List, ast.Set,
    ast.Call, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.comprehension, ast.Store, ast.IfExp,
)  # fmt: skip
_CALLS = {"len": len, "any": any, "all": all, "min": min, "max": max, "abs": abs, "sorted": sorted}  # (pure builtins)


class _Untranslatable(Exception):
    pass


def _translated(text: str, names: dict[str, str], defaults: dict[str, Any]) -> ast.expr:
    """A condition or placeholder of the source over `args`: `self.x` (or a local of a field's name) becomes
    `args.get("x", DEFAULT)`; only an allow-list of node kinds passes (no calls, no subscripts)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise _Untranslatable(text) from None
    bound: set[str] = set()  # (the names a comprehension binds: `b` of `any(b <= 0 for b in self.x)`)
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise _Untranslatable(type(node).__name__)
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _CALLS):
            raise _Untranslatable("Call")
        if isinstance(node, ast.comprehension):
            if not isinstance(node.target, ast.Name):
                raise _Untranslatable("comprehension")
            bound.add(node.target.id)

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> Any:
            node.args = [self.visit(argument) for argument in node.args]  # (the function's name stays)
            if node.keywords:
                raise _Untranslatable("keywords")
            return node

        def visit_Attribute(self, node: ast.Attribute) -> Any:
            dotted = ast.unparse(node)
            if dotted in names:
                return _lookup(names[dotted], defaults)
            raise _Untranslatable(dotted)

        def visit_Name(self, node: ast.Name) -> Any:
            if node.id in ("None", "True", "False") or node.id in bound:
                return node
            if node.id in names:
                return _lookup(names[node.id], defaults)
            raise _Untranslatable(node.id)

    return ast.fix_missing_locations(Swap().visit(tree)).body  # type: ignore[no-any-return]


_KEY = "\0"  # between a JSON flag's argument and its key, in a name `check` looks up


def _lookup(name: str, defaults: dict[str, Any]) -> ast.expr:
    """`args.get("x", DEFAULT)` for a field whose source default is a literal; `args["x"]` (the line names it);
    a key of a JSON flag's object through its argument (`args.get("profiler_config", {}).get("profiler", ...)`)."""
    args: ast.expr = ast.Name("args", ast.Load())
    holder, _, key = name.partition(_KEY)
    if key:
        args = ast.Call(ast.Attribute(args, "get", ast.Load()), [ast.Constant(holder), ast.Dict([], [])], [])
    looked = key or name
    if name in defaults or key:  # (a key a JSON flag leaves out is the config's default: None when none is known)
        default = ast.Constant(defaults.get(name))
        return ast.Call(ast.Attribute(args, "get", ast.Load()), [ast.Constant(looked), default], [])
    return ast.Subscript(args, ast.Constant(looked), ast.Load())


def validation_code(
    line: CatalogLine, trigger: dict[str, Any], fix: dict[str, Any], reproduction: Reproduction
) -> str | None:
    """`check(args) -> str | None`, the record's condition chain over the engine arguments a `vllm serve` line
    sets (see serve_arguments), returning the message the check raises; None where a condition or a placeholder
    reads anything but fields a flag sets, or where it does not return the pattern's message on the trigger's
    arguments and None on the fix's (both run here: the function is built from allow-listed nodes only)."""
    record, extraction = line.record, line.extraction
    names: dict[str, str] = {}
    defaults: dict[str, Any] = {}
    for ref in extraction.fields:
        if not (ref.resolved and ref.field and (ref.flags or (ref.via and ref.key))):
            continue
        flag = ref.flags[0] if ref.flags else str(ref.via)
        dest = flag.removeprefix("--").replace("-", "_")
        if not ref.flags:  # (a key of a JSON flag: `--profiler-config '{"profiler": ...}'`)
            dest = f"{dest}{_KEY}{ref.key}"
        names[ref.expression] = dest
        if ref.default is not None:
            with contextlib.suppress(ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                defaults[dest] = ast.literal_eval(ref.default)
    keyed = {  # the keys of the JSON flags the trigger's line sets: `--eplb-config '{"use_async": true}'`
        key: f"{dest}{_KEY}{key}" for dest, value in trigger.items() if isinstance(value, dict) for key in value
    }
    for ref in extraction.fields:
        if ref.expression in names:
            continue
        if not ref.resolved and ref.expression.isidentifier() and ref.expression in trigger and ref.expression in fix:
            names[ref.expression] = ref.expression  # (a parameter the line sets by the flag of its name)
        elif ref.resolved and ref.field in keyed:  # (a field of a config held, set through its JSON flag)
            names[ref.expression] = keyed[str(ref.field)]
        elif not ref.resolved and ref.expression in keyed:  # (a local named for the key it was read from)
            names[ref.expression] = keyed[ref.expression]
    try:
        tests: list[ast.expr] = []
        for condition in extraction.conditions:
            if condition.kind == "else":  # (the branches before it are listed, negated)
                continue
            if condition.kind not in ("if", "elif"):
                return None
            test = _translated(condition.test, names, defaults)
            tests.append(ast.UnaryOp(ast.Not(), test) if condition.negated else test)
        message = _message(line, names, defaults)
    except _Untranslatable:
        return None
    if not tests:
        return None
    guard = tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
    function = ast.FunctionDef(
        name="check",
        args=ast.arguments(posonlyargs=[], args=[ast.arg("args", ast.Name("dict", ast.Load()))], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=[
            ast.Expr(ast.Constant(f"The check at {record.filePath}:{record.lineNumber} ({reproduction.verifiedWith}), "
                                  "over the engine arguments `vllm serve` flags set; its message, or None.")),
            ast.If(guard, [ast.Return(message)], []),
            ast.Return(ast.Constant(None)),
        ],
        decorator_list=[],
        returns=ast.BinOp(ast.Name("str", ast.Load()), ast.BitOr(), ast.Constant(None)),
    )  # fmt: skip
    source = ast.unparse(ast.fix_missing_locations(ast.Module([function], []))) + "\n"
    try:
        check = compiled_check(source)
        said, after = check(dict(trigger)), check(dict(fix))
    except Exception:
        return None
    pattern = record.messagePattern
    if not isinstance(said, str) or not re.fullmatch(pattern, said, re.S) or after is not None:
        return None
    return source


def compiled_check(source: str) -> Callable[[dict[str, Any]], Any]:
    """A validationCode as its `check` function. Only validation_code's output is given here: built from
    allow-listed nodes (no calls but `args.get` and pure builtins: `len`, `any`, ...; no names but `args` and what a
    comprehension binds), run with no builtins but those, `dict` and `str`.
    What `check` raises (a key the arguments lack) is raised."""
    scope: dict[str, Any] = {"__builtins__": {"dict": dict, "str": str, **_CALLS}}
    exec(compile(source, "<validationCode>", "exec"), scope)
    return scope["check"]  # type: ignore[no-any-return]


def _message(line: CatalogLine, names: dict[str, str], defaults: dict[str, Any]) -> ast.expr:
    """The record's message as an f-string over `args` (its placeholders translated as conditions are)."""
    record, extraction = line.record, line.extraction
    template = record.errorMessage
    parts: list[ast.expr] = []
    at = 0
    for placeholder in sorted(extraction.placeholders, key=lambda p: p.start):
        if placeholder.start > at:
            parts.append(ast.Constant(template[at : placeholder.start]))
        value = _translated(placeholder.expression, names, defaults)
        if placeholder.debug:  # (`{x=}` prints `x=` and the value's repr)
            parts.append(ast.Constant(f"{placeholder.expression}="))
        conversion = ord(placeholder.conversion) if placeholder.conversion else ord("r") if placeholder.debug else -1
        spec = ast.JoinedStr([ast.Constant(placeholder.formatSpec)]) if placeholder.formatSpec else None
        parts.append(ast.FormattedValue(value, conversion, spec))
        at = placeholder.end
    if at < len(template):
        parts.append(ast.Constant(template[at:]))
    return ast.JoinedStr(parts)
