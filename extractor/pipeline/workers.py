# Workers: the processes that scan beside the main one, forked for an extraction, or ahead of it by the
# command line, which forks them before it imports anything costly.
"""A worker is forked, becomes one of the extractor's workers (lifecycle.become_worker) and imports the
scan's modules (the scan never imports pydantic; libcst only for a message the quick reading leaves)
before its first batch.

A library caller's extraction forks its workers when it knows it has enough to scan (scheduler.py).
The command line knows earlier that it will extract, and forks them first thing (`start_ahead`): they
import the parser while the main process imports the pipeline's modules and lists the scope, on the
other cores. A pool started ahead that no scan takes (the catalog came from the cache) is left alone:
the command line leaves with os._exit, and the kernel ends its workers with it (die_with_parent).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from extractor.util.lifecycle import become_worker, hold_workers, in_command_line_process, take_workers


def processes(jobs: int | None) -> int:
    """How many processes scan: `jobs` (default: one per core), and never more than the cores this process
    may run on: more would only take turns on them, each with its own copy of the parser (and `--jobs
    100000` would fork as many)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(jobs or cores, cores))


if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from extractor.scanning.source import ScanOptions

__all__ = ["Item", "Pool", "Result", "scan_batch", "start", "start_ahead", "take_ahead"]

# What a worker is sent: blob id, the previous version's result, whether facts are wanted, a path it has
# (to name it in errors). What it sends back: a blob id and its result, serialized.
Item = tuple[str, bytes | None, bool, str]
Result = tuple[str, bytes]

_RULED_OUT = b'{"kind":"ruled-out"}'


class Pool(NamedTuple):
    """Worker processes (forked, each warming up or waiting for work), how many there are, and whether
    the command line started them ahead (before it knew how much there is to scan)."""

    executor: ProcessPoolExecutor
    workers: int
    ahead: bool = False


def _warm_up(parent: int) -> None:
    become_worker(parent)
    import extractor.scanning.scan  # noqa: F401  (the scan's modules, once per worker)


def scan_batch(git_dir: Path, items: Sequence[Item], scan_options: ScanOptions) -> list[Result]:
    """Read blobs from git (this process's own reader) and scan those the prefilter lets through; what a
    blob gives depends on its bytes and the options alone, whichever process scans it.

    Workers read what they scan themselves: the main process does not send them blobs. Here, not in the
    scheduler, so that a worker forked ahead finds it without importing the pipeline (and pydantic).
    """
    from extractor.repo.git.blobs import reader
    from extractor.scanning.scan import could_hold, scan_many

    contents = reader(git_dir).read([item[0] for item in items], [item[3] for item in items])
    out: list[Result] = []
    to_parse = []
    for (oid, previous, wanted, _), data in zip(items, contents, strict=True):
        if wanted or could_hold(data, scan_options):
            to_parse.append((oid, data, previous, wanted))
        else:
            out.append((oid, _RULED_OUT))
    out += scan_many(to_parse, scan_options)
    return out


def start(workers: int) -> Pool:
    """Fork `workers` worker processes now; each imports the scan's modules at once.

    No thread of this process may hold a lock, nor any SQLite connection be open, while it forks.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    executor = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_warm_up, initargs=(os.getpid(),)
    )
    for _ in range(workers):  # start every worker now rather than on first use
        executor.submit(int)
    return Pool(executor, workers)


def start_ahead(workers: int) -> None:
    """Fork the workers of the extraction this command-line process is about to run (in a command-line
    process only: elsewhere, nothing happens, and an extraction forks its own when it needs them). The
    process context holds them (lifecycle.hold_workers) until the extraction takes them."""
    held = take_ahead()
    if held is None and workers > 0 and in_command_line_process():
        held = start(workers)._replace(ahead=True)
    hold_workers(held)


def take_ahead() -> Pool | None:
    """The pool the command line started ahead, if any and not yet taken (it is taken once)."""
    pool = take_workers()
    assert pool is None or isinstance(pool, Pool)
    return pool
