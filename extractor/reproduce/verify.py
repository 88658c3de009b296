# Verify: run each record's trigger in a runtime and keep it only when the error comes from the record's own
# raise, prints what the record's pattern matches, and `match` answers it with that record; then run the fix.
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from extractor.reproduce.triggers import Attempt, Unsolvable, lessons, trigger, vocabulary

if TYPE_CHECKING:
    from extractor.model.records import CatalogLine
    from extractor.query.match.matcher import Matcher
    from extractor.reproduce.runtime import Session

__all__ = ["REASONS", "reproduce"]

_RETRIES = 3  # attempts after the first, each with what the validation of the one before said
_MEMORY = 4 << 30  # bytes an attempt's process may take

# The named classes of a record not reproduced (with the triggers' own: needs a GPU platform, needs a real
# model, not solvable from its conditions).
REASONS = (
    "needs a GPU platform",
    "needs a real model",
    "not solvable from its conditions",
    "raised elsewhere",
    "did not raise",
    "hung or crashed",
)


def reproduce(
    lines: Iterable[CatalogLine],
    session: Session,
    matcher: Matcher,
    *,
    verified_with: str,
    timeout: float = 60.0,
) -> Iterator[dict[str, Any]]:
    """For each record, its reproduction (`python`, `flags`, `message`, `fix`, `verifiedWith`) or `reason`."""
    lines = list(lines)
    by_site = {(line.record.filePath, line.record.lineNumber): line.record.id for line in lines}
    known = vocabulary(lines)
    for line in lines:
        record = line.record
        head = {"id": record.id, "filePath": record.filePath, "lineNumber": record.lineNumber}
        try:
            attempt = trigger(line, known)
        except Unsolvable as why:
            yield {**head, "reason": why.reason, "detail": why.detail}
            continue
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
        if verdict is not None:
            yield {**head, "reason": verdict, "detail": _said(result), "python": program}
            continue
        shown = str(result["message"])
        if not _answered(matcher, shown, record.id):
            yield {**head, "reason": "raised elsewhere", "detail": "match does not answer it with this record"}
            continue
        flags = _flags(line, attempt.arguments)
        reproduction: dict[str, Any] = {"python": program, "flags": flags, "message": shown}
        if attempt.fix:
            fixed = attempt.fixed()
            after = session.attempt(fixed, timeout=timeout, memory=_MEMORY, ident=record.id + "-fix")
            site = _site(after)
            if after["outcome"] == "passed" or (after["outcome"] == "raised" and site != _own(line)):
                then = by_site.get(site) if site is not None else None
                reproduction["fix"] = {
                    "python": fixed,
                    "flags": _flags(line, {**attempt.arguments, **attempt.fix}),
                    "change": attempt.change,
                    "then": then,
                }
        reproduction["verifiedWith"] = verified_with
        yield {**head, "reproduction": reproduction}


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
    wrapped when it wrapped one."""
    for error in (*result.get("wrapped", []), result):
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
