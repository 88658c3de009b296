# Scheduler: blobs -> their scan results, from the cache where it holds them, else scanned in batches
# shared between worker processes and this one.
from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from extractor.model.scanned import ResultData
from extractor.pipeline.cache import Previous, ScanCache, wait_for_writes
from extractor.pipeline.workers import Item, Pool, Result, processes, scan_batch, start, take_ahead
from extractor.repo.git.blobs import Blob, close_readers, prefetch, with_sizes
from extractor.repo.git.commit import Commit
from extractor.util.lifecycle import quick_switching
from extractor.util.progress import bar

if TYPE_CHECKING:
    from concurrent.futures import Future

    from extractor.scanning.scan import ScanOptions

__all__ = ["scan_blobs"]

# Below this much source to parse, starting worker processes costs more than it saves.
_PARALLEL_BYTES = 256 * 1024
# With workers started ahead (by the command line, they import the scan's modules while this process
# imports the rest), this process scans too only from this much source on. Below it, the workers finish
# about as soon, and this process's time goes to what only it does (the cached results, a history's
# previous catalog): a history of vLLM's 95 releases took 114 s of CPU so, 128 s when it always scanned.
_MAIN_SCANS_BYTES = 2 * 1024 * 1024
# Work is handed out in batches, the largest files first, each about 1/_BATCHES_PER_JOB of a process's share
# of what is left, at most this much source (or this many files) and at least _LEAST_BYTES. A batch costs a
# round trip to git, a transaction and a result message: few and large batches are cheaper, but the last
# ones must be small for the processes to end together (a batch a worker holds cannot be taken back).
_BATCH_BYTES = 256 * 1024
_BATCH_FILES = 256
_BATCHES_PER_JOB = 8
_LEAST_BYTES = 16 * 1024
# Each worker is kept this many batches ahead.
_AHEAD = 4


# In a process that extracts revision after revision (a history), what one extraction leaves the next:
# the per-file results of its blobs (by scan options, by blob id), the worker processes (forked once, not
# once per revision from an ever bigger process), and the batches of the next revisions' files the workers
# were given while this process built the last revisions' catalogs (in the order given: nearest first).
# The last extraction's results are kept as serialized too: they go to the workers as the previous
# versions of later files, and serializing them again cost this process some 2 s over vLLM's releases.
@dataclass
class Carried:
    results: dict[ScanOptions, dict[str, ResultData]] = field(default_factory=dict)
    serialized: dict[str, bytes] = field(default_factory=dict)
    pool: Pool | None = None
    ahead: dict[Future[list[Result]], list[Item]] = field(default_factory=dict)


# An extraction to come: its commit, its blobs and those whose facts it wants.
Upcoming = tuple[Commit, Sequence[Blob], set[str]]


@contextmanager
def carrying_scans() -> Iterator[Carried]:
    """What the extractions given it carry from one to the next (`scan_blobs(carried=...)`): each takes the
    per-file results of the blobs the previous one had from memory rather than from the cache (the same
    data: a result depends on the blob and the options alone), the worker processes are kept from one
    extraction to the next (shut down when the block ends), and an extraction told which ones come next
    (`then`) hands their new files to the workers as soon as its own are scanned."""
    carried = Carried()
    try:
        # The workers scan ahead while this process builds each revision's checks: the pool's feeding and
        # collecting threads need the GIL then too, or each batch a worker ends waits for the next.
        with quick_switching():
            yield carried
    finally:
        if carried.pool is not None:
            carried.pool.executor.shutdown(cancel_futures=True)


def scan_blobs(
    commit: Commit,
    blobs: Sequence[Blob],
    *,
    scan_options: ScanOptions,
    jobs: int | None,
    cache: ScanCache,
    facts: set[str],
    then: Sequence[Upcoming] = (),
    carried: Carried | None = None,
) -> dict[str, ResultData]:
    """Scan blobs by id (see _scan_new), taking those the previous extraction had from memory when
    results are `carried` (see carrying_scans). `then` are the extractions that come next, nearest first:
    when results are carried, the workers start on their new files once these are done."""
    if carried is None:
        return _scan_new(commit, blobs, scan_options=scan_options, jobs=jobs, cache=cache, facts=facts)
    before = carried.results.get(scan_options, {})
    # A config or CLI file's result must hold its facts: one scanned for its sites alone is not taken.
    results = {
        blob.oid: found
        for blob in blobs
        if (found := before.get(blob.oid)) is not None and (blob.oid not in facts or found.get("facts"))
    }
    # The batches given ahead that hold a blob this extraction needs are taken (or taken back); those of
    # later extractions only are left running.
    needed = {(blob.oid, blob.oid in facts) for blob in blobs if blob.oid not in results}
    running = {
        future: items
        for future, items in carried.ahead.items()
        if any((oid, wanted) in needed for oid, _, wanted, _ in items)
    }
    for future in running:
        del carried.ahead[future]
    given = {(oid, wanted) for items in running.values() for oid, _, wanted, _ in items}
    left = needed - given  # (once: in the comprehension's test it would be made again for every blob)
    rest = [blob for blob in blobs if (blob.oid, blob.oid in facts) in left]
    # What the cache holds of the next extractions' blobs is asked now: once this one stores its results,
    # the cache is only written to. Only of those this one does not have (most of a revision's blobs are
    # the last one's): they will be in its results.
    here = {blob.oid for blob in blobs}
    upcoming = {blob.oid for _, later, _ in then for blob in later if blob.oid not in here}
    held = cache.held(sorted(upcoming)) if upcoming else set()
    serialized = {oid: data for oid in results if (data := carried.serialized.get(oid)) is not None}
    if rest or running:
        results.update(
            _scan_new(
                commit,
                rest,
                scan_options=scan_options,
                jobs=jobs,
                cache=cache,
                facts=facts,
                running=running,
                serialized=serialized,
                carried=carried,
            )
        )
    carried.results[scan_options], carried.serialized = results, serialized
    if carried.pool is not None:
        previous = blobs
        for later in then:  # each with the blobs of the revision just before it, whose results it may reuse
            carried.ahead.update(_scan_ahead(carried, *later, previous, results, scan_options=scan_options, held=held))
            previous = later[1]
    return results


def _scan_ahead(
    carried: Carried,
    commit: Commit,
    upcoming: Sequence[Blob],
    facts: set[str],
    blobs: Sequence[Blob],
    results: dict[str, ResultData],
    *,
    scan_options: ScanOptions,
    held: set[str],
) -> dict[Future[list[Result]], list[Item]]:
    """Hand the workers the blobs of a later extraction that neither the results, the cache (`held`)
    nor the batches already given ahead hold, each with the result of its path's blob in `blobs`, those of
    the revision just before it (what it may reuse), and return the batches by their futures. A blob whose
    path's blob there has no result yet waits for a later call (it would reuse less), unless it is read
    for its facts (never rescanned in pieces). This process does not wait for them: the extraction that needs them
    takes them (or takes them back). The workers are the `carried` pool."""
    pool = carried.pool
    assert pool is not None
    given = {(oid, wanted) for items in carried.ahead.values() for oid, _, wanted, _ in items}
    here = {blob.path: blob.oid for blob in blobs}
    unique = [
        blob
        for blob in {blob.oid: blob for blob in upcoming}.values()
        if blob.oid not in results
        and blob.oid not in held
        and (blob.oid, blob.oid in facts) not in given
        and (blob.oid in facts or blob.path not in here or here[blob.path] in results)
    ]
    if not unique:
        return {}
    previous = {
        blob.oid: carried.serialized.get(old) or orjson.dumps(results[old])
        for blob in unique
        if (old := here.get(blob.path)) is not None and old in results
    }
    batches = _cut(_largest_first(_ready(commit, unique)), previous, facts, scanners=pool.workers + 1)
    return {pool.executor.submit(scan_batch, commit.git_dir, batch, scan_options): batch for batch in batches}


def _scan_new(
    commit: Commit,
    blobs: Sequence[Blob],
    *,
    scan_options: ScanOptions,
    jobs: int | None,
    cache: ScanCache,
    facts: set[str],
    running: dict[Future[list[Result]], list[Item]] | None = None,
    serialized: dict[str, bytes] | None = None,
    carried: Carried | None = None,
) -> dict[str, ResultData]:
    """Scan blobs by id: from the cache where it holds them, else in parallel, storing what is new.

    Results are read back as data (a FileResult's JSON). Blobs in `facts` are read for their classes and
    flags, even if they hold no site. `jobs` counts the processes that scan, this one
    included (None: one per core). `running` are batches the workers were given ahead (see _scan_ahead):
    their results are taken too. The cached results are read once the workers have their first batches,
    or once the scan is over. `serialized`, if given, gets each result as serialized. `carried`: what the
    extractions of a history carry (their worker pool among it).
    """
    running = running or {}
    unique = list({blob.oid: blob for blob in blobs}.values())
    held = cache.held([blob.oid for blob in unique])
    # A config or CLI file's entry must hold its facts: one scanned for its sites alone is scanned again.
    stored = cache.get_many(sorted(facts & held))
    results = {oid: result for oid, data in stored.items() if (result := orjson.loads(data)).get("facts")}
    if serialized is not None:
        serialized.update((oid, stored[oid]) for oid in results)
    missing = [blob for blob in unique if blob.oid not in results and (blob.oid not in held or blob.oid in facts)]
    missing = _ready(commit, missing)
    # Workers start before anything else is read from the cache: they import the parser meanwhile.
    pool = _pool(missing, jobs, cache, carried)
    new: list[Result] = []
    fresh: dict[str, ResultData] = {}  # `new`, parsed as it comes
    entries = held - facts  # the results read from the cache as they are
    cached: dict[str, ResultData] = {}

    def read_cached() -> None:  # (parsed here too: while this process would wait, if it ever does)
        read = cache.get_many(sorted(entries))
        cached.update((oid, orjson.loads(data)) for oid, data in read.items())
        if serialized is not None:
            serialized.update(read)

    later = carried.ahead if carried is not None else None
    scan = functools.partial(
        _scan_missing, commit, options=scan_options, pool=pool, facts=facts, into=new, parsed=fresh, later=later
    )
    try:
        if missing or running:
            scan(missing, cache.previous_results(missing), idle=read_cached, running=running)
        else:
            read_cached()
        # An entry that did not check out is scanned now (it is rare; those of facts were scanned above).
        broken = _ready(commit, [blob for blob in unique if blob.oid in entries and blob.oid not in cached])
        if broken:
            scan(broken, _none, idle=None)
    finally:
        try:  # what was scanned is kept, even if the rest was not (an interruption, a damaged blob)
            if new:
                cache.store_entries(new)
        finally:
            if pool is not None and (carried is None or pool is not carried.pool):
                pool.executor.shutdown(cancel_futures=True)
    cache.store_paths({blob.path: blob.oid for blob in blobs})
    if serialized is not None:
        serialized.update(new)
    results.update(cached)
    results.update(fresh)
    return results


def _ready(commit: Commit, blobs: list[Blob]) -> list[Blob]:
    """Blobs about to be scanned, here (fetched at once in a blob-filtered clone) and with their sizes,
    which order and cut the work."""
    if not blobs:
        return blobs
    prefetch(commit, blobs)
    return with_sizes(commit, blobs)


def _pool(missing: Sequence[Blob], jobs: int | None, cache: ScanCache, carried: Carried | None) -> Pool | None:
    """The worker processes that scan beside this one: those started ahead if there is anything to scan,
    else (a library caller's extraction) as many as `jobs` allows, none below _PARALLEL_BYTES of source.
    When results are `carried`, the pool is kept for the next extractions (forked once, whatever the size)."""
    if carried is not None and carried.pool is not None:
        return carried.pool
    if not missing:
        return None
    pool = take_ahead()
    if pool is None:
        jobs = processes(jobs)
        if carried is None:  # for this extraction alone: only as many as it has files, and enough source
            jobs = min(jobs, len(missing))
            if sum(blob.size or 0 for blob in missing) < _PARALLEL_BYTES:
                return None
        if jobs < 2:
            return None
        cache.release()  # no SQLite connection may cross the fork
        wait_for_writes()  # no thread of this process may hold a lock while it forks
        pool = start(jobs - 1)
    if carried is not None:
        carried.pool = pool
    return pool


def _scan_missing(
    commit: Commit,
    missing: list[Blob],
    previous: Previous,
    *,
    options: ScanOptions,
    pool: Pool | None,
    facts: set[str],
    into: list[Result],
    parsed: dict[str, ResultData],
    idle: Callable[[], None] | None,
    running: dict[Future[list[Result]], list[Item]] | None = None,
    later: dict[Future[list[Result]], list[Item]] | None = None,
) -> None:
    """Read and scan blobs, the prefilter first, in this process and the pool's (if any); add each one's
    serialized result to `into` as it comes (what was scanned before an interruption is kept), and its
    parsed result to `parsed`. `idle` is work for this process, done once: as soon as the workers have
    their first batches, else once the scan is over. `running` are batches the pool was
    given before (taken back if not started, else waited for); `later`, those given for later extractions
    (this process scans one of them rather than wait)."""
    ordered = _largest_first(missing)
    # This process scans too for a big scan, or to take back batches given ahead (the next to be done).
    total = sum(blob.size or 0 for blob in ordered)
    main_scans = pool is None or not pool.ahead or total >= _MAIN_SCANS_BYTES or bool(running)
    work = _Work(ordered, previous, facts, scanners=(pool.workers if pool is not None else 0) + main_scans)
    files = len(work) + sum(len(items) for items in (running or {}).values())
    try:
        done: Iterator[list[Result]]
        if pool is not None:

            def spare(results: list[Result]) -> None:  # a later extraction's batch, scanned rather than wait
                into.extend(results)
                parsed.update((oid, orjson.loads(data)) for oid, data in results)

            done = _shared(
                pool,
                commit.git_dir,
                work,
                options,
                idle,
                main_scans=main_scans,
                running=running,
                later=later,
                spare=spare,
            )
        else:

            def alone() -> Iterator[list[Result]]:
                while work:
                    yield scan_batch(commit.git_dir, work.first(), options)

            done = alone()
        for results in bar(done, files, "scanning", size=len):
            into += results
            # Parsed now, not after the scan: the work shares the cores with the scan instead of following
            # it on one (this process scans that much less, or parses while it would wait).
            parsed.update((oid, orjson.loads(data)) for oid, data in results)
        if pool is None and idle is not None:
            idle()
    finally:
        close_readers()


def _largest_first(blobs: Sequence[Blob]) -> list[Blob]:
    """Blobs largest first, so the last batch handed out is a small one and workers finish together (a
    size git cannot tell goes first: reading that blob will say what is wrong)."""
    return sorted(blobs, key=lambda blob: (blob.size is not None, -(blob.size or 0), blob.oid))


def _none(oids: Sequence[str]) -> Mapping[str, bytes]:
    return {}


def _known(previous: Mapping[str, bytes]) -> Previous:
    return lambda oids: previous


class _Work:
    """Work items (blob id, its previous version's result, whether its facts are wanted, its path), the
    largest blobs first, cut into batches as they are handed out: the largest from the front, the
    smallest from the back, each sized by what is left (see _BATCH_BYTES), so batches shrink as the
    work runs out. The previous versions' results are read as a batch is cut (`previous`)."""

    def __init__(self, ordered: Sequence[Blob], previous: Previous, facts: set[str], *, scanners: int) -> None:
        self._items = deque(((blob.oid, blob.oid in facts, blob.path), blob.size or 0) for blob in ordered)
        self._previous = previous
        self._left = sum(size for _, size in self._items)
        self._scanners = max(1, scanners)

    def __len__(self) -> int:
        return len(self._items)

    def first(self) -> list[Item]:
        """A batch of the largest items left."""
        return self._take(self._items.popleft)

    def last(self) -> list[Item]:
        """A batch of the smallest items left."""
        return self._take(self._items.pop)

    def _take(self, pop: Callable[[], tuple[tuple[str, bool, str], int]]) -> list[Item]:
        limit = min(_BATCH_BYTES, max(_LEAST_BYTES, self._left // (self._scanners * _BATCHES_PER_JOB)))
        taken: list[tuple[str, bool, str]] = []
        size = 0
        while self._items and size < limit and len(taken) < _BATCH_FILES:
            item, item_size = pop()
            taken.append(item)
            size += item_size
        self._left -= size
        previous = self._previous([oid for oid, _, _ in taken])
        return [(oid, previous.get(oid), wanted, path) for oid, wanted, path in taken]


def _cut(ordered: Sequence[Blob], previous: dict[str, bytes], facts: set[str], *, scanners: int) -> list[list[Item]]:
    """The work items of blobs (see _Work) cut into batches at once, the largest first."""
    work = _Work(ordered, _known(previous), facts, scanners=scanners)
    batches = []
    while work:
        batches.append(work.first())
    return batches


def _shared(
    pool: Pool,
    git_dir: Path,
    work: _Work,
    scan_options: ScanOptions,
    idle: Callable[[], None] | None,
    *,
    main_scans: bool,
    running: dict[Future[list[Result]], list[Item]] | None = None,
    later: dict[Future[list[Result]], list[Item]] | None = None,
    spare: Callable[[list[Result]], None] | None = None,
) -> Iterator[list[Result]]:
    """Scan batches in the worker processes, and in this one if `main_scans`, yielding each batch's
    results as it is done (the caller orders results by path, so output does not depend on timing).

    Each worker is kept _AHEAD batches ahead (the largest first). This process does `idle` first, once
    the workers have theirs: done when nothing was left, it held up the end of the scan on one core.
    Then, between handing out batches, it scans the smallest one left itself rather than wait, so no
    core is spent on waiting; when none is left, it takes back those handed out that no worker has
    started yet, and only then waits. In a history, `later` are the batches given ahead for later
    revisions (of the same repository): rather than wait, this process takes those back too, one at a
    time, and hands their results to `spare`.
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    running = dict(running or {})  # in the order handed out
    # The pool's feeding and collecting threads need the GIL while this thread scans: let it go often.
    with quick_switching():
        while work or running:
            while work and len(running) < _AHEAD * pool.workers:
                batch = work.first()
                running[pool.executor.submit(scan_batch, git_dir, batch, scan_options)] = batch
            if idle is not None:  # first, while the workers start: done last, it kept them waiting
                idle()
                idle = None
            elif main_scans and work:
                yield scan_batch(git_dir, work.last(), scan_options)
            elif main_scans and (taken := _take_back(running)) is not None:
                yield scan_batch(git_dir, taken, scan_options)
            elif (
                main_scans
                and later
                and spare is not None
                and not any(future.done() for future in running)
                and (taken := _take_back(later)) is not None
            ):
                spare(scan_batch(git_dir, taken, scan_options))
            else:
                wait(running, return_when=FIRST_COMPLETED)
            for future in [f for f in running if f.done()]:
                del running[future]
                yield future.result()
    if idle is not None:
        idle()


def _take_back(running: dict[Future[list[Result]], list[Item]]) -> list[Item] | None:
    """Cancel the last batch handed out that no worker has started and return it (None: all have started)."""
    for future in reversed(running):
        if future.cancel():
            return running.pop(future)
    return None
