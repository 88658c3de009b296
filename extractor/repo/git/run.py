# Running git: its environment, its output (bytes, a value, a setting), names as it gives them, its failures.
from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from extractor.errors import RepositoryError
from extractor.repo.housekeeping import cache_dir

__all__ = [
    "GitError",
    "complaint",
    "config_value",
    "damage_hint",
    "decode_name",
    "environment",
    "git_value",
    "is_utf8",
    "printable",
    "run_git",
]


# An HTTP transfer slower than this many bytes a second for this many seconds is given up.
_SLOW_BYTES = 1000
_SLOW_SECONDS = 60


def environment() -> dict[str, str]:
    """git's environment: never a prompt for credentials, and an HTTP transfer slower than _SLOW_BYTES a second
    for _SLOW_SECONDS given up (a server that takes the connection and says nothing would hang a run forever);
    the user's own settings of those win."""
    return {
        "GIT_HTTP_LOW_SPEED_LIMIT": str(_SLOW_BYTES),
        "GIT_HTTP_LOW_SPEED_TIME": str(_SLOW_SECONDS),
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
    }


def run_git(git_dir: Path, *args: str, input: bytes | None = None) -> bytes:
    """Run git and return its output as bytes: names are whatever bytes the tree holds (a carriage
    return, a byte that is not UTF-8), and only the caller knows how to split them (-z)."""
    try:
        result = subprocess.run(
            ["git", *args],
            cwd=git_dir,
            input=input,
            capture_output=True,
            check=True,
            env=environment(),
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


def git_value(git_dir: Path, *args: str) -> str:
    """Run git for one value (a SHA, a date, a path, a setting) and return it stripped."""
    return decode_name(run_git(git_dir, *args)).strip()


def config_value(repo: Path, key: str) -> str | None:
    """A setting of a repository's config; None when unset (or the repository cannot say)."""
    try:
        return git_value(repo, "config", "--get", key) or None
    except RepositoryError:
        return None


def decode_name(data: bytes) -> str:
    """Decode a name from git: UTF-8, any other byte kept as a surrogate escape (os.fsdecode's way)."""
    return data.decode("utf-8", "surrogateescape")


def printable(name: str) -> str:
    """A name as it can be written in JSON: a byte that is not UTF-8 shown as a \\x escape."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def is_utf8(name: str) -> bool:
    """Whether a name from git is valid UTF-8 (holds no surrogate escape)."""
    return name.isascii() or printable(name) == name
