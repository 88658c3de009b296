# Write: catalog lines and manifest -> files published atomically (util.atomic: a temporary file, fsync, rename).
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from extractor.errors import ExtractorError, OutputError
from extractor.pipeline.options import ExtractOptions
from extractor.util.atomic import Content, replace_files, sha256_of

if TYPE_CHECKING:  # the models are only handed in: an extraction writes its catalog without pydantic
    from pydantic import BaseModel

    from extractor.model.manifest import ManifestData
    from extractor.model.records import CatalogLine, Manifest

__all__ = [
    "MANIFEST",
    "OUTPUT",
    "RECORDS",
    "atomic_write",
    "atomic_write_all",
    "check_folder",
    "default_root",
    "dumps_line",
    "elsewhere",
    "encode_lines",
    "folder_name",
    "is_repo_name",
    "leading_nowhere",
    "page_bytes",
    "records_digest",
    "scope_label",
    "why_not",
    "write_catalog",
]

RECORDS = "records.jsonl"
MANIFEST = "manifest.json"


def dumps_line(line: CatalogLine) -> bytes:
    # (a reproduction is only there once `reproduce` ran: an extracted catalog's lines have no such key)
    left_out = {"extraction": {"reproduction"}} if line.extraction.reproduction is None else None
    return orjson.dumps(line.model_dump(mode="json", exclude=left_out))


def dumps_model(model: BaseModel) -> bytes:
    return dumps_document(model.model_dump(mode="json"))


def dumps_document(data: Mapping[str, Any]) -> bytes:
    """A JSON document as the extractor writes it (a manifest, an index, a command's JSON output): indented,
    ending in a newline."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def page_bytes(page: str) -> bytes:
    """A page for people (Markdown) as the bytes of its file: UTF-8, and what UTF-8 cannot hold (a lone
    surrogate: a byte of a path's name that is not UTF-8) written as its escape, `\\udcff`, as standard
    output writes it."""
    return page.encode("utf-8", "backslashreplace")


_REPO_NAME = re.compile(r"[\w.-]+/[\w.-]+", re.ASCII)


def is_repo_name(name: str) -> bool:
    """Whether `name` is OWNER/NAME as GitHub spells one (and so names a folder under output/)."""
    return bool(_REPO_NAME.fullmatch(name)) and not {".", ".."} & set(name.split("/"))


OUTPUT = Path("output")  # where what is written goes unless told otherwise (catalogs, histories)


def default_root(repo_name: str) -> Path:
    """Where catalogs of a repository go unless told otherwise: output/<owner>/<name>."""
    if not is_repo_name(repo_name):  # never a folder outside output/
        raise ExtractorError(f"cannot write catalogs of {repo_name!r}: not an OWNER/NAME repository name")
    return OUTPUT.joinpath(*repo_name.split("/"))


def encode_lines(lines: Iterable[CatalogLine]) -> bytes:
    """Serialize lines as records.jsonl: one compact JSON object per line."""
    return b"".join(dumps_line(line) + b"\n" for line in lines)


def atomic_write(path: Path, data: bytes) -> None:
    """Publish `data` at `path`, whole or not at all, even if the process or the machine dies midway."""
    atomic_write_all([(path, data)])


def atomic_write_all(files: Sequence[tuple[Path, Content]]) -> None:
    """Publish files together: every one written aside first, then all replaced, so that a failure (a full
    disk, a directory where a file goes) leaves none of them changed."""
    for path, _ in files:
        if path.is_dir():
            raise ExtractorError(f"cannot write {path}: a directory is in the way")
    # A symlink is written through, as the shell's `>` writes (the file it names replaced, the link kept);
    # and as there, into a folder that is there: the folders a link names are not made (a stale link's).
    files = [(_through(path) if path.is_symlink() else path, data) for path, data in files]
    try:
        replace_files(files)
    except OSError as error:  # named by the file it was about (not by its temporary twin), else the folder
        named = Path(error.filename).name if error.filename else ""
        about = next((path for path, _ in files if named == path.name or named.startswith(f".{path.name}.")), None)
        where = about or (files[0][0] if len(files) == 1 else files[0][0].parent)
        raise ExtractorError(f"cannot write {where}: {why_not(about or files[0][0], error)}") from None


def _through(link: Path) -> Path:
    """The file a symlink to be written leads to, in a folder that is there."""
    target = Path(os.path.realpath(link))
    if not target.parent.is_dir():
        raise ExtractorError(f"cannot write {link}: it is a symlink to {target}, in no folder that exists")
    return target


def why_not(path: Path, error: OSError) -> str:
    """Why `path` could not be written, in words: a file (or a symlink that leads nowhere) standing where one
    of its folders goes, which the system calls "File exists" or "Not a directory"; else what it said."""
    if isinstance(error, FileExistsError | NotADirectoryError):
        found = _in_the_way(reversed(path.parents))
        if found is not None:
            return found
    return error.strerror or str(error)


def _in_the_way(folders: Iterable[Path]) -> str | None:
    """The first of `folders` (outermost first) that stands where a folder goes, in words: a file, or a
    symlink that leads nowhere; None if there is none."""
    for folder in folders:
        if folder.is_symlink() and not folder.exists():
            return f"{folder} is {leading_nowhere(folder)}, where a folder goes"
        if folder.exists() and not folder.is_dir():
            return f"{folder} is a file, where a folder goes"
    return None


def leading_nowhere(path: Path) -> str:
    """What a symlink that leads nowhere (to nothing, or round a loop of links) is, in words."""
    return f"a symlink to {os.readlink(path)}, which leads nowhere"


def records_digest(records: Content) -> str:
    """The checksum a manifest holds of its records.jsonl (whole, or in pieces)."""
    return sha256_of(records).hexdigest()


def write_catalog(records: Content, manifest: ManifestData | Manifest, directory: Path) -> Path:
    """Write records.jsonl (as encoded, whole or in pieces) then manifest.json with the records' checksum
    (the manifest last: it marks the catalog complete, and whatever happens to records.jsonl later shows
    as a mismatch). The manifest is data (see manifest.py), or a model."""
    data = manifest if isinstance(manifest, dict) else manifest.model_dump(mode="json")
    sealed = {**data, "recordsSha256": records_digest(records)}
    atomic_write_all([(directory / RECORDS, records), (directory / MANIFEST, dumps_document(sealed))])
    return directory


_DEFAULT_SCOPE = ExtractOptions().scope_data
_LABEL_LIMIT = 80


def folder_name(*, sha: str, scope: Mapping[str, Any], release: str | None = None) -> str:
    """Name the folder a catalog is written to under its root: the full SHA, or `release-X.Y.Z` for a
    release's (`release`: its version), then, for any scope but the default one, which paths and classes it
    holds (`-vllm-all`). `scope` is a records.Scope as data (ExtractOptions.scope_data).

    Catalogs of one revision in different scopes thus live side by side; a scope that differs in other
    options too (context, where fields are read from) adds a digest of the whole scope.
    """
    base = sha if release is None else "release-" + re.sub(r"[^\w.+-]", "_", release)
    label = scope_label(scope, default=_DEFAULT_SCOPE)
    return f"{base}-{label}" if label else base


def scope_label(scope: Mapping[str, Any], *, default: Mapping[str, Any]) -> str:
    """Say which paths and classes a scope (as data) holds (`vllm-all`), for a folder's name; '' for
    `default`. A scope that differs from `default` in other options too adds a digest of the whole scope."""
    if scope == default:
        return ""
    paths = "+".join(path.strip("/").replace("/", ".") or "." for path in scope["paths"])
    classes = "all" if "*" in scope["exceptions"] else "+".join(scope["exceptions"])
    label = re.sub(r"[^\w.+=-]", "_", f"{paths}-{classes}")
    others = {**scope, "paths": default["paths"], "exceptions": default["exceptions"]}
    if others != default or len(label) > _LABEL_LIMIT:
        digest = hashlib.sha256(orjson.dumps(dict(scope))).hexdigest()[:8]
        label = f"{label[:_LABEL_LIMIT]}-{digest}"
    return label


def check_folder(path: Path, *, writing: Path | None = None, writable: bool = True, option: str = "--output") -> None:
    """Refuse a folder to write into that cannot be one, before any work, as a write would (see why_not): a
    file, or a symlink that leads nowhere, at its path or at a path above it; a folder that cannot be written
    (where it is, or the nearest one above it that is there: a read-only file system, no permission). Where
    nothing is, the folder is made when written. `writing`: the file the folder is for, named in what is said;
    `writable=False`: a folder that may need no write (checked when it does); `option`: the option that
    moves it, named in what is said (see elsewhere)."""
    found = _in_the_way((*reversed(path.parents), path))
    if found is not None:
        raise OutputError(f"cannot write {writing or path}: {found}{elsewhere(option)}")
    there = next((folder for folder in (path, *path.parents) if folder.is_dir()), None)
    if writable and there is not None and not os.access(there, os.W_OK | os.X_OK):
        read_only = bool(os.statvfs(there).f_flag & os.ST_RDONLY)
        named = "the current folder" if there == Path(".") else str(there)
        why = f"{named} is on a read-only file system" if read_only else f"{named} is not writable"
        raise OutputError(f"cannot write {writing or path}: {why}{elsewhere(option)}")


def elsewhere(option: str) -> str:
    """What a refusal of where a command writes ends with: the option that names another place."""
    return f" (name one that can be written with {option})"
