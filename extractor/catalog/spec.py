# Spec: what the command line names catalogs and revisions by, read once into a typed value (a release, a range
# of releases, a catalog on disk, a revision of the repository; for a history, a range or tag glob of it), and
# the `release:X.Y.Z` a release's catalog records as its revision.
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from extractor.errors import ExtractorError, ReleaseError, RevisionError
from extractor.pipeline.write import RECORDS

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "RELEASE_PREFIX",
    "CatalogSpec",
    "CatalogsSpec",
    "OnDisk",
    "Release",
    "ReleaseRange",
    "RepoRange",
    "RepoRevision",
    "RevisionsSpec",
    "TagGlob",
    "catalog_there",
    "each_catalog",
    "looks_like_path",
    "parse_catalog",
    "parse_catalogs",
    "parse_revisions",
    "release_label",
    "release_of",
]

RELEASE_PREFIX = "release:"
_ALL = "all"
_RANGE = ".."
_GLOB = "*?["
# What `release:` alone is told, by what the command takes after it.
_NO_VERSION = "release: needs a version, as in release:0.28.0"
_NO_RELEASES = "release: needs a version, a range A..B or all, as in release:0.5.0..0.8.0"


@dataclass(frozen=True)
class Release:
    """One release: `release:0.28.0`, `release:v0.28.0` (as its tag spells it), or a bare `0.28.0` that names no
    catalog on disk nor a revision of the repository."""

    text: str  # as the user wrote it
    version: str  # as the package index spells it

    @classmethod
    def of(cls, version: str) -> Release:
        """The release `version`, written as its catalog records it."""
        return cls(release_label(version), version)

    @property
    def label(self) -> str:
        """The revision its catalog records: `release:0.28.0`."""
        return release_label(self.version)

    @property
    def bare(self) -> bool:
        """Written without `release:` (read as the release: said when its catalog is read)."""
        return not self.text.startswith(RELEASE_PREFIX)


@dataclass(frozen=True)
class ReleaseRange:
    """The releases on the package index from `low` to `high`, inclusive, either end open (None):
    `release:A..B`; `release:all` leaves both open."""

    text: str
    low: Version | None = None
    high: Version | None = None

    def releases(self, *, listed: Sequence[str] | None = None) -> list[Release]:
        """Each release it names, oldest first in PEP 440 order, from `listed` (default: what the index lists)."""
        from packaging.version import Version

        from extractor.repo.release import PROJECT, release_versions

        versions = release_versions() if listed is None else listed
        low, high = self.low, self.high
        chosen = [v for v in versions if (low is None or Version(v) >= low) and (high is None or Version(v) <= high)]
        if not chosen:
            raise ReleaseError(f"{self.text}: no release of {PROJECT} on the package index in that range")
        return [Release.of(version) for version in sorted(chosen, key=Version)]


@dataclass(frozen=True)
class OnDisk:
    """A catalog on disk: its folder, its records.jsonl or manifest.json, or a nightly root (which stands for its
    latest catalog). Whether one is there is said when it is opened."""

    text: str
    path: Path


@dataclass(frozen=True)
class RepoRevision:
    """A revision of the repository (a SHA, tag or branch), its catalog extracted on the fly."""

    text: str


@dataclass(frozen=True)
class RepoRange:
    """Of the repository, `A..B`: A, then the first-parent commits after it up to B (an end left out: HEAD)."""

    text: str
    low: str
    high: str


@dataclass(frozen=True)
class TagGlob:
    """Of the repository, the tags a glob such as `v*` matches."""

    text: str


CatalogSpec: TypeAlias = Release | OnDisk | RepoRevision  # one catalog
CatalogsSpec: TypeAlias = Release | ReleaseRange | OnDisk | RepoRevision  # one, or a range of releases
RevisionsSpec: TypeAlias = Release | ReleaseRange | RepoRange | TagGlob | RepoRevision  # what a history follows


def parse_catalog(text: str, *, repo: str) -> CatalogSpec:
    """Read what names one catalog: `release:X.Y.Z` (or `release:vX.Y.Z`), a catalog on disk, or a revision of
    `repo`. A bare `X.Y.Z` (or `vX.Y.Z`) that is no path nor a revision of a local `repo` is the release (a
    remote one is not asked: vLLM tags are v0.28.0)."""
    if text.startswith(RELEASE_PREFIX):
        written = text.removeprefix(RELEASE_PREFIX)
        if not written:
            raise ReleaseError(_NO_VERSION)
        return Release(text, _version(written))
    return _not_prefixed(text, repo=repo)


def parse_catalogs(text: str, *, repo: str) -> CatalogsSpec:
    """Read what names a catalog, or several: as `parse_catalog`, and `release:A..B` (every release on the
    package index in that range, inclusive; either end may be left open) or `release:all`."""
    if text.startswith(RELEASE_PREFIX):
        return _releases(text)
    return _not_prefixed(text, repo=repo)


def parse_revisions(text: str) -> RevisionsSpec:
    """Read what a history follows: releases, as `parse_catalogs` reads them; and of the repository `A..B` (A,
    then the first-parent commits after it up to B), a tag glob such as `v*`, or one revision."""
    if text.startswith(RELEASE_PREFIX):
        return _releases(text)
    _refuse_mistyped(text)
    if _RANGE in text:
        if "..." in text:  # git's symmetric difference: no line of commits to follow
            raise RevisionError(f"{text}: A...B is no range to follow: say A..B (A, then the commits after it up to B)")
        low, _, high = text.partition(_RANGE)
        return RepoRange(text, low, high)
    if any(char in text for char in _GLOB):
        return TagGlob(text)
    return RepoRevision(text)


def each_catalog(specs: Iterable[CatalogsSpec]) -> list[CatalogSpec]:
    """Each catalog `specs` name, once, in order: a range of releases as its releases (the package index is
    asked), `release:vX.Y.Z` as `release:X.Y.Z`."""
    out: list[CatalogSpec] = []
    for spec in specs:
        if isinstance(spec, ReleaseRange):
            out += spec.releases()
        elif isinstance(spec, Release) and not spec.bare:
            out.append(Release.of(spec.version))
        else:
            out.append(spec)
    return list(dict.fromkeys(out))


def release_label(version: str) -> str:
    """The revision a release's catalog records, and a history shows: `release:0.28.0`."""
    return f"{RELEASE_PREFIX}{version}"


def release_of(revision: str) -> str | None:
    """The release a recorded revision names (`release:0.28.0` -> `0.28.0`), or None."""
    return revision.removeprefix(RELEASE_PREFIX) if revision.startswith(RELEASE_PREFIX) else None


def looks_like_path(text: str) -> bool:
    """Whether a catalog argument is meant as a path (never taken for a revision to clone and extract)."""
    return "/" in text or os.sep in text or text.startswith((".", "~")) or text.endswith(".jsonl")


def catalog_there(path: Path) -> bool:
    """Whether `path` is a catalog's file, or a folder holding one: read as a catalog however it fails to be
    read (a FIFO, a folder in its place), never taken for no catalog at all."""
    return (path.exists() and not path.is_dir()) or os.path.lexists(path / RECORDS)


def _releases(text: str) -> Release | ReleaseRange:
    """`release:X.Y.Z`, `release:A..B` or `release:all`: the bounds of a range are checked here, before the
    package index is asked."""
    written = text.removeprefix(RELEASE_PREFIX)
    if not written:
        raise ReleaseError(_NO_RELEASES)
    if written == _ALL:
        return ReleaseRange(text)
    if _RANGE not in written:
        return Release(text, _version(written, known=(_ALL,)))
    low_text, _, high_text = written.partition(_RANGE)
    low, high = _bound(low_text.strip(), text), _bound(high_text.strip(), text)
    if low is not None and high is not None and low > high:
        raise ReleaseError(f"{text}: the range is backwards ({low} comes after {high})")
    return ReleaseRange(text, low, high)


def _bound(written: str, text: str) -> Version | None:
    from packaging.version import InvalidVersion, Version

    if not written:
        return None
    try:
        return Version(written)
    except InvalidVersion:
        raise ReleaseError(f"{text}: {written!r} is not a version (try release:0.5.0..0.8.0)") from None


def _version(written: str, *, known: Sequence[str] = ()) -> str:
    """A release's version as the index spells it (`v0.28.0` is 0.28.0), refused unless it is one; a word
    mistyped for one of `known` (`al`) is said."""
    from extractor.repo.release import check_version, release_version

    version = release_version(written)
    try:
        check_version(version)
    except ReleaseError as error:
        from extractor.util.suggest import close_to

        guess = close_to(written, known)
        if guess is None:
            raise
        raise ReleaseError(f"{error}; did you mean {RELEASE_PREFIX}{guess}?") from None
    return version


def _not_prefixed(text: str, *, repo: str) -> Release | OnDisk | RepoRevision:
    """A catalog named without `release:`: a bare release, a catalog on disk, or a revision of `repo`."""
    from extractor.repo.git.clone import is_url
    from extractor.repo.release import looks_like_version, release_version

    path = _expand(text)
    there = os.path.lexists(path)
    if not there and not looks_like_path(text):
        _refuse_mistyped(text)
    if not there and looks_like_version(text) and (is_url(repo) or not _is_revision(repo, text)):
        return Release(text, release_version(text))
    if catalog_there(path):
        return OnDisk(text, path)
    # Something is there by that name (a folder, a dangling symlink, a loop of them): never a revision to clone.
    if (looks_like_path(text) or there) and (is_url(repo) or not _is_revision(repo, text)):
        return OnDisk(text, path)
    return RepoRevision(text)


def _refuse_mistyped(text: str) -> None:
    """`relase:0.28.0`, `Release:all`: a `release:` mistyped, said at once (no revision is spelled so: git reads
    `A:B` as the file B in A, and a remote repository would be cloned to find that out)."""
    head, colon, rest = text.partition(":")
    if not (colon and head):
        return
    from extractor.util.suggest import close_to

    if close_to(head, [RELEASE_PREFIX.removesuffix(":")]) is not None:
        raise ReleaseError(f"unknown prefix {head + colon!r} in {text}; did you mean {RELEASE_PREFIX}{rest}?")


def _expand(text: str) -> Path:
    try:
        return Path(text).expanduser()
    except RuntimeError:  # `~name` of no known user: taken as written
        return Path(text)


def _is_revision(repo: str, text: str) -> bool:
    """Whether `text` names a commit of a local repository (`origin/main` looks like a path, too)."""
    from extractor.repo.git.commit import resolve

    try:
        resolve(repo, text)
    except ExtractorError:
        return False
    return True
