# Probing: the serve path's own search for a check that no class-level reproduction lifts to a `vllm serve` line
# (its program calls a module function, its condition reads a value computed at run time, the class level never
# reached it). Runs in the runtime beside child.py and serving.py: the standard library at import.
#
# The extractor names the fields the check reads that a flag sets (`--max-loras`) or a key of a JSON flag sets
# (`--compilation-config` key `mode`), with the values its conditions compare them with, as source. Each field
# gets a few values: those sources (read by serving.decode_value, never evaluated), then what its type can hold
# (a Literal's choices, an enum's members, both booleans, small and edge numbers, a text no choice holds). Lines
# of one, two, then three such settings are run through vLLM's own serve path (serving.run_line), with the
# enabling switches of the classes involved and the flags a refusal names, until one raises at the check.
from __future__ import annotations

import contextlib
import dataclasses
import enum
import importlib
import inspect
import itertools
import json
import shutil
import tempfile
import types
import typing
from collections.abc import Callable
from typing import Any

if __package__:  # imported as part of the extractor (its tests)
    from extractor.reproduce import serving
else:  # run in a runtime, beside child.py
    serving = importlib.import_module("serving")

__all__ = ["PROBE_TRIES", "sweep"]

PROBE_TRIES = 120  # lines one record's probe runs (a few milliseconds each, most refused by argparse at once)
_PER_FIELD = 8  # values tried for one field
_NUMBERS = [0, 1, 2, 3, -1, 4096]
_BOGUS = "extractor-no-such-choice"  # a text no Literal, enum or choice holds


@dataclasses.dataclass(frozen=True)
class _Setting:
    """One field set on the line: a flag's tokens, or a key of a JSON flag's object."""

    name: str  # what it sets (a flag's dest, or `--json-flag key`): a line sets each at most once
    tokens: tuple[str, ...] = ()
    via: str | None = None
    key: str | None = None
    value: Any = None
    model: str | None = None  # another tiny model's folder, in place of the task's


def _argv(settings: tuple[_Setting, ...]) -> list[str]:
    """The flags of a line setting these, a JSON flag's keys in one object."""
    argv: list[str] = []
    payloads: dict[str, dict[str, Any]] = {}
    for setting in settings:
        if setting.via is not None and setting.key is not None:
            payloads.setdefault(setting.via, {})[setting.key] = setting.value
        else:
            argv += setting.tokens
    for via, payload in payloads.items():
        argv += [via, json.dumps(payload)]
    return argv


def _type_of(cls_name: str | None, field: str) -> Any:
    """The annotation of a config class's field, resolved (None when it does not resolve)."""
    holders = [serving._config_class(cls_name)] if cls_name else []
    with contextlib.suppress(ImportError):
        holders.append(serving._first("vllm.engine.arg_utils:EngineArgs"))
    for holder in holders:
        if holder is None:
            continue
        try:
            hints = typing.get_type_hints(holder)
        except Exception:  # (an annotation that names what the release does not import)
            continue
        if field in hints:
            return hints[field]
    return None


def _held(annotation: Any, depth: int = 0) -> list[Any]:
    """Values a type can hold, the telling ones first: a Literal's choices, an enum's members, both booleans,
    small and edge numbers, a text no choice holds; None where the type allows it."""
    if depth > 3 or annotation is None:
        return []
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is bool:
        return [True, False]
    if annotation is int:
        return list(_NUMBERS)
    if annotation is float:
        return [0.0, 1.5, -1.0]
    if annotation is str:
        return [_BOGUS]
    if origin is typing.Literal:
        return [*arguments, _BOGUS]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [*annotation, _BOGUS]  # (a validator may read a member's name from a text)
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for argument in arguments:
            out += [v for v in _held(argument, depth + 1) if v not in out]
        return [*out, None] if type(None) in arguments else out
    if origin in (list, tuple, set, frozenset) and arguments:
        return [[value] for value in _held(arguments[0], depth + 1)[:2]] + [[]]
    return []


def _validated(owner: Any, function: str, name: str) -> list[str]:
    """The fields a pydantic field validator of `owner` checks, when `function` is one and `name` is the
    parameter its value comes in by (`validate_mode_before(cls, value)` of `mode`); else none."""
    decorators = getattr(owner, "__pydantic_decorators__", None)
    validator = getattr(decorators, "field_validators", {}).get(function)
    if validator is None:
        return []
    try:
        parameters = list(inspect.signature(getattr(owner, function)).parameters)
    except (TypeError, ValueError, AttributeError):
        return []
    if parameters[:1] in (["self"], ["cls"]):
        parameters = parameters[1:]
    return [str(f) for f in validator.info.fields] if parameters[:1] == [name] else []


def _routed(field: dict[str, Any], task: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a value the check reads is set on the line: the flag or JSON key the extractor named; else, by the
    serve parser, the flag of the field in its class's group, the key of the JSON flag that takes its class,
    or the engine argument of its name. A name the check reads (not a field the extractor resolved) is first
    the fields a validator receives it for; else a field of the function's class, or an engine argument."""
    if field.get("flag") or (field.get("via") and field.get("key")):
        return [field]
    table = serving._table()
    function = str(task.get("function") or "")
    owner_name = function.rpartition(".")[0].rpartition(".")[2]
    cls = str(field.get("class") or owner_name)
    name = str(field["field"])
    targets = [name]
    if field.get("name"):
        owner = serving._config_class(owner_name) if owner_name else None
        targets = _validated(owner, function.rpartition(".")[2], name) or targets
    out: list[dict[str, Any]] = []
    for target in targets:
        entry = {**field, "class": cls, "field": target}
        holder = serving._config_class(cls)
        action = serving.own_flag(cls, target, {})
        if action is None and cls in table.json_flags and target in getattr(holder, "__dataclass_fields__", {}):
            out.append({**entry, "via": serving._long(table.json_flags[cls]), "key": target})
            continue
        action = action or table.dests.get(target)
        if action is not None:
            out.append({**entry, "flag": serving._long(action)})
    return out


def _settings(field: dict[str, Any], module: Any, models: dict[str, Any], folder: str) -> list[_Setting]:
    """A field's settings: the values its conditions name, then those its type holds, each as the line writes it
    (one argparse reads back for a flag; JSON for a key)."""
    values: list[Any] = []
    for source in field.get("sources") or []:
        try:
            values.append(serving.decode_value(str(source), module, models))
        except Exception:  # (Unliftable, or a name the module does not have)
            continue
    table = serving._table()
    annotation = _type_of(field.get("class"), str(field["field"]))
    if annotation is None and field.get("flag") in table.options:  # (the flag's own type: `type=int`)
        converter = table.options[str(field["flag"])].type
        annotation = converter if converter in (int, float, str) else None
    values += _held(annotation)
    out: list[_Setting] = []
    for value in values:
        if len(out) >= _PER_FIELD:
            break
        try:
            if field.get("flag"):
                action = table.options.get(str(field["flag"]))
                if action is None:
                    return out
                setting = _Setting(action.dest, tuple(serving._written(action, value, model_dir=folder)))
            else:
                via, key = str(field["via"]), str(field["key"])
                setting = _Setting(f"{via} {key}", via=via, key=key, value=serving._jsonable(value))
        except Exception:  # (no way of writing it that parses; no JSON for it)
            continue
        if setting not in out and (setting.tokens or setting.via):
            out.append(setting)
    return out


def sweep(
    task: dict[str, Any],
    models: dict[str, Any],
    report: Callable[[BaseException], dict[str, Any]],
    reached: Callable[[dict[str, Any]], bool],
) -> dict[str, Any]:
    """A `vllm serve` line that reaches the check (`reached`), found by running lines of one to three settings of
    the fields it reads (see the module's comment), at most PROBE_TRIES; or how far the probe got."""
    folder = tempfile.mkdtemp(prefix="extractor-parse-")
    try:
        try:
            module = importlib.import_module(str(task["module"]))
        except Exception as error:
            return {"outcome": "not reached", "tries": 0, "said": f"{type(error).__name__}: {error}"[:300]}
        pool: list[_Setting] = []
        unrouted = False  # (a value no flag sets: perhaps the model's, so other tiny models are tried too)
        for read in task.get("fields") or []:
            routed = _routed(read, task)
            unrouted = unrouted or not routed
            for field in routed:
                pool += [s for s in _settings(field, module, models, folder) if s not in pool]
        if not pool:
            return {"outcome": "not reached", "tries": 0, "said": "no flag sets what its conditions read"}
        switches: list[_Setting] = []
        for cls in task.get("classes") or []:
            for group in serving.switches({"cls": cls}, []):
                action = serving._table().options[group[0]]
                setting = _Setting(action.dest, tuple(group))
                if setting not in switches and all(s.name != setting.name for s in pool):
                    switches.append(setting)
        pool += switches
        default = str(task.get("model") or "MODEL")
        if unrouted:
            pool += [_Setting("model", model=name) for name in models if name != default]
        tried = 0
        said = "no field the check reads has a flag"
        refused: list[_Setting] = []  # settings that, alone, were refused before the check
        helped: set[str] = set()  # (and of those, the ones whose refusal named a flag to set with them)
        for size in (1, 2, 3):
            named: list[_Setting] = []
            if size > 1:  # a setting refused alone, its refusal naming no flag to set, is refused in company too
                pool = [s for s in pool if not (s in refused and s.name not in helped)]
                pool.sort(key=lambda s: s in refused)  # (those that passed alone first)
            for combo in itertools.combinations(list(pool), size):
                if len({setting.name for setting in combo}) < size:
                    continue
                if tried >= PROBE_TRIES:
                    return {"outcome": "not reached", "tries": tried, "said": said}
                tried += 1
                chosen = next((s.model for s in combo if s.model), default)
                line = {"argv": _argv(combo), "model": models[chosen], "env": {}}
                result = serving.run_line(line, report)
                if reached(result):
                    used = {s.name for s in combo}
                    return {"outcome": "lifted", "trigger": line, "tries": tried,
                            "switches": [s.tokens[0] for s in switches if s.name in used]}  # fmt: skip
                said = str(result.get("message") or result.get("reason") or result.get("outcome"))[:200]
                if size == 1 and result.get("outcome") != "passed":
                    refused.append(combo[0])
                    if serving._named(result):
                        helped.add(combo[0].name)
                for group in serving._named(result):  # (a flag the refusal tells the user to set)
                    action = serving._table().options[group[0]]
                    if len(group) == 1 and action.nargs != 0:  # (named with no value: nothing to set it to)
                        continue
                    setting = _Setting(action.dest, tuple(group))
                    if setting not in pool and setting not in named:
                        named.append(setting)
            pool += named
        return {"outcome": "not reached", "tries": tried, "said": said}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
