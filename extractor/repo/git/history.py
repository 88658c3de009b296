# A repository's history: its tags, a first-parent log, whether one commit is an ancestor of another.
from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

from extractor.repo.git.commit import Commit, commit_date
from extractor.repo.git.run import decode_name, environment, run_git

__all__ = ["first_parent_commits", "is_ancestor", "list_tags", "tag_commits", "tag_targets"]


def list_tags(git_dir: Path, pattern: str) -> list[str]:
    """The tags whose names match a glob as git matches it, sorted by version (v0.9 before v0.10)."""
    return decode_name(run_git(git_dir, "tag", "--list", "--sort=v:refname", pattern)).split()


def tag_targets(git_dir: Path) -> dict[str, str]:
    """Each tag, by its ref name (`refs/tags/v0.1`), with the object it names."""
    listing = decode_name(run_git(git_dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags/"))
    return dict(line.split(" ", 1) for line in listing.splitlines() if " " in line)


def tag_commits(git_dir: Path) -> dict[str, tuple[str, str]]:
    """Each tag of a repository whose tags all name commits, by its name (`v0.1`), with the commit and its
    date, read with one `git for-each-ref` (not a few git processes per tag)."""
    listing = decode_name(
        run_git(git_dir, "for-each-ref", "--format=%(refname) %(objectname) %(committerdate:unix)", "refs/tags/")
    )
    tags = {}
    for row in listing.splitlines():
        name, oid, seconds = row.split()
        tags[name.removeprefix("refs/tags/")] = (oid, commit_date(int(seconds)))
    return tags


def first_parent_commits(start: Commit, end: Commit) -> list[Commit]:
    """The first-parent commits of `end` that `start` does not hold, oldest first, each named by its short
    SHA in `end`'s repository."""
    listing = decode_name(
        run_git(start.git_dir, "log", "--first-parent", "--reverse", "--format=%H %ct", f"{start.sha}..{end.sha}")
    )
    commits = []
    for row in listing.splitlines():
        sha, epoch = row.split()
        commits.append(replace(end, sha=sha, revision=sha[:12], committed_at=commit_date(int(epoch))))
    return commits


def is_ancestor(git_dir: Path, older: str, newer: str) -> bool | None:
    """Whether commit `older` is `newer` or one of its ancestors; None where git cannot tell (an object it
    cannot read): git answers with its exit status."""
    status = subprocess.run(
        ["git", "merge-base", "--is-ancestor", older, newer], cwd=git_dir, capture_output=True, env=environment()
    ).returncode
    return {0: True, 1: False}.get(status)
