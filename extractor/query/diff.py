# Diff: two catalogs -> added / removed / reworded / moved / modified / unchanged, as JSON or Markdown.
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from extractor.model.records import CatalogLine
from extractor.pipeline.write import dumps_document
from extractor.query.similarity import ACROSS_FUNCTIONS, WITHIN_FUNCTION, similarity, word_runs
from extractor.util import markdown
from extractor.util.progress import shown

if TYPE_CHECKING:  # a type only: importing catalog would bring in extract, git and write
    from extractor.catalog.load import LoadedCatalog

__all__ = [
    "ACROSS_FUNCTIONS",
    "WITHIN_FUNCTION",
    "CatalogDiff",
    "Change",
    "ChangeKind",
    "Check",
    "Known",
    "Pair",
    "checks_of",
    "diff_catalogs",
    "is_generic",
    "pair_checks",
    "similarity",
]


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
    """What pairing reads of one catalog line, and the line's position in its catalog (a history makes the
    same from a revision's scan, see history.checks)."""

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


class Change:
    """One check's fate in a catalog diff: its old and new lines (one may be None) and the fields that differ.

    The lines are taken from their catalogs when first asked for."""

    __slots__ = ("_new", "_old", "fields", "kind")

    def __init__(
        self,
        kind: ChangeKind,
        old: tuple[LoadedCatalog, int] | None,
        new: tuple[LoadedCatalog, int] | None,
        fields: tuple[str, ...] = (),
    ) -> None:
        self.kind, self._old, self._new, self.fields = kind, old, new, fields

    @property
    def old(self) -> CatalogLine | None:
        return self._old[0].lines[self._old[1]] if self._old is not None else None

    @property
    def new(self) -> CatalogLine | None:
        return self._new[0].lines[self._new[1]] if self._new is not None else None

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


def _differing(old: Check, new: Check) -> list[str]:
    """Name what differs between two checks, ignoring columns, the source window and the pinned SHA."""
    fields = []
    if old.error_class != new.error_class:
        fields.append("errorClass")
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
    pairs = pair_checks(checks_of(old), checks_of(new))
    changes = tuple(
        Change(
            pair.kind,
            (old, pair.old.index) if pair.old is not None else None,
            (new, pair.new.index) if pair.new is not None else None,
            pair.fields,
        )
        for pair in pairs
    )
    return CatalogDiff(old, new, changes, tuple(pairs))


def checks_of(catalog: LoadedCatalog) -> list[Check]:
    """A catalog's checks, read from its lines."""
    return [Check.of(index, line) for index, line in enumerate(catalog.lines)]


class Known(NamedTuple):
    """What a caller knows of two catalogs before they are paired: checks that are the same in both (each
    file whose text did not change, whole, its checks paired in order), and the checks of each side left,
    in catalog order."""

    same: list[tuple[Check, Check]]
    old_left: list[Check]
    new_left: list[Check]


_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_GENERIC = 12  # characters of its own under which a template is any raise of its class (match's CATCH_ALL)


def is_generic(template: str) -> bool:
    """Whether a template has next to no words of its own (a bare `raise NotImplementedError`, `{e}`): it
    says nothing of where a check went or came back, which only its function, moved with it, does."""
    return len(_PLACEHOLDER.sub("", template).strip()) < _GENERIC


def pair_checks(old: Sequence[Check], new: Sequence[Check], known: Known | None = None) -> list[Pair]:
    """Pair two catalogs' checks: same id, then same template elsewhere, then similar wording; sorted by
    kind then location, unchanged ones included. `known` spares grouping the checks of unchanged files:
    they pair by id as they are (a file's checks are grouped with its own alone)."""
    if known is None:
        known = Known([], list(old), list(new))
    same = _same_checks(known.old_left, known.new_left)
    # (A check of a file whose text did not change differs from its old self at most by the fields it reads.)
    pairs = [Pair(ChangeKind.UNCHANGED, a, b) if a.fields == b.fields else _pair_same_id(a, b) for a, b in known.same]
    pairs += [_pair_same_id(a, b) for a, b in same]
    paired = {id(check) for pair in same for check in pair}
    old_left = [check for check in known.old_left if id(check) not in paired]
    new_left = [check for check in known.new_left if id(check) not in paired]

    # The same words raised in the same function as another class (ValueError, now a subclass of it):
    # modified, its class among what changed, one to one in the order they come.
    by_place: dict[tuple[str, str, str], list[Check]] = {}
    for check in new_left:
        by_place.setdefault((check.path, check.function, check.message), []).append(check)
    reclassed = []
    for check in old_left:
        candidates = by_place.get((check.path, check.function, check.message), [])
        match = next((c for c in candidates if c.error_class != check.error_class), None)
        if match is not None:
            candidates.remove(match)
            reclassed.append(Pair(ChangeKind.MODIFIED, check, match, tuple(_differing(check, match))))
    pairs += reclassed
    paired = {id(check) for pair in reclassed for check in (pair.old, pair.new)}
    old_left = [check for check in old_left if id(check) not in paired]
    new_left = [check for check in new_left if id(check) not in paired]

    # Same class and template in another file: a module split or renamed.
    by_template: dict[tuple[str, str], list[Check]] = {}
    for check in new_left:
        by_template.setdefault((check.error_class, check.message), []).append(check)
    still_old = []
    moved = []
    for check in old_left:
        candidates = by_template.get((check.error_class, check.message), [])
        generic = is_generic(check.message)
        match = next(
            (c for c in candidates if c.path != check.path and (not generic or c.function == check.function)), None
        )
        if match is not None:
            candidates.remove(match)
            moved.append(Pair(ChangeKind.MOVED, check, match, tuple(_differing(check, match))))
        else:
            still_old.append(check)
    pairs += moved
    paired = {id(pair.new) for pair in moved}
    still_new = [check for check in new_left if id(check) not in paired]

    # Similar templates in the same file (or in the files its moved checks went to: a module renamed or made
    # a package): reworded, best pairs first, one to one.
    used: set[int] = set()
    for a, b in _reworded(still_old, still_new, _renamed(pairs, old, new)):
        used.update((id(a), id(b)))
        pairs.append(Pair(ChangeKind.REWORDED, a, b, tuple(_differing(a, b))))
    pairs += [Pair(ChangeKind.REMOVED, check, None) for check in still_old if id(check) not in used]
    pairs += [Pair(ChangeKind.ADDED, None, check) for check in still_new if id(check) not in used]
    pairs.sort(key=Pair.sort_key)
    return pairs


_MOST_PAIRS = 10_000  # checks of one message in one file compared pairwise; beyond, paired in order


def _same_checks(old: Sequence[Check], new: Sequence[Check]) -> list[tuple[Check, Check]]:
    """The checks that are the same in both catalogs: the same id. Where a file raises one message several
    times, an id says which occurrence it is, and an occurrence inserted or removed above shifts the ids of
    those below: the occurrences of each such message are paired by what they are instead (the same
    function, conditions and cause first, then the nearest in order), as long as the two sides share an id
    at all (ids hold the repository's name too)."""
    groups: dict[tuple[str, str, str], tuple[list[Check], list[Check]]] = {}
    for side, checks in enumerate((old, new)):
        for check in checks:
            groups.setdefault((check.path, check.error_class, check.message), ([], []))[side].append(check)
    out: list[tuple[Check, Check]] = []
    for olds, news in groups.values():
        if len(olds) == 1 and len(news) == 1:
            if olds[0].id == news[0].id:
                out.append((olds[0], news[0]))
        elif olds and news and {c.id for c in olds} & {c.id for c in news}:
            out += _closest(olds, news)
    return out


def _closest(olds: Sequence[Check], news: Sequence[Check]) -> list[tuple[Check, Check]]:
    """Pair the occurrences of one message in one file, one to one: most alike first (function,
    conditions, cause), then nearest in order."""
    if len(olds) * len(news) > _MOST_PAIRS:
        return list(zip(olds, news, strict=False))

    def unlike(a: int, b: int) -> tuple[int, int, int, int]:
        x, y = olds[a], news[b]
        same = (x.function == y.function) + (x.conditions == y.conditions) + (x.cause == y.cause)
        return (-same, abs(a - b), a, b)

    ranked = sorted(unlike(a, b) for a in range(len(olds)) for b in range(len(news)))
    taken_old: set[int] = set()
    taken_new: set[int] = set()
    out = []
    for _, _, a, b in ranked:
        if a not in taken_old and b not in taken_new:
            taken_old.add(a)
            taken_new.add(b)
            out.append((olds[a], news[b]))
    return out


def _renamed(pairs: Sequence[Pair], old: Sequence[Check], new: Sequence[Check]) -> dict[str, str]:
    """The file each file stands with for rewordings: an old file whose moved checks outnumber those that
    stayed (a module renamed, or made a package) stands with every file they moved to, each of those with
    it; a module `a/b.py` none of whose checks stayed stands with the new files of a package `a/b/`. A file
    split in several (`config.py` into `config/*.py`) rewords into any of them."""
    moved: dict[str, Counter[str]] = {}
    stayed: Counter[str] = Counter()
    for pair in pairs:
        if pair.old is None or pair.new is None:
            continue
        if pair.old.path == pair.new.path:
            stayed[pair.old.path] += 1
        else:
            moved.setdefault(pair.old.path, Counter())[pair.new.path] += 1
    new_paths = {check.path for check in new}
    gone = {check.path for check in old} - new_paths
    for path in gone:
        package = path.removesuffix(".py") + "/"
        for target in new_paths:
            if path.endswith(".py") and target.startswith(package):
                moved.setdefault(path, Counter())[target] += 0
    family: dict[str, str] = {}
    for path in sorted(moved):
        targets = moved[path]
        if targets.total() > stayed[path] or path in gone:
            head = family.setdefault(path, path)
            for target in sorted(targets):
                family.setdefault(target, head)
    return family


def _reworded(
    old: Sequence[Check], new: Sequence[Check], renamed: Mapping[str, str] | None = None
) -> list[tuple[Check, Check]]:
    """Pair the old and new checks whose templates are similar enough (see WITHIN_FUNCTION), within one
    file (or the files `renamed` says stand together) and class. numpy is imported only here, when there is
    something to pair (diff, history and nightly runs that reword nothing start without it)."""
    renamed = renamed or {}
    groups: dict[tuple[str, str], tuple[list[Check], list[Check]]] = {}
    for check in old:
        groups.setdefault((renamed.get(check.path, check.path), check.error_class), ([], []))[0].append(check)
    for check in new:
        group = groups.get((renamed.get(check.path, check.path), check.error_class))
        if group is not None:
            group[1].append(check)
    paired = [(olds, news) for olds, news in groups.values() if news]
    if not paired:
        return []
    from extractor.query.rewording import best_pairs

    return [pair for olds, news in paired for pair in best_pairs(olds, news)]


def _side(catalog: LoadedCatalog) -> dict[str, Any]:
    return {"sha": catalog.sha, "revision": catalog.revision, "records": catalog.count}


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
    return dumps_document(document)


def _marked(old: str, new: str) -> tuple[str, str]:
    """Mark the words that changed: removed ones struck through, added ones in bold."""
    left: list[str] = []
    right: list[str] = []
    for same, old_text, new_text in word_runs(old, new):
        old_words, new_words = markdown.text(old_text), markdown.text(new_text)
        if same:
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
    return markdown.link(f"{record.filePath}:{record.lineNumber}", record.githubUrl)


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
        f"# Error catalog changes: {markdown.text(_label(old, new))} → {markdown.text(_label(new, old))}",
        "",
        f"{old.count} checks before, {new.count} after.",
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
                    f"| {_where(change.new)} | {markdown.text(was)} | {', '.join(change.fields)} | "
                    f"{markdown.text(change.new.record.errorMessage)} |"
                )
        else:
            out += ["| where | class | message |", "| --- | --- | --- |"]
            for change in changes:
                line = change.new or change.old
                assert line is not None
                out.append(
                    f"| {_where(line)} | {markdown.text(line.record.errorClass)} | "
                    f"{markdown.text(line.record.errorMessage)} |"
                )
    return shown("\n".join(out) + "\n")
