# Where a repository is: a local one read in place, a URL's bare blob-filtered clone in the cache, fetched again.
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from extractor.errors import RepositoryError
from extractor.repo.git.run import GitError, complaint, damage_hint, environment, run_git
from extractor.repo.housekeeping import cache_dir, remove_orphans

__all__ = [
    "check_local",
    "fetch_clone",
    "is_url",
    "offline_hint",
    "open_repo",
    "redact_url",
    "repo_name_from_url",
    "shown_repo",
]

_GITHUB = re.compile(r"github\.com[:/]+(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?\Z")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")
_AUTHORITY = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)")


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
        path = check_local(repo)
        try:
            out = run_git(path, "rev-parse", "--absolute-git-dir")
        except RepositoryError:
            raise RepositoryError(f"{repo} is not a git repository") from None
        return Path(os.fsdecode(out.rstrip(b"\n")))
    target = _clone_dir(repo)
    if not target.exists():
        _clone(repo, target)
    elif fetch:
        _sweep_clones(target.parent)
        fetch_clone(target, repo)
    return target


def check_local(repo: str) -> Path:
    """Refuse a local repository (not a URL) that is not there, or not a repository itself (a work tree or a
    bare one, not a folder inside one), without running git; return its path. Every command that takes
    --repo checks it so before any work, whether or not its catalogs need it (cli/options.parse_arguments)."""
    path = Path(repo).expanduser()
    _check_exists(path, repo)
    bare = (path / "HEAD").is_file() and (path / "objects").is_dir()
    if not bare and not (path / ".git").exists():
        raise RepositoryError(f"{repo} is not a git repository")
    return path


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
            env=environment(),
        )
        if result.returncode != 0:
            reason = complaint(result.stderr) or "git clone failed"
            raise RepositoryError(f"cannot clone {redact_url(url)}: {reason}{offline_hint(reason)}")
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


def offline_hint(reason: str) -> str:
    """Say what works without the network when git could not reach the repository's host."""
    if not _NO_NETWORK.search(reason):
        return ""
    return (
        " (no network to reach it: a release from the package index, release:X.Y.Z (--release X.Y.Z when "
        "extracting), or a local clone, --repo PATH, work without it)"
    )


def fetch_clone(repo: Path, url: str) -> None:
    """Fetch a URL's clone again: its branches and tags as the URL has them now."""
    try:
        run_git(repo, "fetch", "--quiet", "--prune", "--tags", "origin", "+refs/heads/*:refs/heads/*")
    except GitError as error:
        reason = error.complaint
        offline = offline_hint(reason)
        if offline:
            raise RepositoryError(f"cannot fetch {redact_url(url)}: {reason}{offline}") from None
        # Anything else may be the clone's own damage: it is named, with the remedy.
        raise RepositoryError(f"cannot fetch {redact_url(url)} into {repo}: {reason}{damage_hint(repo)}") from None
