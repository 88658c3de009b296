# History: an ordered list of revisions -> the lineage of every check (introduced, reworded, moved, removed...).
from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson
from pydantic import ValidationError

from extractor._version import __version__
from extractor.catalog.load import RELEASE_PREFIX, LoadedCatalog, first_problem, present, read_document
from extractor.errors import CatalogError, RevisionError, ScopeError
from extractor.model.records import (
    EventKind,
    HistoryManifest,
    HistoryRevision,
    Lineage,
    LineageEvent,
    Previous,
    Scope,
)
from extractor.model.scanned import SiteData
from extractor.pipeline.extract import ExtractOptions, ScannedRevision, analyzed_at, carrying_results, scan_revision
from extractor.pipeline.fields import from_self
from extractor.pipeline.lines import Slugs, file_ids, in_order, type_value, url_prefix
from extractor.pipeline.write import atomic_write, dumps_model, scope_label
from extractor.query.diff import (
    ChangeKind,
    Check,
    Known,
    Pair,
    checks_of,
    conditions_of_data,
    fields_of_data,
    is_generic,
    pair_checks,
)
from extractor.repo.git import (
    Commit,
    first_parent_commits,
    is_ancestor,
    list_tags,
    open_repo,
    read_objects,
    resolve,
    shown_repo,
    tag_commits,
)
from extractor.util.atomic import read_whole
from extractor.util.progress import warn

__all__ = [
    "HISTORY",
    "HISTORY_MANIFEST",
    "History",
    "Revision",
    "advance",
    "build_history",
    "find_lineage",
    "folder_name",
    "following",
    "lineage_sentence",
    "list_revisions",
    "load_lineages",
    "read_history",
    "read_written",
    "roll",
]

HISTORY = "history.jsonl"
HISTORY_MANIFEST = "history.json"
# How many of the next revisions' files the workers are given while a revision's catalog is built: the
# nearest first; with two, the workers have the one after next to scan while the main process takes back
# the next one's unstarted files.
_REVISIONS_AHEAD = 2

_EVENT_OF = {
    ChangeKind.REWORDED: EventKind.REWORDED,
    ChangeKind.MOVED: EventKind.MOVED,
    ChangeKind.MODIFIED: EventKind.MODIFIED,
}


@dataclass(frozen=True)
class Revision:
    """One revision of a history: the label it is shown by, its commit, and the SHA its records point at."""

    label: str
    commit: Commit
    pinned: str | None = None


def following(paths: Sequence[str]) -> tuple[str, ...]:
    """Widen a scope so it follows a module that becomes a package (or back): `vllm/config` names both the
    `vllm/config/` package and the `vllm/config.py` module, and `vllm/config.py` names both too."""
    out: list[str] = []
    for path in paths:
        stem = path.strip("/").removesuffix(".py")
        out += [stem, f"{stem}.py"] if stem else [path]
    return tuple(dict.fromkeys(out))


def followed(options: ExtractOptions) -> ExtractOptions:
    """The options with their `--path` and `--config-from` following a module that becomes a package."""
    return replace(options, paths=following(options.paths), config_from=following(options.config_from))


def folder_name(options: ExtractOptions) -> str:
    """Name a history's default folder: `history`, then, for any scope but the default one, which paths
    and classes it holds (`history-vllm-all`), as extraction names catalogs' folders: histories of
    different scopes live side by side. A path followed as module and package is named once."""

    def named(scope: Scope) -> Scope:
        stems = [*dict.fromkeys(path.removesuffix(".py") for path in scope.paths)]
        config = [*dict.fromkeys(path.removesuffix(".py") for path in scope.configFrom)]
        return scope.model_copy(update={"paths": stems, "configFrom": config})

    default = followed(ExtractOptions())
    label = scope_label(
        named(options.scope).model_dump(mode="json"), default=named(default.scope).model_dump(mode="json")
    )
    return f"history-{label}" if label else "history"


# Revisions ---------------------------------------------------------------------------------------------------


def list_revisions(specs: Sequence[str], *, repo: str) -> list[Revision]:
    """Resolve what the user listed, oldest first: `release:all`, `release:A..B` or `release:X.Y.Z`; and of
    `repo`, `A..B` (A, then the first-parent commits after it up to B), a tag glob such as `v*` (sorted by
    version), or one revision. A revision listed twice is kept once, where first listed."""
    out: list[Revision] = []
    for spec in specs:
        if spec.startswith(RELEASE_PREFIX):
            out += _releases(spec.removeprefix(RELEASE_PREFIX))
        elif ".." in spec:
            out += _range(repo, spec)
        elif any(char in spec for char in "*?["):
            out += _tags(repo, spec)
        else:
            out.append(Revision(spec, resolve(repo, spec)))
    seen: set[str] = set()
    unique = []
    for revision in out:
        if revision.commit.sha not in seen:
            seen.add(revision.commit.sha)
            unique.append(revision)
    if not unique:
        raise RevisionError(f"no revision in {' '.join(specs)}")
    return unique


def _releases(spec: str) -> list[Revision]:
    """The releases a spec names, as commits of the release repository: its tags and dates read with one
    `git for-each-ref`, each release's recorded commit with one `git cat-file --batch` (not a few git
    processes per release)."""
    from extractor.repo.release import commit_id, release_repo, release_tag, resolve_releases

    if not spec:
        raise RevisionError("release: needs a version, a range A..B or all, as in release:0.5.0..0.8.0")
    versions = resolve_releases(spec)
    git_dir = release_repo(versions)  # every missing release goes into one fast-import
    template = resolve(str(git_dir), release_tag(versions[0]))
    tags = tag_commits(git_dir)
    answers = read_objects(git_dir, [f"{tags[release_tag(v)][0]}:vllm/_version.py" for v in versions])
    out = []
    for version, version_py in zip(versions, answers, strict=True):
        sha, committed = tags[release_tag(version)]
        commit = replace(template, sha=sha, revision=f"{RELEASE_PREFIX}{version}", committed_at=committed)
        out.append(Revision(version, commit, commit_id(version_py) if version_py is not None else None))
    return out


def _range(repo: str, spec: str) -> list[Revision]:
    if "..." in spec:  # git's symmetric difference: no line of commits to follow
        raise RevisionError(f"{spec}: A...B is no range to follow: say A..B (A, then the commits after it up to B)")
    low, _, high = spec.partition("..")
    start, end = resolve(repo, low or "HEAD"), resolve(repo, high or "HEAD")
    after = first_parent_commits(start, end)
    if not after and start.sha != end.sha:  # B is A's ancestor: nothing comes after A up to it
        raise RevisionError(
            f"{spec}: no commit of {high or 'HEAD'} comes after {low or 'HEAD'}: is the range backwards?"
        )
    if is_ancestor(start.git_dir, start.sha, end.sha) is False:  # unrelated, or on branches that went apart
        warn(
            f"{spec}: {low or 'HEAD'} is not an ancestor of {high or 'HEAD'}: the history is {low or 'HEAD'}, then "
            f"the {len(after)} first-parent commit(s) of {high or 'HEAD'} it does not hold"
        )
    return [Revision(commit.sha[:12], commit) for commit in [start, *after]]


def _tags(repo: str, pattern: str) -> list[Revision]:
    git_dir = open_repo(repo)
    tags = [tag for tag in list_tags(git_dir, pattern) if fnmatch.fnmatchcase(tag, pattern)]
    if not tags:
        raise RevisionError(f"no tag matches {pattern!r} in {shown_repo(repo)}")
    return [Revision(tag, resolve(repo, tag)) for tag in tags]


# Lineages ----------------------------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class RevisionChecks:
    """One revision as a history reads it: the SHA its records point at, when it was committed, the
    checks of its catalog, and where they come from when the history made them (see _Checks): each
    file's path, blob id and the slice of `checks` that is its own."""

    sha: str
    committed_at: str | None
    checks: Sequence[Check]
    files: Mapping[str, tuple[str, int, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, catalog: LoadedCatalog, checks: Sequence[Check] | None = None) -> RevisionChecks:
        """`checks`, when given, are the catalog's (as a diff of it already read them)."""
        committed = catalog.manifest.committedAt if catalog.manifest is not None else None
        return cls(catalog.sha, committed, checks_of(catalog) if checks is None else checks)


def sides(pairs: Sequence[Pair]) -> tuple[list[Check], list[Check]]:
    """The checks of a diff's old and new catalogs, in catalog order: each is in exactly one pair."""
    old = sorted((pair.old for pair in pairs if pair.old is not None), key=lambda check: check.index)
    new = sorted((pair.new for pair in pairs if pair.new is not None), key=lambda check: check.index)
    return old, new


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
    revision: Revision, options: ExtractOptions, then: Sequence[Revision], checks: _Checks
) -> tuple[RevisionChecks, ScopeError | None]:
    """The checks of one revision; a revision where the scope holds no file (or no raise of the classes
    asked for) has none, and the error that says so comes with them.

    Only per-file results are kept in the cache, not each revision's whole catalog. The files of `then`,
    the revisions that come next, are scanned while this one's checks are made."""
    following = [later.commit for later in then]
    try:
        scanned = scan_revision(revision.commit, options=options, pinned_sha=revision.pinned, then=following)
    except ScopeError as error:
        return RevisionChecks(revision.pinned or revision.commit.sha, revision.commit.committed_at, ()), error
    return checks.of(scanned), None


@dataclass(frozen=True, slots=True)
class _SiteCheck:
    """What a site gives its check whatever the revision: all but its place in the catalog, its slug
    (unique over the catalog) and its URL (which names the revision's SHA)."""

    id: str
    error_class: str
    message: str
    error_type: str
    line: int
    column: int
    function: str
    conditions: tuple[tuple[str, str, bool], ...]
    cause: str | None
    stem: str
    start: int
    end: int
    reads: list[str]  # the chains it reads that may reach a config field


class _Checks:
    """Each revision's checks, equal to those of its catalog's lines (diff.Check.of_data of the lines
    build_records makes and the field index annotates), made file by file: what a file's sites give
    whatever the revision is kept by path and blob for the next revision (most of whose files are the
    same blobs), and only the chains that may reach a config field are resolved again."""

    def __init__(self) -> None:
        self._sites: dict[tuple[str, str, str], list[_SiteCheck]] = {}

    def of(self, scanned: ScannedRevision) -> RevisionChecks:
        sites: dict[tuple[str, str, str], list[_SiteCheck]] = {}
        slugs = Slugs()
        checks: list[Check] = []
        index = scanned.fields
        files: dict[str, tuple[str, int, int]] = {}
        for path, oid, found in sorted(scanned.files, key=lambda file: file[0]):
            key = (scanned.repo, path, oid)
            parts = sites[key] = self._sites.get(key) or _site_checks(scanned.repo, path, found)
            files[path] = (oid, len(checks), len(checks) + len(parts))
            url = url_prefix(scanned.repo, scanned.sha, path)
            for part in parts:
                fields = fields_of_data(index.resolved(part.reads, part.function)) if part.reads else ()
                checks.append(
                    Check(
                        len(checks),
                        part.id,
                        part.error_class,
                        part.message,
                        part.error_type,
                        path,
                        part.line,
                        part.column,
                        part.function,
                        part.conditions,
                        part.cause,
                        fields,
                        slugs.take(part.stem),
                        f"{url}{part.start}-L{part.end}",
                    )
                )
        self._sites = sites
        return RevisionChecks(scanned.sha, scanned.committed_at, checks, files)


def _site_checks(repo: str, path: str, found: Sequence[SiteData]) -> list[_SiteCheck]:
    ordered = in_order(found)
    out = []
    for site, identifier in zip(ordered, file_ids(repo, path, ordered), strict=True):
        extraction = site["extraction"]
        out.append(
            _SiteCheck(
                identifier,
                site["errorClass"],
                site["errorMessage"],
                type_value(site["errorClass"]),
                site["lineNumber"],
                extraction["column"],
                extraction["function"],
                conditions_of_data(extraction["conditions"]),
                extraction["cause"],
                site["slugStem"],
                site["sourceCodeStart"],
                site["sourceCodeEnd"],
                from_self(site["reads"]),
            )
        )
    return out


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
    made = _Checks()
    with carrying_results():
        for number, revision in enumerate(revisions, start=1):
            checks, error = _revision(revision, options, revisions[number : number + _REVISIONS_AHEAD], made)
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


def roll(
    directory: Path,
    *,
    previous: LoadedCatalog | None,
    catalog: LoadedCatalog,
    options: ExtractOptions,
    pairs: Sequence[Pair] | None = None,
) -> History:
    """Add a published catalog to the rolling history in `directory` (the nightly job's), incrementally:
    the history is read back and advanced by one revision, labelled by its SHA. A history that already
    ends with this catalog is left as it is; one that is missing, of another scope or does not end with
    `previous` starts again from `previous`. Written whole (history.jsonl, then history.json)."""
    history = read_history(directory, options=options)
    if history is not None and history.revisions and history.revisions[-1].sha == catalog.sha:
        return history
    # The diff's pairs hold every check of both catalogs: they are not read again.
    old_checks, new_checks = sides(pairs) if pairs is not None else (None, None)
    before = RevisionChecks.of(previous, old_checks) if previous is not None else None
    if history is None or not history.revisions or previous is None or history.revisions[-1].sha != previous.sha:
        history = History(repo=_repo_of(catalog, options), options=options)
        if before is not None:
            advance(history, None, before, before.sha[:12])
            pairs = None
    advance(history, before, RevisionChecks.of(catalog, new_checks), catalog.sha[:12], pairs=pairs)
    lines, manifest = history.encode()
    atomic_write(directory / HISTORY, lines)
    atomic_write(directory / HISTORY_MANIFEST, manifest)
    return history


def _repo_of(catalog: LoadedCatalog, options: ExtractOptions) -> str:
    return catalog.manifest.repo if catalog.manifest is not None else options.repo_name or ""


# Reading back ------------------------------------------------------------------------------------------------


def read_history(directory: Path, *, options: ExtractOptions | None = None) -> History | None:
    """Read DIR/history.jsonl and DIR/history.json back; None where there is none or it is not whole
    (the manifest, written last, counts the lines)."""
    lines_path, manifest_path = directory / HISTORY, directory / HISTORY_MANIFEST
    if not present(manifest_path):
        return None
    try:
        manifest = HistoryManifest.model_validate_json(read_whole(manifest_path))
        lineages = [Lineage.model_validate_json(raw) for raw in read_whole(lines_path).splitlines() if raw.strip()]
    except (ValidationError, OSError) as error:
        raise CatalogError(f"{directory}: not a readable history: {str(error).splitlines()[0]}") from None
    if len(lineages) != manifest.lineages:
        return None
    if options is not None and manifest.scope != options.scope:
        return None
    order = {revision.revision: index for index, revision in enumerate(manifest.revisions)}
    scope = manifest.scope
    history = History(
        repo=manifest.repo,
        options=options or ExtractOptions.of_scope(scope),
        revisions=list(manifest.revisions),
    )
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


def read_written(path: Path) -> tuple[list[Lineage], HistoryManifest | None]:
    """A history written before: history.jsonl (or the folder holding it), every line validated, and
    history.json beside it, validated too, when there is one. A number of lines other than the one it
    counts means the history was cut or altered."""
    lineages = load_lineages(path)
    manifest_path = (path if path.is_dir() else path.parent) / HISTORY_MANIFEST
    manifest = read_document(manifest_path, HistoryManifest, "history manifest")
    if manifest is None:
        return lineages, None
    if manifest.lineages != len(lineages):
        raise CatalogError(
            f"{path} holds {len(lineages)} lineages but {manifest_path} counts {manifest.lineages}: "
            "it was cut or altered"
        )
    return lineages, manifest


def load_lineages(path: Path) -> list[Lineage]:
    """Read history.jsonl (or the directory holding it), validating every line."""
    target = path / HISTORY if path.is_dir() else path
    try:
        raw = read_whole(target)
    except OSError as error:
        raise CatalogError(f"cannot read history {target}: {error.strerror or error}") from None
    out = []
    for number, text in enumerate(raw.splitlines(), start=1):
        if text.strip():
            try:
                out.append(Lineage.model_validate_json(text))
            except ValidationError as error:
                raise CatalogError(f"{target}:{number}: not a history line: {first_problem(error)}") from None
    return out


# Words -------------------------------------------------------------------------------------------------------


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def lineage_sentence(lineage: Lineage, *, start: str | None = None) -> str:
    """Say a lineage's life in one sentence: "introduced in 0.6.0, reworded in 0.8.0 (was: ...), raised at
    vllm/config/model.py:1234 in 0.33.0". A check there at `start`, the history's first revision, may be
    older than it: "present at 0.6.0 (the first revision followed)"."""
    parts = []
    for event in lineage.events:
        if event.kind is EventKind.INTRODUCED and event.revision == start:
            parts.append(f"present at {event.revision} (the first revision followed)")
        elif event.kind is EventKind.REWORDED and event.previous is not None:
            parts.append(f"reworded in {event.revision} (was: {_short(event.previous.errorMessage)})")
        elif event.kind is EventKind.MOVED and event.previous is not None:
            before = event.previous
            where = event.filePath if before.filePath != event.filePath else f"{event.function}()"
            parts.append(f"moved to {where} in {event.revision}")
        elif event.kind is EventKind.MODIFIED:
            parts.append(f"modified in {event.revision} ({', '.join(event.fields)})")
        else:
            parts.append(f"{event.kind.value} in {event.revision}")
    where = f"{lineage.filePath}:{lineage.lineNumber} in {lineage.lastSeen}"
    parts.append(f"raised at {where}" if lineage.present else f"last raised at {where}")
    return ", ".join(parts)


def find_lineage(lineages: Iterable[Lineage], record_id: str) -> Lineage | None:
    """The lineage a record belongs to: the one whose latest id it has, else any that once had it."""
    candidates = list(lineages)
    for lineage in candidates:
        if lineage.id == record_id:
            return lineage
    return next((lin for lin in candidates if any(e.id == record_id for e in lin.events)), None)
