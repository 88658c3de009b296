# Verify: run each record's trigger in a runtime and keep it only when the error comes from the record's own
# raise, prints what the record's pattern matches, and `match` answers it with that record; then run the fix.
from __future__ import annotations

import ast
import contextlib
import queue
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from extractor.model.records import CatalogLine, Reproduction, ReproductionReason
from extractor.reproduce.lifting import flag_hints
from extractor.reproduce.triggers import Attempt, Code, Unsolvable, lessons, trigger, vocabulary

if TYPE_CHECKING:
    from extractor.query.match.matcher import Matcher
    from extractor.reproduce.runtime import Session

__all__ = ["REASONS", "as_reproduction", "reproduce"]

_RETRIES = 3  # attempts after the first, each with what the validation of the one before said
_MEMORY = 4 << 30  # bytes an attempt's process may take
_BUDGET = 20.0  # seconds the runtime's search may take for one record (a guard: it stops at a count of tries)

# The named classes of a record not reproduced (the record model's, which the triggers' and the search's use).
REASONS: tuple[str, ...] = tuple(ReproductionReason)


# What vLLM does the first time a config is built (imports, caches), done once per runtime before its attempts
# fork: each tiny model (explore.TINY_MODELS) built into a whole configuration.
WARM = """
from vllm.config import DeviceConfig, ModelConfig, VllmConfig
for model in (MODEL, EMBEDDING_MODEL, MOE_MODEL, MLA_MODEL):
    VllmConfig(model_config=ModelConfig(model=model), device_config=DeviceConfig(device="cpu"))
"""
# The platform vLLM builds configs for on a machine without its accelerator (the serve path needs one); what the
# user set wins.
PLATFORM = {"VLLM_TARGET_DEVICE": "cpu"}


def vllm_session(python: str | Path) -> contextlib.AbstractContextManager[Session]:
    """A session of a vLLM runtime: `vllm.config` imported, a whole config built once, the CPU platform."""
    from extractor.reproduce.runtime import session

    return session(python, "vllm", preload=("vllm.config",), warm=WARM, environment=PLATFORM)


def raised_here(line: CatalogLine, result: dict[str, Any]) -> bool:
    """Whether an attempt raised at the record's own raise with a message its pattern matches."""
    return _raised_here(line, result) is None


def reproduce(
    lines: Iterable[CatalogLine],
    sessions: Sequence[Session],
    matcher: Matcher,
    *,
    verified_with: str,
    timeout: float = 60.0,
) -> Iterator[dict[str, Any]]:
    """For each record, its reproduction (`python`, `flags`, `message`, `fix`, `verifiedWith`) or `reason`, in
    the order of `lines`: the records shared among the sessions (each a runtime's interpreter), one at a time."""
    lines = list(lines)
    context = _Context(
        by_site={(line.record.filePath, line.record.lineNumber): line.record.id for line in lines},
        known=vocabulary(lines),
        hints=flag_hints(lines),
        matcher=matcher,
        verified_with=verified_with,
        timeout=timeout,
    )
    free: queue.Queue[Session] = queue.Queue()
    for running in sessions:
        free.put(running)

    def one(line: CatalogLine) -> dict[str, Any]:
        running = free.get()
        try:
            found = _one(line, running, context)
            if "reproduction" in found:  # (the one chosen, lifted once)
                _served(line, running, found["reproduction"], context)
            if found.get("reproduction", {}).get("level") != "serve":  # (the serve path searched on its own)
                found = _probed(line, running, found, context)
            return found
        finally:
            free.put(running)

    with ThreadPoolExecutor(max_workers=max(1, len(sessions))) as pool:
        yield from pool.map(one, lines)


@dataclass
class _Context:
    by_site: dict[tuple[str, int], str]
    known: dict[tuple[str, str], list[Any]]
    hints: dict[str, str]  # `Class.field` -> its flag, as the catalog read the CLI file
    matcher: Matcher
    verified_with: str
    timeout: float
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self, shown: str, ident: str) -> bool:
        with self.lock:  # (one match at a time: the matcher is shared)
            return _answered(self.matcher, shown, ident)


def _one(line: CatalogLine, session: Session, context: _Context) -> dict[str, Any]:
    """One record's reproduction: its conditions solved on paper and run first; else the runtime's search."""
    known, timeout, verified_with = context.known, context.timeout, context.verified_with
    record = line.record
    head = {"id": record.id, "filePath": record.filePath, "lineNumber": record.lineNumber}
    base: dict[str, Any] = {}
    kept: dict[str, Any] | None = None  # reproduced on paper with no fix that ran: the search may find one
    try:
        attempt = trigger(line, known)
    except Unsolvable as why:
        failed = {**head, "reason": why.reason, "detail": why.detail}
    else:
        attempt, program, result, verdict = _run(attempt, session, line, timeout)
        learned: dict[str, Any] = {}
        for _ in range(_RETRIES):  # the runtime's validation refused an argument: learn from it, try again
            more = lessons(result)
            if verdict != "raised elsewhere" or not more or more.items() <= learned.items():
                break
            learned.update(more)
            try:
                attempt = trigger(line, known, learned)
            except Unsolvable:
                break
            attempt, program, result, verdict = _run(attempt, session, line, timeout)
        base = {name: repr(value) for name, value in attempt.arguments.items() if not isinstance(value, Code)}
        if verdict is None and context.answered(str(result["message"]), record.id):
            fixes = []
            if attempt.fix:
                changed = {**attempt.arguments, **attempt.fix}
                fixes.append({"python": attempt.fixed(), "arguments": changed, "change": attempt.change})
            made = _reproduction(line, session, program, attempt.arguments, result, fixes, context)
            kept = {**head, "reproduction": {**made, "verifiedWith": verified_with}}
            if "fix" in made:
                return kept
        detail = "match does not answer it with this record" if verdict is None else _said(result)
        failed = {**head, "reason": verdict or "raised elsewhere", "detail": detail, "python": program}
    found = session.explore(_spec(line, known, base), timeout=_BUDGET + timeout, memory=_MEMORY, ident=record.id)
    if found.get("outcome") == "found":
        program = str(found["python"])
        result = session.attempt(program, timeout=timeout, memory=_MEMORY, ident=record.id)
        alone = _raised_here(line, result)
        if alone is None and not context.answered(str(result["message"]), record.id):
            alone = "match answers another"
        if alone is None:
            made = _reproduction(line, session, program, _values(found["arguments"]), result, found["fixes"], context)
            if kept is None or "fix" in made:  # (the search's, when the one made on paper has no fix)
                return {**head, "reproduction": {**made, "verifiedWith": verified_with}}
        searched = f"found arguments, but run alone: {alone}"
    elif not found.get("of"):  # the search did not run: say why (a module that does not import, ...)
        searched = f"(the search could not run: {found.get('said') or found.get('outcome')})"
    else:
        searched = f"(searched: {found['depth']} of {found['of']} steps of its path, {found.get('tries')} tries)"
        if failed["reason"] == "not solvable from its conditions" and _computed(line, int(found["depth"])):
            failed["reason"] = "a condition on a value computed at run time"
    return kept or {**failed, "searched": searched}


def _computed(line: CatalogLine, depth: int) -> bool:
    """Whether the test the search stopped at reads a value the function computes (a local, a call), not an
    argument: `if len(rounded_sizes) == 0`, `if cudagraph_mode.has_full_cudagraphs()`."""
    tests = [c for c in line.extraction.conditions if c.kind not in ("else", "try", "finally")]
    if not tests:
        return False
    test = tests[min(depth, len(tests) - 1)].test
    try:
        tree = ast.parse(test or "None", mode="eval")
    except SyntaxError:
        return False
    fields = {ref.expression for ref in line.extraction.fields if ref.resolved}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            return True
        if isinstance(node, ast.Name) and node.id not in ("self", "None", "True", "False") and node.id not in fields:
            return True
    return False


def as_reproduction(result: dict[str, Any], verified_with: str) -> Reproduction:
    """A result of `reproduce` as the record's `extraction.reproduction`."""
    from extractor.model.records import Reproduction, ReproductionFix

    made = result.get("reproduction")
    if made is None:
        detail = " ".join(str(part) for part in (result.get("detail"), result.get("searched")) if part)
        return Reproduction(verifiedWith=verified_with, reason=result["reason"], detail=detail or None)
    fix = made.get("fix")
    return Reproduction(
        verifiedWith=verified_with,
        python=made.get("python"),
        flags=made.get("flags"),
        message=made["message"],
        fix=ReproductionFix(**fix) if fix else None,
        level=made.get("level", "config"),
        serve=made.get("serve"),
        solutions=made.get("solutions") or None,
        serveDetail=made.get("serveDetail"),
    )


def _reproduction(
    line: CatalogLine,
    session: Session,
    program: str,
    arguments: dict[str, Any],
    result: dict[str, Any],
    fixes: list[dict[str, Any]],
    context: _Context,
) -> dict[str, Any]:
    """A verified reproduction: the program, its flags, what vLLM printed, and the first fix that, run, no longer
    raises here (with the record raised next, if another check fires)."""
    by_site, timeout = context.by_site, context.timeout
    out: dict[str, Any] = {"python": program, "flags": _flags(line, arguments), "message": str(result["message"])}
    for fix in fixes[:3]:
        after = session.attempt(fix["python"], timeout=timeout, memory=_MEMORY, ident=line.record.id + "-fix")
        site = _site(after)
        # A fix builds without error, or stops at another record's check (which it names): not at an error no
        # record stands for (a missing argument, a value the validation refuses).
        if after["outcome"] == "passed" or (after["outcome"] == "raised" and site in by_site and site != _own(line)):
            out["fix"] = {
                "python": fix["python"],
                "flags": _flags(line, _values(fix["arguments"])),
                "change": fix["change"],
                "then": by_site.get(site) if site is not None else None,
            }
            break
    return out


def _served(line: CatalogLine, session: Session, out: dict[str, Any], context: _Context) -> None:
    """The reproduction lifted to `vllm serve` lines and run (see lifting.py): `level`, `serve`, the fix's line and
    the solutions that ran; left at the config level, saying why, when no line reaches the check."""
    from extractor.reproduce.lifting import candidates, class_level, lift

    out["level"] = "config"
    trigger = class_level(out["python"])
    if trigger is None:
        out["serveDetail"] = "its program calls a function, not a config class: no vllm serve line sets its arguments"
        return
    fix_program = out.get("fix", {}).get("python")
    fixes = [level for level in [class_level(fix_program)] if level is not None] if fix_program else []

    lifted, why = lift(
        line,
        session,
        trigger,
        fixes,
        extra=candidates(line, out["message"]),
        hints=context.hints,
        timeout=context.timeout,
        raised_here=partial(raised_here, line),
        answered=lambda shown: context.answered(shown, line.record.id),
    )
    if lifted is None:
        out["serveDetail"] = why
        return
    out.update(level="serve", serve=lifted.line, message=lifted.message)
    own = next((fix for fix in lifted.fixes if fix.lifted), None)
    if own is not None and "fix" in out:
        out["fix"] = {**out["fix"], "serve": own.line}
    out["solutions"] = [{"change": fix.change, "serve": fix.line} for fix in lifted.fixes]


def _probed(line: CatalogLine, session: Session, found: dict[str, Any], context: _Context) -> dict[str, Any]:
    """A record no lifted reproduction brought to the serve level, searched for there on its own (probing.py): a
    line found replaces the config level (its program kept beside it), or stands alone where nothing else
    reproduced the record; else the record is left as it was, the probe's answer in its detail."""
    from extractor.reproduce.lifting import serve_search

    lifted, why = serve_search(
        line,
        session,
        hints=context.hints,
        timeout=context.timeout,
        raised_here=partial(raised_here, line),
        answered=lambda shown: context.answered(shown, line.record.id),
    )
    made = found.get("reproduction")
    if lifted is None:
        if made is not None:
            made["serveDetail"] = f"{made.get('serveDetail') or ''}; the serve path's probe: {why}".lstrip("; ")
        return found
    solutions = [{"change": fix.change, "serve": fix.line} for fix in lifted.fixes]
    served: dict[str, Any] = {"level": "serve", "serve": lifted.line, "message": lifted.message, "solutions": solutions}
    if made is not None:
        made.update(served)
        made.pop("serveDetail", None)
        return found
    head = {key: found[key] for key in ("id", "filePath", "lineNumber")}
    return {**head, "reproduction": {**served, "verifiedWith": context.verified_with}}


def _values(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments written as source, as values where they are literals (a sub-config or a constant of the module
    stays a `Code`)."""
    out: dict[str, Any] = {}
    for name, text in arguments.items():
        if not isinstance(text, str):
            out[name] = text
            continue
        try:
            out[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[name] = Code(text)
    return out


def _spec(line: CatalogLine, known: dict[tuple[str, str], list[Any]], base: dict[str, Any]) -> dict[str, Any]:
    """What the runtime's search needs for a record: where it raises, the path to it, what its conditions read."""
    extraction = line.extraction
    owner, _, function = extraction.function.rpartition(".")
    module = line.record.filePath.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    path = [[c.line, c.test, not c.negated] for c in extraction.conditions if c.kind not in ("else", "try", "finally")]
    names: list[str] = []
    constants: list[str] = []
    for ref in extraction.fields:
        if ref.resolved and ref.field and ref.expression.startswith("self."):
            names.append(ref.expression.removeprefix("self."))
    for condition in extraction.conditions:
        try:
            tree = ast.parse(condition.test or "None", mode="eval")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id != "self":
                names.append(node.id)
            elif isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self":
                names.append(node.attr)
            elif isinstance(node, (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Attribute)):
                value = _literal_of(node)
                if value is not None and value not in constants:
                    constants.append(value)
    return {
        "module": module,
        "cls": owner or None,
        "method": None if function in ("__post_init__", "__init__") else function,
        "function": function,
        "target": [line.record.filePath, line.record.lineNumber],
        "path": path,
        "names": list(dict.fromkeys(names)),
        "constants": constants[:60],
        "base": base,
        # The words of its conditions and its message: which other arguments to try first.
        "words": " ".join([*(c.test for c in extraction.conditions), line.record.errorMessage]),
        "vocabulary": {
            f"{cls}.{name}": [v.text if isinstance(v, Code) else repr(v) for v in values]
            for (cls, name), values in known.items()
        },
        "budget": _BUDGET,
    }


def _literal_of(node: ast.expr) -> str | None:
    """A condition's constant as source: a literal, or a module's constant (`Mode.FAST`)."""
    if isinstance(node, ast.Attribute):
        text = ast.unparse(node)
        return text if re.fullmatch(r"[A-Z]\w*(?:\.\w+)+", text) else None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return repr(value) if not isinstance(value, bool) and value is not None else None


def _run(
    attempt: Attempt, session: Session, line: CatalogLine, timeout: float
) -> tuple[Attempt, str, dict[str, Any], str | None]:
    """Run an attempt: the config built alone first when the check is a method (building it may run the check
    already: then the method is not called, and the fix is checked the same way); the attempt run, its
    program, what it did, and why it is no reproduction (None: it is one)."""
    tries = [replace(attempt, method=None), attempt] if attempt.method is not None else [attempt]
    for tried in tries:
        program = tried.program()
        result = session.attempt(program, timeout=timeout, memory=_MEMORY, ident=line.record.id)
        verdict = _raised_here(line, result)
        if verdict is None:
            break
    return tried, program, result, verdict


def _top(line: CatalogLine) -> str:
    return line.record.filePath.partition("/")[0]


def _own(line: CatalogLine) -> tuple[str, int]:
    return (line.record.filePath, line.record.lineNumber)


def _site(result: dict[str, Any]) -> tuple[str, int] | None:
    """The raise site of what an attempt raised: the innermost frame in the package, of the error pydantic
    wrapped when it wrapped one (not of an error's cause: `raise ValueError(...) from e` raises where it
    stands)."""
    wrapped = result.get("wrapped", [])
    for error in (*wrapped, result) if result.get("class") == "ValidationError" else (result, *wrapped):
        sites = error.get("sites") or []
        if sites:
            return (str(sites[-1][0]), int(sites[-1][1]))
    return None


def _raised_here(line: CatalogLine, result: dict[str, Any]) -> str | None:
    """None when the attempt raised at the record's own raise with a message its pattern matches; else why not."""
    if result["outcome"] in ("timeout", "crashed", "failed"):
        return "hung or crashed"
    if result["outcome"] == "passed":
        return "did not raise"
    site = _site(result)
    if site != _own(line):
        # Stopped where vLLM looks for its platform (the device it runs on): the check needs a GPU platform.
        platform = site is not None and (
            site[0].startswith(f"{_top(line)}/platforms/") or site[0].endswith("/device.py")
        )
        return "needs a GPU platform" if platform else "raised elsewhere"
    messages = [str(e.get("message", "")) for e in (*result.get("wrapped", []), result)]
    pattern = re.compile(line.record.messagePattern, re.S)
    if not any(pattern.fullmatch(message) for message in messages):
        return "raised elsewhere"
    return None


def _answered(matcher: Matcher, shown: str, ident: str) -> bool:
    answers = matcher.match(shown).matches
    return bool(answers) and any(place.id == ident for place in answers[0].template.places())


def _said(result: dict[str, Any]) -> str:
    site = _site(result)
    where = f" at {site[0]}:{site[1]}" if site else ""
    what = f"{result.get('class')}: {str(result.get('message', ''))[:200]}" if result["outcome"] == "raised" else ""
    return (what + where) or str(result.get("reason") or result["outcome"])


def _flags(line: CatalogLine, arguments: dict[str, Any]) -> str | None:
    """The `vllm serve` flags that set the arguments, or None when one of them has no flag."""
    by_field = {ref.field: ref for ref in line.extraction.fields if ref.field}
    out: list[str] = []
    for name, value in arguments.items():
        ref = by_field.get(name)
        if ref is None or not ref.flags:
            return None
        flag = ref.flags[0]
        if isinstance(value, bool):
            negative = next((f for f in ref.flags if f.startswith("--no-")), None)
            out.append(flag if value else (negative or f"{flag} false"))
        elif value is None:
            return None
        else:
            out.append(f"{flag} {value}")
    return " ".join(out)
