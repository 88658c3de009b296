# Atomic: every file the extractor writes replaces its path whole or not at all (a temporary, then a rename),
# and every file it reads back is read whole, a regular file or nothing.
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import signal
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from extractor.util.lifecycle import STOP_SIGNALS, raise_if_interrupted

__all__ = [
    "Content",
    "fault_point",
    "finish_commits",
    "read_whole",
    "replace_bytes",
    "replace_files",
    "replacing",
    "sha256_of",
]

# What a file is to hold: its bytes, or its bytes in pieces (written one after the other, never joined: a
# catalog's 17 MB joined is as many again of fresh memory).
Content = bytes | Sequence[bytes]

_GATHERED = 1 << 20  # content in pieces is hashed, and written, this much at a time


def sha256_of(content: Content) -> hashlib._Hash:
    """The SHA-256 of content, its pieces gathered into large updates: an update lets go of the GIL, and
    taking it back between thousands of small ones, with another thread running, cost 4 times the hash."""
    if isinstance(content, bytes):
        return hashlib.sha256(content)
    digest = hashlib.sha256()
    gathered = bytearray(_GATHERED)
    view, filled = memoryview(gathered), 0
    for piece in content:
        if filled + len(piece) > _GATHERED:
            digest.update(view[:filled])
            filled = 0
        if len(piece) >= _GATHERED:
            digest.update(piece)
        else:
            view[filled : filled + len(piece)] = piece
            filled += len(piece)
    digest.update(view[:filled])
    return digest


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
    if _special(path):
        with open(path, "wb") as stream:
            yield stream
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    try:
        with _create(temporary) as stream:
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


def replace_files(files: Sequence[tuple[Path, Content]], *, durable: bool = True) -> None:
    """Make each path hold its data (see `replacing`), the files replaced in order once all are written.

    The renames happen with stop signals held back: one that comes meanwhile takes effect after the
    last, so an interrupted run leaves each of these files old or new, and a set written together
    (records, then the manifest that seals them) never half replaced.

    A path that is neither a regular file nor a folder (a FIFO, a device such as /dev/null, a socket) is
    not replaced but written into, first, as a shell's redirection would: replaced, it would become a
    regular file, and /dev/null one no other program can use.
    """
    raise_if_interrupted()
    regular = []
    for path, data in files:
        if _special(path):
            with open(path, "wb") as stream:
                _write(stream, data)
        else:
            regular.append((path, data))
    files = regular
    if not files:
        return
    for folder in dict.fromkeys(path.parent for path, _ in files):
        finish_commits(folder)  # (a set a killed run was replacing goes in first: never over this one)
    temporaries: list[Path] = []
    made: list[Path] = []  # folders made here, deepest last: removed again, if left empty, when a write fails
    journal: Path | None = None
    try:
        for path, data in files:
            missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made += reversed(missing)
            temporaries.append(_temporary(path))
            with _create(temporaries[-1]) as stream:
                _write(stream, data)
                if durable:
                    stream.flush()
                    os.fsync(stream.fileno())
        with _signals_held(), _folders_locked(files if len(files) > 1 else ()):
            raise_if_interrupted()
            # A set is one commit: its renames are written down first, so that a kill between two of them
            # (SIGKILL, a crash: no signal to hold back) leaves a journal the next reader or writer of the
            # folder completes (finish_commits), never some files of the set new and others old.
            journal = (
                _journal(list(zip(temporaries, (path for path, _ in files), strict=True))) if len(files) > 1 else None
            )
            for number, (temporary, (path, _)) in enumerate(zip(temporaries, files, strict=True)):
                if number:  # (`renamed:history.jsonl`: a kill after that file of a set, before the next)
                    fault_point(f"renamed:{files[number - 1][0].name}")
                with contextlib.suppress(FileNotFoundError) if journal is not None else contextlib.nullcontext():
                    os.replace(temporary, path)  # (done already, by a reader that completed the journal)
            if journal is not None:
                journal.unlink(missing_ok=True)
    except BaseException:
        if journal is not None:
            journal.unlink(missing_ok=True)
        for temporary in temporaries:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        for folder in reversed(made):
            with contextlib.suppress(OSError):  # (not empty: another writer's meanwhile, kept)
                folder.rmdir()
        raise
    if durable:
        for directory in dict.fromkeys(path.parent for path, _ in files):
            _fsync_dir(directory)


@contextlib.contextmanager
def _folders_locked(files: Sequence[tuple[Path, Content]]) -> Iterator[None]:
    """Hold the folders of a set of files locked (flock on the folders themselves: no lock file is left), so
    that two processes writing the same set (two runs writing one catalog) replace it one after the other,
    never records of one with the manifest of the other."""
    descriptors: list[int] = []
    try:
        for folder in sorted({str(path.parent) for path, _ in files}):
            descriptors.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY))
            fcntl.flock(descriptors[-1], fcntl.LOCK_EX)
        yield
    finally:
        for descriptor in descriptors:
            os.close(descriptor)  # which releases its lock


def _write(stream: BinaryIO, data: Content) -> None:
    if isinstance(data, bytes):
        stream.write(data)
    else:
        stream.writelines(data)


def _special(path: Path) -> bool:
    """Whether something is at `path` (a link followed) that is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def read_whole(path: Path) -> bytes:
    """The bytes of the regular file at `path` (a link followed). Anything else there is refused at once
    with an OSError: a folder, a FIFO (opening it would wait for a writer, maybe forever), a device or a
    socket (reading it might never end). A set of files a killed run was replacing in its folder is
    completed first (finish_commits): what is read is of one commit."""
    finish_commits(path.parent)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            raise OSError(errno.EINVAL, f"not a regular file ({kind})", str(path))
        with open(descriptor, "rb", closefd=False) as stream:
            return stream.read()
    finally:
        os.close(descriptor)


_JOURNAL = ".extractor-commit-"  # a set's journal: `.extractor-commit-<random>.json`, in its first file's folder


def _journal(renames: list[tuple[Path, Path]]) -> Path:
    """Write down the renames of a set (temporary -> path, each temporary written and synced already), whole
    or not at all, and synced: from here on, the set is committed."""
    folder = renames[0][1].parent
    journal = folder / f"{_JOURNAL}{secrets.token_hex(8)}.json"
    # (relative to the journal's folder: a folder moved or copied whole still completes into itself)
    listed = [[os.path.relpath(a, folder), os.path.relpath(b, folder)] for a, b in renames]
    with replacing(journal) as stream:  # (names as Python decodes them: lone surrogates too)
        stream.write(json.dumps(listed, ensure_ascii=True).encode())
    return journal


def finish_commits(folder: Path) -> None:
    """Complete the sets of files a killed run was replacing in `folder` (see replace_files): each rename its
    journal lists whose temporary is still there is done, then the journal goes. A journal that cannot be
    read is left as it is."""
    try:
        journals = sorted(entry.path for entry in os.scandir(folder) if entry.name.startswith(_JOURNAL))
    except (OSError, ValueError):
        return
    for name in journals:
        journal = Path(name)
        try:
            renames = json.loads(journal.read_bytes())
        except (OSError, ValueError):
            continue
        for temporary, path in renames:
            with contextlib.suppress(FileNotFoundError):  # (done already)
                os.replace(os.path.join(folder, temporary), os.path.join(folder, path))
        journal.unlink(missing_ok=True)
        _fsync_dir(folder)


def fault_point(name: str) -> None:
    """Where a test kills the process to see what a crash leaves (EXTRACTOR_KILL_AT=NAME): SIGKILL, which
    nothing can hold back or handle. Does nothing otherwise."""
    if os.environ.get("EXTRACTOR_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def replace_bytes(path: Path, data: Content, *, durable: bool = True) -> None:
    """Make `path` hold `data`, whole or not at all (see `replacing`)."""
    replace_files([(path, data)], durable=durable)


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _create(temporary: Path) -> BinaryIO:
    """Create a temporary file as open() would (0o666 less the umask), never one that exists. It is named
    before it exists, so that an interrupt landing anywhere after its creation finds it to remove."""
    return open(os.open(temporary, _CREATE, 0o666), "wb", buffering=_GATHERED)


def _temporary(path: Path) -> Path:
    """A name for a temporary file beside `path`, hidden, and found by nobody else (128 random bits)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(16)}.tmp")


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold stop signals back during the block (they are delivered after it); in the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
