# Nightly: follow a branch head, extract, diff against the last published catalog, publish the index.
from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock
from pydantic import ValidationError

from extractor.catalog import LoadedCatalog, folder_name, is_complete, load_catalog
from extractor.diff import diff_catalogs, render_json, render_markdown
from extractor.errors import CatalogError
from extractor.extract import ExtractOptions, extract_commit
from extractor.git import Commit, is_url, open_repo, resolve
from extractor.history import roll
from extractor.models import IndexEntry, NightlyIndex
from extractor.write import atomic_write, default_root, dumps_model, write_catalog

__all__ = ["INDEX", "LOCK", "NightlyResult", "nightly", "read_index"]

INDEX = "index.json"
LOCK = ".nightly.lock"
_SHA_DIR = re.compile(r"^[0-9a-f]{7,40}(-[\w.+=-]+)?$")


@dataclass(frozen=True)
class NightlyResult:
    """What a nightly run did: the head's SHA, and whether it published anything."""

    sha: str
    published: bool


def read_index(output: Path) -> NightlyIndex:
    """Read DIR/index.json, or an empty index where there is none yet."""
    path = output / INDEX
    if not path.exists():
        return NightlyIndex(latest=None, catalogs=[])
    try:
        return NightlyIndex.model_validate_json(path.read_bytes())
    except (ValidationError, OSError) as error:
        raise CatalogError(f"{path}: not a valid nightly index: {str(error).splitlines()[0]}") from None


def _folder(root: Path, sha: str, options: ExtractOptions) -> Path:
    """Where the catalog of `sha` in this scope is published (see `folder_name`: the SHA alone by default)."""
    return root / folder_name(sha=sha, revision=sha, scope=options.scope)


def _up_to_date(output: Path, commit: Commit, options: ExtractOptions) -> bool:
    index = read_index(output)
    folder = _folder(output, commit.sha, options)
    return index.latest == commit.sha and is_complete(folder, options=options, sha=commit.sha) is not None


def nightly(
    *,
    repo: str,
    branch: str,
    output: Path | None,
    options: ExtractOptions,
    keep: int | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> NightlyResult:
    """Publish the catalog of `branch`'s head into `output`; safe to re-run, to kill and to start twice."""
    started = time.monotonic()
    if is_url(repo):
        open_repo(repo, fetch=True)
    commit = resolve(repo, f"refs/heads/{branch}" if not branch.startswith("refs/") else branch)
    log(f"resolved {branch} to {commit.sha} ({time.monotonic() - started:.2f}s)")
    root = output or default_root(options.repo_name or commit.repo_name)
    # Nothing is written before the branch resolves; an up-to-date index needs no lock either.
    if root.exists() and _up_to_date(root, commit, options):
        log(f"{commit.sha[:12]} is already published; nothing to do")
        return NightlyResult(commit.sha, published=False)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CatalogError(f"cannot create {root}: {error.strerror or error}") from None
    step = time.monotonic()
    with FileLock(str(root / LOCK)):
        log(f"took the lock ({time.monotonic() - step:.2f}s)")
        if _up_to_date(root, commit, options):
            log(f"{commit.sha[:12]} was published meanwhile; nothing to do")
            return NightlyResult(commit.sha, published=False)
        _publish(root, commit, options, keep, log)
    log(f"done ({time.monotonic() - started:.2f}s)")
    return NightlyResult(commit.sha, published=True)


def _publish(root: Path, commit: Commit, options: ExtractOptions, keep: int | None, log: Callable[[str], None]) -> None:
    index = read_index(root)
    directory = _folder(root, commit.sha, options)
    for stale in directory.glob(".*.tmp"):  # temporary files of a run killed while writing
        stale.unlink(missing_ok=True)
    step = time.monotonic()
    catalog = is_complete(directory, options=options, sha=commit.sha)
    if catalog is None:
        extracted = extract_commit(commit, options=options)
        write_catalog(extracted.encoded, extracted.manifest, directory)
        catalog = LoadedCatalog(extracted.lines, extracted.manifest, commit.sha, commit.revision)
        log(f"extracted {len(catalog.lines)} records into {directory} ({time.monotonic() - step:.2f}s)")
    else:
        log(f"reused the complete catalog in {directory} ({time.monotonic() - step:.2f}s)")
    assert catalog.manifest is not None

    step = time.monotonic()
    summary = None
    previous = _previous(root, index, commit.sha, options)
    diff = None
    if previous is not None:
        diff = diff_catalogs(previous, catalog)
        atomic_write(directory / "diff.json", render_json(diff))
        atomic_write(directory / "diff.md", render_markdown(diff).encode())
        summary = diff.summary
        changes = ", ".join(f"{count} {kind}" for kind, count in summary.items() if count and kind != "unchanged")
        log(f"diffed against {previous.sha[:12]}: {changes or 'no changes'} ({time.monotonic() - step:.2f}s)")
    else:
        log("first catalog: no diff")

    step = time.monotonic()  # the rolling history, beside the index: advanced by this night, not recomputed
    history = roll(root, previous=previous, catalog=catalog, options=options, changes=diff.changes if diff else None)
    nights = len(history.revisions)
    log(f"rolled the history on: {len(history.threads)} lineages over {nights} nights ({time.monotonic() - step:.2f}s)")

    step = time.monotonic()
    entry = IndexEntry(
        sha=commit.sha,
        committedAt=catalog.manifest.committedAt,
        analyzedAt=catalog.manifest.analyzedAt,
        records=len(catalog.lines),
        summary=summary,
    )
    entries = [entry, *(e for e in index.catalogs if e.sha != commit.sha)]
    dropped = entries[keep:] if keep is not None else []
    kept = entries[:keep] if keep is not None else entries
    atomic_write(root / "index.json", dumps_model(NightlyIndex(latest=commit.sha, catalogs=kept)))
    log(f"published {root / INDEX} ({time.monotonic() - step:.2f}s)")
    # The index no longer names them, so removing them now can leave nothing dangling.
    for old in dropped:
        folder = _folder(root, old.sha, options)
        if _SHA_DIR.match(folder.name):
            shutil.rmtree(folder, ignore_errors=True)
    if dropped:
        log(f"removed {len(dropped)} catalog(s) beyond the newest {keep}")


def _previous(root: Path, index: NightlyIndex, sha: str, options: ExtractOptions) -> LoadedCatalog | None:
    if index.latest is None or index.latest == sha:
        return None
    try:
        return load_catalog(_folder(root, index.latest, options))
    except CatalogError:
        return None
