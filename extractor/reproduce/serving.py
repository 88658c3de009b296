# Serving: the `vllm serve` path inside a runtime (vLLM's own parser, its validation and `create_engine_config`,
# as `vllm serve` runs them up to loading weights), and the lift of a config class's arguments to the flags that
# set them there. Runs in the runtime's interpreter beside child.py: the standard library at import, vLLM once a
# function asks for it. Nothing here evaluates text: a value is read by `ast.literal_eval`, a name of the
# module by attribute look-ups, a sub-config by its keywords (see `decode`).
#
#   line:  {"argv": [flags after the model], "model": {config.json}, "env": {NAME: text}}
#   lift:  {"module", "cls", "arguments": {field: source}, "environment": {NAME: source}, "model": name | None}
from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import enum
import functools
import importlib
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "LIFT_SWITCHES",
    "SERVE_TRIES",
    "decode_value",
    "flag_groups",
    "lift_line",
    "own_flag",
    "prepare",
    "run_line",
    "search",
]

LIFT_SWITCHES = 6  # enabling flags tried with a lifted line that does not reach its check
_SOME = 3  # values tried for a flag a refusal names without one
SERVE_TRIES = 160  # lines the serve path's own search runs for one record (a few milliseconds each)


class Unliftable(Exception):
    """Why a class's arguments have no `vllm serve` line: one argument has no flag, or no value of it parses."""


class _Refused(Exception):
    """argparse refused a line (its usage error, which `vllm serve` prints before exiting 2)."""


# -- the serve path ------------------------------------------------------------------------------------------------


def _first(*names: str) -> Any:
    """The first of `module:attribute` names that imports (vLLM moves them between releases)."""
    said = []
    for name in names:
        module, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as error:
            said.append(f"{name}: {error}")
    raise ImportError("; ".join(said))


@functools.cache
def _parser() -> tuple[Any, Any, Any]:
    """`vllm`'s top parser with its `serve` subcommand and the serve command, as vllm's CLI main builds them
    (once per process)."""
    parser_class = _first("vllm.utils.argparse_utils:FlexibleArgumentParser", "vllm.utils:FlexibleArgumentParser")
    command = _first("vllm.entrypoints.cli.serve:ServeSubcommand")()
    top = parser_class(description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    sub = command.subparser_init(subparsers)
    sub.set_defaults(dispatch_function=command.cmd)

    def refuse(message: str) -> Any:
        raise _Refused(message)

    top.error = sub.error = refuse  # (argparse prints usage and exits 2: here it says why instead)
    return top, sub, command


def _build(folder: str, argv: list[str]) -> Any:
    """What `vllm serve FOLDER ARGV` does before it loads weights: parse, validate, build the engine config."""
    top, _, command = _parser()
    args = top.parse_args(["serve", folder, *argv])
    if getattr(args, "model_tag", None) is not None:  # (ServeSubcommand.cmd: the positional model wins)
        args.model = args.model_tag
    command.validate(args)
    with contextlib.suppress(ImportError):
        validate = _first("vllm.entrypoints.openai.api_server:validate_api_server_args")
        validate(args)
    engine_args = _first("vllm.engine.arg_utils:AsyncEngineArgs").from_cli_args(args)
    usage = _first("vllm.usage.usage_lib:UsageContext").OPENAI_API_SERVER
    return engine_args.create_engine_config(usage_context=usage)


@contextlib.contextmanager
def _standing(line: dict[str, Any]) -> Iterator[str]:
    """A model folder holding the line's config.json, and its environment set; both undone after."""
    folder = tempfile.mkdtemp(prefix="extractor-serve-")
    saved = {name: os.environ.get(name) for name in line.get("env") or {}}
    try:
        with open(os.path.join(folder, "config.json"), "w") as file:
            json.dump(line.get("model") or {}, file)
        os.environ.update({str(k): str(v) for k, v in (line.get("env") or {}).items()})
        yield folder
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def run_line(line: dict[str, Any], report: Callable[[BaseException], dict[str, Any]]) -> dict[str, Any]:
    """Run one `vllm serve` line: what it raised (as child.py reports errors), or that it passed."""
    with _standing(line) as folder:
        try:
            _build(folder, [str(token) for token in line.get("argv") or []])
        except _Refused as refused:
            inner = _refused_by(refused)
            if inner is not None:  # (a JSON flag's config refused while argparse read it: the check raised there)
                return {**report(inner), "usage": str(refused)}
            return {"outcome": "raised", "class": "ArgumentError", "message": str(refused), "sites": [],
                    "wrapped": [], "usage": str(refused)}  # fmt: skip
        except MemoryError:
            return {"outcome": "crashed", "reason": "out of memory"}
        except BaseException as error:
            return report(error)
    return {"outcome": "passed"}


def _refused_by(refused: BaseException) -> BaseException | None:
    """The error a flag's type raised while argparse read it (a JSON flag's config validated, its checks run): the
    first of the usage error's context and causes that is not argparse's own."""
    seen: set[int] = set()
    error: BaseException | None = refused
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if not isinstance(error, (_Refused, argparse.ArgumentError, argparse.ArgumentTypeError)):
            return error
        error = error.__cause__ or error.__context__
    return None


def prepare(model: dict[str, Any]) -> None:
    """Build the parser and one whole line once, before attempts fork: they start warm."""
    with contextlib.suppress(BaseException):
        run_line({"argv": [], "model": model, "env": {}}, lambda error: {})


# -- values: read, never evaluated ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Model:
    """A tiny model folder a program names (`MODEL`, `MOE_MODEL`)."""

    name: str


@dataclasses.dataclass(frozen=True)
class Config:
    """A sub-config built with keywords (`EPLBConfig(use_async=True)`): JSON of its keywords on a flag."""

    name: str
    keywords: dict[str, Any]


def decode_value(source: str, module: Any, models: dict[str, Any]) -> Any:
    """The value a program's argument source stands for: a literal, a tiny model's name, a name or attribute of
    the module (an enum member), or a sub-config with such keywords. Anything else (a call of another kind, an
    operator, a subscript) is Unliftable: nothing is evaluated."""
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        raise Unliftable(f"not a value: {source[:80]}") from None
    return _decoded(tree, module, models)


def _decoded(node: ast.expr, module: Any, models: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name) and node.id in models:
        return Model(node.id)
    if isinstance(node, (ast.Name, ast.Attribute)):
        chain: list[str] = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in ("True", "False", "None"):
            return ast.literal_eval(node)
        value: Any = module
        for part in [node.id, *chain]:
            if part.startswith("__") or not hasattr(value, part):
                raise Unliftable(f"no such name in {module.__name__}: {'.'.join([node.id, *chain])}")
            value = getattr(value, part)
        return value
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Name):
        keywords = {k.arg: _decoded(k.value, module, models) for k in node.keywords if k.arg is not None}
        return Config(node.func.id, keywords)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_decoded(item, module, models) for item in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise Unliftable(f"not a value: {ast.unparse(node)[:80]}") from None


def _jsonable(value: Any) -> Any:
    """A value as JSON holds it: an enum by its value, a sub-config by its keywords."""
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, Config):
        return {k: _jsonable(v) for k, v in value.keywords.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise Unliftable(f"no JSON for {type(value).__name__}")


# -- the lift ------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Table:
    """The serve parser's flags: by argument group (vLLM titles each with its config class) and by dest."""

    groups: dict[str, dict[str, argparse.Action]]
    dests: dict[str, argparse.Action]
    json_flags: dict[str, argparse.Action]  # a config class -> the flag that takes it as JSON (`--compilation-config`)
    options: dict[str, argparse.Action]  # an option string -> its action


@functools.cache
def _table() -> _Table:
    """The serve parser's flags (once per process, as the parser)."""
    _, sub, _ = _parser()
    groups: dict[str, dict[str, argparse.Action]] = {}
    dests: dict[str, argparse.Action] = {}
    for group in sub._action_groups:
        for action in group._group_actions:
            if action.option_strings:
                groups.setdefault(str(group.title), {})[action.dest] = action
                dests.setdefault(action.dest, action)
    json_flags: dict[str, argparse.Action] = {}
    for title in groups:  # a field of a config annotated with another config: that config's JSON flag
        holder = _config_class(title)
        for field in dataclasses.fields(holder) if holder is not None and dataclasses.is_dataclass(holder) else ():
            action = dests.get(field.name)
            annotation = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
            for word in re.findall(r"[A-Z]\w*Config\b", str(annotation)):
                if action is not None and word not in json_flags:
                    json_flags[word] = action
    options = {option: action for action in dests.values() for option in action.option_strings}
    options.update({o: a for group in groups.values() for a in group.values() for o in a.option_strings})
    return _Table(groups, dests, json_flags, options)


def _config_class(name: str) -> Any:
    try:
        return getattr(importlib.import_module("vllm.config"), name)
    except (ImportError, AttributeError):
        return None


def _long(action: argparse.Action) -> str:
    return next((s for s in action.option_strings if s.startswith("--") and not s.startswith("--no-")),
                action.option_strings[0])  # fmt: skip


def _renderings(action: argparse.Action, value: Any) -> list[list[str]]:
    """The ways to write `value` for a flag, most natural first: argparse and the parse decide which holds."""
    flag = _long(action)
    negative = next((s for s in action.option_strings if s.startswith("--no-")), None)
    if isinstance(value, bool):
        if action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction):
            return [[flag]] if value else ([[negative]] if negative else [[]])
        return [[flag, str(value).lower()], [flag, str(value)]]
    if value is None:
        return [[flag, "None"], [flag, "none"], [flag, "null"]]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [str(_jsonable(item)) for item in value]
        spread = [[flag, *items]] if items else []
        return [*spread, [flag, json.dumps(_jsonable(value))], [flag, ",".join(items)]]
    if isinstance(value, (dict, Config)):  # (JSON is the syntax; argparse may run the config's checks reading it)
        return [[flag, json.dumps(_jsonable(value))]]
    if isinstance(value, enum.Enum):
        return [[flag, value.name.lower()], [flag, value.name], [flag, str(value.value)]]
    return [[flag, str(value)]]


def _same(parsed: Any, wanted: Any) -> bool:
    if parsed == wanted:
        return True
    with contextlib.suppress(Exception):
        return bool(_jsonable(parsed) == _jsonable(wanted))
    return False


def _parses(tokens: list[str], action: argparse.Action, wanted: Any, folder: str) -> tuple[bool, bool]:
    """Whether argparse takes the tokens, and whether it reads the wanted value from them."""
    top, _, _ = _parser()
    try:
        args = top.parse_args(["serve", folder, *tokens])
    except (_Refused, SystemExit, Exception):
        return False, False
    return True, _same(getattr(args, action.dest, None), wanted)


@dataclasses.dataclass
class _Line:
    """A line being lifted: its flags, the JSON flags' payloads, the model, what no flag sets."""

    model: dict[str, Any]
    argv: list[str] = dataclasses.field(default_factory=list)
    payloads: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    json_actions: dict[str, argparse.Action] = dataclasses.field(default_factory=dict)
    dropped: list[str] = dataclasses.field(default_factory=list)

    def to_json(self, action: argparse.Action, key: str, value: Any) -> None:
        self.json_actions[action.dest] = action
        self.payloads.setdefault(action.dest, {})[key] = _jsonable(value)


def lift_line(spec: dict[str, Any], module_dir: str, models: dict[str, Any]) -> dict[str, Any]:
    """The `vllm serve` line that sets a config class's arguments: each to its flag in the class's group, or as a
    key of the JSON flag that takes the class, or to the engine argument of its name; a config it holds, through
    that config's own flags; the model argument as the model folder's config.json; the environment as is. An
    argument no flag sets is left out and named (`dropped`): the serve path derives it itself, or the line
    does not reach the check, which the run tells."""
    module = importlib.import_module(str(spec["module"]))
    line = _Line(model=models[str(spec.get("model") or "MODEL")])
    decoded: dict[str, Any] = {}
    for name, source in (spec.get("arguments") or {}).items():
        try:
            decoded[str(name)] = decode_value(str(source), module, models)
        except Unliftable:
            line.dropped.append(str(name))
    hints = {str(k): str(v) for k, v in (spec.get("hints") or {}).items()}
    _lift_into(str(spec.get("cls") or ""), decoded, line, models, module_dir, hints)
    for dest, payload in line.payloads.items():
        line.argv += _written(line.json_actions[dest], payload, model_dir=module_dir)
    environment = {
        str(k): str(_jsonable(decode_value(str(v), module, models))) for k, v in (spec.get("environment") or {}).items()
    }
    return {"argv": line.argv, "model": line.model, "env": environment, "dropped": line.dropped}


def _lift_into(
    cls: str, arguments: dict[str, Any], line: _Line, models: dict[str, Any], module_dir: str, hints: dict[str, str]
) -> None:
    """Each argument of `cls` to its flag: the class's group's (or, named by the catalog's reading of the CLI file
    in `hints`, `Class.field` -> `--flag`, one whose name differs: `--mamba-backend`), a held config's own."""
    table = _table()
    for name, value in arguments.items():
        if isinstance(value, Model):
            if name != "model":
                raise Unliftable(f"{name} takes a model folder")
            line.model = models[value.name]
            continue
        holder, _, inner = name.partition(".")
        if inner:  # a field of a config the class holds: that field's JSON flag
            action = table.dests.get(holder)
            if action is None:
                line.dropped.append(name)
            else:
                line.to_json(action, inner, value)
            continue
        action = own_flag(cls, name, hints)
        held = isinstance(value, Config) and (
            value.name in table.groups
            or value.name in table.json_flags
            or any(h.startswith(f"{value.name}.") for h in hints)
        )
        if action is None and held and table.dests.get(name) is None:  # (a config held: its own flags)
            _lift_into(value.name, dict(value.keywords), line, models, module_dir, hints)
            continue
        if action is None and cls in table.json_flags:
            line.to_json(table.json_flags[cls], name, value)
            continue
        action = action or table.dests.get(name)
        if action is None:
            line.dropped.append(name)
            continue
        line.argv += _written(action, value, model_dir=module_dir)


def own_flag(cls: str, name: str, hints: dict[str, str]) -> argparse.Action | None:
    """The flag of a config class's field in the class's own group (`--max-loras`), or named by the catalog's
    reading of the CLI file in `hints` (`Class.field` -> `--flag`), or the one flag of the group whose name
    ends with the field's (`--mamba-ssu-algorithm`)."""
    table = _table()
    own = table.groups.get(cls, {})
    prefixed = [a for dest, a in own.items() if dest.endswith(f"_{name}")]
    action = own.get(name) or table.options.get(hints.get(f"{cls}.{name}", ""))
    return action or (prefixed[0] if len(prefixed) == 1 else None)


def _written(action: argparse.Action, value: Any, *, model_dir: str) -> list[str]:
    """The tokens that set a flag to `value`, as argparse reads them back; the first that parses at all when
    none reads it back exactly (a type vLLM converts later)."""
    parsed_any: list[str] | None = None
    renderings = _renderings(action, value)
    if isinstance(value, (dict, Config)):
        return renderings[0]
    for tokens in renderings:
        parses, same = _parses(tokens, action, value, model_dir)
        if parses and same:
            return tokens
        if parses and parsed_any is None:
            parsed_any = tokens
    if parsed_any is None:
        raise Unliftable(f"no way of writing {_long(action)} {value!r} parses")
    return parsed_any


def switches(spec: dict[str, Any], argv: list[str]) -> list[list[str]]:
    """Enabling flags a config class may need to be built at all on the serve path (`--enable-lora` for
    LoRAConfig): the switches of its own group, then every `--enable-*` whose words the class's name holds."""
    table = _table()
    cls = str(spec.get("cls") or "")
    words = {w for w in re.findall(r"[a-z]+", re.sub(r"([A-Z][a-z]+)", r" \1", cls).lower()) if len(w) > 2}
    words.discard("config")
    found: list[list[str]] = []

    def switch(action: argparse.Action) -> None:
        flag = _long(action)
        switchable = action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction)
        if switchable and flag not in argv and [flag] not in found:
            found.append([flag])

    for dest, action in table.groups.get(cls, {}).items():
        if dest.startswith(("enable_", "use_")):
            switch(action)
    for dest, action in table.dests.items():
        if dest.startswith("enable_") and set(dest.split("_")[1:]) & words:
            switch(action)
    return found[:LIFT_SWITCHES]


def at_target(result: dict[str, Any], target: list[Any], pattern: str) -> bool:
    """Whether a report is of the check's own raise (the innermost frame in the package, of the error pydantic
    wrapped when it wrapped one) with a message its pattern matches."""
    if result.get("outcome") != "raised":
        return False
    errors = [*result.get("wrapped", []), result] if result.get("class") == "ValidationError" else [result]
    for error in errors:
        sites = error.get("sites") or []
        if sites and list(sites[-1]) == list(target) and re.fullmatch(pattern, str(error.get("message")), re.S):
            return True
    return False


def _roomier(model: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's config.json with each number key a refusal names made larger (`max_position_embeddings`, when
    a flag asks for more than the tiny model has)."""
    said = " ".join(str(error.get("message", "")) for error in [result, *result.get("wrapped", [])])
    return [
        {**model, key: value * 64}
        for key, value in model.items()
        if isinstance(value, int) and not isinstance(value, bool) and value > 0 and re.search(rf"\b{key}\b", said)
    ]


def flag_groups(argv: list[str]) -> list[list[str]]:
    """A line's flags, each with its values."""
    groups: list[list[str]] = []
    for token in argv:
        if token.startswith("--") or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def _named(result: dict[str, Any]) -> list[list[str]]:
    """The flags a refusal tells the user to set (`by specifying --mamba-ssm-cache-dtype float16`), with their
    value when it names one: only flags the parser has."""
    said = " ".join(str(error.get("message", "")) for error in [result, *result.get("wrapped", [])])
    options = _table().options
    found: list[list[str]] = []
    for flag, value in re.findall(r"(--[a-z0-9][a-z0-9-]*)(?:[ =]([\w.:/-]+))?", said):
        action = options.get(flag)
        if action is None:
            continue
        if action.nargs == 0:
            groups = [[flag]]
        elif value and not value.startswith("-"):
            groups = [[flag, value]]
        else:  # (`Set --data-parallel-rank`: a value it may take, each tried as one more group)
            groups = [[flag, choice] for choice in _some_values(action)]
        found += [group for group in groups if group not in found]
    return found


def _some_values(action: argparse.Action) -> list[str]:
    """Values to try for a flag a refusal names without one: its first choices, or small counts for an int."""
    if action.choices:
        return [str(choice) for choice in list(action.choices)[:_SOME]]
    if action.type is int:
        return [str(number) for number in range(_SOME)]
    return []


def _combined(
    trigger: dict[str, Any],
    task: dict[str, Any],
    said: list[list[str]],
    report: Callable[[BaseException], dict[str, Any]],
    reached: Callable[[dict[str, Any]], bool],
) -> tuple[int, list[str] | None, dict[str, Any]]:
    """The search on the serve path where the lift alone does not reach the check: the line with one, two, then
    three more flag groups (the class's enabling switches, and the flags of the fields the check reads, with the
    values the class-level run showed), each flag at most once, at most SERVE_TRIES lines."""
    present = {group[0] for group in flag_groups(trigger["argv"])}
    extra = [list(g) for g in [*said, *(task.get("extra") or [])] if g and g[0] not in present]
    groups = [*switches(task["trigger"], trigger["argv"]), *extra]
    tried = 0
    for size in (1, 2, 3):
        for combo in itertools.combinations(groups, size):
            flags = [group[0] for group in combo]
            if len(set(flags)) < len(flags):
                continue
            if tried >= SERVE_TRIES:
                return tried, None, {}
            tried += 1
            added = [token for group in combo for token in group]
            result = run_line({**trigger, "argv": [*trigger["argv"], *added]}, report)
            if reached(result):
                return tried, added, result
    return tried, None, {}


def search(
    task: dict[str, Any],
    models: dict[str, Any],
    report: Callable[[BaseException], dict[str, Any]],
    reached: Callable[[dict[str, Any]], bool],
) -> dict[str, Any]:
    """Lift a class-level trigger to a `vllm serve` line that reaches the check (`reached`): as lifted, then with
    what the serve path's search adds (`_combined`); and its fixes to lines with the same additions (lifted, not
    run here: the extractor runs each in a fresh process)."""
    folder = tempfile.mkdtemp(prefix="extractor-parse-")
    try:
        try:
            trigger = lift_line(task["trigger"], folder, models)
        except Unliftable as why:
            return {"outcome": "unliftable", "said": f"the trigger: {why}"}
        except (ImportError, Exception) as error:  # (a serve path this release does not have)
            return {"outcome": "unliftable", "said": f"{type(error).__name__}: {error}"[:300]}
        dropped = trigger.pop("dropped")
        lifted_model = trigger["model"]
        enabling = switches(task["trigger"], trigger["argv"])
        result = run_line(trigger, report)
        tried, chosen = 1, []
        # The model as lifted, made roomier where a refusal names a key of it, then each other tiny model (a check
        # of a model family fired first: `only supported for Nemotron-H models`, `Non-MoE models do not support`).
        others = [config for config in models.values() if config != trigger["model"]]
        roomier = _roomier(trigger["model"], result)
        for model, another in [(trigger["model"], False), *((m, False) for m in roomier), *((m, True) for m in others)]:
            if reached(result):
                break
            refusal = result  # (what the flags the search adds are read from)
            if model is not trigger["model"]:  # (the model folder's config.json, a key the refusal named raised)
                tried += 1
                again = run_line({**trigger, "model": model}, report)
                if reached(again):
                    trigger, result = {**trigger, "model": model}, again
                    break
                if another:
                    if again.get("message") == result.get("message"):
                        continue  # (the same check stops it: the model was not what stood in the way)
                    refusal = again
            found = _combined({**trigger, "model": model}, task, _named(refusal), report, reached)
            tried += found[0]
            if found[1] is not None:
                chosen, result = found[1], found[2]
                trigger = {**trigger, "model": model, "argv": [*trigger["argv"], *found[1]]}
        if not reached(result):
            said = result.get("message") or result.get("reason") or result.get("outcome")
            unset = f" (no flag sets {', '.join(dropped)})" if dropped else ""
            return {"outcome": "not reached", "tries": tried, "said": f"{str(said)[:200]}{unset}"}
        out: dict[str, Any] = {
            "outcome": "lifted", "trigger": trigger, "tries": tried,
            "switches": [g[0] for g in flag_groups(chosen) if [g[0]] in enabling],
        }  # fmt: skip
        fixes: list[dict[str, Any]] = []
        for fix in task.get("fixes") or []:
            try:
                line = lift_line(fix, folder, models)
            except Unliftable as why:
                fixes.append({"outcome": "unliftable", "said": f"the fix: {why}"})
                continue
            line.pop("dropped")
            if line["model"] == lifted_model:  # (the model the trigger's search made roomier, unless the fix sets one)
                line["model"] = trigger["model"]
            own = {group[0] for group in flag_groups(line["argv"])}  # (the fix's own value of a flag wins)
            kept = [token for group in flag_groups(chosen) if group[0] not in own for token in group]
            line = {**line, "argv": [*line["argv"], *kept]}
            fixes.append({"outcome": "lifted", "line": line})  # (run by the extractor, each in a fresh process)
        out["fixes"] = fixes
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)
