# Extract: the pipeline of one run, git -> scan -> records, returning a catalog in memory.
from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import orjson
from pydantic import ValidationError

from extractor import git as git_stage
from extractor._version import __version__
from extractor.cache import ScanCache, wait_for_writes
from extractor.errors import ExtractorError, ScopeError
from extractor.models import (
    CatalogLine,
    Counts,
    FileOutcome,
    Manifest,
    Scope,
    Site,
    SkippedFile,
    SkippedSite,
    replace,
)
from extractor.records import RunContext, build_records
from extractor.write import encode_lines

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from extractor.scan import ScanOptions

__all__ = ["Catalog", "ExtractOptions", "analyzed_at", "extract", "extract_commit"]

T = TypeVar("T")


@dataclass(frozen=True)
class ExtractOptions:
    """The scope of an extraction: which paths, which classes, how much context."""

    paths: tuple[str, ...] = ("vllm/config",)
    exceptions: tuple[str, ...] = ("ValueError",)
    context: int = 18
    repo_name: str | None = None
    jobs: int | None = None  # worker processes; None means one per core
    cache: bool = True
    config_from: tuple[str, ...] = ("vllm/config",)
    flags_from: str = "vllm/engine/arg_utils.py"

    @property
    def scan_options(self) -> ScanOptions:
        from extractor.scan import ScanOptions

        return ScanOptions(exceptions=self.exceptions, context=self.context)

    @property
    def scope(self) -> Scope:
        return Scope(
            paths=list(self.paths),
            exceptions=list(self.exceptions),
            context=self.context,
            configFrom=list(self.config_from),
            flagsFrom=self.flags_from,
        )


@dataclass(frozen=True)
class Catalog:
    """An extracted catalog: its lines in order and the manifest that describes it."""

    lines: tuple[CatalogLine, ...]
    manifest: Manifest
    warnings: tuple[str, ...] = field(default=())
    encoded: bytes | None = None  # records.jsonl as written, when already serialized


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


def _progress(items: Iterable[T], total: int, label: str, unit: str = "file") -> Iterator[T]:
    """Show a progress bar on a terminal; stay quiet in pipes and CI."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, total=total, desc=label, unit=unit, leave=False, file=sys.stderr)


def extract(*, repo: str, revision: str, options: ExtractOptions) -> Catalog:
    """Extract the catalog of `revision` in `repo` for the given scope."""
    commit = git_stage.resolve(repo, revision)
    return extract_commit(commit, options=options)


# Below this much source to parse, starting worker processes costs more than it saves.
_PARALLEL_BYTES = 256 * 1024
# Work is handed to workers in batches of about this much source (or this many files), largest first.
_BATCH_BYTES = 64 * 1024
_BATCH_FILES = 256


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p.strip("/") or path.startswith(p.strip("/") + "/") for p in prefixes if p.strip("/"))


def _scan_blobs(
    commit: git_stage.Commit,
    blobs: Sequence[git_stage.Blob],
    *,
    options: ExtractOptions,
    cache: ScanCache | None,
    facts: set[str],
) -> dict[str, FileOutcome]:
    """Scan blobs by id: from the cache where it holds them, else in parallel, storing what is new.

    Blobs in `facts` are parsed whole for their classes and flags, even if they hold no site.
    """
    oids = list(dict.fromkeys(blob.oid for blob in blobs))
    results = cache.get_many(oids) if cache is not None else {}
    results = {oid: r for oid, r in results.items() if r.facts or oid not in facts}
    missing = list({blob.oid: blob for blob in blobs if blob.oid not in results}.values())
    new: list[tuple[str, bytes]] = []
    if missing:
        previous: dict[str, bytes] = {}
        if cache is not None:
            earlier = cache.previous_versions([blob.path for blob in missing])
            stored = cache.raw({oid for oid in earlier.values()})
            previous = {b.oid: stored[earlier[b.path]] for b in missing if earlier.get(b.path) in stored}
        new = _scan_missing(commit, missing, previous, options=options, facts=facts)
        results.update((oid, FileOutcome.model_validate_json(data)) for oid, data in new)
    if cache is not None:
        cache.store(new, {blob.path: blob.oid for blob in blobs})
    return results


def _scan_missing(
    commit: git_stage.Commit,
    missing: list[git_stage.Blob],
    previous: dict[str, bytes],
    *,
    options: ExtractOptions,
    facts: set[str],
) -> list[tuple[str, bytes]]:
    """Read and scan blobs, the prefilter first; return each one's serialized result."""
    scan_options = options.scan_options
    jobs = min(options.jobs or os.cpu_count() or 1, len(missing))
    # Largest first, so the last batch handed out is a small one and workers finish together.
    ordered = sorted(missing, key=lambda blob: (-blob.size, blob.oid))
    git_stage.prefetch(commit, ordered)
    items = [(blob.oid, previous.get(blob.oid), blob.oid in facts) for blob in ordered]
    parallel = jobs > 1 and sum(blob.size for blob in ordered) >= _PARALLEL_BYTES
    # This process is one of the `jobs`: the others start (and import the parser) first.
    pool = _start_pool(jobs - 1) if parallel else None
    try:
        if pool is not None:
            sizes = [blob.size for blob in ordered]
            return list(_parallel(pool, jobs - 1, commit.git_dir, items, sizes, scan_options))
        out: list[tuple[str, bytes]] = []
        for item in _progress(items, len(items), "scanning"):
            out += _scan_stored(commit.git_dir, [item], scan_options)
        return out
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        git_stage.close_readers()


_RULED_OUT = b'{"kind":"ruled-out"}'
_Item = tuple[str, bytes | None, bool]  # blob id, the previous version's result, whether facts are wanted


def _scan_stored(git_dir: Path, items: Sequence[_Item], scan_options: ScanOptions) -> list[tuple[str, bytes]]:
    """Read blobs from git (this process's own reader) and scan those the prefilter lets through.

    Workers read the blobs they scan themselves: the main process neither reads nor sends them.
    """
    from extractor.scan import could_hold, scan_many

    contents = git_stage.reader(git_dir).read([oid for oid, _, _ in items])
    out: list[tuple[str, bytes]] = []
    to_parse = []
    for (oid, previous, wanted), data in zip(items, contents, strict=True):
        if wanted or could_hold(data, scan_options):
            to_parse.append((oid, data, previous, wanted))
        else:
            out.append((oid, _RULED_OUT))
    return out + scan_many(to_parse, scan_options)


def _warm_up() -> None:
    # Ctrl-C reaches the whole process group: the main process alone handles it and stops the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import extractor.template  # noqa: F401  (libcst: the costly import, done once per worker)


def _start_pool(jobs: int) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    wait_for_writes()  # no thread of this process may hold a lock while it forks

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"), initializer=_warm_up)
    for _ in range(jobs):  # start every worker now rather than on first use
        pool.submit(int)
    return pool


def _parallel(
    pool: ProcessPoolExecutor,
    workers: int,
    git_dir: Path,
    items: Sequence[_Item],
    sizes: Sequence[int],
    scan_options: ScanOptions,
) -> Iterator[tuple[str, bytes]]:
    """Scan in the worker processes and in this one; the caller orders results by path, so output does
    not depend on timing.

    Workers are kept two batches ahead (the largest first); between handing out batches, this process
    scans the smallest one left itself rather than wait, so no core is spent on waiting.
    """
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, Future, wait

    batches: deque[list[_Item]] = deque([[]])
    size = 0
    for item, item_size in zip(items, sizes, strict=True):
        if size >= _BATCH_BYTES or len(batches[-1]) >= _BATCH_FILES:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += item_size

    def done() -> Iterator[list[tuple[str, bytes]]]:
        running: set[Future[list[tuple[str, bytes]]]] = set()
        while batches or running:
            while batches and len(running) < 2 * workers:
                running.add(pool.submit(_scan_stored, git_dir, batches.popleft(), scan_options))
            if batches:
                yield _scan_stored(git_dir, batches.pop(), scan_options)
            else:
                wait(running, return_when=FIRST_COMPLETED)
            for future in [f for f in running if f.done()]:
                running.remove(future)
                yield future.result()

    total = len(batches)
    # The pool's feeding and collecting threads need the GIL while this thread scans: let it go often.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        for results in _progress(done(), total, "scanning", unit="batch"):
            yield from results
    finally:
        sys.setswitchinterval(interval)


def extract_commit(
    commit: git_stage.Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None = None,
) -> Catalog:
    """Extract the catalog of a resolved commit; `pinned_sha` overrides the SHA records point at.

    A catalog made before for the same commit, scope and code is read back and only restamped.
    """
    if not options.cache:
        return _extract_commit(commit, options=options, pinned_sha=pinned_sha, cache=None)
    cache = ScanCache(git_stage.cache_dir(), exceptions=options.exceptions, context=options.context)
    try:
        key = cache.catalog_key(
            {
                "commit": commit.sha,
                "pinned": pinned_sha,
                "repo": options.repo_name or commit.repo_name,
                "scope": options.scope.model_dump(),
            }
        )
        stored = cache.catalog(key)
        if stored is not None:
            restored = _restore(stored, commit, analyzed_at())
            if restored is not None:
                return restored
        catalog = _extract_commit(commit, options=options, pinned_sha=pinned_sha, cache=cache)
        cache.store_catalog(key, _freeze(catalog))
        return catalog
    finally:
        cache.close()  # what is queued is written in the background


def _freeze(catalog: Catalog) -> bytes:
    """Serialize a catalog for the cache: a header line (stamp, manifest, warnings), then records.jsonl."""
    header = {
        "stamp": catalog.manifest.analyzedAt,
        "manifest": catalog.manifest.model_dump(mode="json"),
        "warnings": list(catalog.warnings),
    }
    return orjson.dumps(header) + b"\n" + (catalog.encoded or encode_lines(catalog.lines))


def _restore(data: bytes, commit: git_stage.Commit, stamp: str) -> Catalog | None:
    """Read a stored catalog back with this run's timestamp and revision; None if it does not validate."""
    try:
        head, _, body = data.partition(b"\n")
        header = orjson.loads(head)
        old, new = orjson.dumps(header["stamp"]), orjson.dumps(stamp)
        # Only a key's own value can read `"analyzedAt":"...`: inside a string the quotes are escaped.
        body = body.replace(b'"analyzedAt":' + old, b'"analyzedAt":' + new)
        body = body.replace(b'"datasetVersion":' + old, b'"datasetVersion":' + new)
        lines = tuple(CatalogLine.model_validate_json(line) for line in body.splitlines())
        manifest = Manifest.model_validate({**header["manifest"], "analyzedAt": stamp, "revision": commit.revision})
        return Catalog(lines=lines, manifest=manifest, warnings=tuple(header["warnings"]), encoded=body)
    except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError, ValueError):
        return None


def _extract_commit(
    commit: git_stage.Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None,
    cache: ScanCache | None,
) -> Catalog:
    listed = git_stage.list_blobs(commit, [*options.paths, *options.config_from, options.flags_from])
    blobs = [blob for blob in listed if _under(blob.path, options.paths)]
    if not blobs:
        raise ScopeError(f"no Python file under {', '.join(options.paths)} at {commit.revision} ({commit.sha[:12]})")
    # Config classes and the CLI definition are read for what records' fields mean, in scope or not.
    facts = {
        blob.oid
        for blob in listed
        if blob.is_regular and (_under(blob.path, options.config_from) or blob.path == options.flags_from)
    }
    skipped_files: list[SkippedFile] = []
    regular = []
    for blob in blobs:
        if blob.is_regular:
            regular.append(blob)
        else:
            skipped_files.append(SkippedFile(path=blob.path, reason=f"not a regular file (git mode {blob.mode})"))
    auxiliary = [b for b in listed if b.oid in facts and not _under(b.path, options.paths)]
    gc.disable()  # many small acyclic objects: the cyclic collector would only slow the run down
    try:
        results = _scan_blobs(commit, [*regular, *auxiliary], options=options, cache=cache, facts=facts)
        files: list[tuple[str, Sequence[Site]]] = []
        skipped_sites: list[SkippedSite] = []
        parsed = 0
        for blob in regular:
            result = results[blob.oid]
            if result.kind == "ruled-out":
                continue
            parsed += 1
            if result.kind == "skipped":
                skipped_files.append(SkippedFile(path=blob.path, reason=result.reason or "unknown"))
                continue
            files.append((blob.path, result.sites))
            skipped_sites += [replace(s, path=blob.path) for s in result.skippedSites]
        stamp = analyzed_at()
        run = RunContext(
            repo_name=options.repo_name or commit.repo_name,
            sha=pinned_sha or commit.sha,
            revision=commit.revision,
            committed_at=commit.committed_at,
            analyzed_at=stamp,
        )
        lines = build_records(files, run=run)
        from extractor.fields import FieldIndex

        index = FieldIndex.build(
            classes=[
                c
                for b in listed
                if _under(b.path, options.config_from) and b.oid in facts and b.oid in results
                for c in results[b.oid].classes
            ],
            flags=next(
                (results[b.oid].flags for b in listed if b.path == options.flags_from and b.oid in results), None
            ),
        )
        lines = index.annotate(lines)
    finally:
        gc.enable()
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
    return Catalog(lines=tuple(lines), manifest=manifest, warnings=tuple(warnings), encoded=encode_lines(lines))
