# Match index: the templates of many catalogs merged (one entry per template, every site in every release),
# kept in the user cache per set of releases so that matching against all of them costs one file read.
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from extractor._version import __version__, code_digest
from extractor.catalog.spec import CatalogSpec, CatalogsSpec, OnDisk, Release, each_catalog, release_of
from extractor.errors import ReleaseError
from extractor.query.match import background
from extractor.query.match.matcher import Matcher
from extractor.query.match.pattern import MatchTemplate, RaisePlace, Row, templates_of_rows
from extractor.repo.housekeeping import cache_dir
from extractor.util.atomic import replace_bytes

if TYPE_CHECKING:
    from extractor.catalog.load import LoadedCatalog
    from extractor.pipeline.extract import ExtractOptions


__all__ = ["MatchIndex", "Provenance", "match_index", "origin"]

# What an index stores is the matcher's structure (templates, sites, the automaton's keys), made by the
# extraction's code and match's: the key holds every module's code (an edit to any makes a new index),
# and this number, for a change of how the stored structure is laid out (14: the catalogs' specs kept as parsed;
# 13: the matcher's prefilter, made on first use, stored empty; 12: the finder's keys kept per template; 11: its
# programs, keys and weights; each catalog's scope kept).
_FORMAT = 14
_KEEP = 8


class ScopeShown(NamedTuple):
    """What a catalog's scope says of where its records come from: its path prefixes and its classes."""

    paths: tuple[str, ...]
    exceptions: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {"paths": list(self.paths), "exceptions": list(self.exceptions)}

    def to_text(self) -> str:
        # (a module's `.py` twin, which a range of releases follows beside its package, goes without saying)
        paths = [path for path in self.paths if not (path.endswith(".py") and path[:-3] in self.paths)]
        classes = "every class" if "*" in self.exceptions else ", ".join(self.exceptions)
        return f"scope {', '.join(paths)} ({classes})"


@dataclass(frozen=True)
class MatchIndex:
    """A matcher over one or many catalogs, and their labels, oldest first."""

    matcher: Matcher
    labels: tuple[str, ...]
    specs: tuple[CatalogSpec, ...]  # what each label was opened from
    scopes: tuple[ScopeShown | None, ...]  # each catalog's scope, as its manifest records it (None: no manifest)

    @property
    def provenance(self) -> Provenance:
        """Which catalogs, in which scope, every answer of this index comes from."""
        groups: dict[ScopeShown | None, list[tuple[str, CatalogSpec]]] = {}
        for label, spec, scope in zip(self.labels, self.specs, self.scopes, strict=True):
            groups.setdefault(scope, []).append((label, spec))
        return Provenance(tuple((tuple(catalogs), scope) for scope, catalogs in groups.items()))


@dataclass(frozen=True)
class Provenance:
    """Which catalogs an answer comes from, and their scope: one group per scope, in the catalogs' order
    (several only when catalogs on disk were written in different scopes), each holding (label, spec)s."""

    groups: tuple[tuple[tuple[tuple[str, CatalogSpec], ...], ScopeShown | None], ...]

    def to_json(self) -> list[dict[str, object]]:
        """Each group's labels (those of the matches' `releases`) and scope (null: a records.jsonl alone,
        which records none)."""
        return [
            {"labels": [label for label, _ in catalogs], "scope": None if scope is None else scope.to_json()}
            for catalogs, scope in self.groups
        ]

    def to_text(self) -> str:
        """One line: `in release 0.28.0, scope vllm (every class)`."""
        said = []
        for catalogs, scope in self.groups:
            where = _shown_catalogs(catalogs)
            said.append(f"{where}, {scope.to_text() if scope is not None else 'scope not recorded'}")
        return "in " + "; ".join(said)


_Labelled = tuple[str, str, "LoadedCatalog"]  # a catalog, its label and what its lines' errors name


def _shown_catalogs(catalogs: Sequence[tuple[str, CatalogSpec]]) -> str:
    """Name catalogs in a line: `release 0.28.0`, `3 releases 0.9.0 .. 0.28.0`, a folder or a revision."""
    if all(isinstance(spec, Release) for _, spec in catalogs):
        labels = [label for label, _ in catalogs]
        if len(labels) <= 3:
            return f"release{'s' if len(labels) > 1 else ''} {', '.join(labels)}"
        return f"{len(labels)} releases {labels[0]} .. {labels[-1]}"
    shown = [_shown(spec) for _, spec in catalogs]
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def _shown(spec: CatalogSpec) -> str:
    if isinstance(spec, Release):
        return f"release {spec.version}"
    return spec.text if isinstance(spec, OnDisk) else f"revision {spec.text}"


def _told_apart(catalogs: list[_Labelled]) -> list[_Labelled]:
    """Labels that tell the catalogs apart: two nightly catalogs of one branch (both `refs/heads/main`) are
    each named by their SHA too (`refs/heads/main@6d8904337d82`)."""
    counts = Counter(label for label, _, _ in catalogs)
    shared = {label for label, count in counts.items() if count > 1}
    return [
        (f"{label}@{catalog.sha[:12]}" if label in shared else label, origin, catalog)
        for label, origin, catalog in catalogs
    ]


def _oldest_first(catalogs: list[_Labelled], kept: list[CatalogSpec]) -> tuple[list[_Labelled], list[CatalogSpec]]:
    """Catalogs that are all releases in the order of their versions, however they were named (`--catalog
    release:0.28.0 --catalog release:0.27.0`: 0.27.0 first); others in the order given."""
    from packaging.version import InvalidVersion, Version

    try:
        versions = [Version(label) for label, _, _ in catalogs]
    except InvalidVersion:
        return catalogs, kept
    order = sorted(range(len(catalogs)), key=versions.__getitem__)
    return [catalogs[i] for i in order], [kept[i] for i in order]


def _label(spec: CatalogSpec, catalog: LoadedCatalog) -> str:
    """A catalog's name in answers: the release's version (as `release:X.Y.Z` or as the folder one wrote),
    else the revision it was extracted at."""
    if isinstance(spec, Release):
        return spec.version
    return release_of(catalog.revision) or catalog.revision


def origin(spec: CatalogSpec) -> str:
    """Name what a spec read, for errors about one of its lines."""
    from extractor.pipeline.write import RECORDS

    return str(spec.path / RECORDS) if isinstance(spec, OnDisk) and spec.path.is_dir() else spec.text


def merge(catalogs: Sequence[tuple[str, str, LoadedCatalog]]) -> list[MatchTemplate]:
    """Merge (label, origin, catalog)s into templates, each listing its sites in the catalogs' order."""
    merged: dict[tuple[str, str], MatchTemplate] = {}
    for label, origin, catalog in catalogs:
        # One catalog needs no labels: its matches say where, not in which of the catalogs.
        release = label if len(catalogs) > 1 else ""
        rows = map(Row.of, catalog.lines)
        for template in templates_of_rows(rows, release=release, origin=origin):
            key = (template.errorClass, template.messagePattern)
            held = merged.get(key)
            if held is None:
                merged[key] = template
            else:
                held.sites.extend(template.sites)
                held.releases.extend(template.releases)
    return [_compact(template) for template in merged.values()]


def _compact(template: MatchTemplate) -> MatchTemplate:
    """One site per place, listing the releases that hold the template there; only the newest release's
    sites keep their permalink (the one a match shows), so that the index stays small."""
    newest = template.releases[-1] if template.releases else ""
    places: dict[tuple[str, int, str, str, str], RaisePlace] = {}
    for site in template.sites:
        key = (site.filePath, site.lineNumber, site.id, site.slug, site.function)
        held = places.get(key)
        places[key] = site if held is None else site._replace(releases=held.releases + site.releases)
    template.sites = [
        site if not newest or newest in site.releases else site._replace(githubUrl="") for site in places.values()
    ]
    return template


def match_index(
    specs: Sequence[CatalogsSpec],
    *,
    repo: str,
    options: ExtractOptions,
    progress: Callable[[str], None] | None = None,
) -> MatchIndex:
    """Build (or read back from the cache) the matcher over every catalog `specs` names.

    Releases are immutable on the package index, so an index of releases only is keyed by their versions,
    the scope, the extractor's code and the background's data, and read back without opening any catalog.
    """
    expanded = each_catalog(specs)
    if not expanded:
        raise ReleaseError("no catalog given")
    cacheable = options.cache and all(isinstance(spec, Release) for spec in expanded)
    # (json, not orjson: a path from the command line may hold what is not UTF-8, as lone surrogates)
    # Every input of an answer: the catalogs, their scope, and the repository name their permalinks carry.
    named = [spec.text for spec in expanded]
    parts = [_FORMAT, __version__, code_digest(), background.digest(), named, options.scope.model_dump(mode="json")]
    parts.append(options.repo_name)
    key = json.dumps(parts).encode()
    path = cache_dir() / "match" / hashlib.sha256(key).hexdigest()
    if cacheable:
        cached = _read(path)
        if cached is not None:
            return cached
    from extractor.catalog.load import open_catalog

    # The catalogs on disk first: one that is damaged is said before any release is downloaded or extracted.
    on_disk = [isinstance(spec, OnDisk) for spec in expanded]
    loaded: dict[int, LoadedCatalog] = {}
    order = sorted(range(len(expanded)), key=lambda number: not on_disk[number])
    for done, number in enumerate(order, start=1):
        if progress is not None and len(expanded) > 1 and not on_disk[number]:  # (one on disk is read at once)
            progress(f"catalog {done} of {len(expanded)}: {expanded[number].text}")
        loaded[number] = open_catalog(expanded[number], repo=repo, options=options)
    catalogs: list[_Labelled] = []
    kept: list[CatalogSpec] = []  # the spec each catalog kept was opened from
    opened: set[tuple[str, str, str]] = set()
    for number, spec in enumerate(expanded):
        catalog = loaded[number]
        label = _label(spec, catalog)
        if catalog.manifest is not None:  # the same catalog named twice (`release:X`, and the folder written)
            held = (label, catalog.sha, catalog.manifest.scope.model_dump_json())
            if held in opened:
                continue
            opened.add(held)
        catalogs.append((label, origin(spec), catalog))
        kept.append(spec)
    catalogs, kept = _oldest_first(_told_apart(catalogs), kept)
    labels = tuple(label for label, _, _ in catalogs)
    scopes = tuple(_scope_shown(catalog) for _, _, catalog in catalogs)
    index = MatchIndex(Matcher(merge(catalogs)), labels, tuple(kept), scopes)
    if cacheable:
        _write(path, index)
    return index


def _scope_shown(catalog: LoadedCatalog) -> ScopeShown | None:
    """A catalog's scope as its manifest records it (what it was extracted in, or written in), if it has one."""
    if catalog.manifest is None:
        return None
    scope = catalog.manifest.scope
    return ScopeShown(tuple(scope.paths), tuple(scope.exceptions))


def _read(path: Path) -> MatchIndex | None:
    try:
        stored = path.read_bytes()
    except OSError:
        return None
    data = stored[32:]
    if len(stored) < 32 or hashlib.sha256(data).digest() != stored[:32]:
        return None
    try:
        index = pickle.loads(data)
    except Exception:  # an index written by other code is only rebuilt
        return None
    with contextlib.suppress(OSError):
        os.utime(path)
    return index if isinstance(index, MatchIndex) else None


def _write(path: Path, index: MatchIndex) -> None:
    data = pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        replace_bytes(path, hashlib.sha256(data).digest() + data, durable=False)
        kept = sorted(path.parent.glob("[0-9a-f]*"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:  # a cache that cannot be written costs the next run its build, nothing else
        return
