# The extractor's version, recorded in every manifest and part of every cache key.
from __future__ import annotations

import contextlib
import functools
import hashlib
from pathlib import Path

__version__ = "0.1.0"


@functools.cache  # a process's code does not change while it runs: read once, not once per key
def code_digest(folders: tuple[str, ...] = (), leaving: tuple[str, ...] = ()) -> str:
    """A digest of the package's code: every module below the subpackages `folders` (their paths and bytes),
    else every module of the package, subpackages included, but those `leaving` names (`reproduce/filled.py`).
    Part of the cache keys, so that any edit to the code that made an entry, released or not, makes a new one."""
    here = Path(__file__).parent
    roots = [here / folder for folder in folders] or [here]
    digest = hashlib.sha256()
    found = (path for root in roots for path in root.rglob("*.py"))
    for path in sorted(path for path in found if path.relative_to(here).as_posix() not in leaving):
        digest.update(path.relative_to(here).as_posix().encode() + b"\0")
        with contextlib.suppress(OSError):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
