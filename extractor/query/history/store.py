# Store: a history's folder, written (history.jsonl, history.json; the Markdown and chart) and read back;
# the nightly's rolling history, advanced by one catalog.
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from extractor.catalog.load import LoadedCatalog, first_problem, present, read_document
from extractor.catalog.published import HISTORY, HISTORY_MANIFEST
from extractor.errors import CatalogError
from extractor.model.records import HistoryManifest, Lineage, Scope
from extractor.pipeline.options import ExtractOptions
from extractor.pipeline.write import atomic_write_all, default_root, page_bytes, scope_label
from extractor.query.diff import Pair
from extractor.query.history.checks import RevisionChecks, sides
from extractor.query.history.lineage import History, advance
from extractor.query.history.revisions import followed
from extractor.util.atomic import read_whole

__all__ = [
    "WrittenHistory",
    "history_folder",
    "load_lineages",
    "read_history",
    "read_written",
    "roll",
    "write_history",
]


def history_folder(options: ExtractOptions) -> str:
    """Name a history's default folder: `history`, then, for any scope but the default one, which paths
    and classes it holds (`history-vllm-all`), as extraction names catalogs' folders: histories of
    different scopes live side by side. A path followed as module and package is named once."""

    def named(scope: Scope) -> Scope:
        stems = [*dict.fromkeys(path.removesuffix(".py") for path in scope.paths)]
        config = [*dict.fromkeys(path.removesuffix(".py") for path in scope.configFrom)]
        return scope.model_copy(update={"paths": stems, "configFrom": config})

    default = followed(ExtractOptions())
    label = scope_label(
        named(options.scope).model_dump(mode="json"), default=named(default.scope).model_dump(mode="json")
    )
    return f"history-{label}" if label else "history"


@dataclass(frozen=True)
class WrittenHistory:
    """Where a history's folder was written, and what a run prints of it: history.jsonl, or the Markdown page
    (history.md, its chart named relative to the folder)."""

    folder: Path
    printed: bytes


def write_history(history: History, *, folder: Path | None = None, markdown: bool = False) -> WrittenHistory:
    """Write a history's folder (`folder`, else its repository's, named by history_folder): history.jsonl and
    history.json, and with `markdown` history.md and its chart (history.svg, history.png), all together or
    none. Without `markdown`, an earlier Markdown run's page and chart are removed: they told of another
    history."""
    root = folder if folder is not None else default_root(history.repo) / history_folder(history.options)
    lines, manifest = history.encode()
    files = [(root / HISTORY, lines), (root / HISTORY_MANIFEST, manifest)]  # written together, or none
    if not markdown:
        atomic_write_all(files)
        for stale in ("history.md", "history.svg", "history.png"):
            (root / stale).unlink(missing_ok=True)
        return WrittenHistory(root, lines)
    from extractor.query.history.changelog import render_changelog, render_chart

    title = f"History of the checks in {', '.join(history.options.paths)} ({history.repo})"
    files += [
        (root / f"history{suffix}", data) for suffix, data in render_chart(history.revisions, title=title).items()
    ]
    lineages = history.lineages
    # The page printed is history.md's bytes: its chart named from the folder, where the two stay together
    # (a path from where the command ran would break wherever the page is opened from).
    page = page_bytes(render_changelog(lineages, history.revisions, title=title, chart="history.svg"))
    atomic_write_all([*files, (root / "history.md", page)])
    return WrittenHistory(root, page)


def roll(
    directory: Path,
    *,
    previous: LoadedCatalog | None,
    catalog: LoadedCatalog,
    options: ExtractOptions,
    pairs: Sequence[Pair] | None = None,
) -> History:
    """Add a published catalog to the rolling history in `directory` (the nightly job's), incrementally:
    the history is read back and advanced by one revision, labelled by its SHA. A history that already
    ends with this catalog is left as it is; one that is missing, of another scope or does not end with
    `previous` starts again from `previous`. Nothing is written: the caller publishes its encoding
    together with the index that names the catalog (PublishedRoot.commit)."""
    history = read_history(directory, options=options)
    if history is not None and history.revisions and history.revisions[-1].sha == catalog.sha:
        if {thread.id for thread in history.threads if thread.present} == {line.record.id for line in catalog.lines}:
            return history
        # The same commit extracted again gives other ids (another extractor, re-extracting in place): its
        # night in the history is no longer this catalog's. Started again, as a history of another scope is.
        history = None
    # The diff's pairs hold every check of both catalogs: they are not read again.
    old_checks, new_checks = sides(pairs) if pairs is not None else (None, None)
    before = RevisionChecks.of(previous, old_checks) if previous is not None else None
    if history is None or not history.revisions or previous is None or history.revisions[-1].sha != previous.sha:
        history = History(repo=_repo_of(catalog, options), options=options)
        if before is not None:
            advance(history, None, before, before.sha[:12])
            pairs = None
    advance(history, before, RevisionChecks.of(catalog, new_checks), catalog.sha[:12], pairs=pairs)
    return history


def _repo_of(catalog: LoadedCatalog, options: ExtractOptions) -> str:
    return catalog.manifest.repo if catalog.manifest is not None else options.repo_name or ""


def read_history(directory: Path, *, options: ExtractOptions | None = None) -> History | None:
    """Read DIR/history.jsonl and DIR/history.json back; None where there is none or it is not whole
    (the manifest, written last, counts the lines)."""
    lines_path, manifest_path = directory / HISTORY, directory / HISTORY_MANIFEST
    if not present(manifest_path):
        return None
    try:
        manifest = HistoryManifest.model_validate_json(read_whole(manifest_path))
        lineages = [Lineage.model_validate_json(raw) for raw in read_whole(lines_path).splitlines() if raw.strip()]
    except (ValidationError, OSError) as error:
        raise CatalogError(f"{directory}: not a readable history: {str(error).splitlines()[0]}") from None
    if len(lineages) != manifest.lineages:
        return None
    if options is not None and manifest.scope != options.scope:
        return None
    return History.of_written(manifest, lineages, options=options or ExtractOptions.of_scope(manifest.scope))


def read_written(path: Path) -> tuple[list[Lineage], HistoryManifest | None]:
    """A history written before: history.jsonl (or the folder holding it), every line validated, and
    history.json beside it, validated too, when there is one. A number of lines other than the one it
    counts means the history was cut or altered."""
    lineages = load_lineages(path)
    manifest_path = (path if path.is_dir() else path.parent) / HISTORY_MANIFEST
    manifest = read_document(manifest_path, HistoryManifest, "history manifest")
    if manifest is None:
        return lineages, None
    if manifest.lineages != len(lineages):
        raise CatalogError(
            f"{path} holds {len(lineages)} lineages but {manifest_path} counts {manifest.lineages}: "
            "it was cut or altered"
        )
    return lineages, manifest


def load_lineages(path: Path) -> list[Lineage]:
    """Read history.jsonl (or the directory holding it), validating every line."""
    target = path / HISTORY if path.is_dir() else path
    try:
        raw = read_whole(target)
    except OSError as error:
        raise CatalogError(f"cannot read history {target}: {error.strerror or error}") from None
    out = []
    for number, text in enumerate(raw.splitlines(), start=1):
        if text.strip():
            try:
                out.append(Lineage.model_validate_json(text))
            except ValidationError as error:
                raise CatalogError(f"{target}:{number}: not a history line: {first_problem(error)}") from None
    return out
