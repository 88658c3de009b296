# Reproductions: what `reproduce` ran, kept in the user cache per runtime (vllm-0.28.0.jsonl), each under a
# key made of the record's id, what its check rests on (`analysis.basis`) and the extractor's version: a record
# that changes, or a new extractor, is run again; explain and the site show only what was run.
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import orjson
from pydantic import ValidationError

from extractor._version import __version__, code_digest
from extractor.model.records import CatalogLine, Reproduction
from extractor.pipeline.write import RELEASE_PREFIX
from extractor.query.analysis import basis
from extractor.repo.housekeeping import cache_dir
from extractor.util.atomic import read_whole, replace_bytes

__all__ = ["attach", "attach_line", "key", "load", "release_of", "save", "store_path"]


def store_path(package: str, version: str) -> Path:
    return cache_dir() / "reproductions" / f"{package}-{version}.jsonl"


def key(line: CatalogLine) -> str:
    """What a reproduction of a record holds for: its id, its check's basis, the extractor's version and the code
    that reproduces (an edit to it runs the records again, released or not)."""
    text = f"{line.record.id}\0{basis(line)}\0{__version__}\0{code_digest(('reproduce',))}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def load(package: str, version: str) -> dict[str, Reproduction]:
    """The reproductions kept for a runtime, by key; a line that does not read is left out (run again)."""
    path = store_path(package, version)
    try:
        data = read_whole(path)
    except OSError:  # (none kept, or not readable: run again)
        return {}
    out: dict[str, Reproduction] = {}
    for raw in data.splitlines():
        try:
            item = orjson.loads(raw)
            out[str(item["key"])] = Reproduction.model_validate(item["reproduction"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValidationError):
            continue
    return out


def save(package: str, version: str, made: Mapping[str, Reproduction]) -> Path:
    """Keep reproductions (merged with those kept), sorted by key, written whole at once."""
    from filelock import FileLock

    path = store_path(package, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):  # (two runs at once: each keeps the other's)
        kept = {**load(package, version), **made}
        lines = [
            orjson.dumps({"key": k, "reproduction": kept[k].model_dump(mode="json", exclude_none=True)})
            for k in sorted(kept)
        ]
        replace_bytes(path, b"".join(line + b"\n" for line in lines))
    return path


def attach(lines: Iterable[CatalogLine], package: str, version: str | None) -> list[CatalogLine]:
    """The lines, each with the reproduction kept for it (by `key`) as `extraction.reproduction`."""
    lines = list(lines)
    kept = load(package, version) if version else {}
    if not kept:
        return lines
    out = []
    for line in lines:
        found = kept.get(key(line))
        if found is not None:
            line = line.model_copy(update={"extraction": line.extraction.model_copy(update={"reproduction": found})})
        out.append(line)
    return out


def release_of(revision: str) -> str | None:
    """The release a catalog is of (`release:0.28.0` -> `0.28.0`), or None."""
    return revision.removeprefix(RELEASE_PREFIX) if revision.startswith(RELEASE_PREFIX) else None


def attach_line(line: CatalogLine, package: str, revision: str) -> CatalogLine:
    """One line with the reproduction kept for it, when its catalog is a release's and one was run."""
    return attach([line], package, release_of(revision))[0]
