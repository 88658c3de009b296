# Cache: per-file scan results in one SQLite file, addressed by blob id and what shapes the results.
from __future__ import annotations

import contextlib
import hashlib
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import orjson
from pydantic import ValidationError

from extractor._version import __version__
from extractor.models import FileOutcome

__all__ = ["CACHE_FORMAT", "ScanCache", "wait_for_writes"]

CACHE_FORMAT = 2
# The modules whose code decides a file's result: any edit to them makes a new cache, even unreleased.
_PRODUCERS = ("scan.py", "template.py", "pieces.py", "facts.py", "models.py")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (scope TEXT NOT NULL, oid TEXT NOT NULL, data BLOB NOT NULL,
                                    PRIMARY KEY (scope, oid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS paths (scope TEXT NOT NULL, path TEXT NOT NULL, oid TEXT NOT NULL,
                                  PRIMARY KEY (scope, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS catalogs (key TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
"""


# Writes go to a thread of their own: SQLite releases the GIL while it writes megabytes, so storing
# overlaps with building records and writing the catalog. The thread is not a daemon: the interpreter
# waits for it at exit.
_writers: list[threading.Thread] = []


def wait_for_writes() -> None:
    """Wait until every cache write started so far has landed (or failed: writes only cost time)."""
    while _writers:
        _writers.pop().join()


def _code_digest(names: Sequence[str] = _PRODUCERS) -> str:
    digest = hashlib.sha256()
    for name in names:
        with contextlib.suppress(OSError):
            digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def _insert(cursor: sqlite3.Cursor, table: str, rows: Sequence[tuple[str, str, str | bytes]]) -> None:
    """Insert rows a few hundred per statement: SQLite lets go of the GIL for a statement, not a row, so
    the main thread's work and this thread's do not take turns row by row."""
    for start in range(0, len(rows), _ROWS_PER_STATEMENT):
        chunk = rows[start : start + _ROWS_PER_STATEMENT]
        values = ",".join(["(?, ?, ?)"] * len(chunk))
        cursor.execute(f"INSERT OR REPLACE INTO {table} VALUES {values}", [v for row in chunk for v in row])


_ROWS_PER_STATEMENT = 300  # 900 parameters: under SQLite's oldest limit of 999


class ScanCache:
    """Scan results by blob id; an entry that does not validate is ignored and rewritten, never trusted.

    One SQLite file (WAL mode) holds every scope; a scope is a hash of the cache format, the extractor
    version, a digest of the scanning code and the options that shape a file's result. A cache that
    cannot be opened or read is set aside and started anew: it only costs a re-scan.
    """

    def __init__(self, root: Path, *, exceptions: tuple[str, ...], context: int) -> None:
        key = orjson.dumps(
            {
                "format": CACHE_FORMAT,
                "version": __version__,
                "code": _code_digest(),
                "exceptions": sorted(set(exceptions)),
                "context": context,
            }
        )
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
                except (sqlite3.DatabaseError, OSError):
                    return None
            except OSError:
                return None
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        return db

    def get_many(self, oids: Sequence[str]) -> dict[str, FileOutcome]:
        """Return the valid cached results among `oids`."""
        found: dict[str, FileOutcome] = {}
        for oid, data in self._select("SELECT oid, data FROM entries WHERE scope = ? AND oid IN ({})", oids):
            with contextlib.suppress(ValidationError):
                found[oid] = FileOutcome.model_validate_json(data)
        return found

    def previous_versions(self, paths: Sequence[str]) -> dict[str, str]:
        """Map paths to the blob each had when last scanned in this scope."""
        rows = self._select("SELECT path, oid FROM paths WHERE scope = ? AND path IN ({})", paths)
        return {path: str(oid) for path, oid in rows}

    def raw(self, oids: Iterable[str]) -> dict[str, bytes]:
        """Return stored results as they are (for a worker to reuse the pieces of a previous version)."""
        return dict(self._select("SELECT oid, data FROM entries WHERE scope = ? AND oid IN ({})", list(oids)))

    def _select(self, query: str, keys: Sequence[str]) -> list[tuple[str, bytes]]:
        db = self._connect()
        if db is None:
            return []
        rows: list[tuple[str, bytes]] = []
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                sql = query.format(",".join("?" * len(chunk)))
                rows += db.execute(sql, (self.scope, *chunk)).fetchall()
        except sqlite3.DatabaseError:
            return []
        return rows

    def store(self, entries: Sequence[tuple[str, bytes]], paths: dict[str, str]) -> None:
        """Store new results and the blob each path has now, in one transaction, in the background."""

        def write(db: sqlite3.Connection) -> None:
            with contextlib.closing(db.cursor()) as cursor:
                cursor.execute("BEGIN IMMEDIATE")
                try:
                    _insert(cursor, "entries (scope, oid, data)", [(self.scope, oid, data) for oid, data in entries])
                    _insert(cursor, "paths (scope, path, oid)", [(self.scope, p, oid) for p, oid in paths.items()])
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                cursor.execute("COMMIT")

        self._write(write)

    def catalog_key(self, parts: dict[str, object]) -> str:
        """Key a whole catalog: what the scan depends on, plus the commit, scope and every module's code."""
        every_module = sorted(p.name for p in Path(__file__).parent.glob("*.py"))
        key = orjson.dumps(
            {**parts, "scan": self.scope, "code": _code_digest(every_module)}, option=orjson.OPT_SORT_KEYS
        )
        return hashlib.sha256(key).hexdigest()

    def catalog(self, key: str) -> bytes | None:
        """Return a stored catalog (lines and manifest as written, before the run's timestamps)."""
        db = self._connect()
        if db is None:
            return None
        try:
            row = db.execute("SELECT data FROM catalogs WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError:
            return None
        return bytes(row[0]) if row else None

    def store_catalog(self, key: str, data: bytes) -> None:
        """Store a whole catalog (in the background, after the writes before it)."""

        def write(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO catalogs (key, data) VALUES (?, ?)", (key, data))

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
                with contextlib.suppress(sqlite3.DatabaseError):
                    job(db)
        finally:
            db.close()

    def close(self) -> None:
        """Let the queued writes finish in the background (`wait_for_writes` waits for them) and close."""
        if self._writes is not None:
            self._writes.put(None)
            self._db = None
        elif self._db is not None:
            self._db.close()
            self._db = None
