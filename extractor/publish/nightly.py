# Nightly: follow a branch head, extract, diff against the last published catalog, publish the index.
from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from extractor.catalog.load import LoadedCatalog, is_complete, load_catalog, present
from extractor.catalog.published import DIFF, DIFF_PAGE, PublishedRoot
from extractor.errors import CatalogError
from extractor.model.records import IndexEntry, NightlyIndex
from extractor.pipeline.extract import ExtractOptions, extract_commit
from extractor.pipeline.write import atomic_write, check_folder, default_root, page_bytes, write_catalog
from extractor.query.diff import CatalogDiff, diff_catalogs, render_json, render_markdown
from extractor.query.history.store import roll
from extractor.repo.git.clone import is_url, open_repo
from extractor.repo.git.commit import Commit, resolve
from extractor.util.atomic import fault_point, read_whole

__all__ = ["NightlyResult", "carry_analysis", "nightly", "publish_site"]


@dataclass(frozen=True)
class NightlyResult:
    """What a nightly run did: the head's SHA, and whether it published anything."""

    sha: str
    published: bool


def _up_to_date(root: PublishedRoot, commit: Commit, options: ExtractOptions) -> bool:
    index = root.read_index()
    folder = root.folder(commit.sha)
    return index.latest == commit.sha and is_complete(folder, options=options, sha=commit.sha) is not None


def nightly(
    *,
    repo: str,
    branch: str,
    output: Path | None,
    options: ExtractOptions,
    keep: int | None = None,
    log: Callable[[str], None] = lambda line: None,
    analysis: Path | None = None,
    site: Path | None = None,
) -> NightlyResult:
    """Publish the catalog of `branch`'s head into `output`; safe to re-run, to kill and to start twice.

    `analysis` (a JSONL file of analysis by id) is merged into the published catalog's analysis; `site`
    is where the site of the latest catalog is rebuilt (see `publish_site`); `Path("")` means `output/site`.
    """
    started = time.monotonic()
    if is_url(repo):
        open_repo(repo, fetch=True)
    commit = resolve(repo, f"refs/heads/{branch}" if not branch.startswith("refs/") else branch)
    log(f"resolved {branch} to {commit.sha} ({time.monotonic() - started:.2f}s)")
    root = PublishedRoot(output or default_root(options.repo_name or commit.repo_name), options.scope)
    if site is not None and not site.parts:
        site = root.path / "site"
    # Nothing is written before the branch resolves; an up-to-date index needs no lock either (nor a root
    # that can be written: it may be a read-only copy).
    if root.path.exists() and _up_to_date(root, commit, options) and analysis is None and _site_done(root, site):
        log(f"{commit.sha[:12]} is already published; nothing to do")
        return NightlyResult(commit.sha, published=False)
    _check_inputs(root, site, analysis)
    made = root.create()
    try:
        return _nightly(root, commit, options, keep, log, analysis, site, started)
    except BaseException:
        if made:  # a root this run made holds nothing but its lock: gone with it (another run's left alone)
            root.discard()
        raise


def _check_inputs(root: PublishedRoot, site: Path | None, analysis: Path | None) -> None:
    """Refuse, before anything is written, what would make the run fail after it wrote: a root that cannot
    be a folder, a site that cannot go where it is asked to (see `check_output`), fresh analysis that cannot
    be read; and a published file read back that is a symlink leading nowhere (see `check_readable`)."""
    from extractor.query.analysis import read_analysis

    check_folder(root.path)
    root.check_readable()
    root.check_scope()
    if site is not None:
        from extractor.publish.site.build import check_output

        check_output(site, option="--site")
    if analysis is not None:
        read_analysis(analysis)


def _nightly(
    root: PublishedRoot,
    commit: Commit,
    options: ExtractOptions,
    keep: int | None,
    log: Callable[[str], None],
    analysis: Path | None,
    site: Path | None,
    started: float,
) -> NightlyResult:
    step = time.monotonic()
    with root.locked():
        log(f"took the lock ({time.monotonic() - step:.2f}s)")
        if _up_to_date(root, commit, options):
            if analysis is not None:
                folder = root.folder(commit.sha)
                carry_analysis(None, folder, load_catalog(folder), None, analysis, log)
            if site is not None and (analysis is not None or not _site_done(root, site)):
                publish_site(root, site, log)
            log(f"{commit.sha[:12]} was published meanwhile; nothing else to do")
            return NightlyResult(commit.sha, published=False)
        _publish(root, commit, options, keep, log, analysis)
        if site is not None:
            publish_site(root, site, log)
    log(f"done ({time.monotonic() - started:.2f}s)")
    return NightlyResult(commit.sha, published=True)


def _publish(
    root: PublishedRoot,
    commit: Commit,
    options: ExtractOptions,
    keep: int | None,
    log: Callable[[str], None],
    analysis: Path | None = None,
) -> None:
    indexed = root.indexed()
    index = root.read_index()
    directory = root.folder(commit.sha)
    made = not directory.exists()
    try:
        _publish_into(root, directory, index, indexed, commit, options, keep, log, analysis)
    except BaseException:
        # (a published history that cannot be read back, say: rolled on after the catalog is written)
        if made:  # this night's folder, if the index does not name it yet: no one has seen it
            with contextlib.suppress(CatalogError):
                if root.read_index().latest != commit.sha:
                    shutil.rmtree(directory, ignore_errors=True)
                    root.abandon(commit.sha)
        raise


def _publish_into(
    root: PublishedRoot,
    directory: Path,
    index: NightlyIndex,
    indexed: bool,
    commit: Commit,
    options: ExtractOptions,
    keep: int | None,
    log: Callable[[str], None],
    analysis: Path | None,
) -> None:
    step = time.monotonic()
    root.begin(commit.sha)  # (a folder a killed night completes is known for its: removed once not indexed)
    catalog = is_complete(directory, options=options, sha=commit.sha)
    if catalog is None:
        extracted = extract_commit(commit, options=options)
        write_catalog(extracted.pieces, extracted.manifest_data, directory)
        fault_point("catalog written")
        catalog = LoadedCatalog(extracted, extracted.manifest, commit.sha, commit.revision)
        log(f"extracted {catalog.count} records into {directory} ({time.monotonic() - step:.2f}s)")
    else:
        log(f"reused the complete catalog in {directory} ({time.monotonic() - step:.2f}s)")
    assert catalog.manifest is not None

    step = time.monotonic()
    summary = None
    diff = None
    previous = _previous(root, index, commit.sha, log)
    if previous is not None:
        diff = diff_catalogs(previous, catalog)
        atomic_write(directory / DIFF, render_json(diff))
        atomic_write(directory / DIFF_PAGE, page_bytes(render_markdown(diff)))
        summary = diff.summary
        changes = ", ".join(f"{count} {kind}" for kind, count in summary.items() if count and kind != "unchanged")
        log(f"diffed against {previous.sha[:12]}: {changes or 'no changes'} ({time.monotonic() - step:.2f}s)")
    elif index.latest is None:
        log("first catalog: no diff")
    before = root.folder(index.latest) if previous is not None and index.latest else None
    carry_analysis(before, directory, catalog, diff, analysis, log)

    step = time.monotonic()  # the rolling history, beside the index: advanced by this night, not recomputed
    history = roll(root.path, previous=previous, catalog=catalog, options=options, pairs=diff.pairs if diff else None)
    nights = len(history.revisions)
    plural = "" if nights == 1 else "s"
    took = time.monotonic() - step
    log(f"rolled the history on: {len(history.threads)} lineages over {nights} night{plural} ({took:.2f}s)")

    step = time.monotonic()
    entry = IndexEntry(
        sha=commit.sha,
        committedAt=catalog.manifest.committedAt,
        analyzedAt=catalog.manifest.analyzedAt,
        records=catalog.count,
        summary=summary,
    )
    entries = [entry, *(e for e in index.catalogs if e.sha != commit.sha)]
    dropped = entries[keep:] if keep is not None else []
    kept = entries[:keep] if keep is not None else entries
    root.commit(NightlyIndex(latest=commit.sha, catalogs=kept), history=history.encode())
    log(f"published {root.index_path} ({time.monotonic() - step:.2f}s)")
    # The index no longer names them, so removing them now can leave nothing dangling.
    for old in dropped:
        root.remove(old.sha)
    if dropped:
        log(f"removed {len(dropped)} catalog(s) beyond the newest {keep}")
    if removed := root.clean({entry.sha for entry in kept}, folders=indexed):
        log(f"removed {removed} folder(s) and temporary file(s) of killed runs that no index names")


def _previous(root: PublishedRoot, index: NightlyIndex, sha: str, log: Callable[[str], None]) -> LoadedCatalog | None:
    if index.latest is None or index.latest == sha:
        return None
    try:
        return load_catalog(root.folder(index.latest))
    except CatalogError as error:
        log(f"the previously published catalog is damaged, so no diff is written: {error}")
        return None


# Analysis and site: what the published catalog carries beside its records, and its static site.


def carry_analysis(
    previous: Path | None,
    directory: Path,
    catalog: LoadedCatalog,
    diff: CatalogDiff | None,
    fresh: Path | None,
    log: Callable[[str], None],
) -> None:
    """Write analysis.jsonl and needs-analysis.jsonl into a catalog's folder `directory`.

    The analysis of the catalog published before (in the folder `previous`), what is already in
    `directory`, and `fresh`, in that order, is kept for every record whose id and wording are unchanged;
    needs-analysis.jsonl lists the records that are new, reworded or modified since their analysis was
    written.
    """
    from extractor.publish.site.inputs import read_diff
    from extractor.query.analysis import (
        ANALYSIS,
        NEEDS_ANALYSIS,
        AnalysisEntry,
        carry_forward,
        encode_entries,
        merged,
        read_analysis,
    )
    from extractor.query.diff import ChangeKind

    step = time.monotonic()
    known: dict[str, AnalysisEntry] = {}
    sources = [directory / ANALYSIS]
    if previous is not None:
        sources.insert(0, previous / ANALYSIS)
    for path in sources:
        if present(path):
            known.update(read_analysis(path))
    if fresh is not None:  # (speaking of the records as they are now: merged field by field, see merged)
        known = merged(known, read_analysis(fresh), catalog.lines)
    if diff is not None:
        reworded = [c.id for c in diff.changes if c.kind is ChangeKind.REWORDED]
    elif present(directory / DIFF):  # merging fresh analysis into a catalog published earlier
        changes = read_diff(directory / DIFF).changes
        reworded = [c.id for c in changes if c.kind == ChangeKind.REWORDED.value]
    else:
        reworded = []
    carried = carry_forward(known, catalog.lines, reworded=reworded)
    atomic_write(directory / ANALYSIS, encode_entries(carried.entries))
    atomic_write(directory / NEEDS_ANALYSIS, encode_entries(carried.needs))
    log(
        f"analysis kept for {len(carried.entries)} records, {len(carried.needs)} need analysis "
        f"({time.monotonic() - step:.2f}s)"
    )


def _site_done(root: PublishedRoot, site: Path | None) -> bool:
    """Tell whether there is no site to build, or it is built from the latest catalog already."""
    from extractor.publish.site.pages import MARKER

    if site is None:
        return True
    try:
        return bool(orjson.loads(read_whole(site / MARKER))["sha"] == root.read_index().latest)
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, CatalogError):
        return False


def publish_site(root: PublishedRoot, site: Path, log: Callable[[str], None]) -> None:
    """Rebuild the site of the latest published catalog into `site`: built aside, then switched to at once."""
    from extractor.publish.site.build import build_site
    from extractor.publish.site.inputs import open_root_inputs

    step = time.monotonic()
    inputs = open_root_inputs(root)
    summary = build_site(
        inputs.catalog,
        output=site,
        analysis=inputs.analysis,
        diffs=inputs.diffs,
        history=inputs.history,
        link=True,
        option="--site",
    )
    log(f"site of {summary.records} records rebuilt in {site} ({time.monotonic() - step:.2f}s)")
