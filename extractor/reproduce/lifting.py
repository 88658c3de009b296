# Lifting: a reproduction made by building a config class, taken where users stand. Its program is read back
# (the class it builds, the arguments as source, the environment it sets), the runtime lifts those to a `vllm
# serve` line and runs it through vLLM's own parser and config path (serving.py), and the fixes are run as lines
# too: the class's fix lifted, then each flag of the trigger taken away. A line counts only when it raises at
# the record's own line with a message its pattern matches; a fix only when it no longer does.
from __future__ import annotations

import ast
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from extractor.reproduce.serving import flag_groups

if TYPE_CHECKING:
    from extractor.model.records import CatalogLine
    from extractor.reproduce.runtime import Session

__all__ = [
    "ClassLevel",
    "Lifted",
    "ServeFix",
    "candidates",
    "change_words",
    "class_level",
    "flag_hints",
    "lift",
    "probe_spec",
    "serve_search",
]

_MEMORY = 4 << 30
_MISSING = object()
_DROPS = 8  # flags of a trigger taken away, one at a time, as fixes
_EXTRA = 12  # flag groups the serve path's search may add


@dataclass(frozen=True)
class ClassLevel:
    """What a class-level program does, read back from its own text: the class it builds, with which arguments
    (their source), after setting which environment variables. Methods called with arguments are not liftable."""

    module: str
    cls: str
    arguments: dict[str, str]
    environment: dict[str, str] = field(default_factory=dict)

    def spec(self, hints: dict[str, str] | None = None) -> dict[str, Any]:
        spec = {"module": self.module, "cls": self.cls, "arguments": self.arguments, "environment": self.environment}
        return {**spec, "hints": hints or {}}


def class_level(program: str) -> ClassLevel | None:
    """The class-level reading of a program `reproduce` wrote (`from M import C` ... `config = C(...)`, an
    optional `config.method()` with no arguments); None for any other shape (a function called directly)."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    imported: dict[str, str] = {}
    environment: dict[str, str] = {}
    built: tuple[str, dict[str, str]] | None = None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.update({alias.asname or alias.name: node.module for alias in node.names})
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and target.id == "config" and isinstance(value, ast.Call):
                if not isinstance(value.func, ast.Name) or value.args:
                    return None
                keywords = {k.arg: ast.unparse(k.value) for k in value.keywords if k.arg is not None}
                built = (value.func.id, keywords)
            elif (
                isinstance(target, ast.Subscript)
                and ast.unparse(target.value) == "os.environ"
                and isinstance(target.slice, ast.Constant)
            ):
                environment[str(target.slice.value)] = ast.unparse(value)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if call.args or call.keywords or ast.unparse(call.func).partition(".")[0] != "config":
                return None  # (a function of the module called, or a method given arguments)
    if built is None or built[0] not in imported:
        return None
    return ClassLevel(imported[built[0]], built[0], built[1], environment)


@dataclass(frozen=True)
class ServeFix:
    """A fix run as a `vllm serve` line that passed: the line, and the change in words."""

    line: dict[str, Any]
    change: str
    lifted: bool = False  # the class-level fix, lifted (else a flag of the trigger taken away)


@dataclass(frozen=True)
class Lifted:
    """A trigger lifted and run: the line, what vLLM printed, and the fixes that ran and passed (first: the class's
    own fix, lifted)."""

    line: dict[str, Any]
    message: str
    fixes: list[ServeFix]


def _keys(group: list[str]) -> dict[str, Any]:
    """The keys of a JSON flag's object (`--x '{"a": 1}'`); empty for any other flag."""
    if len(group) != 2 or not group[1].startswith("{"):
        return {}
    try:
        value = json.loads(group[1])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def change_words(before: list[str], after: list[str]) -> str:
    """What a fix changes on the line, in the words of its flags: `set --max-cpu-loras 9 (was 8)`,
    `remove --x`, `add --y 2`."""
    old = {group[0]: group[1:] for group in flag_groups(before)}
    new = {group[0]: group[1:] for group in flag_groups(after)}
    parts: list[str] = []
    for flag, values in new.items():
        if flag not in old:
            parts.append(" ".join(["add", flag, *values]))
        elif old[flag] != values:
            was, now = _keys([flag, *old[flag]]), _keys([flag, *values])
            if was and now:  # (a JSON flag: said key by key)
                for k, v in now.items():
                    if was.get(k, _MISSING) != v:
                        prior = f" (was {json.dumps(was[k])})" if k in was else ""
                        parts.append(f"set {flag} key {k} to {json.dumps(v)}{prior}")
                parts += [f"remove key {k} from {flag}" for k in was if k not in now]
            else:
                parts.append(" ".join(["set", flag, *values]) + f" (was {' '.join(old[flag])})")
    parts += [f"remove {flag}" for flag in old if flag not in new]
    return "; ".join(parts) or "no change"


def candidates(line: CatalogLine, shown: str) -> list[list[str]]:
    """Flag groups the serve path's search may add to a lifted line: for each field the check reads that a flag
    sets, the value the class-level run printed for it (its placeholder's capture in the message), and both
    settings of a switch."""
    import re

    record, extraction = line.record, line.extraction
    by_expression = {ref.expression: ref for ref in extraction.fields if ref.flags and ref.field}
    found: list[list[str]] = []
    try:
        captured = re.search(record.messagePattern.removeprefix("^").removesuffix("$"), shown, re.S)
    except re.error:
        captured = None
    for placeholder in extraction.placeholders:
        ref = by_expression.get(placeholder.expression)
        if ref is None or captured is None or placeholder.group not in captured.groupdict():
            continue
        value = captured.group(placeholder.group)
        if value is not None and value.strip() and "\n" not in value:
            found.append(_as_flag(ref.flags, value.strip().strip("'\"")))
    for ref in by_expression.values():
        if (ref.annotation or "").startswith("bool"):
            negative = next((f for f in ref.flags if f.startswith("--no-")), None)
            found += [[_long(ref.flags)], *([[negative]] if negative else [])]
    unique: list[list[str]] = []
    for group in found:
        if group not in unique:
            unique.append(group)
    return unique[:_EXTRA]


def _long(flags: list[str]) -> str:
    return next((f for f in flags if f.startswith("--") and not f.startswith("--no-")), flags[0])


def _as_flag(flags: list[str], value: str) -> list[str]:
    if value in ("True", "False"):
        negative = next((f for f in flags if f.startswith("--no-")), None)
        return [_long(flags)] if value == "True" else [negative] if negative else [_long(flags), "False"]
    return [_long(flags), value]


def flag_hints(lines: list[CatalogLine]) -> dict[str, str]:
    """The catalog's reading of the CLI file, across its records: `Class.field` -> the flag that sets it (one
    whose name is not the field's too: `MambaConfig.backend` -> `--mamba-backend`)."""
    return {
        f"{ref.class_}.{ref.field}": ref.flags[0]
        for line in lines
        for ref in line.extraction.fields
        if ref.class_ and ref.field and ref.flags
    }


def lift(
    line: CatalogLine,
    session: Session,
    trigger: ClassLevel,
    fixes: list[ClassLevel],
    *,
    extra: list[list[str]],
    hints: dict[str, str],
    timeout: float,
    raised_here: Callable[[dict[str, Any]], bool],
    answered: Callable[[str], bool],
) -> tuple[Lifted | None, str]:
    """The trigger as a `vllm serve` line that raises at the record's line (run again alone in a fresh process),
    and the fixes whose lines, each run in a fresh process, pass (the class's own fix first); or None and why."""
    record = line.record
    spec = {
        "extra": extra,
        "trigger": trigger.spec(hints),
        "fixes": [fix.spec(hints) for fix in fixes],
        "target": [record.filePath, record.lineNumber],
        "pattern": record.messagePattern,
    }
    found = session.serve(spec, timeout=timeout * 3, memory=_MEMORY, ident=record.id + "-serve")
    return _verified(line, session, found, timeout=timeout, raised_here=raised_here, answered=answered)


def serve_search(
    line: CatalogLine,
    session: Session,
    *,
    hints: dict[str, str],
    timeout: float,
    raised_here: Callable[[dict[str, Any]], bool],
    answered: Callable[[str], bool],
) -> tuple[Lifted | None, str]:
    """A `vllm serve` line found by the serve path's own search over the fields the check reads (probing.py),
    where no class-level reproduction lifts to one; verified and given fixes as a lifted line is."""
    spec = probe_spec(line, hints)
    if not spec["fields"]:
        return None, "its conditions read no field nor name a flag could set"
    found = session.sweep(spec, timeout=timeout * 3, memory=_MEMORY, ident=line.record.id + "-probe")
    return _verified(line, session, found, timeout=timeout, raised_here=raised_here, answered=answered)


def probe_spec(line: CatalogLine, hints: dict[str, str]) -> dict[str, Any]:
    """What the runtime's probe needs: the record's module, function and target, and each value its conditions
    read, with the values they compare it with, as source: a field the catalog resolved (with the flag or the
    key of a JSON flag that sets it, where the catalog knows one), else the name it is read by (`value`,
    `tensor_parallel_size`, `parallel_config.tensor_parallel_size` -> `tensor_parallel_size`), which the
    runtime routes to a flag itself (a validator's fields, an engine argument of that name) or leaves."""
    record, extraction = line.record, line.extraction
    tests = [c.test for c in extraction.conditions if c.kind not in ("else", "try", "finally") and c.test]
    fields: list[dict[str, Any]] = []
    classes: list[str] = []
    for ref in extraction.fields:
        sources = compared(ref.expression, tests)
        entry: dict[str, Any]
        if ref.resolved and ref.field:
            flag = _long(ref.flags) if ref.flags else hints.get(f"{ref.class_}.{ref.field}")
            if ref.class_ and ref.class_ not in classes:
                classes.append(ref.class_)
            entry = {"class": ref.class_, "field": ref.field, "flag": flag, "via": ref.via, "key": ref.key,
                     "sources": sources}  # fmt: skip
        else:
            name = _read_name(ref.expression)
            if name is None:
                continue
            entry = {"class": None, "field": name, "flag": None, "via": None, "key": None, "sources": sources,
                     "name": True}  # fmt: skip
        if entry not in fields:
            fields.append(entry)
    owner = extraction.function.rpartition(".")[0].rpartition(".")[2]
    if owner and owner[:1].isupper() and owner not in classes:
        classes.insert(0, owner)
    return {
        "module": record.filePath.removesuffix(".py").replace("/", ".").removesuffix(".__init__"),
        "function": extraction.function,
        "fields": fields,
        "classes": classes,
        "target": [record.filePath, record.lineNumber],
        "pattern": record.messagePattern,
    }


def _read_name(expression: str) -> str | None:
    """The name a value is read by: a plain name, or an attribute chain's last attribute (`self.x`,
    `parallel_config.tensor_parallel_size`); None for anything computed (a call, a subscript, arithmetic) or a
    constant's name (`HAS_TRITON`, `CompilationMode.__members__`)."""
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    chain = node
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    if not isinstance(chain, ast.Name) or chain.id[:1].isupper():
        return None
    name = node.attr if isinstance(node, ast.Attribute) else chain.id
    return None if name.startswith("__") or name.isupper() else name


def compared(expression: str, tests: list[str]) -> list[str]:
    """The values conditions compare an expression with, as source, each number with its neighbours
    (`self.x > 0` -> `0`, `1`, `-1`; `self.m == Mode.NONE` -> `Mode.NONE`; `x in ("a", "b")` -> both; `x is
    None` -> `None`)."""
    out: list[str] = []

    def add(node: ast.expr) -> None:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for item in node.elts:
                add(item)
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            number = node.value
            texts = [repr(number), repr(number + 1), repr(number - 1)]
        elif isinstance(node, (ast.Constant, ast.Attribute, ast.Name)):
            texts = [ast.unparse(node)]
        else:
            return
        out.extend(text for text in texts if text not in out)

    for test in tests:
        try:
            tree = ast.parse(test, mode="eval")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            for index, side in enumerate(sides):
                inside = {ast.unparse(part) for part in ast.walk(side) if isinstance(part, ast.expr)}
                if expression not in inside:  # (the expression itself, or a term of it: `a * b <= 1`)
                    continue
                for other in sides[max(0, index - 1) : index] + sides[index + 1 : index + 2]:
                    if expression not in ast.unparse(other):
                        add(other)
    return out


def _verified(
    line: CatalogLine,
    session: Session,
    found: dict[str, Any],
    *,
    timeout: float,
    raised_here: Callable[[dict[str, Any]], bool],
    answered: Callable[[str], bool],
) -> tuple[Lifted | None, str]:
    """What the runtime found, run again alone in a fresh process, and its fixes (the lifted ones, then each flag
    and each JSON key of the trigger taken away), each run in a fresh process: those that pass."""
    record = line.record
    if found.get("outcome") != "lifted":
        return None, str(found.get("said") or found.get("reason") or found.get("outcome"))
    chosen = dict(found["trigger"])
    again = session.line(chosen, timeout=timeout, memory=_MEMORY, ident=record.id + "-line")
    if not raised_here(again):
        said = again.get("message") or again.get("reason") or again.get("outcome")
        return None, f"the line {' '.join(chosen['argv']) or '(no flags)'} did not raise here: {str(said)[:200]}"
    message = str(again["message"])
    if not answered(message):
        return None, "match does not answer what the line printed with this record"
    candidates = [(dict(fix["line"]), True) for fix in found.get("fixes") or [] if "line" in fix]
    groups = flag_groups(list(chosen["argv"]))
    switches = set(found.get("switches") or [])  # (an enabling flag taken away leaves the check unbuilt: no fix)
    for index in range(min(len(groups), _DROPS)):  # each flag of the trigger taken away: back to its default
        if groups[index][0] in switches:
            continue
        kept = [token for i, group in enumerate(groups) if i != index for token in group]
        candidates.append(({**chosen, "argv": kept}, False))
        for key in _keys(groups[index]):  # a JSON flag: each key taken away (the rest of the flag kept)
            fewer = {k: v for k, v in _keys(groups[index]).items() if k != key}
            if fewer:
                changed = [t for i, g in enumerate(groups) for t in (g if i != index else [g[0], json.dumps(fewer)])]
                candidates.append(({**chosen, "argv": changed}, False))
    made: list[ServeFix] = []
    seen: list[list[str]] = []
    for candidate, lifted in candidates:
        if candidate["argv"] in seen or candidate["argv"] == chosen["argv"]:
            continue
        seen.append(candidate["argv"])
        after = session.line(candidate, timeout=timeout, memory=_MEMORY, ident=record.id + "-fix")
        if after.get("outcome") == "passed":
            made.append(ServeFix(candidate, change_words(list(chosen["argv"]), list(candidate["argv"])), lifted))
    return Lifted(chosen, message, made), ""
