# Published: a nightly root, the folder the nightly job publishes into (its index, its catalogs by SHA and
# scope, their diffs, its rolling history, its lock), as one object its readers and its writer ask.
from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from extractor.catalog.load import folder_name, present, read_document
from extractor.errors import CatalogError
from extractor.model.records import Manifest, NightlyIndex, Scope
from extractor.pipeline.write import MANIFEST, RECORDS, atomic_write_all, dumps_model
from extractor.util.atomic import finish_commits, read_whole, replace_bytes

__all__ = ["DIFF", "DIFF_PAGE", "HISTORY", "HISTORY_MANIFEST", "INDEX", "LOCK", "PublishedRoot"]

INDEX = "index.json"
# The rolling history's files; a history's folder (`extractor history`) names its own alike.
HISTORY = "history.jsonl"
HISTORY_MANIFEST = "history.json"
LOCK = ".nightly.lock"
# The commits a night began to publish (written before it extracts, emptied once its index is committed): a
# folder a killed night completed is its, and goes once a later night's index does not name it.
PENDING = ".nightly-pending.json"
# Beside a published catalog: its diff against the one published before it, as JSON and as a page.
DIFF = "diff.json"
DIFF_PAGE = "diff.md"

# Always fullmatch()ed: `$` would let a name ending in a newline pass for a catalog's folder or a temporary file.
_SHA_DIR = re.compile(r"[0-9a-f]{7,40}(-[\w.+=-]+)?")
_TEMPORARY = re.compile(r"\..+\.[0-9a-f]{32}\.tmp", re.DOTALL)  # see atomic._temporary
# What a night writes in a catalog's folder (analysis.py's files named here: it is a later stage's).
_RUN_FILES = frozenset({RECORDS, MANIFEST, DIFF, DIFF_PAGE, "analysis.jsonl", "needs-analysis.jsonl"})


@dataclass(frozen=True)
class PublishedRoot:
    """A nightly root, seen in one scope: index.json (the catalogs published, newest first), a folder per
    catalog (named by its SHA and `scope`, see `folder_name`), the rolling history beside the index
    (history.jsonl, history.json) and the lock a night holds. A night's index and history are committed
    together (see `commit`)."""

    path: Path
    scope: Scope

    @classmethod
    def at(cls, path: Path, *, scope: Scope) -> PublishedRoot | None:
        """The nightly root at `path`, if it is one: a folder with index.json and no records.jsonl of its own."""
        found = path.is_dir() and present(path / INDEX) and not present(path / RECORDS)
        return cls(path, scope) if found else None

    @property
    def index_path(self) -> Path:
        return self.path / INDEX

    def indexed(self) -> bool:
        """Whether an index is there (a symlink that leads nowhere is an error: see `present`)."""
        return present(self.index_path)

    def read_index(self) -> NightlyIndex:
        """Read index.json, or an empty index where there is none yet."""
        advice = "; restore it, or move it away to start a new index (the catalogs beside it stay)"
        index = read_document(self.index_path, NightlyIndex, "nightly index", advice=advice)
        return index if index is not None else NightlyIndex(latest=None, catalogs=[])

    def folder(self, sha: str) -> Path:
        """Where the catalog of `sha` in this scope is published (its SHA alone in the default scope)."""
        return self.path / folder_name(sha=sha, scope=self.scope.model_dump(mode="json"))

    def find(self, sha: str) -> Path | None:
        """The folder that holds the published catalog of `sha`: the one this scope names, else the only
        published folder of that SHA whatever its scope."""
        named = self.folder(sha)
        if present(named / MANIFEST):
            return named
        found = [p for p in [self.path / sha, *self.path.glob(f"{sha}-*")] if present(p / MANIFEST)]
        return found[0] if len(found) == 1 else None

    def latest(self) -> Path:
        """The folder of the latest catalog (see `find`)."""
        index = self.read_index()
        if index.latest is None:
            raise CatalogError(f"{self.index_path} names no published catalog yet")
        folder = self.find(index.latest)
        if folder is None:
            raise CatalogError(f"{self.path} holds no single published catalog of {index.latest} (pass its folder)")
        return folder

    def diff(self, sha: str) -> Path | None:
        """The diff.json published beside the catalog of `sha` (see `find`), if there is one."""
        folder = self.find(sha)
        return folder / DIFF if folder is not None and present(folder / DIFF) else None

    def history(self) -> Path | None:
        """The rolling history's history.jsonl, if there is one."""
        return self.path / HISTORY if present(self.path / HISTORY) else None

    def begin(self, sha: str) -> None:
        """Note, before a night extracts into its folder, that the catalog of `sha` is this tool's to publish."""
        pending = self._pending()
        if sha not in pending:
            replace_bytes(self.path / PENDING, orjson.dumps([*pending, sha]))

    def abandon(self, sha: str) -> None:
        """Forget a night begun for `sha` whose folder its own failure removed."""
        pending = [other for other in self._pending() if other != sha]
        if pending:
            replace_bytes(self.path / PENDING, orjson.dumps(pending))
        else:
            (self.path / PENDING).unlink(missing_ok=True)

    def _pending(self) -> list[str]:
        try:
            found = orjson.loads(read_whole(self.path / PENDING))
        except (OSError, orjson.JSONDecodeError):
            return []
        return [sha for sha in found if isinstance(sha, str)] if isinstance(found, list) else []

    def check_scope(self) -> None:
        """Refuse to publish into a root whose index and history are another scope's (its latest catalog says
        which): the two would share index.json and history.jsonl, each night wiping the other's."""
        index = self.read_index()
        folder = self.find(index.latest) if index.latest is not None else None
        manifest = read_document(folder / MANIFEST, Manifest, "manifest") if folder is not None else None
        if manifest is not None and manifest.scope != self.scope:

            def said(scope: Scope) -> str:
                return f"--path {' --path '.join(scope.paths)} --exception {' --exception '.join(scope.exceptions)}"

            raise CatalogError(
                f"{self.path} publishes the nightly of another scope ({said(manifest.scope)}); publish this one "
                f"({said(self.scope)}) into a root of its own with another --output"
            )

    def check_readable(self) -> None:
        """Refuse a file read back that is a symlink leading nowhere (the index, the history's), which its
        reader would take for none, and start afresh over."""
        for name in (INDEX, HISTORY, HISTORY_MANIFEST):
            present(self.path / name)

    def create(self) -> bool:
        """Make the root's folder where there is none; whether this made it."""
        made = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CatalogError(f"cannot create {self.path}: {error.strerror or error}") from None
        return made

    def discard(self) -> None:
        """Remove a root this run made, which holds nothing but its lock (a root another run wrote into is
        not empty, and stays)."""
        with contextlib.suppress(OSError):
            (self.path / PENDING).unlink(missing_ok=True)
            (self.path / LOCK).unlink(missing_ok=True)
            self.path.rmdir()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the root's lock during the block: one night at a time writes into it."""
        from filelock import FileLock  # (imported by the writer alone: its readers never lock)

        path = self.path / LOCK
        lock = FileLock(str(path))
        try:
            lock.acquire()
        except OSError as error:  # a directory in its place, a read-only folder
            raise CatalogError(f"cannot take the lock {path}: {error.strerror or error}") from None
        try:
            yield
        finally:
            lock.release()

    def commit(self, index: NightlyIndex, *, history: tuple[bytes, bytes]) -> None:
        """Publish what a night changes beside its catalog: the history (history.jsonl and history.json, as
        its encoder gives them) and the index, in one write (see `atomic_write_all`), so that a failure
        leaves neither changed and a stop signal lands after both. The index is replaced last: a kill
        between the renames leaves the history ahead of it, which the next night finds it ends with."""
        lines, manifest = history
        atomic_write_all(
            [
                (self.path / HISTORY, lines),
                (self.path / HISTORY_MANIFEST, manifest),
                (self.index_path, dumps_model(index)),
            ]
        )

    def remove(self, sha: str) -> None:
        """Remove the folder of the catalog of `sha` in this scope (one the index no longer names)."""
        folder = self.folder(sha)
        if _SHA_DIR.fullmatch(folder.name):
            shutil.rmtree(folder, ignore_errors=True)

    def clean(self, named: set[str], *, folders: bool) -> int:
        """Remove what killed runs left and the index does not name (the caller holds the lock: no other run
        is writing): temporary files of this tool's atomic writes, in the root and in catalog folders; and,
        with `folders` (an index was there before this run), catalog folders of this scope that a run began
        and never finished (no manifest) holding nothing but what a night writes.

        And the folder of a night this tool began (`begin`) and that was killed, complete or not, when the
        index does not name it. Nothing else is touched: not a complete catalog an extraction wrote into the
        root, nor any folder or file a person put there. Without an earlier index, other folders stay: they
        may be catalogs a lost index named. Returns how many went."""
        removed = 0
        # The folders of nights that began and were killed, complete or not, that the index does not name.
        for sha in self._pending():
            folder = self.folder(sha)
            if sha not in named and folder.is_dir() and all(entry.name in _RUN_FILES for entry in folder.iterdir()):
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
        (self.path / PENDING).unlink(missing_ok=True)
        catalogs = [folder for folder in self.path.iterdir() if _SHA_DIR.fullmatch(folder.name) and folder.is_dir()]
        for place in (self.path, *catalogs):
            finish_commits(place)  # (a set a killed run committed: completed, its temporaries are not stale)
            for stale in place.glob(".*.tmp"):
                if _TEMPORARY.fullmatch(stale.name):
                    with contextlib.suppress(OSError):
                        stale.unlink()
                        removed += 1
        for folder in catalogs if folders else ():
            sha = folder.name.partition("-")[0]
            unfinished = not (folder / MANIFEST).exists()
            ours = all(entry.name in _RUN_FILES for entry in folder.iterdir())
            if len(sha) == 40 and sha not in named and folder == self.folder(sha) and unfinished and ours:
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
        return removed
