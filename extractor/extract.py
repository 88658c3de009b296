# Extract: the pipeline of one run, git -> scan -> records, returning a catalog in memory.
from __future__ import annotations

import gc
import os
import posixpath
import re
import signal
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from pydantic import ValidationError

from extractor import git as git_stage
from extractor._version import __version__
from extractor.cache import ScanCache, wait_for_writes
from extractor.errors import ExtractorError, ScopeError
from extractor.lifecycle import STOP_SIGNALS, die_with_parent
from extractor.models import (
    CatalogLine,
    Counts,
    FileOutcome,
    Manifest,
    Scope,
    SkippedFile,
    SkippedSite,
    construct,
)
from extractor.records import RunContext, SiteData, build_records

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from extractor.scan import ScanOptions

__all__ = [
    "Catalog",
    "ExtractOptions",
    "analyzed_at",
    "carrying_results",
    "extract",
    "extract_commit",
    "linger",
    "scope_path",
]

T = TypeVar("T")


@dataclass(frozen=True)
class ExtractOptions:
    """The scope of an extraction: which paths, which classes, how much context."""

    paths: tuple[str, ...] = ("vllm/config",)
    exceptions: tuple[str, ...] = ("ValueError",)
    context: int = 18
    repo_name: str | None = None
    jobs: int | None = None  # processes that scan, the main one included; None means one per core
    cache: bool = True
    config_from: tuple[str, ...] = ("vllm/config",)
    flags_from: str = "vllm/engine/arg_utils.py"

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", tuple(scope_path(path) for path in self.paths))
        object.__setattr__(self, "config_from", tuple(scope_path(path) for path in self.config_from))
        object.__setattr__(self, "flags_from", self.flags_from.strip("/"))

    @property
    def scan_options(self) -> ScanOptions:
        from extractor.scan import ScanOptions

        return ScanOptions(exceptions=self.exceptions, context=self.context)

    @classmethod
    def of_scope(cls, scope: Scope) -> ExtractOptions:
        """Return the options a catalog of `scope` was extracted with (the inverse of `scope`)."""
        return cls(
            paths=tuple(scope.paths),
            exceptions=tuple(scope.exceptions),
            context=scope.context,
            config_from=tuple(scope.configFrom),
            flags_from=scope.flagsFrom,
        )

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
    """An extracted catalog: records.jsonl as written, the manifest that describes it, and its lines
    (read from the JSONL, and validated, the first time they are asked for)."""

    encoded: bytes
    manifest: Manifest
    warnings: tuple[str, ...] = field(default=())

    @cached_property
    def lines(self) -> tuple[CatalogLine, ...]:
        return tuple(CatalogLine.model_validate_json(line) for line in self.encoded.splitlines())


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
    from extractor.progress import bar

    return bar(items, total, label, unit=unit)


def extract(*, repo: str, revision: str, options: ExtractOptions) -> Catalog:
    """Extract the catalog of `revision` in `repo` for the given scope."""
    commit = git_stage.resolve(repo, revision)
    return extract_commit(commit, options=options)


# What runs leave behind, kept rather than freed in a process that is to end without tearing down (the
# command line leaves with os._exit): freeing a whole package's results and lines takes 20 ms for nothing.
_lingering: list[object] | None = None


def linger() -> None:
    """Keep what extractions leave behind instead of freeing it (for a process about to os._exit)."""
    global _lingering
    _lingering = []


# Below this much source to parse, starting worker processes costs more than it saves.
_PARALLEL_BYTES = 256 * 1024
# Work is handed to workers in batches of about this much source (or this many files), largest first.
# A batch costs a round trip to git, a transaction and a result message: few and large batches are
# cheaper, but there must be enough of them (about 8 per process) for the processes to end together.
_BATCH_BYTES = 256 * 1024
_BATCH_FILES = 256
_BATCHES_PER_JOB = 8


def scope_path(prefix: str) -> str:
    """A path prefix as a scope records it: no leading ./ or /, no trailing or doubled slash; the whole
    repository ('', '/', '.', './') is '.'."""
    return posixpath.normpath(prefix.strip("/") or ".")


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(p == "." or path == p or path.startswith(p + "/") for p in prefixes)


# Per-file results carried from one extraction to the next, in a process that extracts revision after
# revision (a history): by scan options, the results of the last extraction's blobs, by blob id.
_carried: dict[tuple[tuple[str, ...], int], dict[str, dict[str, Any]]] | None = None


@contextmanager
def carrying_results() -> Iterator[None]:
    """Within this, each extraction takes the per-file results of the blobs the previous one had from
    memory rather than from the cache (the same data: a result depends on the blob and the options alone)."""
    global _carried
    _carried = {}
    try:
        yield
    finally:
        _carried = None


def _scan_blobs(
    commit: git_stage.Commit,
    blobs: Sequence[git_stage.Blob],
    *,
    options: ExtractOptions,
    cache: ScanCache | None,
    facts: set[str],
) -> dict[str, dict[str, Any]]:
    """Scan blobs by id (see _scan_new), taking those the previous extraction had from memory when
    results are carried (see carrying_results)."""
    if _carried is None:
        return _scan_new(commit, blobs, options=options, cache=cache, facts=facts)
    key = (options.exceptions, options.context)
    before = _carried.get(key, {})
    # A config or CLI file's result must hold its facts: one scanned for its sites alone is not taken.
    results = {
        blob.oid: found
        for blob in blobs
        if (found := before.get(blob.oid)) is not None and (blob.oid not in facts or found.get("facts"))
    }
    rest = [blob for blob in blobs if blob.oid not in results]
    if rest:
        results.update(_scan_new(commit, rest, options=options, cache=cache, facts=facts))
    _carried[key] = results
    return results


def _scan_new(
    commit: git_stage.Commit,
    blobs: Sequence[git_stage.Blob],
    *,
    options: ExtractOptions,
    cache: ScanCache | None,
    facts: set[str],
) -> dict[str, dict[str, Any]]:
    """Scan blobs by id: from the cache where it holds them, else in parallel, storing what is new.

    Results are read back as data (a FileResult's JSON). Blobs in `facts` are parsed whole for their
    classes and flags, even if they hold no site.
    """
    unique = list({blob.oid: blob for blob in blobs}.values())
    held = cache.held([blob.oid for blob in unique]) if cache is not None else set()
    # A config or CLI file's entry must hold its facts: one scanned for its sites alone is scanned again.
    results = {oid: orjson.loads(data) for oid, data in _read(cache, facts & held).items()}
    results = {oid: result for oid, result in results.items() if result.get("facts")}
    missing = [blob for blob in unique if blob.oid not in results and (blob.oid not in held or blob.oid in facts)]
    # Workers start before anything else is read from the cache: they import the parser meanwhile.
    workers = _workers(missing, options)
    pool = _start_pool(workers, cache) if workers else None
    new: list[tuple[str, bytes]] = []
    entries = held - facts  # the results read from the cache as they are
    cached: dict[str, bytes] = {}

    def read_cached() -> None:
        cached.update(_read(cache, entries))

    try:
        if missing:
            previous: dict[str, bytes] = {}
            if cache is not None:
                earlier = cache.previous_versions([blob.path for blob in missing])
                stored = cache.get_many(sorted(set(earlier.values())))
                previous = {b.oid: stored[earlier[b.path]] for b in missing if earlier.get(b.path) in stored}
            _scan_missing(
                commit,
                missing,
                previous,
                options=options,
                facts=facts,
                pool=pool,
                workers=workers,
                into=new,
                idle=read_cached,
            )
        else:
            read_cached()
        # An entry that did not check out is scanned now (it is rare; those of facts were scanned above).
        broken = [blob for blob in unique if blob.oid in entries and blob.oid not in cached]
        if broken:
            _scan_missing(
                commit, broken, {}, options=options, facts=facts, pool=pool, workers=workers, into=new, idle=None
            )
    finally:
        try:  # what was scanned is kept, even if the rest was not (an interruption, a damaged blob)
            if cache is not None and new:
                cache.store_entries(new)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
    if cache is not None:
        cache.store_paths({blob.path: blob.oid for blob in blobs})
    # The results are parsed only now: the scan above did not wait for them.
    results.update((oid, orjson.loads(data)) for oid, data in [*cached.items(), *new])
    return results


def _read(cache: ScanCache | None, oids: set[str]) -> dict[str, bytes]:
    return cache.get_many(sorted(oids)) if cache is not None and oids else {}


def _workers(missing: Sequence[git_stage.Blob], options: ExtractOptions) -> int:
    """How many worker processes scan beside this one: none below _PARALLEL_BYTES of source."""
    jobs = min(options.jobs or os.cpu_count() or 1, len(missing))
    return jobs - 1 if jobs > 1 and sum(blob.size or 0 for blob in missing) >= _PARALLEL_BYTES else 0


def _scan_missing(
    commit: git_stage.Commit,
    missing: list[git_stage.Blob],
    previous: dict[str, bytes],
    *,
    options: ExtractOptions,
    facts: set[str],
    pool: ProcessPoolExecutor | None,
    workers: int,
    into: list[tuple[str, bytes]],
    idle: Callable[[], None] | None,
) -> None:
    """Read and scan blobs, the prefilter first, in this process and the pool's (if any); add each one's
    serialized result to `into` as it comes. `idle` is work for this process, done once: the first time
    it would otherwise wait for the workers, else once the scan is over."""
    scan_options = options.scan_options
    # Largest first, so the last batch handed out is a small one and workers finish together (a size
    # git cannot tell goes first: reading that blob will say what is wrong).
    ordered = sorted(missing, key=lambda blob: (blob.size is not None, -(blob.size or 0), blob.oid))
    git_stage.prefetch(commit, ordered)
    total = sum(blob.size or 0 for blob in ordered)
    limit = min(_BATCH_BYTES, max(16 * 1024, total // ((workers + 1) * _BATCHES_PER_JOB)))
    items = [(blob.oid, previous.get(blob.oid), blob.oid in facts, blob.path) for blob in ordered]
    batches = _batches(items, ordered, limit)
    try:
        if pool is not None:
            into.extend(_parallel(pool, workers, commit.git_dir, batches, scan_options, idle))
            return
        for batch in _progress(batches, len(batches), "scanning", unit="batch"):
            into += _scan_read(commit.git_dir, batch, scan_options)
        if idle is not None:
            idle()
    finally:
        git_stage.close_readers()


_RULED_OUT = b'{"kind":"ruled-out"}'
# Blob id, the previous version's result, whether facts are wanted, a path it has (to name it in errors).
_Item = tuple[str, bytes | None, bool, str]


def _batches(items: Sequence[_Item], blobs: Sequence[git_stage.Blob], limit: int) -> list[list[_Item]]:
    """Cut work into batches of about `limit` bytes of source (or _BATCH_FILES files), in order."""
    batches: list[list[_Item]] = [[]]
    size = 0
    for item, blob in zip(items, blobs, strict=True):
        if size >= limit or len(batches[-1]) >= _BATCH_FILES:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += blob.size or 0
    return batches


def _scan_read(git_dir: Path, items: Sequence[_Item], scan_options: ScanOptions) -> list[tuple[str, bytes]]:
    """Read blobs from git (this process's own reader) and scan those the prefilter lets through; what a
    blob gives depends on its bytes and the options alone, whichever process scans it.

    Workers read what they scan themselves: the main process does not send them blobs.
    """
    from extractor.scan import could_hold, scan_many

    contents = git_stage.reader(git_dir).read([item[0] for item in items], [item[3] for item in items])
    out: list[tuple[str, bytes]] = []
    to_parse = []
    for (oid, previous, wanted, _), data in zip(items, contents, strict=True):
        if wanted or could_hold(data, scan_options):
            to_parse.append((oid, data, previous, wanted))
        else:
            out.append((oid, _RULED_OUT))
    out += scan_many(to_parse, scan_options)
    return out


def _warm_up(parent: int) -> None:
    # Ctrl-C reaches the whole process group: the main process alone handles it and stops the pool.
    # TERM and HUP end a worker at once (the pool's own way to stop one), whatever the main process
    # handles them with. A main process killed outright takes its workers with it: else they would
    # wait forever for work, holding its stdout open.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for number in STOP_SIGNALS[1:]:
        signal.signal(number, signal.SIG_DFL)
    die_with_parent(parent)
    # Forked while the main process runs without the cyclic collector, workers keep it off: scanning
    # makes acyclic objects, the pool lives for one extraction, and collecting cost 2% of a whole-package
    # run (peak memory, summed over the processes, stays near 225 MiB: scripts/bench.py measures it).
    gc.disable()
    import extractor.template  # noqa: F401  (libcst: the costly import, done once per worker)


def _start_pool(workers: int, cache: ScanCache | None) -> ProcessPoolExecutor:
    """Start the worker processes: forked, they import the parser while this process reads the cache."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if cache is not None:
        cache.release()  # no SQLite connection may cross the fork
    wait_for_writes()  # no thread of this process may hold a lock while it forks
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_warm_up, initargs=(os.getpid(),))
    for _ in range(workers):  # start every worker now rather than on first use
        pool.submit(int)
    return pool


def _parallel(
    pool: ProcessPoolExecutor,
    workers: int,
    git_dir: Path,
    batches: list[list[_Item]],
    scan_options: ScanOptions,
    idle: Callable[[], None] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Scan in the worker processes and in this one; the caller orders results by path, so output does
    not depend on timing.

    Each worker is kept up to four batches ahead (the largest first); between handing out batches, this
    process scans the smallest one left itself rather than wait, so no core is spent on waiting. When
    none is left, it takes back those handed out that no worker has started yet, then does `idle`,
    and only then waits; `idle` is done once, at the end if never before.
    """
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, Future, wait

    pending = deque(batches)

    def done() -> Iterator[list[tuple[str, bytes]]]:
        running: dict[Future[list[tuple[str, bytes]]], list[_Item]] = {}  # in the order handed out
        chore = idle
        while pending or running:
            while pending and len(running) < 4 * workers:
                batch = pending.popleft()
                running[pool.submit(_scan_read, git_dir, batch, scan_options)] = batch
            if pending:
                yield _scan_read(git_dir, pending.pop(), scan_options)
            # Nothing left to hand out: take back the last batch handed out that no worker has started.
            elif (taken := next((f for f in reversed(running) if f.cancel()), None)) is not None:
                yield _scan_read(git_dir, running.pop(taken), scan_options)
            elif chore is not None and not any(future.done() for future in running):
                chore()
                chore = None
            else:
                wait(running, return_when=FIRST_COMPLETED)
            for future in [f for f in running if f.done()]:
                del running[future]
                yield future.result()
        if chore is not None:
            chore()

    # The pool's feeding and collecting threads need the GIL while this thread scans: let it go often.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        for results in _progress(done(), len(batches), "scanning", unit="batch"):
            yield from results
    finally:
        sys.setswitchinterval(interval)


# A raise statement naming a class (`raise Name`, `raise pkg.Name(...)`): the class's last part is the name.
_RAISE = re.compile(rb"^[ \t]*raise[ \t]+(?:[A-Za-z_]\w*\.)*([A-Z]\w*)", re.M)


def _check_raised(commit: git_stage.Commit, blobs: Sequence[git_stage.Blob], options: ExtractOptions) -> None:
    """Refuse a scope that finds nothing where its files do raise: the classes asked for are likely mistyped.

    Only on this path are the files read again, for the classes they raise (read from the text: a hint).
    """
    from extractor.suggest import close_to, nearest

    raised: Counter[str] = Counter()
    for _, data in git_stage.read_blobs(commit, blobs):
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
        f"no raise of {' or '.join(asked)} under {', '.join(options.paths)} at {commit.revision} "
        f"({commit.sha[:12]}), where the files raise {shown}{hint}"
    )


def extract_commit(
    commit: git_stage.Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None = None,
    keep: bool = True,
) -> Catalog:
    """Extract the catalog of a resolved commit; `pinned_sha` overrides the SHA records point at.

    A catalog made before for the same commit, scope and code is read back and only restamped; a new one
    is kept in the cache too unless `keep` is false (a history of many revisions keeps per-file results only).
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
        if keep:
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
    return orjson.dumps(header) + b"\n" + catalog.encoded


def _restore(data: bytes, commit: git_stage.Commit, stamp: str) -> Catalog | None:
    """Read a stored catalog back with this run's timestamp and revision; None if it does not validate.

    The cache hands back exactly the bytes `_freeze` made (it checks them): the lines are not parsed
    here, only when a caller asks for them.
    """
    try:
        head, _, body = data.partition(b"\n")
        header = orjson.loads(head)
        old, new = orjson.dumps(header["stamp"]), orjson.dumps(stamp)
        # Only a key's own value can read `"analyzedAt":"...`: inside a string the quotes are escaped.
        body = body.replace(b'"analyzedAt":' + old, b'"analyzedAt":' + new)
        body = body.replace(b'"datasetVersion":' + old, b'"datasetVersion":' + new)
        manifest = Manifest.model_validate({**header["manifest"], "analyzedAt": stamp, "revision": commit.revision})
        if body.count(b"\n") != manifest.counts.records:
            return None
        return Catalog(encoded=body, manifest=manifest, warnings=tuple(header["warnings"]))
    except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError, ValueError):
        return None


def _extract_commit(
    commit: git_stage.Commit,
    *,
    options: ExtractOptions,
    pinned_sha: str | None,
    cache: ScanCache | None,
) -> Catalog:
    every = git_stage.list_blobs(commit, [*options.paths, *options.config_from, options.flags_from])
    blobs = [blob for blob in every if _under(blob.path, options.paths)]
    if not blobs:
        raise ScopeError(f"no Python file under {', '.join(options.paths)} at {commit.revision} ({commit.sha[:12]})")
    # A name that is not UTF-8 cannot be written in a record (JSON is UTF-8): its file is a named skip.
    listed = [blob for blob in every if git_stage.is_utf8(blob.path)]
    # Config classes and the CLI definition are read for what records' fields mean, in scope or not.
    facts = {
        blob.oid
        for blob in listed
        if blob.is_regular and (_under(blob.path, options.config_from) or blob.path == options.flags_from)
    }
    skipped_files: list[SkippedFile] = []
    regular = []
    for blob in blobs:
        if not git_stage.is_utf8(blob.path):
            name = git_stage.printable(blob.path)
            skipped_files.append(SkippedFile(path=name, reason="the file name is not UTF-8 (shown with \\x escapes)"))
        elif blob.is_regular:
            regular.append(blob)
        else:
            skipped_files.append(SkippedFile(path=blob.path, reason=f"not a regular file (git mode {blob.mode})"))
    auxiliary = [b for b in listed if b.oid in facts and not _under(b.path, options.paths)]
    collecting = gc.isenabled()
    gc.disable()  # many small acyclic objects: the cyclic collector would only slow the run down
    try:
        results = _scan_blobs(commit, [*regular, *auxiliary], options=options, cache=cache, facts=facts)
        files: list[tuple[str, list[SiteData]]] = []
        skipped_sites: list[SkippedSite] = []
        parsed = 0
        for blob in regular:
            result = results[blob.oid]
            if result["kind"] == "ruled-out" or (blob.oid not in facts and not result.get("couldHold", True)):
                continue
            parsed += 1
            if result["kind"] == "skipped":
                skipped_files.append(SkippedFile(path=blob.path, reason=result.get("reason") or "unknown"))
                continue
            files.append((blob.path, result["sites"]))
            skipped_sites += [construct(SkippedSite, **{**s, "path": blob.path}) for s in result["skippedSites"]]
        stamp = analyzed_at()
        run = RunContext(
            repo_name=options.repo_name or commit.repo_name,
            sha=pinned_sha or commit.sha,
            revision=commit.revision,
            committed_at=commit.committed_at,
            analyzed_at=stamp,
        )
        lines, reads = build_records(files, run=run)
        if not lines and "*" not in options.exceptions:
            _check_raised(commit, regular, options)
        from extractor.fields import FieldIndex

        def facts_of(blob: git_stage.Blob) -> FileOutcome:
            return FileOutcome.model_validate(results[blob.oid])

        index = FieldIndex.build(
            classes=[
                c
                for b in listed
                if _under(b.path, options.config_from) and b.oid in facts and b.oid in results
                for c in facts_of(b).classes
            ],
            flags=next((facts_of(b).flags for b in listed if b.path == options.flags_from and b.oid in results), None),
        )
        lines = index.annotate(lines, reads)
        encoded = b"".join([orjson.dumps(line) + b"\n" for line in lines])
    finally:
        # Woken now, the collector would walk every object made meanwhile, mostly alive and acyclic (some
        # 90 ms on a whole package, for nothing). A process that is to leave without tearing down moves
        # them out of its sight first; elsewhere freezing would keep any garbage cycle of the caller's.
        if _lingering is not None:
            gc.freeze()
        if collecting:
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
    if _lingering is not None:
        _lingering.append((results, files, lines, reads))
    return Catalog(encoded=encoded, manifest=manifest, warnings=tuple(warnings))
