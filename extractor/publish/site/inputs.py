# Site inputs: what a site is built from (a catalog, its analysis, the published diffs, the histories), read from disk.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, model_validator

from extractor.catalog.load import LoadedCatalog, load_catalog, open_catalog, present, read_document
from extractor.catalog.published import PublishedRoot
from extractor.errors import CatalogError
from extractor.model.records import EventKind, LineageEvent, Record
from extractor.pipeline.extract import ExtractOptions
from extractor.pipeline.write import RECORDS
from extractor.query.analysis import ANALYSIS, AnalysisEntry, read_analysis
from extractor.query.diff import ChangeKind
from extractor.query.history.store import read_written

__all__ = [
    "HistoryEvent",
    "PublishedDiff",
    "SiteInputs",
    "open_root_inputs",
    "open_site_inputs",
    "read_diff",
    "read_history_events",
    "read_published_diffs",
]


class _DiffSide(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    sha: str
    revision: str
    records: int


# The records each kind of change carries (diff.render_json): a page shows them, so a change without one
# is no diff the nightly job wrote.
_SIDES: dict[str, tuple[str, ...]] = {  # (ChangeKind is text: a change read back has its value)
    ChangeKind.ADDED: ("new",),
    ChangeKind.REMOVED: ("old",),
    **dict.fromkeys((ChangeKind.REWORDED, ChangeKind.MOVED, ChangeKind.MODIFIED), ("old", "new")),
}


class _DiffChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: str
    id: str
    old: Record | None
    new: Record | None
    fields: list[str] = []

    @model_validator(mode="after")
    def _has_its_records(self) -> Self:
        for side in _SIDES.get(self.kind, ()):
            if getattr(self, side) is None:
                raise ValueError(f"a {self.kind} change without its {side} record")
        return self


class _DiffDocument(BaseModel):
    """diff.json as the nightly job writes it (see diff.render_json)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    old: _DiffSide
    new: _DiffSide
    summary: dict[str, int]
    changes: list[_DiffChange]


@dataclass(frozen=True)
class PublishedDiff:
    """A diff the nightly job published beside a catalog: the catalog's SHA, its commit date, the diff."""

    sha: str
    committedAt: str | None
    document: _DiffDocument


@dataclass(frozen=True)
class HistoryEvent:
    """One step of a record's history, as a page shows it: when (a revision and date) and what happened."""

    revision: str
    date: str | None
    kind: str
    detail: str = ""


@dataclass(frozen=True)
class SiteInputs:
    """What a site is built from: a catalog, the analysis to show, the published diffs, the histories."""

    catalog: LoadedCatalog
    analysis: Mapping[str, AnalysisEntry]
    diffs: Sequence[PublishedDiff]
    history: Mapping[str, Sequence[HistoryEvent]]


def read_published_diffs(root: PublishedRoot, *, upto: str | None = None) -> list[PublishedDiff]:
    """Read the diffs a nightly root published, newest first, from `upto` back."""
    entries = root.read_index().catalogs
    if upto is not None:
        shas = [entry.sha for entry in entries]
        entries = entries[shas.index(upto) :] if upto in shas else []
    diffs = []
    for entry in entries:
        path = root.diff(entry.sha)
        if path is not None:
            diffs.append(PublishedDiff(entry.sha, entry.committedAt, read_diff(path)))
    return diffs


def read_diff(path: Path) -> _DiffDocument:
    """Read a diff.json the nightly job published (see diff.render_json), validated: what is wrong names the
    file and the field."""
    document = read_document(path, _DiffDocument, "diff")
    if document is None:
        raise CatalogError(f"no diff at {path}")
    return document


def open_site_inputs(
    spec: str, *, repo: str, options: ExtractOptions, analysis: Path | None = None, history: Path | None = None
) -> SiteInputs:
    """Open what a site is built from.

    `spec` is what `--catalog` takes, or a nightly root (a directory with index.json), which stands for its
    latest catalog (in the folder of the scope `options` gives, else the only one of its SHA). A catalog
    inside a nightly root brings the diffs published up to it and the root's history.jsonl (unless
    `history` names another file), and its folder's analysis.jsonl is the analysis unless `analysis` names
    another file.
    """
    path = Path(spec)
    root = PublishedRoot.at(path, scope=options.scope)
    if root is not None:
        return open_root_inputs(root, analysis=analysis, history=history)
    catalog = open_catalog(spec, repo=repo, options=options)
    if not (path.is_dir() and (path / RECORDS).exists()):
        return _inputs(catalog, analysis=analysis, history=history)
    # A catalog's folder: the folder it sits in is a nightly root when it holds an index, and a rolling
    # history beside the catalogs is the catalog's history whether or not it does.
    scope = catalog.manifest.scope if catalog.manifest is not None else options.scope
    beside = PublishedRoot(path.parent, scope)
    diffs: list[PublishedDiff] = []
    if beside.indexed() and catalog.manifest is not None:
        diffs = read_published_diffs(beside, upto=catalog.manifest.sha)
    return _inputs(catalog, path, beside, diffs, analysis=analysis, history=history)


def open_root_inputs(root: PublishedRoot, *, analysis: Path | None = None, history: Path | None = None) -> SiteInputs:
    """Open what the site of a nightly root's latest catalog is built from (see `open_site_inputs`)."""
    directory = root.latest()
    catalog = load_catalog(directory)
    diffs = read_published_diffs(root, upto=root.read_index().latest)
    return _inputs(catalog, directory, root, diffs, analysis=analysis, history=history)


def _inputs(
    catalog: LoadedCatalog,
    directory: Path | None = None,
    root: PublishedRoot | None = None,
    diffs: Sequence[PublishedDiff] = (),
    *,
    analysis: Path | None,
    history: Path | None,
) -> SiteInputs:
    """The inputs of a catalog read from `directory` in `root`: its folder's analysis.jsonl unless `analysis`
    names another file, the root's rolling history unless `history` names another."""
    if analysis is None and directory is not None and present(directory / ANALYSIS):
        analysis = directory / ANALYSIS
    if history is None and root is not None:
        history = root.history()
    return SiteInputs(
        catalog=catalog,
        analysis=read_analysis(analysis) if analysis is not None else {},
        diffs=diffs,
        history=read_history_events(history) if history is not None else {},
    )


def _event_detail(event: LineageEvent) -> str:
    previous = event.previous
    if event.kind is EventKind.REWORDED and previous is not None:
        return f"was “{previous.errorMessage}”"
    if event.kind is EventKind.MOVED and previous is not None:
        return f"from {previous.filePath}:{previous.lineNumber}"
    if event.kind is EventKind.MODIFIED and event.fields:
        return "changed: " + ", ".join(event.fields)
    return ""


def read_history_events(path: Path) -> dict[str, list[HistoryEvent]]:
    """Read history.jsonl (or the directory holding it), as the history command writes it, into the events of
    each id a check ever had. Dates come from history.json beside it, when there is one."""
    lineages, manifest = read_written(path)
    dates = {revision.revision: revision.committedAt for revision in manifest.revisions} if manifest else {}
    # A check there at the first revision the history followed may be older: present then, not introduced.
    start = manifest.revisions[0].revision if manifest and manifest.revisions else None
    history: dict[str, list[HistoryEvent]] = {}
    for lineage in lineages:
        events = [
            HistoryEvent(event.revision, dates.get(event.revision), "present", "the first revision followed")
            if event.kind is EventKind.INTRODUCED and event.revision == start
            else HistoryEvent(event.revision, dates.get(event.revision), event.kind.value, _event_detail(event))
            for event in lineage.events
        ]
        for event in lineage.events:
            history[event.id] = events
    return history
