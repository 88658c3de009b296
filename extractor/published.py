# Published: the nightly index of published catalogs (index.json), read by the nightly job and the site.
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from extractor.atomic import read_whole
from extractor.catalog import first_problem, folder_name
from extractor.errors import CatalogError
from extractor.models import NightlyIndex, Scope
from extractor.write import MANIFEST, RECORDS

__all__ = ["INDEX", "catalog_folder", "is_root", "latest_catalog", "read_index"]

INDEX = "index.json"


def read_index(output: Path) -> NightlyIndex:
    """Read DIR/index.json, or an empty index where there is none yet."""
    path = output / INDEX
    if not path.exists():
        return NightlyIndex(latest=None, catalogs=[])
    try:
        return NightlyIndex.model_validate_json(read_whole(path))
    except OSError as error:
        raise CatalogError(f"cannot read {path}: {error.strerror or error}") from None
    except ValidationError as error:
        raise CatalogError(
            f"{path}: not a valid nightly index: {first_problem(error)}; restore it, or move it away to start "
            "a new index (the catalogs beside it stay)"
        ) from None


def catalog_folder(root: Path, sha: str, scope: Scope) -> Path | None:
    """Find the folder of a nightly root that holds the catalog of `sha`: the one `scope` names, else the
    only published folder of that SHA whatever its scope."""
    named = root / folder_name(sha=sha, revision=sha, scope=scope.model_dump(mode="json"))
    if (named / MANIFEST).exists():
        return named
    found = [p for p in [root / sha, *root.glob(f"{sha}-*")] if (p / MANIFEST).exists()]
    return found[0] if len(found) == 1 else None


def is_root(path: Path) -> bool:
    """Whether a path is a nightly root: a folder with index.json and no records.jsonl of its own."""
    return path.is_dir() and (path / INDEX).exists() and not (path / RECORDS).exists()


def latest_catalog(root: Path, scope: Scope) -> Path:
    """The folder of a nightly root's latest catalog: in the folder `scope` names, else the only one of its SHA."""
    index = read_index(root)
    if index.latest is None:
        raise CatalogError(f"{root / INDEX} names no published catalog yet")
    folder = catalog_folder(root, index.latest, scope)
    if folder is None:
        raise CatalogError(f"{root} holds no single published catalog of {index.latest} (pass its folder)")
    return folder
