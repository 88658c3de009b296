# Published: the nightly index of published catalogs (index.json), read by the nightly job and the site.
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from extractor.catalog import first_problem
from extractor.errors import CatalogError
from extractor.models import NightlyIndex

__all__ = ["INDEX", "read_index"]

INDEX = "index.json"


def read_index(output: Path) -> NightlyIndex:
    """Read DIR/index.json, or an empty index where there is none yet."""
    path = output / INDEX
    if not path.exists():
        return NightlyIndex(latest=None, catalogs=[])
    try:
        return NightlyIndex.model_validate_json(path.read_bytes())
    except OSError as error:
        raise CatalogError(f"cannot read {path}: {error.strerror or error}") from None
    except ValidationError as error:
        raise CatalogError(
            f"{path}: not a valid nightly index: {first_problem(error)}; restore it, or move it away to start "
            "a new index (the catalogs beside it stay)"
        ) from None
