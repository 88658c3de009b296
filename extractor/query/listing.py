# Listing: a catalog's records as a table or counts, filtered by file, class and words, without jq.
from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from extractor.model.records import CatalogLine
from extractor.pipeline.options import scope_path
from extractor.pipeline.write import dumps_document
from extractor.util import markdown
from extractor.util.progress import counted, one_line
from extractor.util.suggest import close_to

__all__ = ["Filters", "counted", "first_words", "misses", "render_records", "render_summary", "select"]

_FIRST_WORDS = 60  # characters of a message shown in a table, cut at a word boundary


@dataclass(frozen=True)
class Filters:
    """Which records to list: under any of `files` (a path prefix or a glob), raising any of `classes`, with
    every one of `words` in the message (case folded). An empty filter lets everything through."""

    files: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    words: tuple[str, ...] = ()


def _in_file(path: str, spec: str) -> bool:
    if any(c in spec for c in "*?["):
        return fnmatch.fnmatchcase(path, spec.removeprefix("./"))
    prefix = scope_path(spec)  # as --path reads a prefix: `./vllm/`, `/vllm` and `vllm` are one
    return prefix == "." or path == prefix or path.startswith(prefix + "/")


def _keeps(line: CatalogLine, filters: Filters) -> bool:
    record = line.record
    message = record.errorMessage.casefold()
    return (
        (not filters.files or any(_in_file(record.filePath, spec) for spec in filters.files))
        and (not filters.classes or record.errorClass in filters.classes)
        and all(word.casefold() in message for word in filters.words)
    )


def select(lines: Sequence[CatalogLine], filters: Filters) -> list[CatalogLine]:
    """The records every filter lets through, in catalog order (file, line)."""
    return [line for line in lines if _keeps(line, filters)]


def misses(lines: Sequence[CatalogLine], filters: Filters) -> list[str]:
    """Say which single filter value matches no record of the catalog at all, with the nearest one there."""
    out = []
    paths = {line.record.filePath for line in lines}
    folders = {"/".join(path.split("/")[:depth]) for path in paths for depth in range(1, path.count("/") + 1)}
    for spec in filters.files:
        if not any(_in_file(path, spec) for path in paths):
            guess = close_to(spec.strip("/"), paths | folders)
            out.append(f"no record under {spec}" + (f"; did you mean {guess}?" if guess else ""))
    classes = {line.record.errorClass for line in lines}
    for name in filters.classes:
        if name not in classes:
            guess = close_to(name, classes)
            out.append(f"no record of class {name}" + (f"; did you mean {guess}?" if guess else ""))
    for word in filters.words:
        if not any(word.casefold() in line.record.errorMessage.casefold() for line in lines):
            out.append(f"no message holds {word!r}")
    return out


def first_words(message: str, *, limit: int = _FIRST_WORDS, more: str = " ...") -> str:
    """Return the message on one line, cut at a word boundary to at most `limit` characters, `more` marking a cut."""
    text = " ".join(message.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > 0 else limit] + more


def around(message: str, words: Sequence[str], *, limit: int) -> str:
    """The message on one line, cut to `limit` characters, showing the first of `words` (any case) it holds:
    from the start when the word is there, else from a word boundary before it (`... max_model_len ...`)."""
    text = " ".join(message.split())
    hits = [i for i in (text.casefold().find(word.casefold()) for word in words if word) if i >= 0]
    if not hits or min(hits) + max(len(w) for w in words) <= limit - 4:
        return first_words(text, limit=limit)
    hit = min(hits)
    space = text.find(" ", max(hit - limit // 3, 0), hit)  # (the first word boundary in the third before it)
    return "... " + first_words(text[space + 1 if space >= 0 else hit :], limit=limit - 4)


def render_records(
    lines: Sequence[CatalogLine], *, format: str, width: int | None = None, words: Sequence[str] = ()
) -> str:
    """Render records as an aligned text table, a Markdown table, or JSON lines (the whole message). In the
    text table the message fills what `width` (a terminal's) leaves (else 60 characters), around the first of
    `words` it holds (what --grep looked for)."""
    records = [line.record for line in lines]
    if format == "json":
        keys = ("id", "slug", "errorClass", "filePath", "lineNumber", "errorMessage")
        return "".join(orjson.dumps({key: getattr(line.record, key) for key in keys}).decode() + "\n" for line in lines)
    heads = [(one_line(f"{r.filePath}:{r.lineNumber}", limit=None), r.errorClass, r.slug) for r in records]
    # (a file's name may hold a line break: shown as `\n`, the row stays one line)
    header = ("file:line", "class", "slug", "message")
    limit = _FIRST_WORDS
    if width is not None and format != "markdown":  # (what the other columns and their gaps leave)
        used = sum(max(len(row[i]) for row in [header, *heads]) + 2 for i in range(3))
        limit = max(width - used - 1, 24)
    rows = [(*head, around(r.errorMessage, words, limit=limit)) for head, r in zip(heads, records, strict=True)]
    if format == "markdown":
        cells = ((markdown.code(a), markdown.text(b), markdown.code(c), markdown.text(d)) for a, b, c, d in rows)
        table = [header, ("---",) * 4, *cells]
        return "".join("| " + " | ".join(row) + " |\n" for row in table)
    return _aligned([header, *rows])


def _aligned(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]).rstrip() + "\n"
        for row in rows
    )


def _ranked(counts: Counter[str]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def render_summary(lines: Sequence[CatalogLine], *, format: str) -> str:
    """Count records by file and by class, most first, as text, Markdown or one JSON document."""
    by_file = _ranked(Counter(line.record.filePath for line in lines))
    by_class = _ranked(Counter(line.record.errorClass for line in lines))
    if format == "json":
        document = {"records": len(lines), "byFile": dict(by_file), "byClass": dict(by_class)}
        return dumps_document(document).decode()
    title = f"{counted(len(lines), 'record')} in {counted(len(by_file), 'file')}, {counted(len(by_class), 'class')}"
    if format == "markdown":
        out = [f"{title}\n"]
        for name, counts in (("file", by_file), ("class", by_class)):
            out += [f"\n| {name} | records |\n| --- | ---: |\n"]
            out += [f"| {markdown.text(key)} | {count} |\n" for key, count in counts]
        return "".join(out)
    out = [title + "\n"]
    for name, counts in (("by file", by_file), ("by class", by_class)):
        out.append(f"\n{name}:\n")
        out += [f"  {count:>6}  {one_line(key, limit=None)}\n" for key, count in counts]  # (a name's line break)
    return "".join(out)
