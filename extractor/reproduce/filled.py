# Filled: a record's second half (schema v2's exampleFix, triggerScenarios, solutions, validationCode,
# tryCatchPattern, documentation, tags, handlingStrategy) written from what `reproduce` ran, never from prose:
# each field says what a run showed, or stays null. commonSituations, preventionTips, typeGuard and
# backgroundTag have no run behind them and stay null.
from __future__ import annotations

import re
import shlex
from typing import Any

from extractor.model.records import CatalogLine, FieldRef, Reproduction, ServeLine
from extractor.reproduce.validation import CatalogFacts, compiled_check, serve_arguments, validation, validation_code

# (compiled_check, serve_arguments and validation_code are validation.py's, named here for their callers)
__all__ = ["compiled_check", "fill", "serve_arguments", "serve_command", "validation_code"]

_MODEL = "./model"  # the model folder a published line names: one holding only the config.json it ran with


def serve_command(line: ServeLine) -> str:
    """A `vllm serve` line as a person types it (see ServeLine.command)."""
    return line.command(_MODEL)


def fill(line: CatalogLine, reproduction: Reproduction | None, *, catalog: CatalogFacts | None = None) -> CatalogLine:
    """The line with its record's second half written from its reproduction (unchanged when there is none);
    `catalog`: what the catalog's other records tell its validationCode (validation.catalog_facts)."""
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
    code = validation(line, reproduction, catalog=catalog).code
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
