# Cache: per-file scan results in one SQLite file, addressed by blob id and what shapes the results.
from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson
from pydantic import ValidationError

from extractor._version import __version__
from extractor.models import FileOutcome

__all__ = ["CACHE_FORMAT", "ScanCache"]

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


def _code_digest(names: Sequence[str] = _PRODUCERS) -> str:
    digest = hashlib.sha256()
    for name in names:
        with contextlib.suppress(OSError):
            digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


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
        self._previous: dict[str, str] = {}

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None:
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
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
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
        """Store new results and the blob each path has now, in one transaction; failures only cost time."""
        db = self._connect()
        if db is None:
            return
        try:
            with contextlib.closing(db.cursor()) as cursor:
                cursor.execute("BEGIN IMMEDIATE")
                cursor.executemany(
                    "INSERT OR REPLACE INTO entries (scope, oid, data) VALUES (?, ?, ?)",
                    [(self.scope, oid, data) for oid, data in entries],
                )
                cursor.executemany(
                    "INSERT OR REPLACE INTO paths (scope, path, oid) VALUES (?, ?, ?)",
                    [(self.scope, path, oid) for path, oid in paths.items()],
                )
                cursor.execute("COMMIT")
        except sqlite3.DatabaseError:
            with contextlib.suppress(sqlite3.DatabaseError):
                db.execute("ROLLBACK")

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
        db = self._connect()
        if db is None:
            return
        with contextlib.suppress(sqlite3.DatabaseError):
            db.execute("INSERT OR REPLACE INTO catalogs (key, data) VALUES (?, ?)", (key, data))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
