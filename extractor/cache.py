# Cache: per-file scan results, addressed by git blob id, extractor version and the options that shape them.
from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

import orjson
from pydantic import ValidationError

from extractor._version import __version__
from extractor.models import FileResult

__all__ = ["CACHE_FORMAT", "ScanCache"]

CACHE_FORMAT = 1
# The modules whose code decides a file's result: any edit to them makes a new cache, even unreleased.
_PRODUCERS = ("scan.py", "template.py", "models.py")


def _code_digest() -> str:
    digest = hashlib.sha256()
    for name in _PRODUCERS:
        with contextlib.suppress(OSError):
            digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


class ScanCache:
    """A directory of `<blob id>.json` files, one per scanned blob; wrong entries are ignored, not trusted."""

    def __init__(self, root: Path, *, exceptions: tuple[str, ...], context: int) -> None:
        key = orjson.dumps(
            {
                "format": CACHE_FORMAT,
                "version": __version__,
                "code": _code_digest(),
                "exceptions": sorted(set(exceptions)),
                "context": context,
            }
        )
        self.directory = root / "scan" / hashlib.sha256(key).hexdigest()[:16]

    def _path(self, oid: str) -> Path:
        return self.directory / oid[:2] / f"{oid[2:]}.json"

    def get(self, oid: str) -> FileResult | None:
        """Return the cached result of a blob, or None when it is missing, corrupt or of another format."""
        try:
            data = self._path(oid).read_bytes()
        except OSError:
            return None
        try:
            return FileResult.model_validate_json(data)
        except ValidationError:
            return None

    def put(self, oid: str, data: bytes) -> None:
        """Store a blob's serialized result; a failure to write only costs a later re-scan."""
        path = self._path(oid)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as stream:
                    stream.write(data)
                os.replace(temporary, path)
            except OSError:
                os.unlink(temporary)
