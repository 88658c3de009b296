# A revision resolved once: its full SHA, its date and the repository name its records carry.
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from extractor.errors import RepositoryError, RevisionError
from extractor.repo.git.clone import fetch_clone, is_url, open_repo, repo_name_from_url, shown_repo
from extractor.repo.git.run import GitError, config_value, damage_hint, git_value, run_git

__all__ = ["Commit", "commit_date", "resolve"]

DEFAULT_REPO_NAME = "vllm-project/vllm"


@dataclass(frozen=True)
class Commit:
    """A revision resolved once to its full SHA, with the repository it lives in."""

    git_dir: Path
    sha: str
    revision: str
    committed_at: str
    repo_name: str
    release: str | None = None  # the vLLM release this commit of the release repository holds the sdist of


def resolve(repo: str, revision: str) -> Commit:
    """Resolve `revision` (short or full SHA, tag, branch) in `repo` to a full 40-hex SHA, once."""
    handle = open_repo(repo)
    sha = _rev_parse(handle, revision)
    if sha is None and is_url(repo):
        fetch_clone(handle, repo)
        sha = _rev_parse(handle, revision)
    if sha is None:
        _not_a_commit(handle, repo, revision)
    committed = commit_date(int(git_value(handle, "show", "-s", "--format=%ct", sha)))
    remote = repo if is_url(repo) else config_value(handle, "remote.origin.url")
    name = repo_name_from_url(remote) or DEFAULT_REPO_NAME
    return Commit(git_dir=handle, sha=sha, revision=revision, committed_at=committed, repo_name=name)


def commit_date(epoch: int) -> str:
    """A commit's date as records carry it: UTC, to the second."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rev_parse(repo: Path, revision: str) -> str | None:
    if not revision or revision.startswith("-"):
        return None
    try:
        sha = git_value(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except RepositoryError:
        # `:/text` (the newest commit whose message holds text) takes a suffix as more text: the object it
        # names is peeled instead.
        try:
            oid = git_value(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", revision)
            sha = git_value(repo, "rev-parse", "--verify", "--quiet", f"{oid}^{{commit}}")
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
            oid = git_value(handle, "rev-parse", "--verify", "--quiet", "--end-of-options", revision) or None
    if oid is not None and oid == revision.lower():  # a full id is taken as it is: git did not look it up
        try:
            run_git(handle, "cat-file", "-e", oid)
        except GitError:
            oid = None
    if oid is None:
        raise RevisionError(f"unknown revision {revision!r} in {shown_repo(repo)}")
    try:
        kind = git_value(handle, "cat-file", "-t", oid)
        if kind == "tag":  # an annotated tag: what it is a tag of
            kind = git_value(handle, "cat-file", "-t", git_value(handle, "rev-parse", "--verify", f"{oid}^{{}}"))
            if kind not in ("commit", "tag"):
                kind = f"tag of a {kind}"
        if kind not in ("commit", "tag"):
            raise RevisionError(
                f"{revision!r} in {shown_repo(repo)} is a {kind}, not a commit: name a commit, tag or branch"
            )
        # A commit that does not peel to one: git could not read it. Its own words say which object.
        git_value(handle, "rev-parse", "--verify", "--end-of-options", f"{oid}^{{commit}}")
        said = "git cannot read it"
    except GitError as error:
        said = error.complaint
    raise RepositoryError(
        f"cannot read {revision!r} in {shown_repo(repo)}: an object it needs is missing or damaged ({said})"
        f"{damage_hint(handle)}"
    )
