# Atomic: every file the extractor writes replaces its path whole or not at all (a temporary, then a rename).
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from extractor.lifecycle import raise_if_interrupted

__all__ = ["replace_bytes", "replacing"]


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp makes files private; written files get the mode a plain open() would give them.
_FILE_MODE = 0o666 & ~_read_umask()


@contextlib.contextmanager
def replacing(path: Path, *, durable: bool = True) -> Iterator[BinaryIO]:
    """Yield a stream whose bytes replace `path` once the block ends: a reader finds the old file or the
    new one, whole, never part of one; a failure or an interrupt leaves neither a partial file nor a
    temporary one behind.

    `durable` makes the new file survive a crash of the machine (its data, then the folder's entry, are
    synced): what is published wants it; a cache, which checks what it reads, does without the cost.
    Nothing replaces `path` after a stop signal came, even one a library swallowed. OSError is raised
    as it comes: each writer says what a failure means to it.
    """
    raise_if_interrupted()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            os.fchmod(stream.fileno(), _FILE_MODE)
            yield stream
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        raise_if_interrupted()
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        _fsync_dir(path.parent)


def replace_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Make `path` hold `data`, whole or not at all (see `replacing`)."""
    with replacing(path, durable=durable) as stream:
        stream.write(data)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
