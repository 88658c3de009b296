"""Benchmark `diff`'s pairing of reworded checks: catalogs where every message was reworded.

Usage: python scripts/bench_diff.py [--counts 6000 24000] [--per-file 100 400 10]

Each old message ("option optI of the engine must be set when modeI is on") is reworded ("the engine
requires optI when modeI is on"): it shares half its words with every new message of its file, so every
pair of a file can score 0.5, and its own rewording scores best. The catalogs are built in memory; the
diff is timed in this process (CPU time, wall-clock time) and checked (each check paired with its own),
with the peak memory of the process so far.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.catalog.load import LoadedCatalog
from extractor.query.diff import diff_catalogs
from tests.test_diff import synthetic


def catalog(messages: list[str], per_file: int, sha: str) -> LoadedCatalog:
    entries = [(f"pkg/m{number // per_file}.py", "Config.check", m) for number, m in enumerate(messages)]
    return synthetic(entries, sha=sha, revision=sha[:4], lines=[1 + n % per_file for n in range(len(messages))])


def bench(count: int, per_file: int) -> None:
    old = catalog(
        [f"option opt{i} of the engine must be set when mode{i} is on" for i in range(count)], per_file, "a" * 40
    )
    new = catalog([f"the engine requires opt{i} when mode{i} is on" for i in range(count)], per_file, "b" * 40)
    cpu, wall = time.process_time(), time.monotonic()
    diff = diff_catalogs(old, new)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    right = all(
        c.old is not None and c.new is not None and c.old.record.lineNumber == c.new.record.lineNumber
        for c in diff.changes
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(
        f"{count:,} checks, {per_file} to a file, every one reworded: {cpu:.2f} s CPU, {wall:.2f} s wall, "
        f"{diff.summary['reworded']:,} reworded ({'each with its own' if right else 'WRONG PAIRS'}), "
        f"peak {peak} MiB so far"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[6000, 24000])
    parser.add_argument("--per-file", type=int, nargs="+", default=[100, 400, 10])
    args = parser.parse_args()
    for per_file in args.per_file:
        for count in args.counts:
            bench(count, per_file)


if __name__ == "__main__":
    main()
