"""Workers: the command line forks them first thing, and they scan without importing pydantic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from extractor import workers
from tests.conftest import GitRepo

# A small scope (under scheduler._MAIN_SCANS_BYTES): a worker started ahead scans it alone.
SMALL = {f"pkg/m{i}.py": f"def f{i}(x):\n    if x:\n        raise ValueError(f'm{i} {{x}}')\n" for i in range(6)}

# Each batch scanned says which process scanned it, and what that process had imported by then.
_SPY = """
import os, sys
import extractor.workers
MAIN = os.getpid()
real = extractor.workers.scan_batch
def spy(*args, **kwargs):
    found = real(*args, **kwargs)
    with open(os.environ["SPY"], "a") as stream:
        print(os.getpid() == MAIN, "pydantic" in sys.modules, "libcst" in sys.modules, file=stream)
    return found
extractor.workers.scan_batch = spy
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli import run
run()
"""


def _run(repo: GitRepo, tmp_path: Path, *options: str) -> tuple[str, list[str]]:
    spy = tmp_path / "spy.txt"
    spy.unlink(missing_ok=True)
    args = ["--repo", str(repo.path), "--sha", "v1", "--path", "pkg", "--no-cache", "--output", "-", *options]
    result = subprocess.run(
        [sys.executable, "-c", _SPY, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "SPY": str(spy), "SOURCE_DATE_EPOCH": "1767225600"},
        timeout=120,
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    return result.stdout, sorted(set(spy.read_text().splitlines()))


def test_a_command_line_scans_in_a_worker_forked_before_pydantic(git_repo: GitRepo, tmp_path: Path) -> None:
    """With two processes, a small scope is scanned by the worker the command line forked before it
    imported the pipeline: that worker never imports pydantic (the scan's modules do not need it), and
    the main process never imports the parser. The catalog is the one a single process makes."""
    git_repo.commit(SMALL, tag="v1")
    parallel, seen = _run(git_repo, tmp_path, "--jobs", "2", "--quiet")
    # (scanned in the main process, pydantic imported there, libcst imported there)
    assert seen == ["False False True"]
    serial, seen = _run(git_repo, tmp_path, "--jobs", "1", "--quiet")
    assert seen == ["True True True"]
    assert parallel == serial and parallel.count("\n") == len(SMALL)


def test_workers_are_started_ahead_only_in_a_command_line_process() -> None:
    """A library caller (here: the test process) never gets processes forked ahead."""
    workers.start_ahead(1)
    assert workers.take_ahead() is None


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_that_needs_no_scan_leaves_no_worker_behind(git_repo: GitRepo, tmp_path: Path, jobs: str) -> None:
    """A catalog read back from the cache needs no worker: the one forked ahead ends with the run (its
    standard output closes at once, so a reader of a pipe sees the end)."""
    git_repo.commit(SMALL, tag="v1")
    cache = tmp_path / "cache"
    args = ["--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--jobs", jobs, "--output", "-"]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "SOURCE_DATE_EPOCH": "1767225600"}
    command = [sys.executable, "-m", "extractor", *args]
    first = subprocess.run(command, capture_output=True, cwd=tmp_path, env=env, timeout=120)
    # Reading to the end of stdout waits for every process holding it: a worker left running would hold it.
    again = subprocess.run(command, capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert first.returncode == again.returncode == 0
    assert again.stdout == first.stdout and first.stdout.count(b"\n") == len(SMALL)
