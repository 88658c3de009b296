# Lineage: revisions, oldest first -> the lineage of every check (introduced, reworded, moved, removed...).
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import orjson

from extractor._version import __version__
from extractor.errors import ScopeError
from extractor.model.records import EventKind, HistoryManifest, HistoryRevision, Lineage, LineageEvent, Previous
from extractor.pipeline.extract import Carry, analyzed_at, carrying_results, scan_revision
from extractor.pipeline.options import ExtractOptions
from extractor.pipeline.write import dumps_model
from extractor.query.diff import ChangeKind, Check, Known, Pair, is_generic, pair_checks
from extractor.query.history.checks import ChecksByFile, RevisionChecks
from extractor.query.history.revisions import Revision

__all__ = ["History", "advance", "build_history", "find_lineage"]


# How many of the next revisions' files the workers are given while a revision's catalog is built: the
# nearest first; with two, the workers have the one after next to scan while the main process takes back
# the next one's unstarted files.
_REVISIONS_AHEAD = 2

_EVENT_OF = {
    ChangeKind.REWORDED: EventKind.REWORDED,
    ChangeKind.MOVED: EventKind.MOVED,
    ChangeKind.MODIFIED: EventKind.MODIFIED,
}


@dataclass
class _Thread:
    """A lineage while it is being built: its events, and the check as last seen."""

    lineage: str
    error_class: str
    events: list[LineageEvent]
    last: dict[str, str | int]  # id, errorMessage, slug, filePath, lineNumber, function, githubUrl
    first_seen: str
    last_seen: str
    present: bool
    start: int  # index of the revision that introduced it (for sorting)

    @property
    def id(self) -> str:
        return str(self.last["id"])

    @property
    def message(self) -> str:
        return str(self.last["errorMessage"])

    @property
    def function(self) -> str:
        return str(self.last["function"])

    def see(self, check: Check, label: str) -> None:
        self.error_class = check.error_class  # (a check raised as another class since is modified, not new)
        self.last = {
            "id": check.id,
            "errorMessage": check.message,
            "slug": check.slug,
            "filePath": check.path,
            "lineNumber": check.line,
            "function": check.function,
            "githubUrl": check.url,
        }
        self.last_seen = label

    def to_model(self) -> Lineage:
        return Lineage.model_validate(
            {
                "lineage": self.lineage,
                "errorClass": self.error_class,
                **self.last,
                "firstSeen": self.first_seen,
                "lastSeen": self.last_seen,
                "present": self.present,
                "events": self.events,
            }
        )


@dataclass
class History:
    """A history under construction or read back: its revisions (oldest first) and its lineages."""

    repo: str
    options: ExtractOptions
    revisions: list[HistoryRevision] = field(default_factory=list)
    threads: list[_Thread] = field(default_factory=list)

    @classmethod
    def of_written(cls, manifest: HistoryManifest, lineages: Sequence[Lineage], *, options: ExtractOptions) -> History:
        """Take back the history a manifest and its lineages were written from (see `encode`)."""
        order = {revision.revision: index for index, revision in enumerate(manifest.revisions)}
        history = cls(repo=manifest.repo, options=options, revisions=list(manifest.revisions))
        for lineage in lineages:
            history.threads.append(
                _Thread(
                    lineage=lineage.lineage,
                    error_class=lineage.errorClass,
                    events=list(lineage.events),
                    last={
                        "id": lineage.id,
                        "errorMessage": lineage.errorMessage,
                        "slug": lineage.slug,
                        "filePath": lineage.filePath,
                        "lineNumber": lineage.lineNumber,
                        "function": lineage.function,
                        "githubUrl": lineage.githubUrl,
                    },
                    first_seen=lineage.firstSeen,
                    last_seen=lineage.lastSeen,
                    present=lineage.present,
                    start=order.get(lineage.firstSeen, 0),
                )
            )
        return history

    @property
    def lineages(self) -> list[Lineage]:
        ordered = sorted(
            self.threads,
            key=lambda t: (t.start, t.events[0].filePath, t.events[0].lineNumber, t.lineage),
        )
        return [thread.to_model() for thread in ordered]

    def manifest(self) -> HistoryManifest:
        return HistoryManifest(
            repo=self.repo,
            scope=self.options.scope,
            extractorVersion=__version__,
            analyzedAt=analyzed_at(),
            lineages=len(self.threads),
            revisions=self.revisions,
        )

    def encode(self) -> tuple[bytes, bytes]:
        """history.jsonl and history.json, as written."""
        lines = b"".join(
            orjson.dumps(lineage.model_dump(mode="json"), option=orjson.OPT_APPEND_NEWLINE) for lineage in self.lineages
        )
        return lines, dumps_model(self.manifest())


def _event(
    kind: EventKind,
    revision: str,
    sha: str,
    check: Check,
    before: Check | None = None,
    fields: Sequence[str] = (),
) -> LineageEvent:
    previous = None
    if before is not None:
        previous = Previous(
            id=before.id,
            filePath=before.path,
            lineNumber=before.line,
            function=before.function,
            errorMessage=before.message,
        )
    return LineageEvent(
        kind=kind,
        revision=revision,
        sha=sha,
        id=check.id,
        filePath=check.path,
        lineNumber=check.line,
        function=check.function,
        errorMessage=check.message,
        githubUrl=check.url,
        previous=previous,
        fields=[name for name in fields if name != "lineNumber"],  # line shifts are no news in a history
    )


def _known(old: RevisionChecks, new: RevisionChecks) -> Known | None:
    """The checks of the files whose blob is the same in both revisions, paired in order, and the others
    (see diff.Known); None if the files are not known."""
    if not old.files or not new.files:
        return None
    same: list[tuple[Check, Check]] = []
    old_left: list[Check] = []
    new_left: list[Check] = []
    for path, (oid, start, end) in new.files.items():
        before = old.files.get(path)
        if before is not None and before[0] == oid:
            same += zip(old.checks[before[1] : before[2]], new.checks[start:end], strict=True)
        else:
            new_left += new.checks[start:end]
    for path, (oid, start, end) in old.files.items():
        after = new.files.get(path)
        if after is None or after[0] != oid:
            old_left += old.checks[start:end]
    return Known(same, old_left, new_left)


def advance(
    history: History,
    previous: RevisionChecks | None,
    revision: RevisionChecks,
    label: str,
    *,
    pairs: Sequence[Pair] | None = None,
) -> History:
    """Add one revision to a history: pair its checks with the previous revision's (as `diff` does, or
    as `pairs`, their diff, says) and record each lineage's events. The history's last revision must be
    `previous`."""
    index = len(history.revisions)
    sha = revision.sha
    present = {t.id: t for t in history.threads if t.present}
    # A removed check may come back: by the same id (same file, class and template), else by its template.
    dormant_ids = {t.id: t for t in history.threads if not t.present}
    dormant_templates: dict[tuple[str, str], list[_Thread]] = {}
    for thread in history.threads:
        if not thread.present:
            dormant_templates.setdefault((thread.error_class, thread.message), []).append(thread)
    counts: Counter[str] = Counter()
    if pairs is None:
        known = _known(previous, revision) if previous is not None else None
        pairs = pair_checks(previous.checks if previous is not None else (), revision.checks, known)
    touched: list[tuple[_Thread, Check]] = []
    for pair in pairs:
        if pair.kind is ChangeKind.REMOVED:
            assert pair.old is not None
            thread = present[pair.old.id]
            thread.events.append(_event(EventKind.REMOVED, label, sha, pair.old))
            thread.present = False
            counts[EventKind.REMOVED] += 1
            continue
        new = pair.new
        assert new is not None
        if pair.kind is ChangeKind.ADDED:
            key = (new.error_class, new.message)
            back = dormant_ids.pop(new.id, None)
            if back is None:  # by its template; one of next to no words only in its own function (pair_checks)
                held = dormant_templates.get(key, ())
                back = next((t for t in held if not is_generic(t.message) or t.function == new.function), None)
                if back is not None:
                    dormant_ids.pop(back.id, None)
            if back is not None:
                dormant_templates[(back.error_class, back.message)].remove(back)
                back.events.append(_event(EventKind.REINTRODUCED, label, sha, new))
                back.present = True
                counts[EventKind.REINTRODUCED] += 1
                touched.append((back, new))
                continue
            thread = _Thread(
                lineage=new.id,
                error_class=new.error_class,
                events=[_event(EventKind.INTRODUCED, label, sha, new)],
                last={},
                first_seen=label,
                last_seen=label,
                present=True,
                start=index,
            )
            history.threads.append(thread)
            counts[EventKind.INTRODUCED] += 1
            touched.append((thread, new))
            continue
        assert pair.old is not None
        thread = present[pair.old.id]
        kind = _EVENT_OF.get(pair.kind)
        if kind is not None:
            thread.events.append(_event(kind, label, sha, new, pair.old, pair.fields))
            counts[kind] += 1
        touched.append((thread, new))
    for thread, check in touched:
        thread.see(check, label)
    history.revisions.append(
        HistoryRevision(
            revision=label,
            sha=sha,
            committedAt=revision.committed_at,
            records=len(revision.checks),
            summary={kind.value: counts[kind] for kind in EventKind},
        )
    )
    return history


def _revision(
    revision: Revision, options: ExtractOptions, then: Sequence[Revision], checks: ChecksByFile, carry: Carry
) -> tuple[RevisionChecks, ScopeError | None]:
    """The checks of one revision; a revision where the scope holds no file (or no raise of the classes
    asked for) has none, and the error that says so comes with them.

    Only per-file results are kept in the cache, not each revision's whole catalog. The files of `then`,
    the revisions that come next, are scanned while this one's checks are made."""
    following = [later.commit for later in then]
    try:
        scanned = scan_revision(
            revision.commit, options=options, pinned_sha=revision.pinned, then=following, carry=carry
        )
    except ScopeError as error:
        return RevisionChecks(revision.pinned or revision.commit.sha, revision.commit.committed_at, ()), error
    return checks.of(scanned), None


def build_history(
    revisions: Sequence[Revision],
    *,
    options: ExtractOptions,
    log: Callable[[str], None] = lambda line: None,
) -> History:
    """Follow every check in scope from the oldest revision to the newest. A scope that finds nothing at
    any revision (a path that never existed, a mistyped class) is an error, as for one extraction."""
    repo = options.repo_name or (revisions[0].commit.repo_name if revisions else "")
    history = History(repo=repo, options=options)
    previous: RevisionChecks | None = None
    nowhere: list[ScopeError] = []
    made = ChecksByFile()
    with carrying_results() as carry:
        for number, revision in enumerate(revisions, start=1):
            checks, error = _revision(revision, options, revisions[number : number + _REVISIONS_AHEAD], made, carry)
            if error is not None:
                nowhere.append(error)
            advance(history, previous, checks, revision.label)
            summary = history.revisions[-1].summary
            changed = ", ".join(f"{count} {kind}" for kind, count in summary.items() if count)
            log(f"{revision.label} ({number}/{len(revisions)}): {len(checks.checks)} checks; {changed or 'no change'}")
            previous = checks
    if revisions and len(nowhere) == len(revisions):
        others = len(revisions) - 1
        more = {0: "", 1: " (nor at the other revision)"}.get(others, f" (nor at any of the {others} other revisions)")
        raise ScopeError(f"{nowhere[-1]}{more}")
    return history


def find_lineage(lineages: Iterable[Lineage], record_id: str) -> Lineage | None:
    """The lineage a record belongs to: the one whose latest id it has, else any that once had it."""
    candidates = list(lineages)
    for lineage in candidates:
        if lineage.id == record_id:
            return lineage
    return next((lin for lin in candidates if any(e.id == record_id for e in lin.events)), None)
