# Diff: two catalogs -> added / removed / reworded / moved / modified / unchanged, as JSON or Markdown.
from __future__ import annotations

import difflib
import heapq
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt
import orjson
from rapidfuzz.distance import Indel
from rapidfuzz.process import cdist

from extractor.models import CatalogLine

if TYPE_CHECKING:  # a type only: importing catalog would bring in extract, git and write
    from extractor.catalog import LoadedCatalog

__all__ = [
    "ACROSS_FUNCTIONS",
    "WITHIN_FUNCTION",
    "CatalogDiff",
    "Change",
    "ChangeKind",
    "Check",
    "Pair",
    "diff_catalogs",
    "pair_checks",
    "similarity",
]

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
_NO_WORD = (-1, 0)  # the one token of a message without words: it scores 1.0 against another such
# Scores below this are not computed exactly (rapidfuzz says 0): a little below WITHIN_FUNCTION, which is then
# applied to the exact score.
_CUTOFF = WITHIN_FUNCTION - 1e-6


class ChangeKind(StrEnum):
    """What happened to a check between two catalogs (in the order changes are listed)."""

    ADDED = "added"
    REMOVED = "removed"
    REWORDED = "reworded"
    MOVED = "moved"
    MODIFIED = "modified"
    UNCHANGED = "unchanged"


_ORDER = {kind: index for index, kind in enumerate(ChangeKind)}


@dataclass(frozen=True, slots=True)
class Check:
    """What pairing reads of one catalog line (the same whether the line was validated into a model or is
    the data a run built), and the line's position in its catalog."""

    index: int
    id: str
    error_class: str
    message: str
    error_type: str
    path: str
    line: int
    column: int
    function: str
    conditions: tuple[tuple[str, str, bool], ...]
    cause: str | None
    fields: tuple[tuple[object, ...], ...]  # the config fields it reads and how they are set, if resolved
    slug: str
    url: str

    @classmethod
    def of(cls, index: int, line: CatalogLine) -> Check:
        record, extraction = line.record, line.extraction
        return cls(
            index,
            record.id,
            record.errorClass,
            record.errorMessage,
            str(record.errorType),
            record.filePath,
            record.lineNumber,
            extraction.column,
            extraction.function,
            tuple((str(c.kind), c.test, c.negated) for c in extraction.conditions),
            extraction.cause,
            tuple((f.class_, f.field, tuple(f.flags), f.via, f.key) for f in extraction.fields if f.resolved),
            record.slug,
            record.githubUrl,
        )

    @classmethod
    def of_data(cls, index: int, line: Mapping[str, Any]) -> Check:
        """The check of a line as data (as records.jsonl holds it), read with the models' defaults."""
        record, extraction = line["record"], line["extraction"]
        return cls(
            index,
            record["id"],
            record["errorClass"],
            record["errorMessage"],
            record["errorType"],
            record["filePath"],
            record["lineNumber"],
            extraction["column"],
            extraction["function"],
            tuple((c["kind"], c["test"], c.get("negated", False)) for c in extraction["conditions"]),
            extraction["cause"],
            tuple(
                (f.get("class"), f.get("field"), tuple(f.get("flags", ())), f.get("via"), f.get("key"))
                for f in extraction.get("fields", ())
                if f.get("resolved", False)
            ),
            record["slug"],
            record["githubUrl"],
        )


class Pair(NamedTuple):
    """One check's fate: its old and new checks (one may be None) and the fields that differ."""

    kind: ChangeKind
    old: Check | None
    new: Check | None
    fields: tuple[str, ...] = ()

    def sort_key(self) -> tuple[int, str, int, int]:
        check = self.new or self.old
        assert check is not None
        return (_ORDER[self.kind], check.path, check.line, check.column)


@dataclass(frozen=True)
class Change:
    """One check's fate in a catalog diff: its old and new lines (one may be None) and the fields that differ."""

    kind: ChangeKind
    old: CatalogLine | None
    new: CatalogLine | None
    fields: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        line = self.new or self.old
        assert line is not None
        return line.record.id


@dataclass(frozen=True)
class CatalogDiff:
    """The changes between two catalogs, sorted by kind then location, unchanged ones included."""

    old: LoadedCatalog
    new: LoadedCatalog
    changes: tuple[Change, ...]
    pairs: tuple[Pair, ...]  # the same, as checks

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


def _differing(old: Check, new: Check) -> list[str]:
    """Name what differs between two checks, ignoring columns, the source window and the pinned SHA."""
    fields = []
    if old.path != new.path:
        fields.append("filePath")
    if old.line != new.line:
        fields.append("lineNumber")
    if old.function != new.function:
        fields.append("function")
    if old.message != new.message:
        fields.append("errorMessage")
    if old.conditions != new.conditions:
        fields.append("conditions")
    if old.cause != new.cause:
        fields.append("cause")
    if old.error_type != new.error_type:
        fields.append("errorType")
    if old.fields != new.fields:
        fields.append("fields")
    return fields


_LOCATION = {"filePath", "lineNumber", "function"}


def _pair_same_id(old: Check, new: Check) -> Pair:
    """The same check in both: a line shift within its function is no change; another function is a move."""
    fields = _differing(old, new)
    if not fields or fields == ["lineNumber"]:
        return Pair(ChangeKind.UNCHANGED, old, new)
    if set(fields) <= _LOCATION:
        return Pair(ChangeKind.MOVED, old, new, tuple(fields))
    return Pair(ChangeKind.MODIFIED, old, new, tuple(fields))


def diff_catalogs(old: LoadedCatalog, new: LoadedCatalog) -> CatalogDiff:
    """Pair the checks of two catalogs: same id, then same template elsewhere, then similar wording."""
    pairs = pair_checks(
        [Check.of(index, line) for index, line in enumerate(old.lines)],
        [Check.of(index, line) for index, line in enumerate(new.lines)],
    )
    changes = tuple(
        Change(
            pair.kind,
            old.lines[pair.old.index] if pair.old is not None else None,
            new.lines[pair.new.index] if pair.new is not None else None,
            pair.fields,
        )
        for pair in pairs
    )
    return CatalogDiff(old, new, changes, tuple(pairs))


def pair_checks(old: Sequence[Check], new: Sequence[Check]) -> list[Pair]:
    """Pair two catalogs' checks: same id, then same template elsewhere, then similar wording; sorted by
    kind then location, unchanged ones included."""
    pairs: list[Pair] = []
    new_by_id = {check.id: check for check in new}
    old_left: list[Check] = []
    for check in old:
        match = new_by_id.pop(check.id, None)
        if match is None:
            old_left.append(check)
        else:
            pairs.append(_pair_same_id(check, match))
    new_left = [check for check in new if check.id in new_by_id]

    # Same class and template in another file: a module split or renamed.
    by_template: dict[tuple[str, str], list[Check]] = {}
    for check in new_left:
        by_template.setdefault((check.error_class, check.message), []).append(check)
    still_old = []
    for check in old_left:
        candidates = by_template.get((check.error_class, check.message), [])
        match = next((c for c in candidates if c.path != check.path), None)
        if match is not None:
            candidates.remove(match)
            pairs.append(Pair(ChangeKind.MOVED, check, match, tuple(_differing(check, match))))
        else:
            still_old.append(check)
    paired = {id(p.new) for p in pairs}
    still_new = [check for check in new_left if id(check) not in paired]

    # Similar templates in the same file: reworded, best pairs first, one to one.
    used: set[int] = set()
    for a, b in _reworded(still_old, still_new):
        used.update((id(a), id(b)))
        pairs.append(Pair(ChangeKind.REWORDED, a, b, tuple(_differing(a, b))))
    pairs += [Pair(ChangeKind.REMOVED, check, None) for check in still_old if id(check) not in used]
    pairs += [Pair(ChangeKind.ADDED, None, check) for check in still_new if id(check) not in used]
    pairs.sort(key=Pair.sort_key)
    return pairs


# Rewordings pair within one file and class, so each such group is paired on its own: greedily, the best
# pair first (score, then old line, new line, old and new position), one to one. Scores come from
# rapidfuzz's cdist (compiled, some 30 ns a pair), a chunk of old checks against their candidates at a time:
# in a group of up to _DENSE_CELLS pairs every new check is a candidate; in a larger one, the new checks
# that share one of the old checks' rarest words (prefix filtering, see _Group._index). Each old check keeps
# only its best few candidates (four times more each time another check takes them all and they are
# scored again), so memory stays linear in the checks and the work is at most the group's pairs at
# compiled speed, never a sorted list of every pair that could score.
_DENSE_CELLS = 1 << 24
_CHUNK_CELLS = 1 << 20
_CHUNK_ROWS = 64  # old checks scored together in a large group (against the union of their candidates)
_KEPT = 16
_Ints = npt.NDArray[np.int64]
_Floats = npt.NDArray[np.float64]


def _reworded(old: Sequence[Check], new: Sequence[Check]) -> list[tuple[Check, Check]]:
    """Pair the old and new checks whose templates are similar enough (see WITHIN_FUNCTION)."""
    groups: dict[tuple[str, str], tuple[list[Check], list[Check]]] = {}
    for check in old:
        groups.setdefault((check.path, check.error_class), ([], []))[0].append(check)
    for check in new:
        group = groups.get((check.path, check.error_class))
        if group is not None:
            group[1].append(check)
    return [pair for olds, news in groups.values() if news for pair in _Group(olds, news).pairs()]


@dataclass
class _Candidates:
    """An old check's best candidates not known to be taken, best first, and how many were asked for."""

    columns: _Ints
    scores: _Floats
    more: bool  # whether other candidates scored enough but were left out
    limit: int
    at: int = 0


class _Group:
    """The unpaired checks of one file and class, old and new, their messages' words as numbers."""

    def __init__(self, old: list[Check], new: list[Check]) -> None:
        self.old, self.new = old, new
        vocabulary: dict[str, int] = {}
        self.a = [[vocabulary.setdefault(w, len(vocabulary)) for w in _words(x.message)] for x in old]
        self.b = [[vocabulary.setdefault(w, len(vocabulary)) for w in _words(x.message)] for x in new]
        functions: dict[str, int] = {}
        self.a_function = [functions.setdefault(x.function, len(functions)) for x in old]
        self.b_function = np.array([functions.setdefault(x.function, len(functions)) for x in new])
        self.b_line = np.array([x.line for x in new], dtype=np.int64)
        self.columns = np.arange(len(new), dtype=np.int64)
        self.postings: dict[tuple[int, int], _Ints] | None = None
        if len(old) * len(new) > _DENSE_CELLS:
            self._index()

    def _index(self) -> None:
        """Index the new checks by the rarest words of their messages (prefix filtering): a pair that can
        score WITHIN_FUNCTION or more shares at least t * (la + lb) / 2 words, which the rarest
        |a| - ceil(|a| / 3) + 1 words of each side then always share (for t = 0.5 the other side has at least
        |a| / 3 words). A word's k-th occurrence in a message is a token of its own, as the score counts
        repeated words. A new check outside an old one's candidates cannot score enough with it."""
        a_tokens = [_tokens(words) for words in self.a]
        b_tokens = [_tokens(words) for words in self.b]
        frequency = Counter(token for side in (a_tokens, b_tokens) for tokens in side for token in tokens)

        def prefix(tokens: list[tuple[int, int]]) -> list[tuple[int, int]]:
            if not tokens:
                return [_NO_WORD]
            rarest = sorted(tokens, key=lambda token: (frequency[token], token))
            return rarest[: len(tokens) - math.ceil(len(tokens) * _MIN_SHARE - 1e-9) + 1]

        self.a_prefix = [prefix(tokens) for tokens in a_tokens]
        postings: dict[tuple[int, int], list[int]] = {}
        for position, tokens in enumerate(b_tokens):
            for token in prefix(tokens):
                postings.setdefault(token, []).append(position)
        self.postings = {token: np.array(found, dtype=np.int64) for token, found in postings.items()}

    def _candidates(self, rows: Sequence[int]) -> _Ints:
        """The new checks any of these old ones could pair with: every one, or in a large group those
        sharing a prefix token with one of them."""
        if self.postings is None:
            return self.columns
        tokens = {token for row in rows for token in self.a_prefix[row] if token in self.postings}
        if not tokens:
            return self.columns[:0]
        found = np.zeros(len(self.b), dtype=np.bool_)
        for token in tokens:
            found[self.postings[token]] = True
        return np.flatnonzero(found).astype(np.int64)

    def _scores(self, rows: Sequence[int], columns: _Ints) -> _Floats:
        choices = self.b if len(columns) == len(self.b) else [self.b[j] for j in columns]
        return cdist(
            [self.a[row] for row in rows],
            choices,
            scorer=Indel.normalized_similarity,
            dtype=np.float64,
            score_cutoff=_CUTOFF,
        )

    def _best(self, row: int, columns: _Ints, scores: _Floats, limit: int) -> _Candidates:
        """An old check's `limit` best candidates among `columns` (scored `scores`), best first."""
        keep = scores >= WITHIN_FUNCTION
        keep &= (self.b_function[columns] == self.a_function[row]) | (scores >= ACROSS_FUNCTIONS)
        columns, scores = columns[keep], scores[keep]
        count = len(columns)
        if count > limit:  # the `limit` best scores, ties with the last one included, then sorted
            keep = scores >= np.partition(scores, count - limit)[count - limit]
            columns, scores = columns[keep], scores[keep]
        order = np.lexsort((columns, self.b_line[columns], -scores))[:limit]
        return _Candidates(columns[order], scores[order], count > limit, limit)

    def _first(self) -> Iterator[_Candidates]:
        """Every old check's best candidates, in order, scored a chunk of old checks at a time."""
        step = _CHUNK_ROWS if self.postings is not None else max(1, _CHUNK_CELLS // len(self.b))
        for start in range(0, len(self.a), step):
            rows = range(start, min(start + step, len(self.a)))
            columns = self._candidates(rows)
            scores = self._scores(rows, columns) if len(columns) else np.zeros((len(rows), 0))
            for row, row_scores in zip(rows, scores, strict=True):
                yield self._best(row, columns, row_scores, _KEPT)

    def _next(self, row: int, candidates: _Candidates, taken: npt.NDArray[np.bool_]) -> _Candidates | None:
        """Move an old check on to its best candidate not taken; None if it has none left."""
        rest = np.flatnonzero(~taken[candidates.columns[candidates.at :]])
        if len(rest):
            candidates.at += int(rest[0])
            return candidates
        if not candidates.more:
            return None
        columns = self._candidates([row])
        columns = columns[~taken[columns]]
        if not len(columns):
            return None
        limit = 4 * candidates.limit
        found = self._best(row, columns, self._scores([row], columns)[0], limit)
        return found if len(found.columns) else None

    def pairs(self) -> list[tuple[Check, Check]]:
        """Pair greedily, the best pair first: each old check waits in a heap with its best candidate, which
        is taken or not when it comes out (if it is, the check waits again with its next)."""
        lists = list(self._first())
        taken = np.zeros(len(self.b), dtype=np.bool_)

        def entry(row: int, candidates: _Candidates) -> tuple[float, int, int, int, int]:
            column = int(candidates.columns[candidates.at])
            score = -float(candidates.scores[candidates.at])
            return (score, self.old[row].line, int(self.b_line[column]), row, column)

        heap = [entry(row, candidates) for row, candidates in enumerate(lists) if len(candidates.columns)]
        heapq.heapify(heap)
        out: list[tuple[Check, Check]] = []
        while heap and len(out) < len(self.b):
            _, _, _, row, column = heapq.heappop(heap)
            if not taken[column]:
                taken[column] = True
                out.append((self.old[row], self.new[column]))
                continue
            following = self._next(row, lists[row], taken)
            if following is not None:
                lists[row] = following
                heapq.heappush(heap, entry(row, following))
        return out


def _tokens(words: list[int]) -> list[tuple[int, int]]:
    """A message's words as tokens: each word with the number of times it occurred before in the message."""
    seen: Counter[int] = Counter()
    out = []
    for word in words:
        out.append((word, seen[word]))
        seen[word] += 1
    return out


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
