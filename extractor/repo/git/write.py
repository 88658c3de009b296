# Writing a repository (the release repository, built from sdists): init, refs, config, repack, fast-import.
from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from extractor.repo.git.run import GitError, run_git

__all__ = ["FastImportError", "fast_import", "init_bare", "set_config", "update_ref"]


def init_bare(target: Path) -> None:
    """Make an empty bare repository at `target`, whose parent folder exists."""
    run_git(target.parent, "init", "--quiet", "--bare", str(target))


def update_ref(git_dir: Path, ref: str, oid: str) -> None:
    """Point a ref (`refs/tags/v0.1`) at an object."""
    run_git(git_dir, "update-ref", ref, oid)


def set_config(git_dir: Path, key: str, value: str) -> None:
    """Set a setting in a repository's own config."""
    run_git(git_dir, "config", key, value)


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
    every object whole (fast-import would make each a delta of the one before it).

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
