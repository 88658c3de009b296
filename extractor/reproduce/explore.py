# Explore: search, inside a runtime, for the arguments that make a config raise at one `raise`, when its conditions
# cannot be solved on paper (a local computed from fields, a loop, a sub-config, a model). Run by child.py in a
# forked process; the standard library only (the runtime has no extractor).
#
# The search is the classic one of search-based test generation: each try builds the config (and calls the
# method) with some arguments while a tracer watches the raise's function; a try is better than another when it
# gets further along the raise's path (the lines of the conditions that enclose it, in order), then when more of
# the operands of the condition it stopped at come out as the raise needs. Arguments change one at a time, each
# to values its annotation allows (Literal members, enum members, booleans, numbers the conditions name and their
# neighbours, None, sub-configs built the same way); a change is kept when it gets further. Found, the same search
# turns one argument back (to its default, or another value) for the fix.
from __future__ import annotations

import ast
import collections.abc
import contextlib
import dataclasses
import enum
import functools
import importlib
import inspect
import itertools
import json
import os
import re
import signal
import sys
import time
import types
import typing
from collections.abc import Iterator
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import programs
else:  # run beside child.py in a runtime, from its folder
    programs = importlib.import_module("programs")

MODEL = "MODEL"  # the name of the (plain) tiny model folder in a program: written by the program's first lines
_LAYERS = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2,
           "vocab_size": 1000}  # fmt: skip
# Small architectures' config.json, each what a `model` argument may name, so that a ModelConfig builds with no
# download: a generative model, an embedding (pooling) one, a mixture of experts, one with latent attention.
TINY_MODELS: dict[str, dict[str, Any]] = {
    MODEL: {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **_LAYERS, "num_key_value_heads": 2,
            "max_position_embeddings": 2048, "torch_dtype": "float32", "rms_norm_eps": 1e-5},
    "EMBEDDING_MODEL": {"architectures": ["BertModel"], "model_type": "bert", **_LAYERS,
                        "max_position_embeddings": 512},
    "MOE_MODEL": {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", **_LAYERS,
                  "num_key_value_heads": 2, "max_position_embeddings": 2048, "num_local_experts": 4,
                  "num_experts_per_tok": 2},
    "MLA_MODEL": {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", **_LAYERS,
                  "num_key_value_heads": 4, "moe_intermediate_size": 32, "max_position_embeddings": 2048,
                  "kv_lora_rank": 16, "q_lora_rank": None, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8,
                  "v_head_dim": 8, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
                  "first_k_dense_replace": 1},
}  # fmt: skip
_TRY_SECONDS = 3  # one try's time limit (a try that reaches for the network is stopped)
_TRIES = 800  # tries of one search (not counting those that find arguments a class builds with)
_AFTER = 200  # tries to shorten what it found and find its fixes
_AFTER_FAILED = 6  # values tried for a fix that passes, after one that stops the raise but fails elsewhere
_REPAIRS = 3  # arguments an error's message names tried with the change that led to it (each with 9 values)
_SETUP_TRIES = 300  # tries to find arguments a class builds with
_NUMBERS = [0, 1, 2, -1, 3, 4, 8, 16, 1024, 4096]


_Node = typing.TypeVar("_Node", bound=ast.AST)


class _Stop(Exception):
    """A try ran out of time."""


@dataclasses.dataclass
class Call:
    """A value built by calling a class with arguments (themselves values): a sub-config, the config itself."""

    name: str  # the class's name, as the program imports it
    arguments: dict[str, Any]

    def source(self) -> str:
        return ast.unparse(_node(self))


@dataclasses.dataclass(frozen=True)
class Src:
    """A value written as source (`True`, `'fp8'`, `CompilationMode.VLLM_COMPILE`, `MODEL`)."""

    text: str


def _source(value: Any) -> str:
    return value.source() if isinstance(value, Call) else value.text


def _node(value: Any) -> ast.expr:
    """A value as the node a program writes: a call of a class the search imports, or a value's allowed text
    (a literal, a name, an attribute: programs.expression)."""
    if isinstance(value, Call):
        return programs.call(programs.dotted(value.name), {k: _node(v) for k, v in value.arguments.items()})
    return programs.expression(value.text)


class Explorer:
    """One search: a class, the method that raises (None: building raises), the raise's path, hints."""

    def __init__(self, spec: dict[str, Any], roots: list[str], model_dir: str) -> None:
        self.module = importlib.import_module(spec["module"])
        # The class built (None: the raise's function, a function of the module, is called directly).
        self.cls: type | None = getattr(self.module, spec["cls"]) if spec.get("cls") else None
        self.method: str | None = spec.get("method") if self.cls is not None else None
        self.function = spec["function"]  # the name of the raise's function
        # What is called with the searched parameters: the method, the module's function, or nothing.
        self.callee: Any = (
            getattr(self.module, self.function) if self.cls is None
            else getattr(self.cls, self.method) if self.method is not None else None
        )  # fmt: skip
        # The class built before the call (None: a function, or a static or class method: called on the class).
        self.holder = self.cls if self.cls is not None and not _unbound(self.cls, self.method) else None
        self.target_file = _located(spec["target"][0], roots)
        self.target_line = int(spec["target"][1])
        self.path = [(int(line), test, bool(want)) for line, test, want in spec["path"]]
        self.hints = list(spec.get("names") or [])
        self.words = [w for w in re.findall(r"[a-z]+", str(spec.get("words") or "").lower()) if len(w) > 2]
        self.constants = [Src(text) for text in spec.get("constants") or []]
        self.vocabulary: dict[str, list[str]] = spec.get("vocabulary") or {}  # "Class.field" -> values compared
        named = self.cls.__name__ if self.cls is not None else self.function
        self.names: dict[str, str] = {named: self.module.__name__}  # imported name -> module
        # Values are evaluated where the module's own names stand (its enums, its constants), and the tiny model.
        self.namespace: dict[str, Any] = {**vars(self.module), **_folders(model_dir)}
        self.tries = 0
        self.built = 0
        self.limit = int(spec.get("tries") or _TRIES)
        self.roots = roots
        # The path's tests as the runtime's own source writes them at those lines (the catalog's text only where
        # the source has none, evaluated as data: see _helpful).
        self.parsed = {line: _operands(self.target_file, line, test) for line, test, _ in self.path}
        self.setups: dict[type, dict[str, Any]] = {}
        self.said = ""  # what the last try raised
        self.spans = _spans(self.target_file, [line for line, _, _ in self.path] + [self.target_line])
        read = [name for name in _read_before(self.target_file, self.target_line) if name not in self.hints]
        # The constants the function writes (`{"all", "none"}`), after those of the conditions.
        known = {c.text for c in self.constants}
        self.constants += [Src(t) for t in _constants_in(self.target_file, self.target_line) if t not in known]
        self.hints += sorted(read, key=self.overlap)  # (what the function reads: sharing words with the test first)
        self.compared = self._compared()
        self.constants += [c for c in self._looked_for() if c not in self.constants]

    # -- what a try does
    def score(self, arguments: dict[str, Any], call: dict[str, Any]) -> tuple[int, int, int, dict[str, Any]]:
        """How far a try gets: (path lines passed, operands as wanted where it stopped, lines of the raise's
        function run (the early returns and other checks before it passed), what it raised)."""
        self.tries += 1
        reached: dict[int, int] = {}
        ran: set[int] = set()
        spans = self.spans
        wanted = {line: (self.parsed[line], want) for line, _, want in self.path}

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                ran.add(frame.f_lineno)
            if event == "line" and frame.f_lineno in spans:
                line = spans[frame.f_lineno]
                reached[line] = max(reached.get(line, 0), _helpful(frame, *wanted[line]) if line in wanted else 0)
            return local

        def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
            code = frame.f_code
            if code.co_filename == self.target_file and code.co_name == self.function:
                return local
            return None

        outcome: dict[str, Any] = {"outcome": "passed", "stage": "build"}
        environment = {k.removeprefix("env."): self.value(v) for k, v in call.items() if k.startswith("env.")}
        before = {name: os.environ.get(name) for name in environment}
        os.environ.update(environment)
        try:
            with _watched(tracer):
                instance = self.value(Call(self.holder.__name__, arguments)) if self.holder is not None else None
                if self.callee is not None:
                    outcome["stage"] = "call"
                    given = {k: self.value(v) for k, v in call.items() if not k.startswith("env.")}
                    (self.callee if instance is None else getattr(instance, str(self.method)))(**given)
        except _Stop:
            outcome = {**outcome, "outcome": "timeout"}
        except Exception as error:
            outcome = {**outcome, "outcome": "raised", "error": error}
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        depth, helpful = 0, 0
        order = [line for line, _, _ in self.path] + [self.target_line]
        for index, line in enumerate(order):
            if line in reached:
                depth, helpful = index + 1, reached[line]
        if depth == len(order) and not self.raised_here(outcome):
            depth -= 1  # the raise's line ran but what came out is not its error (a message that failed)
        # Then how far down the function it ran before the next step of the path: the checks and early returns
        # above it passed (lines past that step are another branch, no progress).
        bound = order[depth] if depth < len(order) else self.target_line
        return depth, helpful, max((line for line in ran if line <= bound), default=0), outcome

    def raised_here(self, outcome: dict[str, Any]) -> bool:
        error = outcome.get("error")
        if error is None:
            return False
        for inner in (*wrapped(error), error):
            frames = [f for f in _frames(inner) if any(f.filename.startswith(root + os.sep) for root in self.roots)]
            if frames and frames[-1].filename == self.target_file and frames[-1].lineno == self.target_line:
                return True
        return False

    def value(self, value: Any) -> Any:
        if isinstance(value, Call):
            return self.namespace[value.name](**{k: self.value(v) for k, v in value.arguments.items()})
        return programs.evaluate(value.text, self.namespace)  # (a literal, a name of the module: no call)

    # -- the search
    def over(self, deadline: float) -> bool:
        """Whether the search has had its tries (a count, so that a run finds what the last one found), or, as
        a guard, its time."""
        return self.tries >= self.limit or time.monotonic() > deadline

    def run(self, base: dict[str, Any], deadline: float) -> dict[str, Any]:
        setup = self.setup(self.holder, deadline) if self.holder is not None else {}
        arguments = {**setup, **base} if self.holder is not None else {}
        call = {name: choices[0] for name, choices in self.required(deadline).items()}
        slots = self.slots(deadline)
        best = self.score(arguments, call)
        goal = len(self.path) + 1
        while best[0] < goal and not self.over(deadline):
            improved = False
            for slot, choices in _named_first(slots, _said(best[-1])):
                for choice in [*choices, None]:  # (None: back to its default)
                    if self.over(deadline):
                        break
                    trial_arguments, trial_call = self.with_(arguments, call, slot, choice)
                    if (trial_arguments, trial_call) == (arguments, call):
                        continue
                    scored = self.score(trial_arguments, trial_call)
                    if scored[:3] <= best[:3]:  # another check stopped it: what that check's message names, too
                        scored, trial_arguments, trial_call = self.repaired(
                            scored, trial_arguments, trial_call, slots, slot, best
                        )
                    if scored[:3] > best[:3]:
                        arguments, call, best, improved = trial_arguments, trial_call, scored, True
                        break
                if improved:
                    break
            if not improved:
                break
        out: dict[str, Any] = {"depth": best[0], "of": goal, "tries": self.tries}
        if best[0] < goal:
            return {**out, "outcome": "not found", "said": _said(best[-1])}
        self.limit = self.tries + _AFTER  # (the program made short, and its fixes: tries of their own)
        arguments, call, best = self.shrink(arguments, call, best, goal, deadline)
        called = best[-1]["stage"] == "call"
        fixes = self.fixes(arguments, call, setup, slots, deadline, called=called)
        fuller = {**setup, **arguments}  # (made short, it may have lost what a build needs once the check passes)
        if not any(fix["passed"] for fix in fixes) and fuller != arguments and self.score(fuller, call)[0] >= goal:
            self.limit = self.tries + _AFTER  # (tries of its own)
            more = self.fixes(fuller, call, setup, slots, deadline, called=called)
            if any(fix["passed"] for fix in more):
                arguments, fixes = fuller, more
        out.update(outcome="found", **self.written(arguments, call, called=called))
        out["fixes"] = fixes
        return out

    def repaired(
        self, scored: Any, arguments: dict[str, Any], call: dict[str, Any], slots: list[Any], changed: str, best: Any
    ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """A try that stopped at another check, with one argument that check's message names set too (`x must be
        set when y is ...`): two changes at once, where one alone cannot get further."""
        if scored[-1].get("error") is None:
            return scored, arguments, call
        named = [
            (slot, choices) for slot, choices in _named_first(slots, _said(scored[-1]), only=True) if slot != changed
        ]
        if not named:  # (a message that names none: the arguments the raise's function reads, first)
            named = [(slot, choices) for slot, choices in slots if slot != changed and _hinted(slot, self.hints)]
        for slot, choices in named[:_REPAIRS]:
            reverts = [None] if _get(arguments, call, slot) is not None else []  # (set before: back to its default)
            for choice in [*reverts, *choices[: _REPAIRS * 3]]:
                trial_arguments, trial_call = self.with_(arguments, call, slot, choice)
                trial = self.score(trial_arguments, trial_call)
                if trial[:3] > best[:3]:
                    return trial, trial_arguments, trial_call
        return scored, arguments, call

    def shrink(
        self, arguments: dict[str, Any], call: dict[str, Any], best: Any, goal: int, deadline: float
    ) -> tuple[dict[str, Any], dict[str, Any], Any]:
        """The arguments found, less each one the raise does not need (left at its default): a short program."""
        required = set(_required(self.holder)) | set(self.required(deadline))
        slots = [f"call.{name}" for name in call if name not in required]
        for name, value in arguments.items():
            if isinstance(value, Call):
                slots += [f"{name}.{inner}" for inner in value.arguments]
            if name not in required:
                slots.append(name)
        for slot in slots:
            if self.over(deadline):
                break
            trial_arguments, trial_call = self.with_(arguments, call, slot, None)
            if (trial_arguments, trial_call) == (arguments, call):
                continue
            scored = self.score(trial_arguments, trial_call)
            if scored[0] >= goal:
                arguments, call, best = trial_arguments, trial_call, scored
        return arguments, call, best

    def fixes(
        self,
        arguments: dict[str, Any],
        call: dict[str, Any],
        setup: dict[str, Any],
        slots: list[Any],
        deadline: float,
        *,
        called: bool,
    ) -> list[dict[str, Any]]:
        """Changes of one argument after which the raise no longer runs: each argument the search set turned
        back to its default first, then to its other values; those that build without error first."""
        found: list[dict[str, Any]] = []
        goal = len(self.path) + 1
        required = set(_required(self.holder)) | set(self.required(deadline))
        named = [v for v in [*arguments.values(), *call.values()] if isinstance(v, Src) and _number(v.text) is not None]
        for slot, choices in slots:
            if self.over(deadline) or len(found) >= 4:
                break
            current = _get(arguments, call, slot)
            if current is not None and setup.get(slot) == current:  # (what any build needs is no fix)
                continue
            reverts = [None] if current is not None and slot.rpartition(".")[2] not in required else []
            numeric = bool(choices) and all(isinstance(c, Src) and _number(c.text) is not None for c in choices)
            candidate: dict[str, Any] | None = None  # (one that stops the raise but fails elsewhere: kept until
            looked = 0  # a few more values are tried for one that passes)
            for choice in [*reverts, *(named if numeric else []), *choices]:
                if choice == current or (slot.startswith("call.") and not called) or looked > _AFTER_FAILED:
                    continue
                trial_arguments, trial_call = self.with_(arguments, call, slot, choice)
                depth, _, _, outcome = self.score(trial_arguments, trial_call)
                looked += candidate is not None
                if depth >= goal or self.over(deadline):
                    continue
                written = self.written(trial_arguments, trial_call, called=called)
                passed = outcome["outcome"] == "passed"
                if passed or candidate is None:
                    candidate = {**written, "change": _change(slot, choice), "passed": passed}
                if passed:
                    break
            if candidate is not None:
                found.append(candidate)
        found.sort(key=lambda fix: not fix["passed"])
        return found

    def written(self, arguments: dict[str, Any], call: dict[str, Any], *, called: bool) -> dict[str, Any]:
        """A try as a program: its imports, the tiny model folder when it uses one, the build and the call (when
        the build alone does not raise)."""
        given = {k: v for k, v in call.items() if not k.startswith("env.")}
        environment = {k.removeprefix("env."): v for k, v in call.items() if k.startswith("env.")}
        passed = {k: _node(v) for k, v in given.items()}
        body: list[ast.stmt]
        if self.holder is None:  # the module's function, or the class's static or class method, called
            called_as = programs.dotted(self.function if self.cls is None else f"{self.cls.__name__}.{self.method}")
            body = [ast.Expr(programs.call(called_as, passed))]
            values = [called_as, *passed.values()]
        else:
            built = _node(Call(self.holder.__name__, arguments))
            body = [ast.Assign([ast.Name("config", ast.Store())], built)]
            if called and self.method is not None:
                body.append(ast.Expr(programs.call(programs.dotted(f"config.{self.method}"), passed)))
            values = [built, *passed.values()]
        by_module: dict[str, list[str]] = {}
        plain: list[ast.stmt] = []
        used = {n.id for value in values for n in ast.walk(value) if isinstance(n, ast.Name)}
        for name in sorted(used):
            module = self.names.get(name) or (self.module.__name__ if name in vars(self.module) else None)
            if isinstance(vars(self.module).get(name), types.ModuleType):  # (`torch` of `torch.float16`)
                imported = vars(self.module)[name].__name__
                alias = ast.alias(programs.module_path(imported), None if imported == name else name)
                plain.append(ast.Import([alias]))
            elif module is not None and name not in TINY_MODELS:
                by_module.setdefault(module, []).append(name)
        head = [*plain, *(programs.imported(module, names) for module, names in sorted(by_module.items()))]
        models = [name for name in TINY_MODELS if name in used]
        setup: list[ast.stmt] = []
        if models:  # (`os` imported once, when the environment is set too)
            head.insert(
                0, ast.Import([ast.alias(m) for m in ("json", "os", "tempfile") if m != "os" or not environment])
            )
            for name in models:  # a tiny model: its config.json only
                setup += _model_written(name)
        blocks: list[list[ast.stmt]] = []
        if environment:  # set before vLLM is imported, as a shell would
            target = ast.Attribute(ast.Name("os", ast.Load()), "environ", ast.Load())
            blocks += [
                [ast.Import([ast.alias("os")])],
                [
                    ast.Assign([ast.Subscript(target, ast.Constant(name), ast.Store())], _node(v))
                    for name, v in sorted(environment.items())
                ],
            ]
        blocks += [head, setup, body]
        flat = {k: _source(v) for k, v in arguments.items()}
        flat.update({f"env.{k}": _source(v) for k, v in environment.items()})
        if self.holder is None:  # (a function's parameters are no config's fields: no flags stand for them)
            flat.update({f"call.{k}": _source(v) for k, v in given.items()})
        return {"python": programs.unparsed(blocks), "arguments": flat}

    def with_(
        self, arguments: dict[str, Any], call: dict[str, Any], slot: str, choice: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The arguments with one slot set (`name`, `holder.name` of a sub-config, `call.name` or
        `call.holder.name` of the method's, `env.NAME` of the environment); None: the slot left at its default.
        A sub-config not given yet is built from its setup."""
        arguments, call = dict(arguments), dict(call)
        if slot.startswith("env."):  # (an environment variable is kept with the call's arguments, as `env.X`)
            target, path, kinds = call, [slot], {}
        elif slot.startswith("call."):
            target, path, kinds = call, slot.removeprefix("call.").split("."), self.parameters()
        else:
            target, path, kinds = arguments, slot.split("."), self.fields(self.holder)
        if len(path) == 1:
            if choice is None:
                target.pop(path[0], None)
            else:
                target[path[0]] = choice
            return arguments, call
        holder, inner = path[0], path[1]
        current = target.get(holder)
        if not isinstance(current, Call):
            owner = self.config_of(kinds.get(holder), holder)
            if owner is None:
                return arguments, call
            current = Call(owner.__name__, self.setup(owner, time.monotonic() + _TRY_SECONDS))
        sub = dict(current.arguments)
        if choice is None:
            sub.pop(inner, None)
        else:
            sub[inner] = choice
        target[holder] = Call(current.name, sub)
        return arguments, call

    def config_of(self, kind: Any, name: str) -> type | None:
        """The sub-config class an argument takes: from its annotation, or from its name when it has none."""
        config = _config_class(kind)
        if config is None and (kind is Any or kind is None or isinstance(kind, str)):
            config = _config_class(_lookup(_camel(name), self.module.__name__.partition(".")[0]))
        if config is not None:
            self.names.setdefault(config.__name__, config.__module__)
            self.namespace[config.__name__] = config
        return config

    # -- what may change
    def overlap(self, name: str) -> int:
        """Minus the words a name shares with the conditions and the message: a sort key, those that share first."""
        return -len(set(re.split(r"[_.]", name.lower())) & set(self.words))

    def slots(self, deadline: float) -> list[tuple[str, list[Any]]]:
        """Each argument the search may set, with the values to try: the hinted ones first (the fields and
        parameters the conditions read), then the class's other fields."""
        out: list[tuple[str, list[Any]]] = []
        fields = self.fields(self.holder)
        params = self.parameters()
        seen: set[str] = set()
        # After the hinted ones, the fields that share a word with the conditions and the message
        # (`runner` for `self.runner_type in ("draft", "generate")`), most words first.
        others = sorted([*fields, *params], key=self.overlap)
        for name in [*self.hints, *others]:
            if name in seen:
                continue
            seen.add(name)
            holder, _, inner = name.partition(".")
            if holder == "env":
                out.append((name, [Src("'1'"), Src("'0'")]))
                continue
            if inner and holder in fields and not inner.count("."):
                owner = _config_class(fields[holder])
                if owner is not None:
                    sub = self.fields(owner)
                    if inner in sub:
                        out.append((name, self.choices(sub[inner], inner, deadline, owner=owner)))
            if inner and holder in params and not inner.count("."):
                owner = self.config_of(params[holder], holder)
                sub = self.fields(owner) if owner is not None else {}
                if inner in sub:
                    out.append((f"call.{name}", self.choices(sub[inner], inner, deadline, owner=owner)))
            if name in fields:
                out.append((name, self.choices(fields[name], name, deadline, owner=self.cls)))
            if name in params:
                out.append((f"call.{name}", self.choices(params[name], name, deadline, owner=self.cls)))
        # A keyword the class does not take that a validator looks for in what it is given (`"normalize" in
        # values`: a removed parameter), passed as any value.
        for node in self.in_path(ast.Compare) if self.holder is not None else []:
            key = node.left.value if isinstance(node.left, ast.Constant) else None
            looked = isinstance(node.ops[0], (ast.In, ast.NotIn)) and isinstance(key, str) and key.isidentifier()
            if looked and key not in fields and key not in seen:
                seen.add(str(key))
                out.append((str(key), [Src("True"), Src("1"), Src("'x'")]))
        return out

    def required(self, deadline: float) -> dict[str, list[Any]]:
        if self.callee is None:
            return {}
        out = {}
        for name, parameter in inspect.signature(self.callee).parameters.items():
            if (
                name != "self"
                and parameter.default is inspect.Parameter.empty
                and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
            ):
                out[name] = self.choices(self.parameters()[name], name, deadline) or [Src("None")]
        return out

    def parameters(self) -> dict[str, Any]:
        if self.callee is None:
            return {}
        hints = _hints(self.callee)
        return {
            name: hints.get(name, Any)
            for name, p in inspect.signature(self.callee).parameters.items()
            if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }

    def fields(self, cls: type | None) -> dict[str, Any]:
        """A class's arguments (a dataclass's fields and InitVars, a pydantic model's fields) with their types."""
        if cls is None:
            return {}
        hints = _hints(cls)
        out: dict[str, Any] = {}
        for name, spec in getattr(cls, "__dataclass_fields__", {}).items():
            if spec.init and getattr(spec, "_field_type", None) is not dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
                kind = hints.get(name, spec.type)
                out[name] = kind.type if isinstance(kind, dataclasses.InitVar) else kind
        for name, info in (getattr(cls, "model_fields", None) or {}).items():
            out.setdefault(name, info.annotation)
        return out

    def choices(self, kind: Any, name: str, deadline: float, depth: int = 0, owner: type | None = None) -> list[Any]:
        """The values to try for an argument of this type, as source: those the catalog's conditions compare
        this field with first."""
        out: list[Any] = []
        known = [Src(text) for text in self.vocabulary.get(f"{owner.__name__}.{name}", [])] if owner else []
        known += self.compared.get(name, [])
        # Last, for a text: the texts the catalog compares any field of its class with (`'ngram'`, a method's
        # name, may be what a `model` takes too).
        texts = str in typing.get_args(kind) or kind is str
        prefix = f"{owner.__name__}." if owner else "\0"
        tail = [Src(t) for key, values in self.vocabulary.items() if key.startswith(prefix) for t in values]
        tail = tail if texts else []
        for value in [*known, *self._choices(kind, name, deadline, depth), *(t for t in tail if t.text[:1] in "'\"")]:
            if value not in out:
                out.append(value)
        return out[:40]

    def _choices(self, kind: Any, name: str, deadline: float, depth: int) -> list[Any]:
        origin, args = typing.get_origin(kind), typing.get_args(kind)
        if kind is type(None) or kind is None:
            return [Src("None")]
        if origin is typing.Annotated:
            return self._choices(args[0], name, deadline, depth)
        if isinstance(kind, typing.TypeVar):  # (its bound, or any value)
            return self._choices(kind.__bound__ or Any, name, deadline, depth)
        if origin is type or kind is type:  # a class: the package's configs
            return [self.constant(config) for config in self.package_configs()]
        if origin in (typing.Union, types.UnionType):
            inner = [c for a in args if a is not type(None) for c in self._choices(a, name, deadline, depth)]
            return inner + ([Src("None")] if type(None) in args else [])
        if origin is typing.Literal:
            return [self.constant(a) for a in args]
        if kind is bool:
            return [Src("True"), Src("False")]
        numbers = [c for c in self.constants if _number(c.text) is not None]
        if kind is int:
            around = [n for c in numbers for n in _around(_number(c.text)) if isinstance(n, int)]
            return [Src(repr(n)) for n in [*around, *_NUMBERS]]
        if kind is float:
            around_floats: list[float] = [float(n) for c in numbers for n in _around(_number(c.text))]
            return [Src(repr(n)) for n in [*around_floats, 0.0, 1.0, 0.5, -1.0, 2.0]]
        strings = [c for c in self.constants if c.text[:1] in "'\""]
        if kind is str:
            folders = ("model" in name or "tokenizer" in name) and not name.endswith("_type")  # (`model_type`: no)
            model = [Src(folder) for folder in TINY_MODELS] if folders else []
            # A function given a config and a name (`get_field(cls, name)`) may want a name of its fields.
            named = (
                [Src(repr(f)) for c in self.package_configs()[:1] for f in self.fields(c)][:5]
                if self.cls is None
                else []
            )
            return [*model, *strings, Src("'x'"), Src("''"), *named]
        if inspect.isclass(kind) and issubclass(kind, enum.Enum):  # (and a name that is none: a validator of
            return [*(self.constant(member) for member in kind), Src("'x'")]  # the field may read a text)
        if origin in (list, tuple, set, frozenset) or kind in (list, tuple, set):
            element = args[0] if args else Any
            inner = self._choices(element, name, deadline, depth + 1)[:10] if depth < 2 else []
            empty = {list: "[]", tuple: "()", set: "set()", frozenset: "frozenset()"}.get(origin or kind, "[]")
            opened, closed = {tuple: ("(", ",)")}.get(origin or kind, ("[", "]"))
            plain = [v for v in inner if isinstance(v, Src)]
            pairs = [Src(f"[{a.text}, {b.text}]") for a, b in itertools.pairwise(plain)][:6]
            return [Src(empty), *(Src(f"{opened}{v.text}{closed}") for v in plain), *pairs]
        if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping) or kind is dict:
            keyed = [Src(f"{{{c.text}: {v}}}") for c in strings[:4] for v in ("1", "'x'")]  # (`.get("device")`)
            return [Src("{}"), *(c for c in self.constants if c.text.startswith("{")), *keyed, Src("{'x': 1}")]
        config = self.config_of(kind, name)  # (not annotated, or `X = Any` outside type checks: by its name)
        if config is not None and depth < 1:
            return [Call(config.__name__, self.setup(config, deadline))]
        if inspect.isclass(kind) and kind is not Any and self.bare(kind):  # another class: built bare
            return [Call(kind.__name__, {})]
        anything = [*self.constants, Src("None"), Src("1"), Src("'x'"), Src("True")]  # (a few values of any type)
        if kind is Any and depth < 1:  # anything: a few values, and a config of the package built bare (first
            # for a parameter named a config: `config: ConfigT`)
            configs: list[Any] = [Call(config.__name__, {}) for config in self.package_configs()]
            return [*configs, *anything] if "config" in name.split("_") else [*anything, *configs]
        return anything

    def bare(self, cls: type) -> bool:
        """Whether a class builds with no arguments (a library's config object: `PretrainedConfig()`)."""
        try:
            with _watched(None):
                cls()
        except BaseException:
            return False
        self.names.setdefault(cls.__name__, cls.__module__)
        self.namespace.setdefault(cls.__name__, cls)
        return True

    @functools.cache  # noqa: B019 (one search, one Explorer)
    def package_configs(self) -> list[type]:
        """A few config classes of the raise's package that build with no arguments: what a function that takes
        any config (`config: ConfigT`, `cls: type[...]`) is given."""
        package = self.module.__name__.rpartition(".")[0] or self.module.__name__
        found = {
            value
            for module in list(sys.modules.values())
            if getattr(module, "__name__", "").startswith(f"{package}.")
            for value in vars(module).values()
            if inspect.isclass(value) and _config_class(value) is value and value.__module__.startswith(f"{package}.")
        }
        out: list[type] = []
        for config in sorted(found, key=lambda c: (c.__name__, c.__module__)):
            if len(out) >= 3:
                break
            if not _required(config) and self.bare(config):
                out.append(config)
        return out

    def in_path(self, kind: type[_Node]) -> Iterator[_Node]:
        """The nodes of a kind in the tests of the raise's path (`ast.Compare`: its comparisons)."""
        for operands, _ in self.parsed.values():
            for operand in operands:
                yield from (node for node in ast.walk(operand) if isinstance(node, kind))

    def _compared(self) -> dict[str, list[Src]]:
        """The values the path's conditions compare a parameter or field with, where they are the module's own
        names: `dtype == torch.float16` -> `torch.float16`, `model_type in _NOT_SUPPORTED` -> its members."""
        out: dict[str, list[Src]] = {}
        for node in self.in_path(ast.Compare):
            left = node.left
            name = left.id if isinstance(left, ast.Name) else None
            if isinstance(left, ast.Attribute) and ast.unparse(left.value) == "self":
                name = left.attr
            if name is None or len(node.ops) != 1 or isinstance(node.comparators[0], ast.Constant):
                continue
            text = ast.unparse(node.comparators[0])
            try:  # (the module's names, attributes, literals: no call runs here)
                value = programs.evaluate(node.comparators[0], self.namespace)
            except Exception:
                continue
            containers = (dict, list, tuple, set, frozenset)
            if isinstance(node.ops[0], (ast.In, ast.NotIn)) and isinstance(value, containers):
                members = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
                found = [Src(repr(m)) for m in members[:10] if type(m) in (str, int, float)]
            elif isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                found = [Src(text)] if not isinstance(value, (types.FunctionType, types.MethodType)) else []
            else:
                found = []
            out.setdefault(name, []).extend(v for v in found if v not in out.get(name, []))
        return out

    def _looked_for(self) -> list[Src]:
        """Texts the module's functions a condition calls look for in a text (`"://" in path`,
        `path.startswith("s3://")`), each in a text that has it: `'xx://x'`, `'s3://x'`."""
        out: list[Src] = []
        for node in self.in_path(ast.Call):
            helper = self.namespace.get(node.func.id) if isinstance(node.func, ast.Name) else None
            if not isinstance(helper, types.FunctionType):
                continue
            try:
                tree = ast.parse(inspect.getsource(helper).strip())
            except (OSError, TypeError, SyntaxError):
                continue
            for part in ast.walk(tree):
                if isinstance(part, ast.Compare) and isinstance(part.left, ast.Constant):
                    if isinstance(part.left.value, str) and isinstance(part.ops[0], ast.In):
                        out.append(Src(repr(f"xx{part.left.value}x")))
                elif isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.args:
                    first, how = part.args[0], part.func.attr
                    if (
                        how in ("startswith", "endswith")
                        and isinstance(first, ast.Constant)
                        and isinstance(first.value, str)
                    ):
                        text = f"{first.value}x" if how == "startswith" else f"x{first.value}"
                        out.append(Src(repr(text)))
        return list(dict.fromkeys(out))[:10]

    def constant(self, value: Any) -> Src:
        if inspect.isclass(value):
            self.names.setdefault(value.__name__, value.__module__)
            self.namespace.setdefault(value.__name__, value)
            return Src(value.__name__)
        if isinstance(value, enum.Enum):
            owner = type(value)
            self.names.setdefault(owner.__name__, owner.__module__)
            self.namespace.setdefault(owner.__name__, owner)
            return Src(f"{owner.__name__}.{value.name}")
        return Src(repr(value))

    def setup(self, cls: type, deadline: float) -> dict[str, Any]:
        """Arguments with which a class builds at all (none, most often; a model folder for one that needs a
        model; a device where the platform is not known; several, where its own checks call for them): one
        argument at a time, a change kept when more of the class's own code runs."""
        if cls in self.setups:
            return self.setups[cls]
        self.names.setdefault(cls.__name__, cls.__module__)
        self.namespace[cls.__name__] = cls
        fields = self.fields(cls)
        current = {}  # the arguments without a default: their first value
        for name in _required(cls):
            choices = self.choices(fields.get(name, Any), name, deadline, owner=cls) if name in fields else []
            current[name] = choices[0] if choices else Src("None")
        self.setups[cls] = current
        best = self._builds(cls, current)
        said = self.said
        candidates: list[tuple[str, Any]] = []
        for name, kind in fields.items():
            for choice in self.choices(kind, name, deadline, owner=cls):
                candidates.append((name, choice))
                if isinstance(choice, Call):  # a sub-config: each of its Literal-valued arguments in turn
                    for inner, inner_kind in self.fields(self.namespace[choice.name]).items():
                        if typing.get_origin(inner_kind) is typing.Literal:
                            candidates += [
                                (name, Call(choice.name, {**choice.arguments, inner: value}))
                                for value in self.choices(inner_kind, inner, deadline)
                            ]
        tries = 0
        improved = True
        while not best[0] and improved:
            improved = False
            for name, choice in _named_first(candidates, said):
                if self.over(deadline) or tries > _SETUP_TRIES:
                    return current
                if current.get(name) == choice:
                    continue
                tries += 1
                trial = {**current, name: choice}
                self.said = ""
                scored = self._builds(cls, trial)
                if scored > best:  # kept; the next pass starts with what its error names
                    current, best, improved, said = trial, scored, True, self.said
                    self.setups[cls] = current
                    break
        return current

    def _builds(self, cls: type, arguments: dict[str, Any]) -> tuple[bool, int]:
        """Whether a class builds with these arguments, and how many lines of its own file ran trying."""
        self.built += 1  # (counted apart: each class's setup has its own bound, _SETUP_TRIES)
        files = {inspect.getsourcefile(klass) for klass in cls.__mro__ if klass.__module__ == cls.__module__}
        ran: set[tuple[str, int]] = set()

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                ran.add((frame.f_code.co_filename, frame.f_lineno))
            return local

        def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
            return local if frame.f_code.co_filename in files else None

        try:
            with _watched(tracer):
                cls(**{k: self.value(v) for k, v in arguments.items()})
            return True, len(ran)
        except BaseException as error:
            self.said = str(error)
            return False, len(ran)


@contextlib.contextmanager
def _watched(tracer: Any) -> Iterator[None]:
    """One try: traced by `tracer`, stopped (`_Stop`) past its time limit."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(_TRY_SECONDS)
    sys.settrace(tracer)  # (None: a try not traced)
    try:
        yield
    finally:
        sys.settrace(None)
        signal.alarm(0)


def _model_written(name: str) -> list[ast.stmt]:
    """The statements that write a tiny model's folder (its config.json only) into a temporary folder named `name`."""
    folder = ast.Name(name, ast.Load())
    opened = ast.Call(
        ast.Name("open", ast.Load()),
        [ast.Call(programs.dotted("os.path.join"), [folder, ast.Constant("config.json")], []), ast.Constant("w")],
        [],
    )
    dumped = ast.Call(
        programs.dotted("json.dump"), [programs.literal(TINY_MODELS[name]), ast.Name("file", ast.Load())], []
    )
    return [
        ast.Assign([ast.Name(name, ast.Store())], ast.Call(programs.dotted("tempfile.mkdtemp"), [], [])),
        ast.With([ast.withitem(opened, ast.Name("file", ast.Store()))], [ast.Expr(dumped)]),
    ]


def _get(arguments: dict[str, Any], call: dict[str, Any], slot: str) -> Any:
    if slot.startswith("env."):
        return call.get(slot)
    target, path = (
        (call, slot.removeprefix("call.").split(".")) if slot.startswith("call.") else (arguments, slot.split("."))
    )
    current = target.get(path[0])
    if len(path) == 1:
        return current
    return current.arguments.get(path[1]) if isinstance(current, Call) else None


def _change(slot: str, choice: Any) -> str:
    """A fix in words: `set tensor_parallel_size=2`, `leave parallel_config.x at its default`, `unset VLLM_X`."""
    name = slot.removeprefix("call.")
    if name.startswith("env."):
        variable = name.removeprefix("env.")
        return f"unset {variable} in the environment" if choice is None else f"set {variable}={_source(choice)}"
    return f"leave {name} at its default" if choice is None else f"set {name}={_source(choice)}"


def _named_first(items: list[tuple[str, Any]], said: str, *, only: bool = False) -> list[tuple[str, Any]]:
    """Slots whose name the last error names first (`num_speculative_tokens must be provided ...`, or as its
    initials: `tp_size` for `tensor_parallel_size`); with `only`, those alone."""
    words = set(re.findall(r"\w+", said))

    def named(slot: str) -> bool:
        name = slot.rpartition(".")[2]
        parts = name.split("_")
        return name in words or (len(parts) > 2 and "".join(p[:1] for p in parts[:-1]) + "_" + parts[-1] in words)

    if only:
        return [item for item in items if named(item[0])]
    return sorted(items, key=lambda item: not named(item[0]))


def _hinted(slot: str, hints: list[str]) -> bool:
    return slot.removeprefix("call.") in hints[:6]


def _unbound(cls: type, method: str | None) -> bool:
    """Whether a class's method is a static or class method, called on the class with no config built (not one
    of pydantic's validators, which building the config runs)."""
    if method is None:
        return False
    decorators = getattr(cls, "__pydantic_decorators__", None)  # (its validators, by kind, each by name)
    kinds = [getattr(decorators, name) for name in dir(decorators) if not name.startswith("_")] if decorators else []
    if any(method in kind for kind in kinds if isinstance(kind, dict)):
        return False
    return isinstance(inspect.getattr_static(cls, method, None), (staticmethod, classmethod))


def _required(cls: type | None) -> list[str]:
    """The arguments a class cannot be built without."""
    out = []
    for name, spec in getattr(cls, "__dataclass_fields__", {}).items():
        missing = spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        if spec.init and missing and getattr(spec, "_field_type", None) is not dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
            out.append(name)
    for name, info in (getattr(cls, "model_fields", None) or {}).items():
        if name not in out and info.is_required():
            out.append(name)
    return out


def _config_class(kind: Any) -> type | None:
    """The class of a sub-config argument (a dataclass or pydantic model), through Optional."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        found = [a for a in args if a is not type(None)]
        return _config_class(found[0]) if len(found) == 1 else None
    if inspect.isclass(kind) and (dataclasses.is_dataclass(kind) or hasattr(kind, "model_fields")):
        return kind
    return None


def _hints(owner: Any) -> dict[str, Any]:
    """A class's or function's annotations as types; a name imported only for type checkers (`if TYPE_CHECKING:`)
    looked up in the modules of the same package."""
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except Exception:
        pass
    raw: dict[str, Any] = {}
    for klass in reversed(getattr(owner, "__mro__", [owner])):
        raw.update(getattr(klass, "__annotations__", None) or {})
    module = sys.modules.get(getattr(owner, "__module__", "") or "")
    namespace = {**vars(typing), **(vars(module) if module else {})}
    top = (getattr(module, "__name__", "") or "").partition(".")[0]
    out: dict[str, Any] = {}
    for name, annotation in raw.items():
        for _ in range(4):  # (each missing name found, then the annotation read again)
            try:
                out[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation
                break
            except NameError as error:
                found = _lookup(str(error.name), top, anywhere=True) if error.name else None
                if found is None:
                    out[name] = Any
                    break
                namespace[str(error.name)] = found
            except Exception:
                out[name] = Any
                break
    return out


def _camel(name: str) -> str:
    """`parallel_config` -> `ParallelConfig`."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _lookup(name: str, top: str, *, anywhere: bool = False) -> Any:
    """A class of that name defined in a module of the package already imported (with `anywhere`, of any
    package, when the package has none: `PretrainedConfig`, imported for type checkers only)."""
    package = f"{top}." if top else ""
    for prefix in (package, "") if anywhere else (package,):
        for module in list(sys.modules.values()):
            value = getattr(module, name, None)
            if inspect.isclass(value) and value.__name__ == name and value.__module__.startswith(prefix):
                return value  # (defined there: not `X = Any`, an alias for type checkers)
    return None


def _number(text: str) -> int | float | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _around(value: Any) -> list[Any]:
    step = 1 if isinstance(value, int) else 0.5
    return [value, value + step, value - step]


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


def _spans(path: str, lines: list[int]) -> dict[int, int]:
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


def _read_before(path: str, line: int) -> list[str]:
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


def _constants_in(path: str, line: int) -> list[str]:
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


def _operands(path: str, line: int, test: str) -> tuple[list[ast.expr], bool]:
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


def _helpful(frame: types.FrameType, operands: tuple[list[ast.expr], bool], want: bool) -> int:
    """How many of a condition's operands come out as the raise needs, read in the frame about to test them: the
    package's own test run as its code, a catalog's text only as data (names, attributes, literals, comparisons)."""
    count = 0
    tests, own = operands
    scope = dict(frame.f_locals)
    names = {**frame.f_globals, **scope}
    for operand in tests:
        try:
            if own:
                value = eval(compile(ast.Expression(operand), "<test>", "eval"), frame.f_globals, scope)
            else:
                value = programs.evaluate(operand, names, tests=True)
        except BaseException:
            continue
        count += bool(value) == want
    return count


def _located(relative: str, roots: list[str]) -> str:
    """A path below the package's folder's parent (`vllm/config/model.py`) as the file the code runs from."""
    for root in roots:
        candidate = os.path.join(os.path.dirname(root), relative)
        if os.path.exists(candidate):
            return candidate
    return relative


def _frames(error: BaseException) -> list[Any]:
    import traceback

    return list(traceback.extract_tb(error.__traceback__))


def wrapped(error: BaseException) -> list[BaseException]:
    """What an error wraps: pydantic's ValidationError holds the errors its validators raised; a cause."""
    inner: list[BaseException] = []
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":
        with contextlib.suppress(Exception):
            found = [(e.get("ctx") or {}).get("error") for e in errors()]
            inner += [e for e in found if isinstance(e, BaseException)]
    if error.__cause__ is not None:
        inner.append(error.__cause__)
    return inner


def _said(outcome: dict[str, Any]) -> str:
    error = outcome.get("error")
    if error is None:
        return str(outcome["outcome"])
    return f"{type(error).__name__}: {str(error)[:200]}"


def _alarm(signum: int, frame: Any) -> None:
    raise _Stop


def explore(spec: dict[str, Any], roots: list[str], model_dir: str) -> dict[str, Any]:
    """Run one search (in a forked process): what it found, as JSON-ready data."""
    started = time.monotonic()
    try:
        spec = _as_data(spec, roots)
        budget = float(spec.get("budget") or 5)
        # A function of the module, not a method: built through each class of the module that calls it, then
        # called directly (None), as the other code that calls it would.
        owners = [spec["cls"]] if spec.get("cls") else [*_callers(spec["module"], spec["function"]), None]
        if owners[0] is not None and _config_class(getattr(importlib.import_module(spec["module"]), owners[0])) is None:
            # A method of a class of the module that is no config (an enum's metaclass): reached by building the
            # module's configs.
            owners += _configs_of(spec["module"], owners[0])
        found: dict[str, Any] = {}
        for index, owner in enumerate(owners):
            deadline = started + budget * (index + 1) / len(owners)
            method = spec.get("method") if owner == spec.get("cls") else None
            explorer = Explorer({**spec, "cls": owner, "method": method}, roots, model_dir)
            base = {name: Src(text) for name, text in (spec.get("base") or {}).items() if "." not in name}
            found = explorer.run(base, deadline)
            if found["outcome"] == "found":
                break
        return found
    except BaseException as error:  # the search itself failed: say how, as a result
        return {"outcome": "not found", "said": f"{type(error).__name__}: {str(error)[:200]}", "tries": 0}


def _as_data(spec: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """A search's spec as data the search may act on: its module one of the package's (a dotted path), its class,
    method and function names, its target a path inside the package, its texts values programs.expression
    allows (the others left out); programs.Refused otherwise."""
    module = programs.module_path(str(spec["module"]))
    if module.partition(".")[0] not in {os.path.basename(root) for root in roots}:
        raise programs.Refused(f"{module} is not a module of the package")
    for key in ("cls", "method", "function"):
        if spec.get(key) is not None and not programs.is_name(spec[key]):
            raise programs.Refused(f"the {key} {spec[key]!r} is not a Python name")
    target = str(spec["target"][0])
    if os.path.isabs(target) or ".." in target.split("/"):
        raise programs.Refused(f"{target!r} is not a path inside the package")

    def allowed(text: object) -> bool:
        try:
            programs.expression(str(text))
        except programs.Refused:
            return False
        return isinstance(text, str)

    def named(name: object) -> bool:
        return isinstance(name, str) and all(programs.is_name(part) for part in name.split("."))

    return {
        **spec,
        "target": [target, int(spec["target"][1])],
        "names": [name for name in spec.get("names") or [] if named(name)],
        "constants": [text for text in spec.get("constants") or [] if allowed(text)],
        "base": {name: text for name, text in (spec.get("base") or {}).items() if named(name) and allowed(text)},
        "vocabulary": {
            key: [text for text in values if allowed(text)] for key, values in (spec.get("vocabulary") or {}).items()
        },
    }


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
        if inspect.isclass(value) and value.__module__ == module_name and _config_class(value) is value
    ]

    def names_it(name: str) -> bool:
        try:
            return bool(set(re.findall(r"\w+", inspect.getsource(getattr(module, name)))) & names)
        except (OSError, TypeError):
            return False

    return sorted(found, key=lambda name: (not names_it(name), name))[:3]


def write_model(folder: str) -> str:
    """Write the tiny models' folders under `folder` (one per name, see TINY_MODELS)."""
    for name, config in TINY_MODELS.items():
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        with open(os.path.join(folder, name, "config.json"), "w") as file:
            json.dump(config, file)
    return folder


def _folders(folder: str) -> dict[str, str]:
    return {name: os.path.join(folder, name) for name in TINY_MODELS}
