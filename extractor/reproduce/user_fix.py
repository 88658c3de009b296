# The user's fix: a reproduced check's condition solved for the values a paste shows. The reproduction's
# `vllm serve` line with the paste's values in place of its own is the user's line; each change of one flag (to
# another value the paste shows, or back to its default) after which the check's condition (its validationCode,
# itself verified on the reproduction's lines) no longer holds is a fix. With a runtime at hand both lines are
# run through vLLM's serve path before the fix is said to work; without one, it is said to be derived, not run.
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from extractor.model.records import CatalogLine, ServeLine
from extractor.query.explain import UserFix
from extractor.reproduce.filled import compiled_check, serve_arguments, validation_code
from extractor.reproduce.lifting import change_words

__all__ = ["UserFix", "run_fixes", "user_fixes"]

_MOST = 3  # fixes said
_UNDECIDED = "\0undecided"  # what a check that could not read its arguments answers


def _flag_of(line: CatalogLine, expression: str, argv: list[str]) -> str | None:
    """The flag of the line that sets what a placeholder prints: its field's flag, or the flag named after it."""
    for ref in line.extraction.fields:
        if ref.expression == expression and ref.flags and ref.flags[0] in argv:
            return ref.flags[0]
    named = "--" + expression.rpartition(".")[2].replace("_", "-")
    return named if named in argv else None


def _with(argv: list[str], flag: str, value: str | None) -> list[str]:
    """The line with one flag's value replaced (None: the flag taken away)."""
    out: list[str] = []
    skipping = False
    for token in argv:
        if token.startswith("--"):
            skipping = token == flag
            if skipping:
                if value is not None:
                    out += [flag, value]
                continue
        elif skipping:
            continue
        out.append(token)
    return out


def user_fixes(line: CatalogLine, values: dict[str, str]) -> list[UserFix]:
    """Fixes of the user's line for the values a paste shows (placeholder expression -> text), most direct first;
    none when the record was not reproduced at the serve level or its condition is not a check of flags."""

    made = line.extraction.reproduction
    if made is None or made.serve is None or not made.solutions:
        return []
    fix_line = made.fix.serve if made.fix is not None and made.fix.serve is not None else made.solutions[0].serve
    code = validation_code(line, serve_arguments(made.serve), serve_arguments(fix_line), made)
    if code is None:
        return []
    check = _compiled(code)
    argv = list(made.serve.argv)
    shown: dict[str, str] = {}  # flag -> the paste's value
    for expression, text in values.items():
        flag = _flag_of(line, expression, argv)
        if flag is not None and re.fullmatch(r"-?\d+(?:\.\d+)?|True|False|[\w.\-/]+", text.strip()):
            shown[flag] = text.strip()
    if not shown:
        return []
    for flag, text in shown.items():
        argv = _with(argv, flag, text)
    before = made.serve.model_copy(update={"argv": argv})
    if check(serve_arguments(before)) in (None, _UNDECIDED):  # (the paste's values do not meet it as derived)
        return []
    found: list[UserFix] = []

    for flag in shown:
        for other in [*(v for f, v in shown.items() if f != flag), None]:
            after = before.model_copy(update={"argv": _with(argv, flag, other)})
            if after.argv != before.argv and check(serve_arguments(after)) is None:
                found.append(UserFix(before, after, change_words(before.argv, after.argv)))
                break
    found.sort(key=lambda fix: fix.change.startswith("remove"))
    return found[:_MOST]


def _compiled(code: str) -> Callable[[dict[str, Any]], str | None]:
    """The validationCode as a function whose answer is its message, or None only when it says the check passes
    (what it cannot decide, a key the arguments lack, is an answer of its own: not a fix)."""
    check = compiled_check(code)

    def answer(args: dict[str, Any]) -> str | None:
        try:
            said = check(args)
        except Exception:
            return _UNDECIDED
        return said if isinstance(said, str) else None

    return answer


def run_fixes(line: CatalogLine, fixes: list[UserFix], python: str, *, say: Callable[[str], None]) -> list[UserFix]:
    """Each fix run in the runtime `python`: kept, marked run, when the user's line raises at the record's line and
    the fix's does not; dropped when a run contradicts it."""
    from extractor.reproduce.verify import raised_here, vllm_session

    record = line.record
    out: list[UserFix] = []
    say(f"running the fixes in {python} (importing vLLM takes a while)")
    with vllm_session(python) as running:
        ran = f"vllm=={running.version}"
        for fix in fixes:
            before = running.line(_data(fix.before), timeout=30, ident=record.id)
            if not raised_here(line, before):
                continue
            after = running.line(_data(fix.after), timeout=30, ident=record.id + "-fix")
            sites = [tuple(s) for e in [after, *after.get("wrapped", [])] for s in (e.get("sites") or [])[-1:]]
            if after.get("outcome") == "passed" or (
                after.get("outcome") == "raised" and (record.filePath, record.lineNumber) not in sites
            ):
                out.append(UserFix(fix.before, fix.after, fix.change, ran))
    return out


def _data(line: ServeLine) -> dict[str, Any]:
    return json.loads(line.model_dump_json())  # type: ignore[no-any-return]
