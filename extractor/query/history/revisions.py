# Revisions: what a user lists (releases, a range, a tag glob, a revision) -> the commits a history follows,
# oldest first; the scope that follows a module across them as it becomes a package.
from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, replace

from extractor.catalog.spec import (
    Release,
    ReleaseRange,
    RepoRange,
    RepoRevision,
    RevisionsSpec,
    TagGlob,
    parse_revisions,
    release_label,
)
from extractor.errors import RevisionError
from extractor.pipeline.options import ExtractOptions
from extractor.repo.git.blobs import read_objects
from extractor.repo.git.clone import open_repo, shown_repo
from extractor.repo.git.commit import Commit, resolve
from extractor.repo.git.history import first_parent_commits, is_ancestor, list_tags, tag_commits
from extractor.util.progress import warn

__all__ = ["Revision", "followed", "following", "list_revisions"]


@dataclass(frozen=True)
class Revision:
    """One revision of a history: the label it is shown by, its commit, and the SHA its records point at."""

    label: str
    commit: Commit
    pinned: str | None = None


def following(paths: Sequence[str]) -> tuple[str, ...]:
    """Widen a scope so it follows a module that becomes a package (or back): `vllm/config` names both the
    `vllm/config/` package and the `vllm/config.py` module, and `vllm/config.py` names both too."""
    out: list[str] = []
    for path in paths:
        stem = path.strip("/").removesuffix(".py")
        out += [stem, f"{stem}.py"] if stem else [path]
    return tuple(dict.fromkeys(out))


def followed(options: ExtractOptions) -> ExtractOptions:
    """The options with their `--path` and `--config-from` following a module that becomes a package."""
    return replace(options, paths=following(options.paths), config_from=following(options.config_from))


def list_revisions(specs: Sequence[RevisionsSpec | str], *, repo: str) -> list[Revision]:
    """Resolve what the user listed, oldest first (a string is read by `parse_revisions`): releases (one, a
    range A..B or all); and of `repo`, `A..B` (A, then the first-parent commits after it up to B), a tag glob
    such as `v*` (sorted by version), or one revision. A revision listed twice is kept once, where first listed."""
    parsed = [parse_revisions(spec) if isinstance(spec, str) else spec for spec in specs]
    out: list[Revision] = []
    for spec in parsed:
        if isinstance(spec, Release | ReleaseRange):
            out += _releases(spec)
        elif isinstance(spec, RepoRange):
            out += _range(repo, spec)
        elif isinstance(spec, TagGlob):
            out += _tags(repo, spec.text)
        else:
            assert isinstance(spec, RepoRevision)
            out.append(Revision(spec.text, resolve(repo, spec.text)))
    seen: set[str] = set()
    unique = []
    for revision in out:
        if revision.commit.sha not in seen:
            seen.add(revision.commit.sha)
            unique.append(revision)
    if not unique:
        raise RevisionError(f"no revision in {' '.join(spec.text for spec in parsed)}")
    return unique


def _releases(spec: Release | ReleaseRange) -> list[Revision]:
    """The releases a spec names, as commits of the release repository: its tags and dates read with one
    `git for-each-ref`, each release's recorded commit with one `git cat-file --batch` (not a few git
    processes per release)."""
    from extractor.repo.release import commit_id, release_repo, release_tag

    versions = [spec.version] if isinstance(spec, Release) else [release.version for release in spec.releases()]
    git_dir = release_repo(versions)  # every missing release goes into one fast-import
    template = resolve(str(git_dir), release_tag(versions[0]))
    tags = tag_commits(git_dir)
    answers = read_objects(git_dir, [f"{tags[release_tag(v)][0]}:vllm/_version.py" for v in versions])
    out = []
    for version, version_py in zip(versions, answers, strict=True):
        sha, committed = tags[release_tag(version)]
        commit = replace(template, sha=sha, revision=release_label(version), committed_at=committed, release=version)
        out.append(Revision(version, commit, commit_id(version_py) if version_py is not None else None))
    return out


def _range(repo: str, spec: RepoRange) -> list[Revision]:
    low, high = spec.low, spec.high
    start, end = resolve(repo, low or "HEAD"), resolve(repo, high or "HEAD")
    after = first_parent_commits(start, end)
    if not after and start.sha != end.sha:  # B is A's ancestor: nothing comes after A up to it
        raise RevisionError(
            f"{spec.text}: no commit of {high or 'HEAD'} comes after {low or 'HEAD'}: is the range backwards?"
        )
    if is_ancestor(start.git_dir, start.sha, end.sha) is False:  # unrelated, or on branches that went apart
        warn(
            f"{spec.text}: {low or 'HEAD'} is not an ancestor of {high or 'HEAD'}: the history is {low or 'HEAD'}, "
            f"then the {len(after)} first-parent commit(s) of {high or 'HEAD'} it does not hold"
        )
    return [Revision(commit.sha[:12], commit) for commit in [start, *after]]


def _tags(repo: str, pattern: str) -> list[Revision]:
    git_dir = open_repo(repo)
    tags = [tag for tag in list_tags(git_dir, pattern) if fnmatch.fnmatchcase(tag, pattern)]
    if not tags:
        raise RevisionError(f"no tag matches {pattern!r} in {shown_repo(repo)}")
    out, skipped = [], []
    for tag in tags:  # (a tag may name a tree or a blob, as Linux's v2.6.11-tree does: no revision, left out)
        try:
            out.append(Revision(tag, resolve(repo, tag)))
        except RevisionError:
            skipped.append(tag)
    if skipped:
        warn(f"{len(skipped)} tag(s) matching {pattern!r} name no commit, left out: {', '.join(skipped[:5])}")
    if not out:
        raise RevisionError(f"no tag matching {pattern!r} in {shown_repo(repo)} names a commit")
    return out
