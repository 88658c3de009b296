# The extractor's version, recorded in every manifest and part of every cache key.
from __future__ import annotations

import contextlib
import functools
import hashlib
from pathlib import Path

__version__ = "0.1.0"


@functools.cache  # a process's code does not change while it runs: read once, not once per key
def code_digest(names: tuple[str, ...] | None = None) -> str:
    """A digest of the package's code: the modules `names`, else every module. Part of the cache keys, so
    that any edit to the code that made an entry, released or not, makes a new one."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in names if names is not None else tuple(sorted(p.name for p in here.glob("*.py"))):
        with contextlib.suppress(OSError):
            digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]
