# Explore's search, the classic one of search-based test generation: each try builds the config (and calls the
# method) with some arguments while a tracer watches the raise's function; a try is better than another when it
# gets further along the raise's path (the lines of the conditions that enclose it, in order), then when more of
# the operands of the condition it stopped at come out as the raise needs, then when it runs further down the
# function before the next step. Arguments change one at a time (explore_kinds, explore_choices); a change is kept
# when it gets further. Found, the program is made short and one argument at a time is turned back for its fixes.
# The standard library only (runs in the runtime, beside child.py).
from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import importlib
import re
import types
import typing
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import (
        explore_choices,
        explore_kinds,
        explore_models,
        explore_source,
        explore_target,
        explore_values,
        programs,
    )
else:  # run beside child.py in a runtime, from its folder
    programs = importlib.import_module("programs")
    explore_choices = importlib.import_module("explore_choices")
    explore_kinds = importlib.import_module("explore_kinds")
    explore_models = importlib.import_module("explore_models")
    explore_source = importlib.import_module("explore_source")
    explore_target = importlib.import_module("explore_target")
    explore_values = importlib.import_module("explore_values")
Call = explore_values.Call
Src = explore_values.Src
Value = explore_values.Value
Trial = explore_kinds.Trial
KINDS = explore_kinds.KINDS
Offer = explore_kinds.Offer

_AFTER = 200  # tries to shorten what it found and find its fixes
_AFTER_FAILED = 6  # values tried for a fix that passes, after one that stops the raise but fails elsewhere
_REPAIRS = 3  # arguments an error's message names tried with the change that led to it (each with 9 values)
_FIXES = 4  # fixes looked for


class Ran(enum.StrEnum):
    """How a try ended."""

    PASSED = "passed"
    RAISED = "raised"
    TIMEOUT = "timeout"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a try came to: how it ended, whether it got to the call (the build passed), what it raised."""

    ran: Ran = Ran.PASSED
    called: bool = False
    error: BaseException | None = None

    def said(self) -> str:
        """What it raised, in a line (how it ended, when it raised nothing)."""
        if self.error is None:
            return str(self.ran)
        return f"{type(self.error).__name__}: {str(self.error)[:200]}"


class Score(typing.NamedTuple):
    """How far a try gets: path lines passed, operands as wanted where it stopped, lines of the raise's function
    run before the next step (the early returns and other checks before it passed); and what it came to."""

    depth: int
    helpful: int
    reach: int
    outcome: Outcome

    @property
    def rank(self) -> tuple[int, int, int]:
        return self.depth, self.helpful, self.reach


@dataclasses.dataclass(frozen=True)
class Written:
    """A try as a program (its imports, the tiny model folder when it uses one, the build and the call), and the
    arguments it sets, slot -> source."""

    python: str
    arguments: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Fix:
    """One change after which the raise no longer runs: the program, the change in words, whether it passed."""

    program: Written
    change: str
    passed: bool

    def as_data(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self.program), "change": self.change, "passed": self.passed}


@dataclasses.dataclass(frozen=True)
class Found:
    """A search that raised at the target: the program, its fixes (those that pass first)."""

    depth: int
    of: int  # the steps of the path, the raise's line included
    tries: int
    program: Written
    fixes: list[Fix]

    def as_data(self) -> dict[str, Any]:
        head = {"depth": self.depth, "of": self.of, "tries": self.tries, "outcome": "found"}
        return {**head, **dataclasses.asdict(self.program), "fixes": [fix.as_data() for fix in self.fixes]}


@dataclasses.dataclass(frozen=True)
class Missed:
    """A search that did not raise at the target: how far it got (None: it could not run), what stopped it."""

    said: str
    tries: int = 0
    depth: int | None = None
    of: int | None = None

    def as_data(self) -> dict[str, Any]:
        if self.depth is None:
            return {"outcome": "not found", "said": self.said, "tries": self.tries}
        return {"depth": self.depth, "of": self.of, "tries": self.tries, "outcome": "not found", "said": self.said}


class Search:
    """One search: the target (a class, the method that raises or building it, the raise's path), the names its
    conditions and its function read (hints, tried first), what it may try, its tries."""

    def __init__(self, spec: explore_target.Spec, roots: list[str], model_dir: str) -> None:
        self.target = target = explore_target.Target(spec, roots)
        self.hints = list(spec.names)
        self.words = [w for w in re.findall(r"[a-z]+", spec.words.lower()) if len(w) > 2]
        # Values are evaluated where the module's own names stand (its enums, its constants), and the tiny model.
        namespace = {**vars(target.module), **explore_models.model_folders(model_dir)}
        self.bindings = explore_values.Bindings(namespace, {target.name: target.module.__name__})
        self.budget = explore_target.Budget(spec.tries)
        read = [name for name in explore_source.read_before(target.file, target.line) if name not in self.hints]
        self.choices = explore_choices.Choices(target, spec, self.bindings, self.budget)
        self.hints += sorted(read, key=self.overlap)  # (what the function reads: sharing words with the test first)

    def overlap(self, name: str) -> int:
        """Minus the words a name shares with the conditions and the message: a sort key, those that share first."""
        return -len(set(re.split(r"[_.]", name.lower())) & set(self.words))

    # -- what a try does
    def score(self, trial: Trial) -> Score:
        """Run a try, traced: how far it gets."""
        self.budget.tries += 1
        target = self.target
        reached: dict[int, int] = {}
        ran: set[int] = set()
        spans = target.spans
        wanted = {step.line: (target.parsed[step.line], step.want) for step in target.path}

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                ran.add(frame.f_lineno)
            if event == "line" and frame.f_lineno in spans:
                line = spans[frame.f_lineno]
                helped = explore_source.helpful(frame, *wanted[line]) if line in wanted else 0
                reached[line] = max(reached.get(line, 0), helped)
            return local

        def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
            code = frame.f_code
            if code.co_filename == target.file and code.co_name == target.function:
                return local
            return None

        outcome = Outcome()
        with contextlib.ExitStack() as held:
            for kind in KINDS:
                held.enter_context(kind.around(explore_kinds.values_of(trial, kind), self.bindings))
            try:
                with explore_choices.watched(tracer):
                    holder = target.holder
                    instance = None if holder is None else self.bindings.value(Call(holder.__name__, trial.arguments))
                    if target.callee is not None:
                        outcome = Outcome(called=True)
                        given = {k: self.bindings.value(v) for k, v in trial.call.items()}
                        (target.callee if instance is None else getattr(instance, str(target.method)))(**given)
            except explore_choices.Stop:
                outcome = dataclasses.replace(outcome, ran=Ran.TIMEOUT)
            except Exception as error:
                outcome = dataclasses.replace(outcome, ran=Ran.RAISED, error=error)
        depth, helpful = 0, 0
        for index, line in enumerate(target.steps):
            if line in reached:
                depth, helpful = index + 1, reached[line]
        if depth == len(target.steps) and not target.raised_here(outcome.error):
            depth -= 1  # the raise's line ran but what came out is not its error (a message that failed)
        # Then how far down the function it ran before the next step of the path: the checks and early returns
        # above it passed (lines past that step are another branch, no progress).
        bound = target.steps[depth] if depth < len(target.steps) else target.line
        return Score(depth, helpful, max((line for line in ran if line <= bound), default=0), outcome)

    # -- the search
    def run(self, base: dict[str, Value], deadline: float) -> Found | Missed:
        """Climb from the arguments a build needs (and those found on paper, `base`) to a try that raises at the
        target; then make it short and find its fixes."""
        holder = self.target.holder
        setup = self.choices.setup(holder, deadline) if holder is not None else {}
        arguments = {**setup, **base} if holder is not None else {}
        trial = Trial(arguments, {name: values[0] for name, values in self.choices.required(deadline).items()})
        slots = self.slots(deadline)
        best = self.score(trial)
        goal = len(self.target.path) + 1
        while best.depth < goal and not self.budget.over(deadline):
            improved = False
            for slot, values in explore_choices.named_first(slots, best.outcome.said()):
                for choice in [*values, None]:  # (None: back to its default)
                    if self.budget.over(deadline):
                        break
                    tried = explore_kinds.settled(self.choices, trial, slot, choice)
                    if tried == trial:
                        continue
                    scored = self.score(tried)
                    if scored.rank <= best.rank:  # another check stopped it: what that check's message names, too
                        scored, tried = self.repaired(scored, tried, slots, slot, best)
                    if scored.rank > best.rank:
                        trial, best, improved = tried, scored, True
                        break
                if improved:
                    break
            if not improved:
                break
        if best.depth < goal:
            return Missed(best.outcome.said(), self.budget.tries, best.depth, goal)
        depth, tries = best.depth, self.budget.tries
        self.budget.more(_AFTER)  # (the program made short, and its fixes: tries of their own)
        trial, best = self.shrink(trial, best, goal, deadline)
        called = best.outcome.called
        fixes = self.fixes(trial, setup, slots, deadline, called=called)
        # (made short, it may have lost what a build needs once the check passes)
        fuller = dataclasses.replace(trial, arguments={**setup, **trial.arguments})
        if not any(fix.passed for fix in fixes) and fuller != trial and self.score(fuller).depth >= goal:
            self.budget.more(_AFTER)  # (tries of its own)
            more = self.fixes(fuller, setup, slots, deadline, called=called)
            if any(fix.passed for fix in more):
                trial, fixes = fuller, more
        return Found(depth, goal, tries, self.written(trial, called=called), fixes)

    def repaired(
        self, scored: Score, trial: Trial, slots: list[Offer], changed: str, best: Score
    ) -> tuple[Score, Trial]:
        """A try that stopped at another check, with one argument that check's message names set too (`x must be
        set when y is ...`): two changes at once, where one alone cannot get further."""
        if scored.outcome.error is None:
            return scored, trial
        said = scored.outcome.said()
        named = [(slot, values) for slot, values in explore_choices.named_first(slots, said, only=True)]
        named = [(slot, values) for slot, values in named if slot != changed]
        if not named:  # (a message that names none: the arguments the raise's function reads, first)
            named = [(slot, values) for slot, values in slots if slot != changed and _hinted(slot, self.hints)]
        for slot, values in named[:_REPAIRS]:
            # (set before: back to its default first)
            reverts = [None] if explore_kinds.setting(trial, slot) is not None else []
            for choice in [*reverts, *values[: _REPAIRS * 3]]:
                tried = explore_kinds.settled(self.choices, trial, slot, choice)
                again = self.score(tried)
                if again.rank > best.rank:
                    return again, tried
        return scored, trial

    def shrink(self, trial: Trial, best: Score, goal: int, deadline: float) -> tuple[Trial, Score]:
        """The arguments found, less each one the raise does not need (left at its default): a short program."""
        required = set(explore_values.required(self.target.holder)) | set(self.choices.required(deadline))
        slots = [
            slot
            for kind in explore_kinds.SHORTENED
            for slot in kind.shortened(explore_kinds.values_of(trial, kind), required)
        ]
        for slot in slots:
            if self.budget.over(deadline):
                break
            tried = explore_kinds.settled(self.choices, trial, slot, None)
            if tried == trial:
                continue
            scored = self.score(tried)
            if scored.depth >= goal:
                trial, best = tried, scored
        return trial, best

    def fixes(
        self,
        trial: Trial,
        setup: dict[str, Value],
        slots: list[Offer],
        deadline: float,
        *,
        called: bool,
    ) -> list[Fix]:
        """Changes of one argument after which the raise no longer runs: each argument the search set turned
        back to its default first, then to its other values; those that build without error first."""
        found: list[Fix] = []
        goal = len(self.target.path) + 1
        required = set(explore_values.required(self.target.holder)) | set(self.choices.required(deadline))
        named = [
            v
            for v in [*trial.arguments.values(), *trial.call.values()]
            if isinstance(v, Src) and explore_values.number(v.text) is not None
        ]
        for slot, values in slots:
            if self.budget.over(deadline) or len(found) >= _FIXES:
                break
            kind = explore_kinds.kind_of(slot)
            current = explore_kinds.setting(trial, slot)
            if current is not None and setup.get(slot) == current:  # (what any build needs is no fix)
                continue
            reverts = [None] if current is not None and slot.rpartition(".")[2] not in required else []
            numeric = bool(values) and all(
                isinstance(c, Src) and explore_values.number(c.text) is not None for c in values
            )
            candidate: Fix | None = None  # (one that stops the raise but fails elsewhere: kept until a few more
            looked = 0  # values are tried for one that passes)
            for choice in [*reverts, *(named if numeric else []), *values]:
                if choice == current or (kind.called and not called) or looked > _AFTER_FAILED:
                    continue
                tried = explore_kinds.settled(self.choices, trial, slot, choice)
                depth, _, _, outcome = self.score(tried)
                looked += candidate is not None
                if depth >= goal or self.budget.over(deadline):
                    continue
                program = self.written(tried, called=called)
                passed = outcome.ran is Ran.PASSED
                if passed or candidate is None:
                    candidate = Fix(program, kind.change(slot, choice), passed)
                if passed:
                    break
            if candidate is not None:
                found.append(candidate)
        found.sort(key=lambda fix: not fix.passed)
        return found

    def written(self, trial: Trial, *, called: bool) -> Written:
        """A try as a program: each kind's preamble (the environment), its imports, the tiny model folder when it
        uses one, the build and the call (when the build alone does not raise)."""
        target = self.target
        passed = {k: v.node() for k, v in trial.call.items()}
        body: list[ast.stmt]
        if target.holder is None:  # the module's function, or the class's static or class method, called
            owner = target.function if target.cls is None else f"{target.cls.__name__}.{target.method}"
            called_as = programs.dotted(owner)
            body = [ast.Expr(programs.call(called_as, passed))]
            values = [called_as, *passed.values()]
        else:
            built = Call(target.holder.__name__, trial.arguments).node()
            body = [ast.Assign([ast.Name("config", ast.Store())], built)]
            if called and target.method is not None:
                body.append(ast.Expr(programs.call(programs.dotted(f"config.{target.method}"), passed)))
            values = [built, *passed.values()]
        used = {n.id for value in values for n in ast.walk(value) if isinstance(n, ast.Name)}
        head = self._imports(used)
        preamble = [block for kind in KINDS for block in kind.preamble(explore_kinds.values_of(trial, kind))]
        models = [name for name in explore_models.TINY_MODELS if name in used]
        setup: list[ast.stmt] = []
        if models:  # (`os` imported once, when a preamble imports it too)
            done = {a.name for block in preamble for s in block if isinstance(s, ast.Import) for a in s.names}
            head.insert(0, ast.Import([ast.alias(m) for m in ("json", "os", "tempfile") if m not in done]))
            for name in models:  # a tiny model: its config.json only
                setup += explore_models.model_written(name)
        shown: dict[str, str] = {}
        for kind in KINDS:
            shown.update(kind.shown(explore_kinds.values_of(trial, kind), direct=target.holder is None))
        return Written(programs.unparsed([*preamble, head, setup, body]), shown)

    def _imports(self, used: set[str]) -> list[ast.stmt]:
        """What a program imports for the names it uses: each from its module (a module itself, `torch` of
        `torch.float16`, imported whole), the tiny models' names left to the lines that write them."""
        module = self.target.module
        by_module: dict[str, list[str]] = {}
        plain: list[ast.stmt] = []
        for name in sorted(used):
            home = self.bindings.imports.get(name) or (module.__name__ if name in vars(module) else None)
            if isinstance(vars(module).get(name), types.ModuleType):
                imported = vars(module)[name].__name__
                alias = ast.alias(programs.module_path(imported), None if imported == name else name)
                plain.append(ast.Import([alias]))
            elif home is not None and name not in explore_models.TINY_MODELS:
                by_module.setdefault(home, []).append(name)
        return [*plain, *(programs.imported(home, names) for home, names in sorted(by_module.items()))]

    # -- what may change
    def slots(self, deadline: float) -> list[Offer]:
        """Each slot the search may set, with the values to try: the hinted names first (the fields and parameters
        the conditions read, the environment the function reads), then the others that share a word with the
        conditions and the message (`runner` for `self.runner_type in ("draft", "generate")`), most words first;
        each name as every kind that takes it (explore_kinds.KINDS)."""
        out: list[Offer] = []
        annotated = {kind: kind.annotations(self.choices) for kind in KINDS}
        seen: set[str] = set()
        others = sorted([name for kind in KINDS for name in annotated[kind]], key=self.overlap)
        for name in [*self.hints, *others]:
            if name in seen:
                continue
            seen.add(name)
            for kind in KINDS:
                out += kind.offers(self.choices, name, annotated[kind], deadline)
        for kind in KINDS:
            out += kind.extra(self.choices, annotated[kind], seen)
        return out


def _hinted(slot: str, hints: list[str]) -> bool:
    return slot.removeprefix("call.") in hints[:6]
