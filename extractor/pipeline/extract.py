# Extract: the pipeline of one run, git -> scan -> records, returning a catalog in memory.
# The revision is resolved, the blobs in scope listed, scanned (from the cache where it can: scheduler.py),
# their fields and flags resolved, their records built, and the catalog made (whole catalogs: cache.py).
from __future__ import annotations

import contextlib
import functools
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from extractor._version import __version__
from extractor.errors import ExtractorError, ScopeError
from extractor.model.manifest import ManifestData, SkippedFileData
from extractor.model.scanned import (
    ResultData,
    ScannedClassFacts,
    ScannedFieldFacts,
    ScannedFlagFacts,
    SiteData,
    SkippedSiteData,
)
from extractor.pipeline import scheduler
from extractor.pipeline.cache import ScanCache, opened
from extractor.pipeline.lines import LineData, RunContext, build_records
from extractor.pipeline.options import ExtractOptions as ExtractOptions
from extractor.pipeline.options import scope_path as scope_path
from extractor.pipeline.scheduler import scan_blobs
from extractor.repo.git.blobs import Blob, list_blobs, read_blobs
from extractor.repo.git.commit import Commit, resolve
from extractor.repo.git.run import is_utf8, printable
from extractor.util.lifecycle import collector_paused, keep_until_exit

if TYPE_CHECKING:
    from extractor.model.records import CatalogLine, Manifest
    from extractor.pipeline.fields import FieldIndex

__all__ = [
    "Carry",
    "Catalog",
    "ExtractOptions",
    "ScannedRevision",
    "analyzed_at",
    "carrying_results",
    "extract",
    "extract_commit",
    "scan_revision",
    "scope_path",
]


@dataclass(frozen=True)
class Catalog:
    """An extracted catalog: the manifest that describes it (as data, see manifest.py), its lines as built
    (or as read back from the cache, already encoded), records.jsonl as written (whole, or a piece a line),
    and its manifest and lines validated (each made the first time it is asked for)."""

    manifest_data: ManifestData
    warnings: tuple[str, ...] = ()
    built: Sequence[LineData] | None = None  # the lines this run built; None for a stored catalog
    stored: bytes | None = None  # records.jsonl read back from the cache
    beside: int = 0  # files read out of scope for what fields mean (config classes, the CLI): the scan counts them

    def __post_init__(self) -> None:
        if (self.built is None) == (self.stored is None):
            raise ValueError("a catalog is either built by this run or stored, not both nor neither")

    @cached_property
    def pieces(self) -> Sequence[bytes]:
        """records.jsonl in pieces, as the writers take it: a catalog this run built is never joined into
        one (17 MB of vLLM's whole package: as much fresh memory again, and a copy)."""
        if self.stored is not None:
            return (self.stored,)
        return [orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE) for line in self.built or ()]

    @cached_property
    def encoded(self) -> bytes:
        return self.stored if self.stored is not None else b"".join(self.pieces)

    @cached_property
    def manifest(self) -> Manifest:
        from extractor.model.records import Manifest

        return Manifest.model_validate(self.manifest_data)

    @cached_property
    def lines(self) -> tuple[CatalogLine, ...]:
        from extractor.model.records import CatalogLine

        return tuple(CatalogLine.model_validate_json(line) for line in self.encoded.splitlines())


_DEFAULTS = ExtractOptions()


def analyzed_at() -> str:
    """Return the run's timestamp: SOURCE_DATE_EPOCH when set, else now (ISO-8601 UTC, ms, Z)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        if not (epoch.isascii() and epoch.isdigit()):  # (int() takes "-1", " 5", "1_0": the spec does not)
            raise ExtractorError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970, not {epoch!r}")
        try:
            moment = datetime.fromtimestamp(int(epoch), tz=UTC)
        except (ValueError, OverflowError, OSError):
            raise ExtractorError(
                f"SOURCE_DATE_EPOCH {epoch} is past the last timestamp a record can hold (9999-12-31)"
            ) from None
    else:
        moment = datetime.now(tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def extract(*, repo: str, revision: str, options: ExtractOptions) -> Catalog:
    """Extract the catalog of `revision` in `repo` for the given scope."""
    commit = resolve(repo, revision)
    return extract_commit(commit, options=options)


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return _under_any(tuple(prefixes))(path)


@functools.lru_cache(maxsize=16)
def _under_any(prefixes: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a path is one of the prefixes or under one ('.' is the whole tree), as a test made once."""
    if "." in prefixes:
        return lambda path: True
    exact, folders = frozenset(prefixes), tuple(f"{prefix}/" for prefix in prefixes)
    return lambda path: path in exact or path.startswith(folders)


# A raise statement naming a class (`raise Name`, `raise pkg.Name(...)`): the class's last part is the name.
_RAISE = re.compile(rb"^[ \t]*raise[ \t]+(?:[A-Za-z_]\w*\.)*([A-Z]\w*)", re.M)


def _check_raised(commit: Commit, blobs: Sequence[Blob], options: ExtractOptions) -> None:
    """Refuse a scope that finds nothing where its files do raise: the classes asked for are likely mistyped.

    Only on this path are the files read again, for the classes they raise (read from the text: a hint).
    """
    from extractor.util.suggest import close_to, nearest

    raised: Counter[str] = Counter()
    for _, data in read_blobs(commit, blobs):
        raised.update(name.decode() for name in _RAISE.findall(data))
    asked = options.exceptions
    if not raised or any(name.rpartition(".")[2] in raised for name in asked):
        return  # nothing raised, or what was asked is raised but skipped (the manifest says why)
    ranks = [{name: rank for rank, name in enumerate(nearest(a, raised))} for a in asked]
    ranked = sorted(raised, key=lambda name: (min(r[name] for r in ranks), name))
    shown = ", ".join(f"{name} ({raised[name]})" for name in ranked[:8]) + (", ..." if len(ranked) > 8 else "")
    guess = next((found for a in asked if (found := close_to(a, raised))), None)
    hint = f"; did you mean {guess}?" if guess else "; '*' takes every class"
    raise ScopeError(
        f"no raise of {' or '.join(asked)} under {', '.join(options.paths)} at {_at(commit)}, "
        f"where the files raise {shown}{hint}"
    )


def extract_commit(
    commit: Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None = None,
) -> Catalog:
    """Extract the catalog of a resolved commit; `pinned_sha` overrides the SHA records point at.

    A catalog made before for the same commit, scope and code is read back and only restamped; a new one
    is kept in the cache too.
    """
    with opened(options) as cache:
        stored = cache.catalog(commit, pinned_sha, stamp=analyzed_at())
        if stored is not None:
            return Catalog(stored.manifest, stored.warnings, stored=stored.encoded)
        catalog = _extract_commit(commit, options=options, pinned_sha=pinned_sha, cache=cache)
        cache.store_catalog(
            commit, pinned_sha, records=catalog.pieces, manifest=catalog.manifest_data, warnings=catalog.warnings
        )
        return catalog


@dataclass(frozen=True, slots=True)
class ScannedRevision:
    """A revision as a history reads it, before any record is built: the repository's name and the SHA
    its records point at, when it was committed, the files that hold sites (path, blob id, sites as the
    scan wrote them) and what resolves their fields."""

    repo: str
    sha: str
    committed_at: str | None
    files: list[tuple[str, str, list[SiteData]]]
    fields: FieldIndex


def scan_revision(
    commit: Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None = None,
    then: Sequence[Commit] = (),
    carry: Carry | None = None,
) -> ScannedRevision:
    """Scan a revision of a history: its files' sites and their field index, with no record built and no
    catalog made or kept (the cache keeps per-file results only). With a `carry` (see carrying_results),
    `then` are the commits scanned next, whose new files are scanned in the background meanwhile, and the
    field index of the revision before is taken again when its config classes and CLI file are the same
    blobs."""
    with opened(options) as cache, collector_paused():  # (see _extract_commit)
        scope, results = _scan_scope(commit, options, cache, then, carry)
    files = [(b.path, b.oid, result["sites"]) for b, result in _parsed(scope, results) if result["kind"] != "skipped"]
    key = (options, *_fields_key(scope, results, options))
    if carry is not None and carry.index is not None and carry.index[0] == key:
        index = carry.index[1]
    else:
        index = _field_index(scope, results, options)
        if carry is not None:
            carry.index = (key, index)
    return ScannedRevision(
        options.repo_name or commit.repo_name, pinned_sha or commit.sha, commit.committed_at, files, index
    )


@dataclass
class Carry:
    """What one scan of a history's revisions leaves the next (`scan_revision(carry=...)`): the scans'
    results and workers (scheduler.Carried); the scopes of the commits to come, listed once each (a history
    lists a revision as the next but one, as the next, then as the one it scans), by commit and options;
    the last field index a revision built, by its options and key (see _fields_key)."""

    scans: scheduler.Carried
    listings: dict[tuple[Path, str, ExtractOptions], _Scope] = field(default_factory=dict)
    index: tuple[tuple[object, ...], FieldIndex] | None = None


@contextlib.contextmanager
def carrying_results() -> Iterator[Carry]:
    """A carry for the revisions of one history, scanned in the block (its workers stop when it ends)."""
    with scheduler.carrying_scans() as scans:
        yield Carry(scans)


def _listed(commit: Commit, options: ExtractOptions, *, last: bool, carry: Carry | None) -> _Scope:
    """The scope of a commit, listed once for a `carry`; `last` when it is not asked again."""
    key = (commit.git_dir, commit.sha, options)
    listings = carry.listings if carry is not None else {}
    scope = listings.pop(key, None) if last else listings.get(key)
    if scope is None:
        scope = _list_scope(commit, options)
        if not last:
            listings[key] = scope
    return scope


def _scan_scope(
    commit: Commit,
    options: ExtractOptions,
    cache: ScanCache,
    then: Sequence[Commit] = (),
    carry: Carry | None = None,
) -> tuple[_Scope, dict[str, ResultData]]:
    """List a commit's scope and scan its blobs (see scan_revision for `then` and `carry`); refuse a scope whose
    classes none of its files raise (see _check_raised)."""
    scope = _listed(commit, options, last=True, carry=carry)
    upcoming = []
    for later in then:
        with contextlib.suppress(ScopeError):  # nothing in scope there: nothing to scan ahead
            following = _listed(later, options, last=False, carry=carry)
            upcoming.append((later, [*following.regular, *following.auxiliary], following.facts))
    results = scan_blobs(
        commit,
        [*scope.regular, *scope.auxiliary],
        scan_options=options.scan_options,
        jobs=options.jobs,
        cache=cache,
        facts=scope.facts,
        then=upcoming,
        carried=carry.scans if carry is not None else None,
    )
    parsed = (result for _, result in _parsed(scope, results) if result["kind"] != "skipped")
    if "*" not in options.exceptions and not any(result["sites"] for result in parsed):
        _check_raised(commit, scope.regular, options)
    return scope, results


def _extract_commit(
    commit: Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None,
    cache: ScanCache,
) -> Catalog:
    with collector_paused():  # a command line's run makes many small acyclic objects (lifecycle.py)
        scope, results = _scan_scope(commit, options, cache)
        found = _sites(scope, results)
        stamp = analyzed_at()
        run = RunContext(
            repo_name=options.repo_name or commit.repo_name,
            sha=pinned_sha or commit.sha,
            revision=commit.revision,
            committed_at=commit.committed_at,
            analyzed_at=stamp,
        )
        lines, reads = build_records(found.files, run=run)
        lines = _field_index(scope, results, options).annotate(lines, reads)
    skipped_files = [*scope.skipped_files, *found.skipped_files]
    manifest: ManifestData = {
        "repo": run.repo_name,
        "sha": run.sha,
        "revision": commit.revision,
        "committedAt": commit.committed_at,
        "analyzedAt": stamp,
        "extractorVersion": __version__,
        "scope": options.scope_data,
        "counts": {
            "filesInScope": len(scope.blobs),
            "filesParsed": found.parsed,
            "records": len(lines),
            "skippedFiles": len(skipped_files),
            "skippedSites": len(found.skipped_sites),
        },
        "recordsSha256": None,
        "skippedFiles": sorted(skipped_files, key=lambda s: s["path"]),
        "skippedSites": sorted(found.skipped_sites, key=lambda s: (s["path"], s["line"])),
    }
    warnings = []
    if skipped_files:
        warnings.append(f"{len(skipped_files)} file(s) in scope could not be parsed; see skippedFiles in the manifest")
    warnings += _absent_sources(scope, options, commit.revision)
    keep_until_exit(results, found, lines, reads)  # a command line leaves without freeing them
    return Catalog(manifest, tuple(warnings), built=lines, beside=len(scope.auxiliary))


@dataclass(frozen=True, slots=True)
class _Scope:
    """The blobs of one extraction: those in scope, and those read for what records' fields mean."""

    blobs: list[Blob]  # every file in scope
    regular: list[Blob]  # those scanned for sites
    auxiliary: list[Blob]  # config classes and the CLI definition, out of scope
    listed: list[Blob]  # every file listed, its name UTF-8
    facts: set[str]  # blob ids read for their classes and flags (never rescanned in pieces)
    skipped_files: list[SkippedFileData]  # not scanned: a name that is not UTF-8, not a regular file


def _absent_sources(scope: _Scope, options: ExtractOptions, revision: str) -> list[str]:
    """Warnings for the sources of fields named on purpose (not vLLM's defaults, which other codebases do
    not have) that the revision does not hold."""
    configs = options.config_from if options.config_from != _DEFAULTS.config_from else ()
    flags = options.flags_from if options.flags_from != _DEFAULTS.flags_from else ""
    if not configs and not flags:
        return []
    paths = {blob.path for blob in scope.listed}
    out = []
    if configs and not any(_under(path, configs) for path in paths):
        out.append(
            f"no file under --config-from {', '.join(configs)} at {revision}: no field is read from a config class"
        )
    if flags and flags not in paths:
        out.append(f"no file --flags-from {flags} at {revision}: no field gets its CLI flags")
    return out


def _scope_hint(commit: Commit, paths: Sequence[str]) -> str:
    """What a scope with no Python file may have meant, from one listing of the folders its paths are in: the
    module a package was before (vllm/config was vllm/config.py until 0.10.1), else the folder or file beside
    where a path points that is most like it (`; did you mean --path vllm/config?` for a mistyped vllm/confg)."""
    from extractor.util.suggest import close_to

    parents = sorted({path.strip("/").rpartition("/")[0] or "." for path in paths})
    nearby = [blob.path for blob in list_blobs(commit, parents)]
    modules = {f"{path}.py" for path in paths if not path.endswith(".py") and path != "."}
    found = sorted(modules.intersection(nearby))
    if found:
        return f"; {', '.join(found)} is there (--path {' --path '.join([*paths, *found])} follows both)"
    for path in paths:
        parent = path.strip("/").rpartition("/")[0]
        prefix = f"{parent}/" if parent else ""
        beside = {prefix + name[len(prefix) :].split("/")[0] for name in nearby if name.startswith(prefix)}
        guess = close_to(path.strip("/"), beside - {path.strip("/")})
        if guess is not None:
            return f"; did you mean --path {guess}?"
    return ""


def _at(commit: Commit) -> str:
    """A commit in a message: its revision and SHA; a release by its name alone (the commit of the release
    repository that holds its sdist is no SHA of vLLM's: the catalog names the one its records point at)."""
    if commit.release is not None:
        return commit.revision
    return f"{commit.revision} ({commit.sha[:12]})"


def _list_scope(commit: Commit, options: ExtractOptions) -> _Scope:
    every = list_blobs(commit, [*options.paths, *options.config_from, options.flags_from])
    in_scope, in_config = _under_any(options.paths), _under_any(options.config_from)
    blobs = [blob for blob in every if in_scope(blob.path)]
    if not blobs:
        hint = _scope_hint(commit, options.paths)
        raise ScopeError(f"no Python file under {', '.join(options.paths)} at {_at(commit)}{hint}")
    # A name that is not UTF-8 cannot be written in a record (JSON is UTF-8): its file is a named skip.
    listed = [blob for blob in every if is_utf8(blob.path)]
    # Config classes and the CLI definition are read for what records' fields mean, in scope or not.
    facts = {
        blob.oid for blob in listed if blob.is_regular and (in_config(blob.path) or blob.path == options.flags_from)
    }
    skipped_files: list[SkippedFileData] = []
    regular = []
    for blob in blobs:
        if not is_utf8(blob.path):
            name = printable(blob.path)
            skipped_files.append({"path": name, "reason": "the file name is not UTF-8 (shown with \\x escapes)"})
        elif blob.is_regular:
            regular.append(blob)
        else:
            skipped_files.append({"path": blob.path, "reason": f"not a regular file (git mode {blob.mode})"})
    auxiliary = [b for b in listed if b.oid in facts and not in_scope(b.path)]
    return _Scope(blobs, regular, auxiliary, listed, facts, skipped_files)


@dataclass(frozen=True, slots=True)
class _Sites:
    """What the scan found in the files in scope."""

    files: list[tuple[str, list[SiteData]]]  # each file's sites, by path
    skipped_files: list[SkippedFileData]  # parsed, but could not be scanned
    skipped_sites: list[SkippedSiteData]
    parsed: int  # files parsed (the prefilter ruled the others out)


def _parsed(scope: _Scope, results: dict[str, ResultData]) -> Iterator[tuple[Blob, ResultData]]:
    """The files in scope the scan parsed (the prefilter ruled the others out), with their results."""
    for blob in scope.regular:
        result = results[blob.oid]
        if result["kind"] == "ruled-out" or (blob.oid not in scope.facts and not result.get("couldHold", True)):
            continue
        yield blob, result


def _sites(scope: _Scope, results: dict[str, ResultData]) -> _Sites:
    files: list[tuple[str, list[SiteData]]] = []
    skipped_files: list[SkippedFileData] = []
    skipped_sites: list[SkippedSiteData] = []
    parsed = 0
    for blob, result in _parsed(scope, results):
        parsed += 1
        if result["kind"] == "skipped":
            skipped_files.append({"path": blob.path, "reason": result.get("reason") or "unknown"})
            continue
        files.append((blob.path, result["sites"]))
        skipped_sites += [{"path": blob.path, "line": s["line"], "reason": s["reason"]} for s in result["skippedSites"]]
    return _Sites(files, skipped_files, skipped_sites, parsed)


def _fields_sources(
    scope: _Scope, results: dict[str, ResultData], options: ExtractOptions
) -> tuple[list[Blob], Blob | None]:
    """The blobs that say what records' fields mean: the config classes' files and the CLI definition."""
    in_config = _under_any(options.config_from)
    classes = [b for b in scope.listed if in_config(b.path) and b.oid in scope.facts and b.oid in results]
    flags = next((b for b in scope.listed if b.path == options.flags_from and b.oid in results), None)
    return classes, flags


def _fields_key(scope: _Scope, results: dict[str, ResultData], options: ExtractOptions) -> tuple[object, ...]:
    """What _field_index reads, by blob id: two revisions with the same key have the same index."""
    classes, flags = _fields_sources(scope, results, options)
    return tuple(blob.oid for blob in classes), flags.oid if flags is not None else None


def _field_index(scope: _Scope, results: dict[str, ResultData], options: ExtractOptions) -> FieldIndex:
    """Resolve what records' fields and flags mean from the config classes and the CLI definition."""
    from extractor.pipeline.fields import FieldIndex

    classes, flags = _fields_sources(scope, results, options)
    read = results[flags.oid].get("flags") if flags is not None else None
    return FieldIndex.build(
        classes=[_class_facts(data) for blob in classes for data in results[blob.oid].get("classes") or ()],
        flags=ScannedFlagFacts(read["flags"], read["overwritten"]) if read else None,
    )


def _class_facts(data: Mapping[str, Any]) -> ScannedClassFacts:
    """A config class's facts as the scan wrote them (a result of the cache, sealed: as this code wrote it)."""
    fields = [ScannedFieldFacts(**field) for field in data["fields"]]
    return ScannedClassFacts(data["name"], data["bases"], fields, data["postInit"])
