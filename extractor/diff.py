# Diff: two catalogs -> added / removed / reworded / moved / modified / unchanged, as JSON or Markdown.
from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson
from rapidfuzz.distance import Indel

from extractor.models import CatalogLine

if TYPE_CHECKING:  # a type only: importing catalog would bring in extract, git and write
    from extractor.catalog import LoadedCatalog

__all__ = ["ACROSS_FUNCTIONS", "WITHIN_FUNCTION", "CatalogDiff", "Change", "ChangeKind", "diff_catalogs", "similarity"]

# Reworded pairs: word-level similarity (rapidfuzz Indel on word lists: 2*common/(len a + len b)).
# Within one function 0.5 pairs a check whose message was rewritten around the same words, and one that was
# cut to half its length; across two functions a pair must share far more, because a function like
# VllmConfig.__post_init__ holds many unrelated "... requires ..." checks (see the README's diff section).
WITHIN_FUNCTION = 0.5
ACROSS_FUNCTIONS = 0.85
_WORD = re.compile(r"\w+")
# The least share of its words a message must have in common with another to score WITHIN_FUNCTION:
# 2m / (la + lb) >= 1/2 with lb >= m gives m >= la / 3.
_MIN_SHARE = WITHIN_FUNCTION / (2 - WITHIN_FUNCTION)
_NO_WORD = ("", -1)  # the one token of a message without words: it scores 1.0 against another such


class ChangeKind(StrEnum):
    """What happened to a check between two catalogs (in the order changes are listed)."""

    ADDED = "added"
    REMOVED = "removed"
    REWORDED = "reworded"
    MOVED = "moved"
    MODIFIED = "modified"
    UNCHANGED = "unchanged"


_ORDER = {kind: index for index, kind in enumerate(ChangeKind)}


@dataclass(frozen=True)
class Change:
    """One check's fate: its old and new lines (one may be None) and the fields that differ."""

    kind: ChangeKind
    old: CatalogLine | None
    new: CatalogLine | None
    fields: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        line = self.new or self.old
        assert line is not None
        return line.record.id

    def sort_key(self) -> tuple[int, str, int, int]:
        line = self.new or self.old
        assert line is not None
        return (_ORDER[self.kind], line.record.filePath, line.record.lineNumber, line.extraction.column)


@dataclass(frozen=True)
class CatalogDiff:
    """The changes between two catalogs, sorted by kind then location, unchanged ones included."""

    old: LoadedCatalog
    new: LoadedCatalog
    changes: tuple[Change, ...]

    @property
    def summary(self) -> dict[str, int]:
        counts = dict.fromkeys((kind.value for kind in ChangeKind), 0)
        for change in self.changes:
            counts[change.kind.value] += 1
        return counts

    @property
    def differs(self) -> bool:
        return any(change.kind is not ChangeKind.UNCHANGED for change in self.changes)


def _words(message: str) -> list[str]:
    return _WORD.findall(message.lower())


def similarity(old: str, new: str) -> float:
    """Score two message templates by the words they share, in order (0 to 1)."""
    return float(Indel.normalized_similarity(_words(old), _words(new)))


def _conditions(line: CatalogLine) -> list[tuple[str, str, bool]]:
    return [(c.kind.value, c.test, c.negated) for c in line.extraction.conditions]


def _differing(old: CatalogLine, new: CatalogLine) -> list[str]:
    """Name what differs between two lines, ignoring columns, the source window and the pinned SHA."""
    fields = []
    if old.record.filePath != new.record.filePath:
        fields.append("filePath")
    if old.record.lineNumber != new.record.lineNumber:
        fields.append("lineNumber")
    if old.extraction.function != new.extraction.function:
        fields.append("function")
    if old.record.errorMessage != new.record.errorMessage:
        fields.append("errorMessage")
    if _conditions(old) != _conditions(new):
        fields.append("conditions")
    if old.extraction.cause != new.extraction.cause:
        fields.append("cause")
    if old.record.errorType != new.record.errorType:
        fields.append("errorType")
    if _fields(old) != _fields(new):
        fields.append("fields")
    return fields


def _fields(line: CatalogLine) -> list[tuple[object, ...]]:
    """The config fields a record reads and how they are set (unresolved names change with the text)."""
    return [(f.class_, f.field, f.flags, f.via, f.key) for f in line.extraction.fields if f.resolved]


_LOCATION = {"filePath", "lineNumber", "function"}


def _pair_same_id(line: CatalogLine, match: CatalogLine) -> Change:
    """The same check in both: a line shift within its function is no change; another function is a move."""
    fields = _differing(line, match)
    if not fields or fields == ["lineNumber"]:
        return Change(ChangeKind.UNCHANGED, line, match)
    if set(fields) <= _LOCATION:
        return Change(ChangeKind.MOVED, line, match, tuple(fields))
    return Change(ChangeKind.MODIFIED, line, match, tuple(fields))


def diff_catalogs(old: LoadedCatalog, new: LoadedCatalog) -> CatalogDiff:
    """Pair the checks of two catalogs: same id, then same template elsewhere, then similar wording."""
    changes: list[Change] = []
    new_by_id = {line.record.id: line for line in new.lines}
    old_left: list[CatalogLine] = []
    for line in old.lines:
        match = new_by_id.pop(line.record.id, None)
        if match is None:
            old_left.append(line)
        else:
            changes.append(_pair_same_id(line, match))
    new_left = [line for line in new.lines if line.record.id in new_by_id]

    # Same class and template in another file: a module split or renamed.
    by_template: dict[tuple[str, str], list[CatalogLine]] = {}
    for line in new_left:
        by_template.setdefault((line.record.errorClass, line.record.errorMessage), []).append(line)
    still_old = []
    for line in old_left:
        candidates = by_template.get((line.record.errorClass, line.record.errorMessage), [])
        match = next((c for c in candidates if c.record.filePath != line.record.filePath), None)
        if match is not None:
            candidates.remove(match)
            changes.append(Change(ChangeKind.MOVED, line, match, tuple(_differing(line, match))))
        else:
            still_old.append(line)
    paired = {id(c.new) for c in changes}
    still_new = [line for line in new_left if id(line) not in paired]

    # Similar templates in the same file: reworded, best pairs first, one to one.
    scored = []
    for a, b, score in _similar_pairs(still_old, still_new):
        if score >= (WITHIN_FUNCTION if a.extraction.function == b.extraction.function else ACROSS_FUNCTIONS):
            scored.append((-score, a.record.lineNumber, b.record.lineNumber, id(a), id(b), a, b))
    scored.sort(key=lambda item: item[:3])
    used: set[int] = set()
    for _, _, _, old_key, new_key, a, b in scored:
        if old_key in used or new_key in used:
            continue
        used.update((old_key, new_key))
        changes.append(Change(ChangeKind.REWORDED, a, b, tuple(_differing(a, b))))
    changes += [Change(ChangeKind.REMOVED, line, None) for line in still_old if id(line) not in used]
    changes += [Change(ChangeKind.ADDED, None, line) for line in still_new if id(line) not in used]
    changes.sort(key=Change.sort_key)
    return CatalogDiff(old, new, tuple(changes))


def _similar_pairs(
    old: Sequence[CatalogLine], new: Sequence[CatalogLine]
) -> Iterator[tuple[CatalogLine, CatalogLine, float]]:
    """Yield every pair of the same file and class that could score WITHIN_FUNCTION or more, with its score.

    Scoring every pair is quadratic (24,000 reworded checks would be 576 million pairs), so pairs are
    found through an index by file, class and word (prefix filtering): a score of t needs at least t * (la + lb) / 2
    words in common, which the rarest |a| - ceil(|a| / 3) + 1 words of each side then always share
    (for t = 0.5 the other side has at least |a| / 3 words). Each word's k-th occurrence counts as its
    own token, as the score counts repeated words. Only the pairs found so are scored: the work grows with
    the pairs of a file that share uncommon words, not with the square of the checks (many near-identical
    messages in one file still make many candidates).
    """

    def tokens(words: list[str]) -> list[tuple[str, int]]:
        if len(set(words)) == len(words):
            return [(word, 0) for word in words]
        seen: Counter[str] = Counter()
        out = []
        for word in words:
            out.append((word, seen[word]))
            seen[word] += 1
        return out

    old_words = [_words(line.record.errorMessage) for line in old]
    new_words = [_words(line.record.errorMessage) for line in new]
    old_tokens = [tokens(words) for words in old_words]
    new_tokens = [tokens(words) for words in new_words]
    frequency = Counter(token for group in (old_tokens, new_tokens) for words in group for token in words)

    def prefix(words: list[tuple[str, int]]) -> list[tuple[str, int]]:
        if not words:
            return [_NO_WORD]
        rarest = sorted(words, key=lambda token: (frequency[token], token))
        return rarest[: len(words) - math.ceil(len(words) * _MIN_SHARE - 1e-9) + 1]

    index: dict[tuple[str, str, tuple[str, int]], list[int]] = {}
    for position, (line, words) in enumerate(zip(new, new_tokens, strict=True)):
        for token in prefix(words):
            index.setdefault((line.record.filePath, line.record.errorClass, token), []).append(position)
    for line, words, plain in zip(old, old_tokens, old_words, strict=True):
        found = {
            position
            for token in prefix(words)
            for position in index.get((line.record.filePath, line.record.errorClass, token), ())
        }
        for position in sorted(found):
            yield line, new[position], float(Indel.normalized_similarity(plain, new_words[position]))


def _side(catalog: LoadedCatalog) -> dict[str, Any]:
    return {"sha": catalog.sha, "revision": catalog.revision, "records": len(catalog.lines)}


def render_json(diff: CatalogDiff) -> bytes:
    """Render the diff as JSON: both sides, the summary, and every change but the unchanged ones."""
    document = {
        "old": _side(diff.old),
        "new": _side(diff.new),
        "summary": diff.summary,
        "changes": [
            {
                "kind": change.kind.value,
                "id": change.id,
                "old": change.old.record.model_dump(mode="json") if change.old else None,
                "new": change.new.record.model_dump(mode="json") if change.new else None,
                "fields": list(change.fields),
            }
            for change in diff.changes
            if change.kind is not ChangeKind.UNCHANGED
        ],
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("\n", " ")
    for char in "|*_`<>[]":
        text = text.replace(char, "\\" + char)
    return text


def _marked(old: str, new: str) -> tuple[str, str]:
    """Mark the words that changed: removed ones struck through, added ones in bold."""
    a, b = old.split(), new.split()
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        old_words = _escape(" ".join(a[i1:i2]))
        new_words = _escape(" ".join(b[j1:j2]))
        if op == "equal":
            left.append(old_words)
            right.append(new_words)
            continue
        if old_words:
            left.append(f"~~{old_words}~~")
        if new_words:
            right.append(f"**{new_words}**")
    return " ".join(left), " ".join(right)


def _where(line: CatalogLine) -> str:
    record = line.record
    return f"[{record.filePath}:{record.lineNumber}]({record.githubUrl})"


def _label(side: LoadedCatalog, other: LoadedCatalog) -> str:
    """Name one side of a diff: its revision and SHA, or its SHA alone where both sides share a revision
    (a branch followed night after night)."""
    if side.revision == other.revision or not side.revision:
        return side.sha[:12]
    return f"{side.revision} ({side.sha[:10]})"


def render_markdown(diff: CatalogDiff) -> str:
    """Render the diff as release notes: a summary table, then one table per kind of change."""
    old, new = diff.old, diff.new
    out = [
        f"# Error catalog changes: {_label(old, new)} → {_label(new, old)}",
        "",
        f"{len(old.lines)} checks before, {len(new.lines)} after.",
        "",
        "| change | count |",
        "| --- | ---: |",
    ]
    out += [f"| {kind} | {count} |" for kind, count in diff.summary.items()]
    titles = {
        ChangeKind.ADDED: "Added",
        ChangeKind.REMOVED: "Removed",
        ChangeKind.REWORDED: "Reworded",
        ChangeKind.MOVED: "Moved",
        ChangeKind.MODIFIED: "Modified",
    }
    for kind, title in titles.items():
        changes = [c for c in diff.changes if c.kind is kind]
        if not changes:
            continue
        out += ["", f"## {title} ({len(changes)})", ""]
        if kind is ChangeKind.REWORDED:
            out += ["| where | before | after |", "| --- | --- | --- |"]
            for change in changes:
                assert change.old and change.new
                before, after = _marked(change.old.record.errorMessage, change.new.record.errorMessage)
                out.append(f"| {_where(change.new)} | {before} | {after} |")
        elif kind in (ChangeKind.MOVED, ChangeKind.MODIFIED):
            out += ["| where | was | changed | message |", "| --- | --- | --- | --- |"]
            for change in changes:
                assert change.old and change.new
                was = f"{change.old.record.filePath}:{change.old.record.lineNumber}"
                out.append(
                    f"| {_where(change.new)} | {_escape(was)} | {', '.join(change.fields)} | "
                    f"{_escape(change.new.record.errorMessage)} |"
                )
        else:
            out += ["| where | class | message |", "| --- | --- | --- |"]
            for change in changes:
                line = change.new or change.old
                assert line is not None
                out.append(f"| {_where(line)} | {line.record.errorClass} | {_escape(line.record.errorMessage)} |")
    return "\n".join(out) + "\n"
