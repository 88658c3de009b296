# Reproductions: what `reproduce` ran, kept in the user cache per runtime (vllm-0.28.0.jsonl), each under a
# key made of the record's id, what its check rests on (`analysis.basis`) and the extractor's version: a record
# that changes, or a new extractor, is run again; explain and the site show only what was run. Each is added as
# it is made (a killed run loses only what was in flight); a time limit's answer (hung or crashed) is never kept.
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import orjson
from pydantic import ValidationError

from extractor._version import __version__, code_digest
from extractor.catalog.spec import release_of
from extractor.model.records import CatalogLine, Reproduction, ReproductionReason
from extractor.query.analysis import basis
from extractor.repo.housekeeping import cache_dir
from extractor.util.atomic import read_whole, replace_bytes

__all__ = ["READERS", "add", "attach", "attach_line", "key", "load", "release_of", "save", "store_path"]


def store_path(package: str, version: str) -> Path:
    return cache_dir() / "reproductions" / f"{package}-{version}.jsonl"


# The modules of reproduce/ that only read a reproduction once it is made (the record's second half, its
# validationCode, explain's fix of a paste): an edit to them runs no record again. None of the others imports them
# (tests/test_validation_code.py).
READERS = (
    "reproduce/definitions.py",
    "reproduce/filled.py",
    "reproduce/reads.py",
    "reproduce/user_fix.py",
    "reproduce/validation.py",
)


def key(line: CatalogLine) -> str:
    """What a reproduction of a record holds for: its id, its check's basis, the extractor's version and the code
    that reproduces (an edit to it runs the records again, released or not; not to what only reads one)."""
    text = f"{line.record.id}\0{basis(line)}\0{__version__}\0{code_digest(('reproduce',), READERS)}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def load(package: str, version: str) -> dict[str, Reproduction]:
    """The reproductions kept for a runtime, by key (the last line of a key wins); a line that does not read, or
    that says an attempt hung or crashed (a time limit's answer, not the record's), is left out: run again."""
    path = store_path(package, version)
    try:
        data = read_whole(path)
    except OSError:  # (none kept, or not readable: run again)
        return {}
    out: dict[str, Reproduction] = {}
    for raw in data.splitlines():
        try:
            item = orjson.loads(raw)
            reproduction = Reproduction.model_validate(item["reproduction"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValidationError):
            continue
        if _kept(reproduction):
            out[str(item["key"])] = reproduction
    return out


def _kept(reproduction: Reproduction) -> bool:
    """Whether a reproduction is an answer to keep: not a time limit's (a loaded machine's, a smaller limit's)."""
    return reproduction.reason != ReproductionReason.HUNG


def _line(key: str, reproduction: Reproduction) -> bytes:
    return orjson.dumps({"key": key, "reproduction": reproduction.model_dump(mode="json", exclude_none=True)}) + b"\n"


def add(package: str, version: str, key: str, reproduction: Reproduction) -> None:
    """Keep one reproduction as soon as it is made: a line appended to the store (under its lock), after a line
    break when a killed write left the last line without one."""
    from filelock import FileLock

    if not _kept(reproduction):
        return
    path = store_path(package, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"), path.open("ab+") as file:
        file.seek(0, 2)
        torn = False
        if file.tell():
            file.seek(-1, 2)
            torn = file.read(1) != b"\n"
        file.write((b"\n" if torn else b"") + _line(key, reproduction))


def save(package: str, version: str, made: Mapping[str, Reproduction]) -> Path:
    """Keep reproductions (merged with those kept), sorted by key, written whole at once: the store made whole
    again (one line a key, in order) after a run's lines were added one by one."""
    from filelock import FileLock

    path = store_path(package, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):  # (two runs at once: each keeps the other's)
        kept = {**load(package, version), **{k: made[k] for k in made if _kept(made[k])}}
        replace_bytes(path, b"".join(_line(k, kept[k]) for k in sorted(kept)))
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


def attach_line(line: CatalogLine, package: str, revision: str) -> CatalogLine:
    """One line with the reproduction kept for it, when its catalog is a release's and one was run."""
    return attach([line], package, release_of(revision))[0]
