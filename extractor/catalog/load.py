# Catalog: read a written catalog back (validated), or find or extract the catalog of a revision or release.
from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from extractor._version import __version__
from extractor.catalog.spec import CatalogSpec, OnDisk, Release, catalog_there, parse_catalog, release_label
from extractor.errors import CatalogError
from extractor.model.records import CatalogLine, Manifest
from extractor.pipeline.extract import Catalog, ExtractOptions, extract_commit
from extractor.pipeline.write import MANIFEST, RECORDS, default_root, folder_name, leading_nowhere, records_digest
from extractor.repo.git.blobs import read_file
from extractor.repo.git.commit import Commit, resolve
from extractor.util.atomic import read_whole
from extractor.util.progress import note

__all__ = [
    "LoadedCatalog",
    "first_problem",
    "folder_name",
    "is_complete",
    "load_catalog",
    "open_catalog",
    "present",
    "read_document",
    "release_commit",
]


class LoadedCatalog:
    """A catalog read from disk or extracted on the fly, with where it came from: every reader (diff,
    match, explain, list, history, site) reads its `lines`, the models of the published records.

    Lines read from disk are validated as they are read. Those of an extraction (trusted: this run built
    them) are validated when `lines` is first asked for: a run that only writes its catalog never makes
    them."""

    __slots__ = ("_extracted", "_lines", "manifest", "revision", "sha")

    def __init__(
        self, lines: tuple[CatalogLine, ...] | Catalog, manifest: Manifest | None, sha: str, revision: str
    ) -> None:
        self._lines: tuple[CatalogLine, ...] | None = lines if isinstance(lines, tuple) else None
        self._extracted: Catalog | None = None if isinstance(lines, tuple) else lines
        self.manifest, self.sha, self.revision = manifest, sha, revision

    @property
    def lines(self) -> tuple[CatalogLine, ...]:
        if self._lines is None:
            assert self._extracted is not None
            self._lines = self._extracted.lines
        return self._lines

    @property
    def count(self) -> int:
        """How many lines it holds (an extraction's counted by its manifest, without validating them)."""
        if self._lines is None and self._extracted is not None:
            return self._extracted.manifest_data["counts"]["records"]
        return len(self.lines)


def load_catalog(path: Path) -> LoadedCatalog:
    """Read a catalog directory, its records.jsonl or its manifest.json, validating every line; corruption
    names file and line.

    A catalog is whole or an error: its manifest (written last) must count its records and hold their
    checksum. A directory without a manifest is a run that never finished. A records.jsonl given alone
    with no manifest beside it (as `--output -` writes) can only be checked line by line: a cut in the
    middle of a line shows, a cut at a line boundary cannot.
    """
    # Its manifest names the catalog as well as its folder does.
    records = path / RECORDS if path.is_dir() else path.parent / RECORDS if path.name == MANIFEST else path
    manifest_path = records.parent / MANIFEST
    manifest = _read_manifest(manifest_path)
    if manifest is None and path.is_dir():
        raise CatalogError(f"{path}: no {MANIFEST}, so the catalog is incomplete (its run did not finish)")
    try:
        raw = read_whole(records)
    except OSError as error:
        raise CatalogError(f"cannot read catalog {records}: {error.strerror or error}") from None
    if manifest is not None and manifest.recordsSha256 is None:
        raise CatalogError(f"{manifest_path} holds no checksum of its records (an older extractor's): extract it again")
    if manifest is not None and manifest.recordsSha256 != records_digest(raw):
        raise CatalogError(f"{records} does not match the checksum in {manifest_path}: it was cut or altered")
    if raw and not raw.endswith(b"\n"):
        raise CatalogError(f"{records}: the last line is cut (no newline at the end)")
    lines = []
    for number, text in enumerate(raw.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            lines.append(CatalogLine.model_validate(orjson.loads(text)))
        except orjson.JSONDecodeError as error:
            raise CatalogError(f"{records}:{number}: not JSON: {error}") from None
        except ValidationError as error:
            raise CatalogError(f"{records}:{number}: not a catalog line: {first_problem(error)}") from None
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        first = seen.setdefault(line.record.id, number)
        if first != number:  # ids are unique by construction: a line copied or pasted in
            raise CatalogError(f"{records}: record {number} has the id {line.record.id} of record {first}")
    if manifest is not None and manifest.counts.records != len(lines):
        raise CatalogError(
            f"{records} holds {len(lines)} records but {manifest_path} counts {manifest.counts.records}: "
            "it was cut or altered"
        )
    sha = manifest.sha if manifest else (lines[0].record.analyzedSha if lines else "")
    revision = manifest.revision if manifest else str(path)
    return LoadedCatalog(tuple(lines), manifest, sha, revision)


_Document = TypeVar("_Document", bound=BaseModel)


def present(path: Path) -> bool:
    """Whether there is something at `path`, a file to read back: False where nothing is. A symlink that
    leads nowhere (to nothing, or round a loop of links) is an error naming it, never taken for no file
    (`Path.exists` says False for both, and a reader would start afresh, or read nothing, without a word)."""
    if path.exists():
        return True
    if path.is_symlink():
        raise CatalogError(f"cannot read {path}: it is {leading_nowhere(path)}")
    return False


def read_document(path: Path, model: type[_Document], what: str, *, advice: str = "") -> _Document | None:
    """A JSON document read back (a manifest, a nightly index, a diff), validated: None where there is none
    (a symlink that leads nowhere is no "none": see `present`); what is wrong names the file, then the
    field, then `advice`."""
    if not present(path):
        return None
    try:
        return model.model_validate_json(read_whole(path))
    except OSError as error:
        raise CatalogError(f"cannot read {path}: {error.strerror or error}") from None
    except ValidationError as error:
        raise CatalogError(f"{path}: not a valid {what}: {first_problem(error)}{advice}") from None


def _read_manifest(path: Path) -> Manifest | None:
    return read_document(path, Manifest, "manifest")


def first_problem(error: ValidationError) -> str:
    """The first thing wrong in a document that did not validate: where (field path) and what."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the document"
    return f"{where}: {first['msg']}"


def is_complete(directory: Path, *, options: ExtractOptions, sha: str) -> LoadedCatalog | None:
    """Return the catalog in `directory` if it is whole and made by this version for this scope and SHA."""
    if not (directory / MANIFEST).exists():
        return None
    with contextlib.suppress(CatalogError):
        loaded = load_catalog(directory)
        manifest = loaded.manifest
        if (
            manifest is not None
            and manifest.sha == sha
            and manifest.extractorVersion == __version__
            and manifest.scope == options.scope
            and manifest.counts.records == len(loaded.lines)
            and (options.repo_name is None or manifest.repo == options.repo_name)
        ):
            return loaded
    return None


def release_commit(version: str) -> tuple[Commit, str | None]:
    """Return the commit holding a release's `vllm/` package and the vLLM commit it was built from."""
    from extractor.repo.release import commit_id, release_repo, release_tag, release_version

    version = release_version(version)  # (as a tag spells it, `v0.28.0`, too)
    repo = release_repo([version])
    commit = replace(resolve(str(repo), release_tag(version)), revision=release_label(version), release=version)
    version_py = read_file(commit, "vllm/_version.py")
    return commit, commit_id(version_py) if version_py is not None else None


def open_catalog(
    spec: CatalogSpec | str, *, repo: str, options: ExtractOptions, root: Path | None = None
) -> LoadedCatalog:
    """Open what `spec` names (a string is read by `parse_catalog`): a release, a catalog directory or
    records.jsonl, or a revision of `repo`.

    A revision reuses a complete catalog already written under `root` for its SHA and scope.
    """
    if isinstance(spec, str):
        spec = parse_catalog(spec, repo=repo)
    if isinstance(spec, Release):
        if spec.bare:
            note(f"reading {spec.text} as {spec.label}, from the release's sdist")
        commit, pinned = release_commit(spec.version)
        catalog = extract_commit(commit, options=options, pinned_sha=pinned)
        return LoadedCatalog(catalog, catalog.manifest, catalog.manifest.sha, spec.label)
    if isinstance(spec, OnDisk):
        if catalog_there(spec.path):
            return load_catalog(spec.path)
        raise CatalogError(f"no catalog at {spec.text}{_what_is_there(spec.path)}")
    commit = resolve(repo, spec.text)
    base = root if root is not None else default_root(options.repo_name or commit.repo_name)
    folder = folder_name(sha=commit.sha, scope=options.scope_data)
    reused = is_complete(base / folder, options=options, sha=commit.sha)
    if reused is not None:
        return LoadedCatalog(reused.lines, reused.manifest, commit.sha, spec.text)
    catalog = extract_commit(commit, options=options)
    return LoadedCatalog(catalog, catalog.manifest, commit.sha, spec.text)


def _what_is_there(path: Path) -> str:
    """Say why a path holds no catalog: it does not exist, or which catalogs a folder of them holds."""
    if not path.exists():
        if path.is_symlink():
            return f": {leading_nowhere(path)} (missing, or a loop of links)"
        return ": the path does not exist"
    if not path.is_dir():
        return ""
    inside = sorted(p.name for p in path.iterdir() if (p / RECORDS).is_file())
    if not inside:
        return f": no {RECORDS} in it"
    more = ", ..." if len(inside) > 5 else ""
    return f": no {RECORDS} in it, but in its folders {', '.join(inside[:5])}{more}"
