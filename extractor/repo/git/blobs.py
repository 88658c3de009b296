# A commit's files: listed, sized, fetched in a blob-filtered clone, read through `git cat-file --batch`.
from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from extractor.errors import RepositoryError
from extractor.repo.git.clone import offline_hint, redact_url
from extractor.repo.git.commit import Commit
from extractor.repo.git.run import GitError, config_value, damage_hint, decode_name, git_value, printable, run_git

__all__ = [
    "Blob",
    "BlobReader",
    "close_readers",
    "list_blobs",
    "prefetch",
    "read_blobs",
    "read_file",
    "read_objects",
    "reader",
    "with_sizes",
]

_REGULAR = ("100644", "100755")


@dataclass(frozen=True)
class Blob:
    """One file of a commit's tree: its path, git object id and mode."""

    path: str
    oid: str
    mode: str
    # None: not known. `list_blobs` does not ask (git would look up every object: most of a listing's
    # time), `with_sizes` does, and leaves None where git cannot tell (a damaged repository).
    size: int | None = None

    @property
    def is_regular(self) -> bool:
        return self.mode in _REGULAR


def read_objects(git_dir: Path, names: Sequence[str]) -> list[bytes | None]:
    """The contents of objects named as git names them (`v0.1:vllm/_version.py`), in order, read with one
    `git cat-file --batch`; None where a name gives no object (a release without that file)."""
    raw = run_git(git_dir, "cat-file", "--batch", input="".join(f"{name}\n" for name in names).encode())
    out: list[bytes | None] = []
    position = 0
    while position < len(raw):
        end = raw.index(b"\n", position)
        header = raw[position:end].split()  # "<oid> <type> <size>", else "<name> missing" (or ambiguous)
        position = end + 1
        if len(header) == 3:
            size = int(header[2])
            out.append(raw[position : position + size])
            position += size + 1
        else:
            out.append(None)
    return out


def list_blobs(commit: Commit, prefixes: Sequence[str]) -> list[Blob]:
    """List the `.py` files of a commit under any of the path prefixes ('.' or '' is the whole tree),
    sorted by path."""
    specs = [p.strip("/") for p in prefixes]
    if any(spec in ("", ".") for spec in specs):  # the whole repository
        specs = []
    out = run_git(commit.git_dir, "ls-tree", "-r", "-z", "--full-tree", commit.sha, "--", *specs)
    blobs = []
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        if kind == "blob" and name.endswith(b".py"):
            blobs.append(Blob(path=decode_name(name), oid=oid, mode=mode))
    return sorted(blobs, key=lambda blob: blob.path)


def with_sizes(commit: Commit, blobs: Sequence[Blob]) -> list[Blob]:
    """The blobs with their sizes, asked of git in one go (after `prefetch`, in a blob-filtered clone). A
    size git cannot tell stays None: it only orders work, and reading the blob then says what is wrong."""
    asked = sorted({blob.oid for blob in blobs if blob.size is None})
    if not asked:
        return list(blobs)
    out = run_git(
        commit.git_dir,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype) %(objectsize)",
        input="".join(f"{oid}\n" for oid in asked).encode(),
    )
    sizes = {}
    for line in out.decode(errors="replace").splitlines():
        parts = line.split()  # "<oid> missing" where git cannot tell
        if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return [blob if blob.size is not None else replace(blob, size=sizes.get(blob.oid)) for blob in blobs]


class BlobReader:
    """A long-lived `git cat-file --batch` of one repository, read a batch of blobs at a time."""

    # Requests written before answers are read: a chunk of ids must fit in the pipe without blocking.
    _CHUNK = 512

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._process = subprocess.Popen(
            ["git", "cat-file", "--batch"],
            cwd=git_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def read(self, oids: Sequence[str], paths: Sequence[str] | None = None) -> list[bytes]:
        """Return the blobs' bytes, in order; a missing, damaged or non-blob object is a RepositoryError
        naming it (by its path in `paths`, when given, and its id) and what is wrong.

        After an error the reader is closed: answers still in the pipe must never pass for others'.
        """
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        out: list[bytes] = []
        index = 0
        try:
            for start in range(0, len(oids), self._CHUNK):
                chunk = oids[start : start + self._CHUNK]
                stdin.write(b"".join(oid.encode() + b"\n" for oid in chunk))
                stdin.flush()
                for index, oid in enumerate(chunk, start=start):
                    header = stdout.readline().split()
                    if len(header) != 3 or header[0] != oid.encode() or header[1] != b"blob":
                        raise self._unreadable(oids, paths, index, _wrong_header(header))
                    size = int(header[2])
                    data = stdout.read(size)
                    if len(data) != size or stdout.read(1) != b"\n":
                        raise self._unreadable(oids, paths, index, "the object is damaged (git could not inflate it)")
                    out.append(data)
        except OSError:
            self.close()
            raise self._unreadable(oids, paths, index, "git cat-file stopped reading requests") from None
        except BaseException:
            self.close()
            raise
        return out

    def _unreadable(self, oids: Sequence[str], paths: Sequence[str] | None, index: int, what: str) -> RepositoryError:
        name = f"{printable(paths[index])} (blob {oids[index]})" if paths is not None else f"blob {oids[index]}"
        return RepositoryError(f"cannot read {name} from {self.git_dir}: {what}{damage_hint(self.git_dir)}")

    def close(self) -> None:
        for key in [key for key, reader in _readers.items() if reader is self]:
            del _readers[key]
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._process.kill()
        self._process.wait()


def _wrong_header(header: list[bytes]) -> str:
    if len(header) == 2 and header[1] == b"missing":
        return "the object is missing (a damaged or incomplete repository)"
    if len(header) == 3:
        return f"the object is a {header[1].decode(errors='replace')}, not a file"
    return "git cat-file gave no answer"


_readers: dict[tuple[int, Path], BlobReader] = {}


def reader(git_dir: Path) -> BlobReader:
    """This process's reader of a repository (a worker forked from another process starts its own)."""
    key = (os.getpid(), git_dir)
    found = _readers.get(key)
    if found is None:
        found = _readers[key] = BlobReader(git_dir)
    return found


def close_readers() -> None:
    """Stop this process's readers (a worker's stop with it)."""
    for key in [key for key in _readers if key[0] == os.getpid()]:
        _readers[key].close()


def read_blobs(commit: Commit, blobs: Iterable[Blob]) -> Iterator[tuple[Blob, bytes]]:
    """Read blobs through one `git cat-file --batch` process, fetching missing ones in bulk first."""
    wanted = list(blobs)
    if not wanted:
        return
    prefetch(commit, wanted)
    reader = BlobReader(commit.git_dir)
    try:
        for start in range(0, len(wanted), BlobReader._CHUNK):  # a chunk at a time: never all in memory
            chunk = wanted[start : start + BlobReader._CHUNK]
            contents = reader.read([blob.oid for blob in chunk], [blob.path for blob in chunk])
            yield from zip(chunk, contents, strict=True)
    finally:
        reader.close()


def read_file(commit: Commit, path: str) -> bytes | None:
    """Read one file of a commit, or None when the commit has no such file."""
    try:
        oid = git_value(commit.git_dir, "rev-parse", "--verify", "--quiet", f"{commit.sha}:{path}")
    except RepositoryError:
        return None
    ((_, data),) = list(read_blobs(commit, [Blob(path=path, oid=oid, mode="100644")]))
    return data


def prefetch(commit: Commit, blobs: Sequence[Blob]) -> None:
    """In a blob-filtered clone, fetch the blobs that are not here yet in one request."""
    repo = commit.git_dir
    if config_value(repo, "remote.origin.promisor") != "true":
        return
    # rev-list reports missing objects without fetching them one by one, as cat-file would (ids alone:
    # a name could hold a newline).
    listing = run_git(repo, "rev-list", "--objects", "--no-object-names", "--no-walk", "--missing=print", commit.sha)
    absent = {line[1:].decode() for line in listing.split(b"\n") if line.startswith(b"?")}
    missing = sorted({blob.oid for blob in blobs} & absent)
    if not missing:
        return
    try:
        run_git(
            repo,
            "-c",
            "fetch.negotiationAlgorithm=noop",
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--recurse-submodules=no",
            "--filter=blob:none",
            "--stdin",
            "origin",
            input="".join(f"{oid}\n" for oid in missing).encode(),
        )
    except GitError as error:
        reason, url = error.complaint, redact_url(config_value(repo, "remote.origin.url") or "its origin")
        raise RepositoryError(
            f"cannot fetch {len(missing)} file(s) of {commit.sha} from {url} into {repo}: {reason}"
            f"{offline_hint(reason)}"
        ) from None
