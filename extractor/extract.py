# Extract: the pipeline of one run, git -> scan -> records, returning a catalog in memory.
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from extractor import git as git_stage
from extractor._version import __version__
from extractor.errors import ExtractorError, ScopeError
from extractor.models import CatalogLine, Counts, Manifest, Scope, Site, SkippedFile, SkippedSite
from extractor.records import RunContext, build_records
from extractor.scan import Scanned, ScanOptions, could_hold, scan

__all__ = ["Catalog", "ExtractOptions", "analyzed_at", "extract", "extract_commit"]

T = TypeVar("T")


@dataclass(frozen=True)
class ExtractOptions:
    """The scope of an extraction: which paths, which classes, how much context."""

    paths: tuple[str, ...] = ("vllm/config",)
    exceptions: tuple[str, ...] = ("ValueError",)
    context: int = 18
    repo_name: str | None = None

    @property
    def scan_options(self) -> ScanOptions:
        return ScanOptions(exceptions=self.exceptions, context=self.context)

    @property
    def scope(self) -> Scope:
        return Scope(paths=list(self.paths), exceptions=list(self.exceptions), context=self.context)


@dataclass(frozen=True)
class Catalog:
    """An extracted catalog: its lines in order and the manifest that describes it."""

    lines: tuple[CatalogLine, ...]
    manifest: Manifest
    warnings: tuple[str, ...] = field(default=())


def analyzed_at() -> str:
    """Return the run's timestamp: SOURCE_DATE_EPOCH when set, else now (ISO-8601 UTC, ms, Z)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            moment = datetime.fromtimestamp(int(epoch), tz=UTC)
        except (ValueError, OverflowError, OSError):
            raise ExtractorError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970, not {epoch!r}") from None
    else:
        moment = datetime.now(tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _progress(items: Iterable[T], total: int, label: str) -> Iterator[T]:
    """Show a progress bar on a terminal; stay quiet in pipes and CI."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, total=total, desc=label, unit="file", leave=False, file=sys.stderr)


def extract(*, repo: str, revision: str, options: ExtractOptions) -> Catalog:
    """Extract the catalog of `revision` in `repo` for the given scope."""
    commit = git_stage.resolve(repo, revision)
    return extract_commit(commit, options=options)


def extract_commit(
    commit: git_stage.Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None = None,
) -> Catalog:
    """Extract the catalog of a resolved commit; `pinned_sha` overrides the SHA records point at."""
    blobs = git_stage.list_blobs(commit, options.paths)
    if not blobs:
        raise ScopeError(f"no Python file under {', '.join(options.paths)} at {commit.revision} ({commit.sha[:12]})")
    scan_options = options.scan_options
    files: list[tuple[str, Sequence[Site]]] = []
    skipped_files: list[SkippedFile] = []
    skipped_sites: list[SkippedSite] = []
    candidates = []
    for blob in blobs:
        if not blob.is_regular:
            skipped_files.append(SkippedFile(path=blob.path, reason=f"not a regular file (git mode {blob.mode})"))
        else:
            candidates.append(blob)
    parsed = 0
    for blob, data in _progress(git_stage.read_blobs(commit, candidates), len(candidates), "scanning"):
        if not could_hold(data, scan_options):
            continue
        parsed += 1
        result = scan(data, options=scan_options)
        if isinstance(result, Scanned):
            files.append((blob.path, result.sites))
            skipped_sites += [s.model_copy(update={"path": blob.path}) for s in result.skipped]
        else:
            skipped_files.append(SkippedFile(path=blob.path, reason=result.reason))
    stamp = analyzed_at()
    run = RunContext(
        repo_name=options.repo_name or commit.repo_name,
        sha=pinned_sha or commit.sha,
        revision=commit.revision,
        committed_at=commit.committed_at,
        analyzed_at=stamp,
    )
    lines = build_records(files, run=run)
    manifest = Manifest(
        repo=run.repo_name,
        sha=run.sha,
        revision=commit.revision,
        committedAt=commit.committed_at,
        analyzedAt=stamp,
        extractorVersion=__version__,
        scope=options.scope,
        counts=Counts(
            filesInScope=len(blobs),
            filesParsed=parsed,
            records=len(lines),
            skippedFiles=len(skipped_files),
            skippedSites=len(skipped_sites),
        ),
        skippedFiles=sorted(skipped_files, key=lambda s: s.path),
        skippedSites=sorted(skipped_sites, key=lambda s: (s.path, s.line)),
    )
    warnings = []
    if skipped_files:
        warnings.append(f"{len(skipped_files)} file(s) in scope could not be parsed; see skippedFiles in the manifest")
    return Catalog(lines=tuple(lines), manifest=manifest, warnings=tuple(warnings))
