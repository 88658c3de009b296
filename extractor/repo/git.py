# Git: open a repository (local or cached clone), resolve a revision once, read blobs from objects.
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, NoReturn

from extractor.errors import RepositoryError, RevisionError
from extractor.repo.housekeeping import cache_dir, remove_orphans

__all__ = [
    "Blob",
    "BlobReader",
    "Commit",
    "FastImportError",
    "GitError",
    "close_readers",
    "complaint",
    "config_value",
    "damage_hint",
    "fast_import",
    "first_parent_commits",
    "init_bare",
    "is_ancestor",
    "list_blobs",
    "list_tags",
    "open_repo",
    "prefetch",
    "read_blobs",
    "read_file",
    "read_objects",
    "reader",
    "redact_url",
    "repack_whole",
    "resolve",
    "set_config",
    "shown_repo",
    "tag_commits",
    "tag_targets",
    "update_ref",
    "with_sizes",
]

DEFAULT_REPO_NAME = "vllm-project/vllm"
_GITHUB = re.compile(r"github\.com[:/]+(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?\Z")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")
_REGULAR = ("100644", "100755")
_AUTHORITY = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)")


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
    # None: not known. `list_blobs` does not ask (git would look up every object: most of a listing's
    # time), `with_sizes` does, and leaves None where git cannot tell (a damaged repository).
    size: int | None = None

    @property
    def is_regular(self) -> bool:
        return self.mode in _REGULAR


def is_url(repo: str) -> bool:
    return bool(_URL.match(repo))


def redact_url(url: str) -> str:
    """A URL as it may be shown: a password replaced by ****, as pip shows one (`user:****@host`), and so
    is a user name alone over HTTP (a token); ssh's user (`git@`) is no secret and stays. Read by hand, not
    by urlsplit: a URL it refuses (`http://user:pw@[::1`) is shown in a message too."""
    found = _AUTHORITY.match(url)
    if found is None or "@" not in found["authority"]:
        return url
    user, _, host = found["authority"].rpartition("@")
    name, colon, _ = user.partition(":")
    if colon:
        shown = f"{name}:****"
    elif found["scheme"].lower() in ("http", "https", "ftp", "ftps"):
        shown = "****"
    else:
        return url
    return f"{found['scheme']}://{shown}@{host}{url[found.end() :]}"


def shown_repo(repo: str) -> str:
    """A repository as the user named it, for messages: a URL's credentials hidden."""
    return redact_url(repo) if is_url(repo) else repo


def repo_name_from_url(url: str | None) -> str | None:
    match = _GITHUB.search(url or "")
    return f"{match['owner']}/{match['name']}" if match else None


def _environment() -> dict[str, str]:
    """git's environment: never a prompt for credentials, and an HTTP transfer slower than 1 KB/s for a
    minute given up (a server that takes the connection and says nothing would hang a run forever);
    the user's own settings of those win."""
    return {
        "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
        "GIT_HTTP_LOW_SPEED_TIME": "60",
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
    }


def _git(git_dir: Path, *args: str, input: bytes | None = None) -> bytes:
    """Run git and return its output as bytes: names are whatever bytes the tree holds (a carriage
    return, a byte that is not UTF-8), and only the caller knows how to split them (-z)."""
    try:
        result = subprocess.run(
            ["git", *args],
            cwd=git_dir,
            input=input,
            capture_output=True,
            check=True,
            env=_environment(),
        )
    except subprocess.CalledProcessError as error:
        raise GitError(git_dir, args[2] if args[0] == "-c" else args[0], complaint(error.stderr)) from None
    return result.stdout


class GitError(RepositoryError):
    """git failed in a repository: the message names the repository; `complaint` is what git said."""

    def __init__(self, git_dir: Path, command: str, complaint: str | None) -> None:
        self.complaint = complaint or f"git {command} failed"
        super().__init__(f"cannot read {git_dir}: {self.complaint}{damage_hint(git_dir)}")


# The parts of the user cache that hold repositories, as `extractor cache clear` names them.
_CACHED_REPOSITORIES = (("releases", "releases"), ("clones", "repos"))


def damage_hint(git_dir: Path) -> str:
    """What to do about a repository git cannot read: one of the cache's can be removed, and is made again
    when needed; the user's own is theirs to mend (nothing said)."""
    with contextlib.suppress(OSError, ValueError):
        for part, folder in _CACHED_REPOSITORIES:
            if Path(os.path.abspath(git_dir)).is_relative_to(os.path.abspath(cache_dir() / folder)):
                return f" (a copy in the cache: remove it, or run `extractor cache clear {part}`; it is made again)"
    return ""


def complaint(stderr: bytes | None) -> str | None:
    """What git said went wrong: its first fatal or error line (the lines after it are advice, such as
    "Please make sure you have the correct access rights / and the repository exists."), else its last."""
    lines = [line.strip() for line in decode_name(stderr or b"").splitlines() if line.strip()]
    for line in lines:
        for prefix in ("fatal: ", "error: "):
            if line.startswith(prefix):
                return line.removeprefix(prefix)
    return lines[-1] if lines else None


def _value(git_dir: Path, *args: str) -> str:
    """Run git for one value (a SHA, a date, a path, a setting) and return it stripped."""
    return decode_name(_git(git_dir, *args)).strip()


def decode_name(data: bytes) -> str:
    """Decode a name from git: UTF-8, any other byte kept as a surrogate escape (os.fsdecode's way)."""
    return data.decode("utf-8", "surrogateescape")


def printable(name: str) -> str:
    """A name as it can be written in JSON: a byte that is not UTF-8 shown as a \\x escape."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def is_utf8(name: str) -> bool:
    """Whether a name from git is valid UTF-8 (holds no surrogate escape)."""
    return name.isascii() or printable(name) == name


def _clone_dir(url: str) -> Path:
    # Named after the URL without its credentials (a folder's name is no place for a token).
    readable = re.sub(r"[^\w.-]+", "_", redact_url(url).split("://")[-1].replace("****", "")).strip("_")[-60:]
    digest = hashlib.sha256(os.fsencode(url)).hexdigest()[:12]  # (fsencode: a URL given in bytes that are not UTF-8)
    return cache_dir() / "repos" / f"{readable}-{digest}.git"


def open_repo(repo: str, *, fetch: bool = False) -> Path:
    """Return the git directory of a local repository (read in place) or of the cached clone of a URL.

    A URL is cloned on first use, bare and blob-filtered; `fetch=True` fetches it again.
    """
    if not is_url(repo):
        path = Path(repo).expanduser()
        _check_exists(path, repo)
        # The path itself must be a repository (a work tree or a bare one), not a folder inside one.
        bare = (path / "HEAD").is_file() and (path / "objects").is_dir()
        if not bare and not (path / ".git").exists():
            raise RepositoryError(f"{repo} is not a git repository")
        try:
            out = _git(path, "rev-parse", "--absolute-git-dir")
        except RepositoryError:
            raise RepositoryError(f"{repo} is not a git repository") from None
        return Path(os.fsdecode(out.rstrip(b"\n")))
    target = _clone_dir(repo)
    if not target.exists():
        _clone(repo, target)
    elif fetch:
        _sweep_clones(target.parent)
        _fetch(target, repo)
    return target


def _check_exists(path: Path, repo: str) -> None:
    """Refuse a repository path that names nothing, saying why: Path.exists() is False for a symlink loop
    too, which is not "does not exist"."""
    try:
        path.stat()
    except FileNotFoundError:
        if os.path.islink(path):
            raise RepositoryError(
                f"no repository at {repo}: it is a symlink to {os.readlink(path)}, which does not exist"
            ) from None
        raise RepositoryError(f"no repository at {repo}: the path does not exist") from None
    except NotADirectoryError:
        raise RepositoryError(f"no repository at {repo}: the path does not exist (a part of it is a file)") from None
    except OSError as error:  # a symlink loop (ELOOP), a name too long, a folder that may not be read
        raise RepositoryError(f"no repository at {repo}: it cannot be read: {error.strerror or error}") from None


def _clone(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep_clones(target.parent)
    scratch = Path(tempfile.mkdtemp(prefix=f".clone-{os.getpid()}-", dir=target.parent))
    try:
        result = subprocess.run(
            ["git", "clone", "--quiet", "--bare", "--filter=blob:none", "--", url, str(scratch / "repo.git")],
            capture_output=True,
            env=_environment(),
        )
        if result.returncode != 0:
            reason = complaint(result.stderr) or "git clone failed"
            raise RepositoryError(f"cannot clone {redact_url(url)}: {reason}{_offline_hint(reason)}")
        try:
            os.rename(scratch / "repo.git", target)
        except OSError:
            if not target.exists():  # another run may have cloned it meanwhile; that is fine
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _sweep_clones(folder: Path) -> None:
    """Remove the scratch folders of clones whose process is gone (killed while cloning).

    A scratch folder is named after the process that clones into it; one of a process still alive
    (another run cloning now) is left alone.
    """
    remove_orphans(folder, ".clone-")


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
        " (no network to reach it: a release from the package index, release:X.Y.Z (--release X.Y.Z when "
        "extracting), or a local clone, --repo PATH, work without it)"
    )


def _fetch(repo: Path, url: str) -> None:
    try:
        _git(repo, "fetch", "--quiet", "--prune", "--tags", "origin", "+refs/heads/*:refs/heads/*")
    except GitError as error:
        reason = error.complaint
        offline = _offline_hint(reason)
        if offline:
            raise RepositoryError(f"cannot fetch {redact_url(url)}: {reason}{offline}") from None
        # Anything else may be the clone's own damage: it is named, with the remedy.
        raise RepositoryError(f"cannot fetch {redact_url(url)} into {repo}: {reason}{damage_hint(repo)}") from None


def resolve(repo: str, revision: str) -> Commit:
    """Resolve `revision` (short or full SHA, tag, branch) in `repo` to a full 40-hex SHA, once."""
    handle = open_repo(repo)
    sha = _rev_parse(handle, revision)
    if sha is None and is_url(repo):
        _fetch(handle, repo)
        sha = _rev_parse(handle, revision)
    if sha is None:
        _not_a_commit(handle, repo, revision)
    committed = _date(int(_value(handle, "show", "-s", "--format=%ct", sha)))
    remote = repo if is_url(repo) else config_value(handle, "remote.origin.url")
    name = repo_name_from_url(remote) or DEFAULT_REPO_NAME
    return Commit(git_dir=handle, sha=sha, revision=revision, committed_at=committed, repo_name=name)


def _date(epoch: int) -> str:
    """A commit's date as records carry it: UTC, to the second."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rev_parse(repo: Path, revision: str) -> str | None:
    if not revision or revision.startswith("-"):
        return None
    try:
        sha = _value(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except RepositoryError:
        # `:/text` (the newest commit whose message holds text) takes a suffix as more text: the object it
        # names is peeled instead.
        try:
            oid = _value(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", revision)
            sha = _value(repo, "rev-parse", "--verify", "--quiet", f"{oid}^{{commit}}")
        except RepositoryError:
            return None
    return sha if re.fullmatch(r"[0-9a-f]{40}", sha) else None


def _not_a_commit(handle: Path, repo: str, revision: str) -> NoReturn:
    """Say why a revision gives no commit: it names nothing, names a tree or a blob, or names an object git
    cannot read (missing or damaged: git's type of it alone is no answer, a damaged commit is still "a
    commit" by the header of its pack entry)."""
    oid = None
    if revision and not revision.startswith("-"):
        with contextlib.suppress(RepositoryError):
            oid = _value(handle, "rev-parse", "--verify", "--quiet", "--end-of-options", revision) or None
    if oid is not None and oid == revision.lower():  # a full id is taken as it is: git did not look it up
        try:
            _git(handle, "cat-file", "-e", oid)
        except GitError:
            oid = None
    if oid is None:
        raise RevisionError(f"unknown revision {revision!r} in {shown_repo(repo)}")
    try:
        kind = _value(handle, "cat-file", "-t", oid)
        if kind == "tag":  # an annotated tag: what it is a tag of
            kind = _value(handle, "cat-file", "-t", _value(handle, "rev-parse", "--verify", f"{oid}^{{}}"))
            if kind not in ("commit", "tag"):
                kind = f"tag of a {kind}"
        if kind not in ("commit", "tag"):
            raise RevisionError(
                f"{revision!r} in {shown_repo(repo)} is a {kind}, not a commit: name a commit, tag or branch"
            )
        # A commit that does not peel to one: git could not read it. Its own words say which object.
        _value(handle, "rev-parse", "--verify", "--end-of-options", f"{oid}^{{commit}}")
        said = "git cannot read it"
    except GitError as error:
        said = error.complaint
    raise RepositoryError(
        f"cannot read {revision!r} in {shown_repo(repo)}: an object it needs is missing or damaged ({said})"
        f"{damage_hint(handle)}"
    )


def config_value(repo: Path, key: str) -> str | None:
    """A setting of a repository's config; None when unset (or the repository cannot say)."""
    try:
        return _value(repo, "config", "--get", key) or None
    except RepositoryError:
        return None


def list_tags(git_dir: Path, pattern: str) -> list[str]:
    """The tags whose names match a glob as git matches it, sorted by version (v0.9 before v0.10)."""
    return decode_name(_git(git_dir, "tag", "--list", "--sort=v:refname", pattern)).split()


def tag_targets(git_dir: Path) -> dict[str, str]:
    """Each tag, by its ref name (`refs/tags/v0.1`), with the object it names."""
    listing = decode_name(_git(git_dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags/"))
    return dict(line.split(" ", 1) for line in listing.splitlines() if " " in line)


def tag_commits(git_dir: Path) -> dict[str, tuple[str, str]]:
    """Each tag of a repository whose tags all name commits, by its name (`v0.1`), with the commit and its
    date, read with one `git for-each-ref` (not a few git processes per tag)."""
    listing = decode_name(
        _git(git_dir, "for-each-ref", "--format=%(refname) %(objectname) %(committerdate:unix)", "refs/tags/")
    )
    tags = {}
    for row in listing.splitlines():
        name, oid, seconds = row.split()
        tags[name.removeprefix("refs/tags/")] = (oid, _date(int(seconds)))
    return tags


def first_parent_commits(start: Commit, end: Commit) -> list[Commit]:
    """The first-parent commits of `end` that `start` does not hold, oldest first, each named by its short
    SHA in `end`'s repository."""
    listing = decode_name(
        _git(start.git_dir, "log", "--first-parent", "--reverse", "--format=%H %ct", f"{start.sha}..{end.sha}")
    )
    commits = []
    for row in listing.splitlines():
        sha, epoch = row.split()
        commits.append(replace(end, sha=sha, revision=sha[:12], committed_at=_date(int(epoch))))
    return commits


def is_ancestor(git_dir: Path, older: str, newer: str) -> bool | None:
    """Whether commit `older` is `newer` or one of its ancestors; None where git cannot tell (an object it
    cannot read): git answers with its exit status."""
    status = subprocess.run(
        ["git", "merge-base", "--is-ancestor", older, newer], cwd=git_dir, capture_output=True, env=_environment()
    ).returncode
    return {0: True, 1: False}.get(status)


def read_objects(git_dir: Path, names: Sequence[str]) -> list[bytes | None]:
    """The contents of objects named as git names them (`v0.1:vllm/_version.py`), in order, read with one
    `git cat-file --batch`; None where a name gives no object (a release without that file)."""
    raw = _git(git_dir, "cat-file", "--batch", input="".join(f"{name}\n" for name in names).encode())
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
    out = _git(commit.git_dir, "ls-tree", "-r", "-z", "--full-tree", commit.sha, "--", *specs)
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
    out = _git(
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
        oid = _value(commit.git_dir, "rev-parse", "--verify", "--quiet", f"{commit.sha}:{path}")
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
    listing = _git(repo, "rev-list", "--objects", "--no-object-names", "--no-walk", "--missing=print", commit.sha)
    absent = {line[1:].decode() for line in listing.split(b"\n") if line.startswith(b"?")}
    missing = sorted({blob.oid for blob in blobs} & absent)
    if not missing:
        return
    try:
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
            input="".join(f"{oid}\n" for oid in missing).encode(),
        )
    except GitError as error:
        reason, url = error.complaint, redact_url(config_value(repo, "remote.origin.url") or "its origin")
        raise RepositoryError(
            f"cannot fetch {len(missing)} file(s) of {commit.sha} from {url} into {repo}: {reason}"
            f"{_offline_hint(reason)}"
        ) from None


# Writing a repository (the release repository, built from sdists) -------------------------------------------


def init_bare(target: Path) -> None:
    """Make an empty bare repository at `target`, whose parent folder exists."""
    _git(target.parent, "init", "--quiet", "--bare", str(target))


def update_ref(git_dir: Path, ref: str, oid: str) -> None:
    """Point a ref (`refs/tags/v0.1`) at an object."""
    _git(git_dir, "update-ref", ref, oid)


def set_config(git_dir: Path, key: str, value: str) -> None:
    """Set a setting in a repository's own config."""
    _git(git_dir, "config", key, value)


def repack_whole(git_dir: Path) -> None:
    """Repack every object of a repository into one pack, each stored whole (no object a delta of another)."""
    _git(git_dir, "repack", "-a", "-d", "-f", "-q", "--window=0", "--depth=0")


class FastImportError(GitError):
    """`git fast-import` failed: `said` is the end of what it wrote, as written (empty if it said nothing)."""

    def __init__(self, git_dir: Path, said: str) -> None:
        super().__init__(git_dir, "fast-import", said)
        self.said = said


@contextlib.contextmanager
def fast_import(
    git_dir: Path, *, whole: bool = False, after_abort: Callable[[], None] = lambda: None
) -> Iterator[IO[bytes]]:
    """Feed a `git fast-import` of a repository: the stream its commands are written to. `whole` stores
    every object whole, as repack_whole does (fast-import would make each a delta of the one before it).

    The import is done (`done` written, its refs updated) when the block ends. If the block raises, git is
    stopped, then `after_abort` runs (to remove what it left): without `done`, fast-import updates no ref,
    so nothing half-written is named. git that stops reading (a broken pipe) has failed: its exit status
    and words say how, as a FastImportError."""
    with tempfile.TemporaryFile() as errors:
        options = ["--depth=0"] if whole else []
        process = subprocess.Popen(
            ["git", "fast-import", "--quiet", "--done", *options], cwd=git_dir, stdin=subprocess.PIPE, stderr=errors
        )
        assert process.stdin is not None
        try:
            yield process.stdin
            process.stdin.write(b"done\n")
            process.stdin.close()
        except BrokenPipeError:
            pass
        except BaseException:
            process.kill()
            process.wait()
            after_abort()
            raise
        if process.wait() != 0:
            errors.seek(0)
            raise FastImportError(git_dir, errors.read().decode(errors="replace").strip()[-300:])
