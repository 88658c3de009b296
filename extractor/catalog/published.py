# Published: the nightly index of published catalogs (index.json), read by the nightly job and the site.
from __future__ import annotations

from pathlib import Path

from extractor.catalog.load import folder_name, present, read_document
from extractor.errors import CatalogError
from extractor.model.records import NightlyIndex, Scope
from extractor.pipeline.write import MANIFEST, RECORDS

__all__ = ["INDEX", "catalog_folder", "is_root", "latest_catalog", "read_index"]

INDEX = "index.json"


def read_index(output: Path) -> NightlyIndex:
    """Read DIR/index.json, or an empty index where there is none yet."""
    advice = "; restore it, or move it away to start a new index (the catalogs beside it stay)"
    index = read_document(output / INDEX, NightlyIndex, "nightly index", advice=advice)
    return index if index is not None else NightlyIndex(latest=None, catalogs=[])


def catalog_folder(root: Path, sha: str, scope: Scope) -> Path | None:
    """Find the folder of a nightly root that holds the catalog of `sha`: the one `scope` names, else the
    only published folder of that SHA whatever its scope."""
    named = root / folder_name(sha=sha, revision=sha, scope=scope.model_dump(mode="json"))
    if present(named / MANIFEST):
        return named
    found = [p for p in [root / sha, *root.glob(f"{sha}-*")] if present(p / MANIFEST)]
    return found[0] if len(found) == 1 else None


def is_root(path: Path) -> bool:
    """Whether a path is a nightly root: a folder with index.json and no records.jsonl of its own."""
    return path.is_dir() and present(path / INDEX) and not present(path / RECORDS)


def latest_catalog(root: Path, scope: Scope) -> Path:
    """The folder of a nightly root's latest catalog: in the folder `scope` names, else the only one of its SHA."""
    index = read_index(root)
    if index.latest is None:
        raise CatalogError(f"{root / INDEX} names no published catalog yet")
    folder = catalog_folder(root, index.latest, scope)
    if folder is None:
        raise CatalogError(f"{root} holds no single published catalog of {index.latest} (pass its folder)")
    return folder
