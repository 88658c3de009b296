# Housekeeping: the user cache directory and what it holds (scans, catalogs, match indexes, clones, releases, sdists,
# runtimes).
from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

__all__ = ["PARTS", "CachePart", "cache_dir", "clear", "remove_orphans", "usage"]


def cache_dir() -> Path:
    """Return the user cache directory of the extractor (honours XDG_CACHE_HOME)."""
    return Path(platformdirs.user_cache_dir("extractor", appauthor=False))


@dataclass(frozen=True)
class CachePart:
    """One kind of thing the cache holds: its files, how many bytes and how many items."""

    name: str
    what: str
    paths: tuple[Path, ...]
    bytes: int
    items: int
    unit: str


def _size(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(folder) / name).lstat().st_size
    return total


def _entries(database: Path) -> int:
    if not database.is_file():
        return 0
    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)
        try:
            return int(db.execute("SELECT count(*) FROM results").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def _listed(folder: Path, keep: Callable[[Path], bool]) -> list[Path]:
    return sorted(p for p in folder.iterdir() if keep(p)) if folder.is_dir() else []


def _releases(folder: Path) -> int:
    tags = folder / "vllm.git" / "refs" / "tags"
    packed = folder / "vllm.git" / "packed-refs"
    names = {p.name for p in _listed(tags, Path.is_file)}
    if packed.is_file():  # (bytes: a ref's name need not be UTF-8, and a count needs no name decoded)
        names |= {line.rsplit(b"/", 1)[-1].decode(errors="surrogateescape")
                  for line in packed.read_bytes().splitlines() if b"refs/tags/" in line}  # fmt: skip
    return len(names)


# name, what it is, its paths under the cache directory, how its items are counted and called
PARTS = ("scans", "catalogs", "matches", "clones", "releases", "sdists", "runtimes", "reproductions", "tests", "bench")


def usage(root: Path) -> list[CachePart]:
    """Say what each part of the cache directory holds, in PARTS order (nothing is created)."""
    scans = tuple(root / name for name in ("scan.sqlite3", "scan.sqlite3-wal", "scan.sqlite3-shm", "scan.corrupt"))
    catalogs = _listed(root / "catalogs", Path.is_file)
    matches = _listed(root / "match", Path.is_file)
    clones = _listed(root / "repos", lambda p: p.is_dir() and p.name.endswith(".git"))
    sdists = _listed(root / "sdists", lambda p: p.name.endswith(".tar.gz"))
    runtimes = _listed(root / "runtimes", lambda p: (p / "runtime.json").is_file())
    reproductions = _listed(root / "reproductions", lambda p: p.name.endswith(".jsonl"))
    # What the project's own test suite keeps between sessions (tests/conftest.py) and its benchmark's tools.
    tests = (root / "test-releases", root / "test-wheels")
    kept = len(_listed(tests[1], lambda p: p.name.endswith(".whl"))) + _releases(tests[0])
    parts = [
        ("scans", "per-file scan results", scans, _entries(root / "scan.sqlite3"), "entries"),
        ("catalogs", "whole catalogs (the 32 most recently used)", (root / "catalogs",), len(catalogs), "catalogs"),
        ("matches", "match's merged indexes (the 8 most recently used)", (root / "match",), len(matches), "indexes"),
        ("clones", "clones of repository URLs", (root / "repos",), len(clones), "repositories"),
        (
            "releases",
            "vLLM releases built into one git repository",
            (root / "releases",),
            _releases(root / "releases"),
            "releases",
        ),
        ("sdists", "downloaded release sdists", (root / "sdists",), len(sdists), "sdists"),
        (
            "runtimes",
            "virtual environments with vLLM installed (reproduce)",
            (root / "runtimes",),
            len(runtimes),
            "runtimes",
        ),
        (
            "reproductions",
            "what reproduce ran, per release (explain and the site show it)",
            (root / "reproductions",),
            len(reproductions),
            "releases",
        ),
        ("tests", "the test suite's releases and wheels, kept between sessions", tests, kept, "releases and wheels"),
        (
            "bench",
            "scripts/bench.py's peers (semgrep, ast-grep) in an environment of their own",
            (root / "bench-peers",),
            int((root / "bench-peers").is_dir()),
            "environments",
        ),
    ]
    return [
        CachePart(name, what, tuple(paths), sum(_size(p) for p in paths if p.exists()), items, unit)
        for name, what, paths, items, unit in parts
    ]


def _named(error: BaseException, path: str) -> BaseException:
    """An error of rmtree's with the whole path it failed on (it removes by names relative to a folder)."""
    if isinstance(error, OSError):
        return OSError(error.errno, error.strerror, path)
    return error


def clear(root: Path, names: Sequence[str]) -> list[CachePart]:
    """Remove the named parts of the cache directory (every part when none is named); return what they were.

    Run it while no extraction runs: one that reads the cache meanwhile may fail.
    """
    removed = [part for part in usage(root) if not names or part.name in names]
    failed: list[BaseException] = []
    for part in removed:
        for path in part.paths:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, onerror=lambda _, where, error: failed.append(_named(error[1], where)))
            else:
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
                except OSError as error:
                    failed.append(error)
    if failed:  # what is left would be read again: said (the first refusal, naming its path), never "removed"
        raise failed[0]
    return removed


def remove_orphans(folder: Path, prefix: str, *, keep: Path | None = None) -> None:
    """Remove the scratch folders `folder/<prefix><pid>-...` whose process is gone (killed while it wrote
    there); a process's still alive (another run, now), another user's, and `keep`, are left alone."""
    for scratch in folder.glob(f"{prefix}*"):
        pid = scratch.name.removeprefix(prefix).split("-")[0]
        if not pid.isdigit() or not scratch.is_dir() or scratch.is_symlink() or scratch == keep:
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(scratch, ignore_errors=True)
        except OSError:  # alive, another user's
            continue
