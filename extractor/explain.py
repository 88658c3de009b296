# Explain: one record as a page: message, where, the condition in words, the fields and flags, related errors.
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from extractor.match import Matcher
from extractor.models import CatalogLine, ConditionKind, FieldRef

__all__ = ["Explanation", "condition_in_words", "find", "render"]


@dataclass(frozen=True)
class Explanation:
    """A record found by id, slug or rendered text, with the values the text showed."""

    line: CatalogLine
    values: dict[str, str]
    related: tuple[CatalogLine, ...]


def find(lines: Sequence[CatalogLine], query: str) -> Explanation | None:
    """Look a record up by id, then slug, then as a rendered message (through `match`)."""
    by_id = {line.record.id: line for line in lines}
    found = by_id.get(query) or next((line for line in lines if line.record.slug == query), None)
    values: dict[str, str] = {}
    if found is None:
        matches = Matcher(lines).match(query).matches
        if not matches:
            return None
        found, values = matches[0].line, matches[0].values
    related = tuple(by_id[i] for i in found.extraction.related if i in by_id)
    return Explanation(found, values, related)


def condition_in_words(line: CatalogLine) -> str:
    """Say when a raise runs: `raised when a and not b`, from its condition chain."""
    parts = []
    for condition in line.extraction.conditions:
        test = f"`{condition.test}`"
        kind = condition.kind
        if kind in (ConditionKind.IF, ConditionKind.ELIF, ConditionKind.WHILE, ConditionKind.MATCH_CASE):
            parts.append(f"not {test}" if condition.negated else test)
        elif kind is ConditionKind.FOR:
            parts.append(f"after iterating {test} to the end" if condition.negated else f"while iterating {test}")
        elif kind is ConditionKind.EXCEPT:
            parts.append(f"handling {test}" if condition.test else "handling any exception")
        elif kind is ConditionKind.WITH:
            parts.append(f"inside `with {condition.test}`")
        elif kind is ConditionKind.TRY:
            parts.append("inside a try block")
        elif kind is ConditionKind.FINALLY:
            parts.append("in a finally block")
    return "raised when " + " and ".join(parts) if parts else "raised whenever this code runs"


def _how_set(field: FieldRef) -> str:
    if field.flags:
        return ", ".join(field.flags)
    if field.via:
        return f"{field.via} (JSON key `{field.key}`)"
    return field.reason or ""


def _first_sentence(text: str | None) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


def render(explanation: Explanation, *, format: str) -> str:
    """Render an explanation as text, Markdown or JSON."""
    line, record = explanation.line, explanation.line.record
    if format == "json":
        document = {
            "record": record.model_dump(mode="json"),
            "extraction": line.extraction.model_dump(mode="json", by_alias=True),
            "values": explanation.values,
            "condition": condition_in_words(line),
            "related": [r.record.model_dump(mode="json") for r in explanation.related],
        }
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
    resolved = [f for f in line.extraction.fields if f.resolved]
    unresolved = [f for f in line.extraction.fields if not f.resolved]
    where = f"{record.filePath}:{record.lineNumber}"
    if format == "markdown":
        out = [
            f"# {record.errorClass}: {record.slug}",
            "",
            "```text",
            record.errorMessage,
            "```",
            "",
            f"Thrown at [{where}]({record.githubUrl}) in `{line.extraction.function}`, {condition_in_words(line)}.",
        ]
        if explanation.values:
            out += ["", "| placeholder | value |", "| --- | --- |"]
            out += [f"| `{k}` | `{v}` |" for k, v in explanation.values.items()]
        if resolved:
            out += [
                "",
                "## Fields",
                "",
                "| field | set with | default | constraints | meaning |",
                "| --- | --- | --- | --- | --- |",
            ]
            for f in resolved:
                cells = [
                    f"`{f.class_}.{f.field}`",
                    _how_set(f),
                    f"`{f.default}`" if f.default else "",
                    ", ".join(f"`{c}`" for c in f.constraints),
                    _first_sentence(f.doc),
                ]
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        if unresolved:
            out += ["", "Also read: " + ", ".join(f"`{f.expression}` ({f.reason})" for f in unresolved)]
        if explanation.related:
            out += ["", "## Related errors", ""]
            out += [
                f"- [{r.record.filePath}:{r.record.lineNumber}]({r.record.githubUrl}) {r.record.errorMessage[:100]}"
                for r in explanation.related
            ]
        return "\n".join(out) + "\n"
    out = [
        f"{record.errorClass}: {record.errorMessage}",
        "",
        f"Thrown at  {where}  ({line.extraction.function})",
        f"           {record.githubUrl}",
        f"When       {condition_in_words(line)}",
    ]
    if explanation.values:
        out += ["Values     " + ", ".join(f"{k} = {v}" for k, v in explanation.values.items())]
    if resolved:
        out += ["", "Fields"]
        for f in resolved:
            out.append(
                f"  {f.class_}.{f.field}: {f.annotation} = {f.default}"
                + (f"  [{', '.join(f.constraints)}]" if f.constraints else "")
            )
            out.append(f"      set with: {_how_set(f)}")
            if f.doc:
                out.append(f"      {_first_sentence(f.doc)}")
    if unresolved:
        out += ["", "Also read  " + ", ".join(f"{f.expression} ({f.reason})" for f in unresolved)]
    if explanation.related:
        out += ["", "Related errors"]
        out += [
            f"  {r.record.filePath}:{r.record.lineNumber}  {r.record.errorMessage[:90]}" for r in explanation.related
        ]
    return "\n".join(out) + "\n"
