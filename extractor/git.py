# Git: open a repository (local or cached clone), resolve a revision once, read blobs from objects.
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

from extractor.errors import RepositoryError, RevisionError

__all__ = [
    "Blob",
    "BlobReader",
    "Commit",
    "cache_dir",
    "close_readers",
    "list_blobs",
    "open_repo",
    "prefetch",
    "read_blobs",
    "read_file",
    "reader",
    "resolve",
]

DEFAULT_REPO_NAME = "vllm-project/vllm"
_GITHUB = re.compile(r"github\.com[:/]+(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")
_REGULAR = ("100644", "100755")


@dataclass(frozen=True)
class Commit:
    """A revision resolved once to its full SHA, with the repository it lives in."""

    git_dir: Path
    sha: str
    revision: str
    committed_at: str
    repo_name: str


@dataclass(frozen=True)
class Blob:
    """One file of a commit's tree: its path, git object id and mode."""

    path: str
    oid: str
    mode: str
    size: int | None = 0  # None: git cannot tell (the object is missing from a damaged repository)

    @property
    def is_regular(self) -> bool:
        return self.mode in _REGULAR


def cache_dir() -> Path:
    """Return the user cache directory of the extractor (honours XDG_CACHE_HOME)."""
    return Path(platformdirs.user_cache_dir("extractor", appauthor=False))


def is_url(repo: str) -> bool:
    return bool(_URL.match(repo))


def repo_name_from_url(url: str | None) -> str | None:
    match = _GITHUB.search(url or "")
    return f"{match['owner']}/{match['name']}" if match else None


def _git(git_dir: Path, *args: str, input: str | None = None) -> str:
    try:
        result = subprocess.run(
            ["git", *args],
            cwd=git_dir,
            input=input,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except subprocess.CalledProcessError as error:
        message = (error.stderr or "").strip().splitlines()
        raise RepositoryError(message[-1] if message else f"git {args[0]} failed") from None
    return result.stdout


def _clone_dir(url: str) -> Path:
    readable = re.sub(r"[^\w.-]+", "_", url.split("://")[-1]).strip("_")[-60:]
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return cache_dir() / "repos" / f"{readable}-{digest}.git"


def open_repo(repo: str, *, fetch: bool = False) -> Path:
    """Return the git directory of a local repository (read in place) or of the cached clone of a URL.

    A URL is cloned on first use, bare and blob-filtered; `fetch=True` fetches it again.
    """
    if not is_url(repo):
        path = Path(repo).expanduser()
        if not path.exists():
            raise RepositoryError(f"no repository at {repo}: the path does not exist")
        # The path itself must be a repository (a work tree or a bare one), not a folder inside one.
        bare = (path / "HEAD").is_file() and (path / "objects").is_dir()
        if not bare and not (path / ".git").exists():
            raise RepositoryError(f"{repo} is not a git repository")
        try:
            out = _git(path, "rev-parse", "--absolute-git-dir")
        except RepositoryError:
            raise RepositoryError(f"{repo} is not a git repository") from None
        return Path(out.strip())
    target = _clone_dir(repo)
    if not target.exists():
        _clone(repo, target)
    elif fetch:
        _fetch(target, repo)
    return target


def _clone(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".clone-", dir=target.parent))
    try:
        result = subprocess.run(
            ["git", "clone", "--quiet", "--bare", "--filter=blob:none", "--", url, str(scratch / "repo.git")],
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines()
            reason = lines[-1] if lines else "git clone failed"
            raise RepositoryError(f"cannot clone {url}: {reason}{_offline_hint(reason)}")
        try:
            os.rename(scratch / "repo.git", target)
        except OSError:
            if not target.exists():  # another run may have cloned it meanwhile; that is fine
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# What git (through curl or ssh) says when the host cannot be reached at all.
_NO_NETWORK = re.compile(
    r"could not resolve|resolve host|failed to connect|couldn't connect|connection (?:refused|timed out|reset)"
    r"|network is unreachable|no route to host|operation timed out|name or service not known",
    re.I,
)


def _offline_hint(reason: str) -> str:
    """Say what works without the network when git could not reach the repository's host."""
    if not _NO_NETWORK.search(reason):
        return ""
    return (
        " (no network to reach it: --release X.Y.Z reads a vLLM release from the package index, "
        "--repo PATH reads a local clone)"
    )


def _fetch(repo: Path, url: str) -> None:
    try:
        _git(repo, "fetch", "--quiet", "--prune", "--tags", "origin", "+refs/heads/*:refs/heads/*")
    except RepositoryError as error:
        raise RepositoryError(f"cannot fetch {url}: {error}{_offline_hint(str(error))}") from None


def resolve(repo: str, revision: str) -> Commit:
    """Resolve `revision` (short or full SHA, tag, branch) in `repo` to a full 40-hex SHA, once."""
    handle = open_repo(repo)
    sha = _rev_parse(handle, revision)
    if sha is None and is_url(repo):
        _fetch(handle, repo)
        sha = _rev_parse(handle, revision)
    if sha is None:
        raise RevisionError(f"unknown revision {revision!r} in {repo}")
    epoch = int(_git(handle, "show", "-s", "--format=%ct", sha).strip())
    committed = datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    remote = repo if is_url(repo) else _config(handle, "remote.origin.url")
    name = repo_name_from_url(remote) or DEFAULT_REPO_NAME
    return Commit(git_dir=handle, sha=sha, revision=revision, committed_at=committed, repo_name=name)


def _rev_parse(repo: Path, revision: str) -> str | None:
    if not revision or revision.startswith("-"):
        return None
    try:
        out = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except RepositoryError:
        return None
    sha = out.strip()
    return sha if re.fullmatch(r"[0-9a-f]{40}", sha) else None


def _config(repo: Path, key: str) -> str | None:
    try:
        return _git(repo, "config", "--get", key).strip() or None
    except RepositoryError:
        return None


def list_blobs(commit: Commit, prefixes: Sequence[str]) -> list[Blob]:
    """List the `.py` files of a commit under any of the path prefixes, sorted by path."""
    specs = [p.strip("/") for p in prefixes if p.strip("/")]
    out = _git(commit.git_dir, "ls-tree", "-r", "-l", "-z", "--full-tree", commit.sha, "--", *specs)
    blobs = []
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        mode, kind, oid, size = meta.split()
        if kind == "blob" and path.endswith(".py"):
            # A size git cannot tell only orders work; reading the blob then says what is wrong.
            blobs.append(Blob(path=path, oid=oid, mode=mode, size=int(size) if size.isdigit() else None))
    return sorted(blobs, key=lambda blob: blob.path)


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

    def read(self, oids: Sequence[str], names: Sequence[str] | None = None) -> list[bytes]:
        """Return the blobs' bytes, in order; a missing or non-blob object is a RepositoryError (naming
        it by `names`, when given, else by its id).

        After an error the reader is closed: answers still in the pipe must never pass for others'.
        """
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        out: list[bytes] = []
        try:
            for start in range(0, len(oids), self._CHUNK):
                chunk = oids[start : start + self._CHUNK]
                stdin.write(b"".join(oid.encode() + b"\n" for oid in chunk))
                stdin.flush()
                for index, oid in enumerate(chunk, start=start):
                    header = stdout.readline().split()
                    if len(header) != 3 or header[0] != oid.encode() or header[1] != b"blob":
                        name = names[index] if names is not None else f"blob {oid}"
                        raise RepositoryError(f"cannot read {name} from {self.git_dir}: missing or damaged")
                    size = int(header[2])
                    data = stdout.read(size)
                    if len(data) != size or stdout.read(1) != b"\n":
                        raise RepositoryError(f"git cat-file stopped answering in {self.git_dir}")
                    out.append(data)
        except OSError:
            self.close()
            raise RepositoryError(f"git cat-file stopped reading in {self.git_dir}") from None
        except BaseException:
            self.close()
            raise
        return out

    def close(self) -> None:
        for key in [key for key, reader in _readers.items() if reader is self]:
            del _readers[key]
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._process.kill()
        self._process.wait()


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
            contents = reader.read([blob.oid for blob in chunk], [f"{blob.path} ({blob.oid})" for blob in chunk])
            yield from zip(chunk, contents, strict=True)
    finally:
        reader.close()


def read_file(commit: Commit, path: str) -> bytes | None:
    """Read one file of a commit, or None when the commit has no such file."""
    try:
        oid = _git(commit.git_dir, "rev-parse", "--verify", "--quiet", f"{commit.sha}:{path}").strip()
    except RepositoryError:
        return None
    ((_, data),) = list(read_blobs(commit, [Blob(path=path, oid=oid, mode="100644")]))
    return data


def prefetch(commit: Commit, blobs: Sequence[Blob]) -> None:
    """In a blob-filtered clone, fetch the blobs that are not here yet in one request."""
    repo = commit.git_dir
    if _config(repo, "remote.origin.promisor") != "true":
        return
    # rev-list reports missing objects without fetching them one by one, as cat-file would.
    listing = _git(repo, "rev-list", "--objects", "--no-walk", "--missing=print", commit.sha)
    absent = {line[1:].split()[0] for line in listing.splitlines() if line.startswith("?")}
    missing = sorted({blob.oid for blob in blobs} & absent)
    if missing:
        _git(
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
            input="\n".join(missing) + "\n",
        )
