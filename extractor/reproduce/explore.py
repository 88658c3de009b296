# Explore: search, inside a runtime, for the arguments that make a config raise at one `raise`, when its conditions
# cannot be solved on paper (a local computed from fields, a loop, a sub-config, a model). Run by child.py in a
# forked process; the standard library only (the runtime has no extractor), in the modules beside it:
#
#   explore_target   the spec read as data, the target it names in the runtime, the tries it may spend
#   explore_search   the search: tries scored along the raise's path, the climb, the program made short, its fixes
#   explore_kinds    the kinds of trigger a search sets (a class's argument, a method's, the environment): KINDS
#   explore_choices  the values an argument's type allows (a row per kind of type), the arguments a class builds with
#   explore_values   values as source, the bindings they are evaluated in, a class's arguments read
#   explore_source   the raise's function as the runtime's own source writes it
#   explore_models   the tiny models' config.json
#
# Found, the same search turns one argument back (to its default, or another value) for the fix.
from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import time
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import explore_models, explore_search, explore_target, explore_values
else:  # run beside child.py in a runtime, from its folder
    explore_models = importlib.import_module("explore_models")
    explore_search = importlib.import_module("explore_search")
    explore_target = importlib.import_module("explore_target")
    explore_values = importlib.import_module("explore_values")

# What child.py reads here: the tiny models it writes once and warms with, what an error wraps.
MODEL = explore_models.MODEL
TINY_MODELS = explore_models.TINY_MODELS
write_model = explore_models.write_model
_folders = explore_models.model_folders
wrapped = explore_target.wrapped


def explore(spec: dict[str, Any], roots: list[str], model_dir: str) -> dict[str, Any]:
    """Run one search (in a forked process): what it found, as JSON-ready data."""
    started = time.monotonic()
    try:
        read = explore_target.Spec.read(spec, roots)
        # A function of the module, not a method: built through each class of the module that calls it, then
        # called directly (None), as the other code that calls it would.
        owners = [read.cls] if read.cls else [*_callers(read.module, read.function), None]
        module = importlib.import_module(read.module)
        if owners[0] is not None and explore_values.config_class(getattr(module, owners[0])) is None:
            # A method of a class of the module that is no config (an enum's metaclass): reached by building the
            # module's configs.
            owners += _configs_of(read.module, owners[0])
        found: explore_search.Found | explore_search.Missed | None = None
        for index, owner in enumerate(owners):
            deadline = started + read.budget * (index + 1) / len(owners)
            method = read.method if owner == read.cls else None
            search = explore_search.Search(dataclasses.replace(read, cls=owner, method=method), roots, model_dir)
            base: dict[str, explore_values.Value] = {
                name: explore_values.Src(text) for name, text in read.base.items() if "." not in name
            }
            found = search.run(base, deadline)
            if isinstance(found, explore_search.Found):
                break
        return found.as_data() if found is not None else {}
    except BaseException as error:  # the search itself failed: say how, as a result
        return explore_search.Missed(f"{type(error).__name__}: {str(error)[:200]}").as_data()


def _callers(module_name: str, function: str) -> list[str]:
    """The classes a module defines whose code calls one of its functions (`_get_and_verify_dtype(`)."""
    module = importlib.import_module(module_name)
    out = []
    for name, value in vars(module).items():
        if inspect.isclass(value) and value.__module__ == module_name:
            try:
                source = inspect.getsource(value)
            except (OSError, TypeError):
                continue
            if re.search(rf"\b{re.escape(function)}\(", source):
                out.append(name)
    return out[:3]


def _configs_of(module_name: str, cls: str) -> list[str]:
    """The config classes (dataclasses, pydantic models) a module defines, by name (at most 3): those whose code
    names the class, or a class made by it (`Backend`, of the metaclass `_BackendMeta`), first."""
    module = importlib.import_module(module_name)
    names = {cls, *(name for name, value in vars(module).items() if type(value) is getattr(module, cls))}
    found = [
        name
        for name, value in vars(module).items()
        if inspect.isclass(value) and value.__module__ == module_name and explore_values.config_class(value) is value
    ]

    def names_it(name: str) -> bool:
        try:
            return bool(set(re.findall(r"\w+", inspect.getsource(getattr(module, name)))) & names)
        except (OSError, TypeError):
            return False

    return sorted(found, key=lambda name: (not names_it(name), name))[:3]
