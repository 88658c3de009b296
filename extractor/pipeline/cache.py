# Cache: per-file scan results in one SQLite file, addressed by blob id and what shapes the results;
# whole catalogs beside it, each a file restamped with the run's time when read back.
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from extractor._version import __version__, code_digest
from extractor.pipeline.options import ExtractOptions
from extractor.repo.housekeeping import cache_dir
from extractor.util.atomic import replace_bytes, sha256_of
from extractor.util.progress import warn

if TYPE_CHECKING:
    from extractor.model.manifest import ManifestData
    from extractor.repo.git.blobs import Blob
    from extractor.repo.git.commit import Commit

__all__ = ["CACHE_FORMAT", "Previous", "ScanCache", "StoredCatalog", "opened", "wait_for_writes"]

CACHE_FORMAT = 5
# The subpackages whose code decides a file's result (the scan imports nothing else of the package, as
# tests/test_imports.py checks): any edit to them makes a new cache, even unreleased.
PRODUCERS = ("model", "scanning")
# Results live in a plain table with an index on their key: a table keyed by (scope, oid) WITHOUT ROWID
# keeps each result in its key's b-tree, and SQLite reads a key's whole record, overflow pages and all,
# to compare it during a lookup (looking up a revision's 2,500 blob ids took 150 ms in a 100 MB cache).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (scope TEXT NOT NULL, oid TEXT NOT NULL, data BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS results_by_blob ON results (scope, oid);
CREATE TABLE IF NOT EXISTS paths (scope TEXT NOT NULL, path TEXT NOT NULL, oid TEXT NOT NULL,
                                  PRIMARY KEY (scope, path)) WITHOUT ROWID;
"""
# Whole catalogs are files of their own beside the database (a whole package's is some 17 MB: SQLite
# took three times as long to write it), the most recently used kept.
_CATALOGS = "catalogs"
_KEEP_CATALOGS = 32


# What a run stores (new results, paths, the whole catalog) is written by a thread of its own, once the
# scan is over: it overlaps with building and writing the catalog, when a core is free for it (SQLite
# and hashing let go of the GIL). The thread is not a daemon: the interpreter waits for it at exit.
_writers: list[threading.Thread] = []


_DIGEST = 32  # bytes of SHA-256 before each stored value


def _seal(data: bytes) -> bytes:
    return hashlib.sha256(data).digest() + data


def _sealed(pieces: Sequence[bytes]) -> list[bytes]:
    """`_seal` of the pieces' bytes joined, in pieces (none of them copied)."""
    return [sha256_of(pieces).digest(), *pieces]


def _unseal(stored: bytes) -> bytes | None:
    """The value a row was written with, or None if its bytes are not those (truncated, altered)."""
    data = stored[_DIGEST:]
    return data if len(stored) >= _DIGEST and hashlib.sha256(data).digest() == stored[:_DIGEST] else None


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


_said: set[Path] = set()  # the caches said to be unusable, each once a process


def _unusable(path: Path, error: Exception) -> None:
    """Say, once, that a cache cannot be used (a folder in its place, a file where its folder goes, a
    read-only disk): the run goes on without it, only slower."""
    if path not in _said:
        _said.add(path)
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        warn(f"cannot use the cache at {path} ({reason}): going on without it")


def wait_for_writes() -> None:
    """Wait until every cache write started so far has landed (or failed: writes only cost time)."""
    while _writers:
        _writers[-1].join()  # an interrupt while waiting leaves the thread listed, to be waited for again
        _writers.pop()


def _insert(cursor: sqlite3.Cursor, table: str, rows: Sequence[tuple[str, str, str | bytes]]) -> None:
    """Insert rows a few hundred per statement: fewer statements cost less, and SQLite lets go of the GIL
    for a statement, not a row, so a writing thread does not take turns with the main one row by row."""
    for start in range(0, len(rows), _ROWS_PER_STATEMENT):
        chunk = rows[start : start + _ROWS_PER_STATEMENT]
        values = ",".join(["(?, ?, ?)"] * len(chunk))
        cursor.execute(f"INSERT OR REPLACE INTO {table} VALUES {values}", [v for row in chunk for v in row])


_ROWS_PER_STATEMENT = 300  # 900 parameters: under SQLite's oldest limit of 999
_KEYS_PER_STATEMENT = 500

_PATHS_QUERY = "SELECT path, oid FROM paths WHERE scope = ? AND path IN ({})"


def _rows(db: sqlite3.Connection, query: str, scope: str, keys: Sequence[str]) -> list[Any]:
    """The rows a query (`{}` standing for the keys' placeholders) finds for keys, a few hundred at a time."""
    rows: list[Any] = []
    for start in range(0, len(keys), _KEYS_PER_STATEMENT):
        chunk = keys[start : start + _KEYS_PER_STATEMENT]
        rows += db.execute(query.format(",".join("?" * len(chunk))), (scope, *chunk)).fetchall()
    return rows


def _insert_all(db: sqlite3.Connection, table: str, rows: Sequence[tuple[str, str, str | bytes]]) -> None:
    """Insert rows in one transaction, rolled back if anything fails."""
    with contextlib.closing(db.cursor()) as cursor:
        cursor.execute("BEGIN IMMEDIATE")
        try:
            _insert(cursor, table, rows)
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        cursor.execute("COMMIT")


class ScanCache:
    """Scan results by blob id; an entry that does not check out is ignored and rewritten, never trusted.

    Each value is stored behind the SHA-256 of its bytes and read back only if they match: a value
    comes from the extractor's own serializer, so bytes that are exactly what it wrote are valid, and
    checking that costs a hash rather than a validation of every nested field.

    One SQLite file (WAL mode) holds every scope; a scope is a hash of the cache format, the extractor
    version, a digest of the scanning code and those of the extraction's `options` that shape a file's
    result. A cache that cannot be opened or read is set aside and started anew: it only costs a re-scan.
    Whole catalogs, sealed alike, are files of their own in `catalogs/` beside it, kept by all the options.
    """

    def __init__(self, root: Path, options: ExtractOptions) -> None:
        key = orjson.dumps(
            {
                "format": CACHE_FORMAT,
                "version": __version__,
                "code": code_digest(PRODUCERS),
                "exceptions": sorted(set(options.exceptions)),
                "context": options.context,
            }
        )
        self.options = options
        self.scope = hashlib.sha256(key).hexdigest()[:16]
        self.path = root / "scan.sqlite3"
        self._db: sqlite3.Connection | None = None
        self._writes: queue.SimpleQueue[Callable[[sqlite3.Connection], None] | None] | None = None

    def _connect(self) -> sqlite3.Connection | None:
        if self._writes is not None:
            raise RuntimeError("the cache is being written: read everything before the first write")
        if self._db is None:
            wait_for_writes()  # what earlier runs of this process stored is there to read
            try:
                self._db = self._open()
            except sqlite3.DatabaseError:
                with contextlib.suppress(OSError):
                    self.path.replace(self.path.with_suffix(".corrupt"))
                try:
                    self._db = self._open()
                except (sqlite3.DatabaseError, OSError) as error:
                    _unusable(self.path, error)
                    return None
            except OSError as error:
                _unusable(self.path, error)
                return None
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        return db

    def get_many(self, oids: Sequence[str]) -> dict[str, bytes]:
        """Return the intact cached results among `oids`, as the scanner serialized them."""
        found: dict[str, bytes] = {}
        for oid, stored in self._select("SELECT oid, data FROM results WHERE scope = ? AND oid IN ({})", oids):
            data = _unseal(stored)
            if data is not None:
                found[oid] = data
        return found

    def held(self, oids: Sequence[str]) -> set[str]:
        """Return the ids among `oids` that have an entry (not read, nor checked: `get_many` does that)."""
        return {str(oid) for (oid,) in self._select("SELECT oid FROM results WHERE scope = ? AND oid IN ({})", oids)}

    def previous_versions(self, paths: Sequence[str]) -> dict[str, str]:
        """Map paths to the blob each had when last scanned in this scope."""
        rows = self._select(_PATHS_QUERY, paths)
        return {path: str(oid) for path, oid in rows}

    def previous_results(self, blobs: Sequence[Blob]) -> Previous:
        """The results of the blobs' previous versions (their paths' blobs when last scanned), read batch by
        batch as the batches are handed out: read all at once, before the first batch, they kept the
        workers waiting (25 ms of an incremental run's 0.2 s start, for vLLM 0.28.0 after 0.27.0)."""
        earlier = self.previous_versions([blob.path for blob in blobs])
        before = {blob.oid: earlier[blob.path] for blob in blobs if blob.path in earlier}

        def read(oids: Sequence[str]) -> Mapping[str, bytes]:
            wanted = {oid: before[oid] for oid in oids if oid in before}
            stored = self.get_many(sorted(set(wanted.values()))) if wanted else {}
            return {oid: stored[old] for oid, old in wanted.items() if old in stored}

        return read

    def _select(self, query: str, keys: Sequence[str]) -> list[Any]:
        db = self._connect() if keys else None
        if db is None:
            return []
        try:
            return _rows(db, query, self.scope, keys)
        except sqlite3.DatabaseError:
            return []

    def store_entries(self, entries: Sequence[tuple[str, bytes]]) -> None:
        """Store scan results by blob id (sealed, in the background, in one transaction)."""
        # Sealed here: each hash lets go of the GIL, and the writing thread would wait for it back as
        # many times (up to a switch interval each) while this one builds the catalog.
        rows = [(self.scope, oid, _seal(data)) for oid, data in entries]

        def write(db: sqlite3.Connection) -> None:
            _insert_all(db, "results (scope, oid, data)", rows)

        self._write(write)

    def store_paths(self, paths: dict[str, str]) -> None:
        """Record the blob each path has now (in the background), for a later version to reuse pieces of.
        Only the paths whose blob changed are written: a revision shares most of them with the last one."""

        def write(db: sqlite3.Connection) -> None:
            stored = dict(_rows(db, _PATHS_QUERY, self.scope, list(paths)))
            changed = [(self.scope, p, oid) for p, oid in paths.items() if stored.get(p) != oid]
            if changed:
                _insert_all(db, "paths (scope, path, oid)", changed)

        self._write(write)

    def _catalog_path(self, commit: Commit, pinned_sha: str | None) -> Path:
        """Where the whole catalog of `commit` is kept: by what the scan depends on, plus the commit, the SHA its
        records point at, the repository's name, the scope and every module's code."""
        options = self.options
        parts = {"commit": commit.sha, "pinned": pinned_sha, "repo": options.repo_name or commit.repo_name}
        # (json, not orjson: a path from the command line may hold what is not UTF-8, as lone surrogates)
        key = {**parts, "scope": options.scope_data, "scan": self.scope, "code": code_digest()}
        return self.path.parent / _CATALOGS / hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

    def holds_catalogs(self) -> bool:
        """Whether any whole catalog is stored (a run whose catalog is stored cannot be the first)."""
        wait_for_writes()
        with contextlib.suppress(OSError):
            return any(not p.name.startswith(".") for p in (self.path.parent / _CATALOGS).iterdir())
        return False

    def holds_catalog(self, commit: Commit, pinned_sha: str | None) -> bool:
        """Whether the whole catalog of `commit` is stored (it may still turn out damaged when read)."""
        wait_for_writes()
        return self._catalog_path(commit, pinned_sha).is_file()

    def catalog(self, commit: Commit, pinned_sha: str | None, *, stamp: str) -> StoredCatalog | None:
        """Return the stored catalog of `commit` as if this run made it: with its timestamp `stamp` and the
        commit's revision."""
        wait_for_writes()  # a catalog this process is still storing is found
        path = self._catalog_path(commit, pinned_sha)
        try:
            stored = path.read_bytes()
        except OSError:
            return None
        with contextlib.suppress(OSError):  # a cache it may not write to is still read
            os.utime(path)  # used now: pruning keeps the most recently used
        data = _unseal(stored)
        return _thaw(data, stamp=stamp, revision=commit.revision) if data is not None else None

    def store_catalog(
        self,
        commit: Commit,
        pinned_sha: str | None,
        *,
        records: Sequence[bytes],
        manifest: ManifestData,
        warnings: Sequence[str],
    ) -> None:
        """Store the whole catalog of `commit`, records.jsonl in pieces (in the background, after the writes
        before it): a file of its own, replaced whole; the oldest beyond the most recently used few are removed."""
        path = self._catalog_path(commit, pinned_sha)

        def write(_: sqlite3.Connection) -> None:
            frozen = _freeze(records, manifest, warnings)
            sealed = _sealed(frozen)
            replace_bytes(path, sealed, durable=False)  # (checked when read)
            kept = sorted((p for p in path.parent.iterdir() if not p.name.startswith(".")), key=_modified, reverse=True)
            for old in kept[_KEEP_CATALOGS:]:
                old.unlink(missing_ok=True)

        self._write(write)

    def _write(self, job: Callable[[sqlite3.Connection], None]) -> None:
        if self._writes is None:
            db = self._connect()
            if db is None:
                return
            self._writes = queue.SimpleQueue()
            writer = threading.Thread(target=self._writer, args=(db, self._writes), name="extractor-cache")
            _writers.append(writer)
            writer.start()
        self._writes.put(job)

    @staticmethod
    def _writer(db: sqlite3.Connection, jobs: queue.SimpleQueue[Callable[[sqlite3.Connection], None] | None]) -> None:
        try:
            while (job := jobs.get()) is not None:
                with contextlib.suppress(sqlite3.DatabaseError, OSError):
                    job(db)
        except KeyboardInterrupt:  # a stop signal came (a write does not publish after one): the rest is dropped
            pass
        finally:
            db.close()

    def release(self) -> None:
        """Close the connection reads went through (it opens again when needed)."""
        if self._writes is None and self._db is not None:
            self._db.close()
            self._db = None

    def close(self) -> None:
        """Let the queued writes finish in the background (`wait_for_writes` waits for them) and close."""
        if self._writes is not None:
            self._writes.put(None)
            self._db = None
        elif self._db is not None:
            self._db.close()
            self._db = None


class _NoCache(ScanCache):
    """The cache of an extraction told to use none (`--no-cache`): it holds nothing, and keeps nothing."""

    def _connect(self) -> None:
        return None  # (what is read finds nothing, what is written goes nowhere)

    def store_entries(self, *args: object, **kwargs: object) -> None:
        pass  # (not even sealed)

    def holds_catalogs(self) -> bool:
        return False

    def holds_catalog(self, *args: object, **kwargs: object) -> bool:
        return False

    def catalog(self, *args: object, **kwargs: object) -> None:
        return None

    def store_catalog(self, *args: object, **kwargs: object) -> None:
        pass


@contextlib.contextmanager
def opened(options: ExtractOptions) -> Iterator[ScanCache]:
    """The user cache an extraction with `options` reads and writes (one that holds and keeps nothing if
    `options.cache` is off), closed when the block ends: what it queued is written in the background."""
    cache = ScanCache(cache_dir(), options) if options.cache else _NoCache(cache_dir(), options)
    try:
        yield cache
    finally:
        cache.close()


# The results of the previous versions of blobs (by the blobs' ids) that have one: see previous_results.
Previous = Callable[[Sequence[str]], Mapping[str, bytes]]


# --- whole catalogs -------------------------------------------------------------------------------------


class StoredCatalog(NamedTuple):
    """A whole catalog as the cache keeps it: records.jsonl as written, its manifest, the run's warnings."""

    encoded: bytes
    manifest: ManifestData
    warnings: tuple[str, ...]


# The keys whose value in a record is the run's timestamp. Only a key's own value can read
# `"analyzedAt":"...`: inside a string, the quotes are escaped.
_STAMPED = (b'"analyzedAt":"', b'"datasetVersion":"')


def _freeze(records: Sequence[bytes], manifest: ManifestData, warnings: Sequence[str]) -> list[bytes]:
    """Serialize a catalog for the cache, in pieces: a header line (its manifest, its warnings, and where in
    records.jsonl the run's timestamp stands: the start of each value of a record's analyzedAt and
    datasetVersion), then records.jsonl (in the pieces given: joining them would copy the whole catalog)."""
    stamp = manifest["analyzedAt"].encode()
    stamps: list[int] = []
    offset = 0
    for piece in records:
        for key in _STAMPED:
            at = piece.find(key + stamp)
            while at >= 0:
                stamps.append(offset + at + len(key))
                at = piece.find(key + stamp, at + len(key))
        offset += len(piece)
    header = {"manifest": manifest, "warnings": list(warnings), "stamps": sorted(stamps)}
    return [orjson.dumps(header, option=orjson.OPT_APPEND_NEWLINE), *records]


def _thaw(data: bytes, *, stamp: str, revision: str) -> StoredCatalog | None:
    """Read a frozen catalog back with this run's timestamp and revision; None if it does not hold
    together. The cache hands back exactly the bytes `_freeze` made (it checks them): the lines are
    neither parsed nor counted here, and the records are copied once, the new stamp spliced in. The header
    is read as data, as the scan's results are: bytes that check out are what this code wrote."""
    cut = data.find(b"\n")
    try:
        header = orjson.loads(data[:cut])
        manifest: ManifestData = header["manifest"]
        stamps: list[int] = header["stamps"]
        warnings = tuple(header["warnings"])
        old, new = manifest["analyzedAt"].encode(), stamp.encode()
        records = manifest["counts"]["records"]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None
    if cut < 0 or len(new) != len(old) or len(stamps) != len(_STAMPED) * records:
        return None  # a timestamp of another shape (SOURCE_DATE_EPOCH far away) is not spliced in: extract anew
    view = memoryview(data)[cut + 1 :]
    pieces: list[bytes | memoryview] = []
    start = 0
    for at in stamps:
        pieces += (view[start:at], new)
        start = at + len(new)
    pieces.append(view[start:])
    return StoredCatalog(b"".join(pieces), {**manifest, "analyzedAt": stamp, "revision": revision}, warnings)
