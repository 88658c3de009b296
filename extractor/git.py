# Git: open a repository (local or cached clone), resolve a revision once, read blobs from objects.
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import git
import platformdirs
from gitdb import GitDB

from extractor.errors import RepositoryError, RevisionError

__all__ = ["DEFAULT_REPO", "Blob", "Commit", "cache_dir", "list_blobs", "open_repo", "read_blobs", "resolve"]

DEFAULT_REPO = "https://github.com/vllm-project/vllm"
DEFAULT_REPO_NAME = "vllm-project/vllm"
_GITHUB = re.compile(r"github\.com[:/]+(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")
_REGULAR = ("100644", "100755")


@dataclass(frozen=True)
class Commit:
    """A revision resolved once to its full SHA, with the repository it lives in."""

    repo: git.Repo
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


def _git(repo: git.Repo, *args: str, input: str | None = None) -> str:
    try:
        result = subprocess.run(
            ["git", *args],
            cwd=repo.git_dir,
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


def open_repo(repo: str, *, fetch: bool = False) -> git.Repo:
    """Open a local repository in place, or the cached bare, blob-filtered clone of a URL.

    A URL is cloned on first use; `fetch=True` fetches it again (a local path is read as it is).
    """
    if not is_url(repo):
        path = Path(repo).expanduser()
        if not path.exists():
            raise RepositoryError(f"no repository at {repo}: the path does not exist")
        try:
            return git.Repo(path)
        except git.InvalidGitRepositoryError:
            raise RepositoryError(f"{repo} is not a git repository") from None
        except (git.NoSuchPathError, OSError) as error:
            raise RepositoryError(f"cannot open repository {repo}: {error}") from None
    target = _clone_dir(repo)
    if not target.exists():
        _clone(repo, target)
    elif fetch:
        _fetch(git.Repo(target), repo)
    return git.Repo(target)


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
            raise RepositoryError(f"cannot clone {url}: {lines[-1] if lines else 'git clone failed'}")
        try:
            os.rename(scratch / "repo.git", target)
        except OSError:
            if not target.exists():  # another run may have cloned it meanwhile; that is fine
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fetch(repo: git.Repo, url: str) -> None:
    try:
        _git(repo, "fetch", "--quiet", "--prune", "--tags", "origin", "+refs/heads/*:refs/heads/*")
    except RepositoryError as error:
        raise RepositoryError(f"cannot fetch {url}: {error}") from None


def resolve(repo: str, revision: str) -> Commit:
    """Resolve `revision` (short or full SHA, tag, branch) in `repo` to a full 40-hex SHA, once."""
    handle = open_repo(repo)
    sha = _rev_parse(handle, revision)
    if sha is None and is_url(repo):
        _fetch(handle, repo)
        sha = _rev_parse(handle, revision)
    if sha is None:
        raise RevisionError(f"unknown revision {revision!r} in {repo}")
    commit = handle.commit(sha)
    committed = commit.committed_datetime.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    remote = repo if is_url(repo) else _origin_url(handle)
    name = repo_name_from_url(remote) or DEFAULT_REPO_NAME
    return Commit(repo=handle, sha=sha, revision=revision, committed_at=committed, repo_name=name)


def _rev_parse(repo: git.Repo, revision: str) -> str | None:
    if not revision or revision.startswith("-"):
        return None
    try:
        out = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except RepositoryError:
        return None
    sha = out.strip()
    return sha if re.fullmatch(r"[0-9a-f]{40}", sha) else None


def _origin_url(repo: git.Repo) -> str | None:
    try:
        return str(repo.remotes.origin.url)
    except (AttributeError, IndexError, ValueError):
        return None


def list_blobs(commit: Commit, prefixes: Sequence[str]) -> list[Blob]:
    """List the `.py` files of a commit under any of the path prefixes, sorted by path."""
    specs = [p.strip("/") for p in prefixes if p.strip("/")]
    out = _git(commit.repo, "ls-tree", "-r", "-z", "--full-tree", commit.sha, "--", *specs)
    blobs = []
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        mode, kind, oid = meta.split()
        if kind == "blob" and path.endswith(".py"):
            blobs.append(Blob(path=path, oid=oid, mode=mode))
    return sorted(blobs, key=lambda blob: blob.path)


def read_blobs(commit: Commit, blobs: Iterable[Blob]) -> Iterator[tuple[Blob, bytes]]:
    """Read blobs through one long-lived `git cat-file --batch`, fetching missing ones in bulk first."""
    wanted = list(blobs)
    _prefetch(commit.repo, [blob.oid for blob in wanted])
    odb = commit.repo.odb
    for blob in wanted:
        yield blob, odb.stream(bytes.fromhex(blob.oid)).read()


def _prefetch(repo: git.Repo, oids: Sequence[str]) -> None:
    """In a blob-filtered clone, fetch the blobs that are not here yet in one request."""
    if not oids or repo.git.config("--get", "remote.origin.promisor", with_exceptions=False) != "true":
        return
    local = GitDB(os.path.join(repo.git_dir, "objects"))
    missing = [oid for oid in oids if not local.has_object(bytes.fromhex(oid))]
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
