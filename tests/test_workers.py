"""Workers: the command line forks them first thing, and they scan without importing pydantic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from extractor.pipeline import workers
from tests.conftest import GitRepo

# A small scope (under scheduler._MAIN_SCANS_BYTES), of messages read without libcst: a worker started
# ahead scans it alone.
SMALL = {f"pkg/m{i}.py": f"def f{i}(x):\n    if x:\n        raise ValueError(f'm{i} {{x}}')\n" for i in range(6)}

# Each batch scanned says which process scanned it, and what that process had imported by then; each
# worker says what it imported to warm up.
_SPY = """
import os, sys
import extractor.pipeline.workers
MAIN = os.getpid()
real = extractor.pipeline.workers.scan_batch
def spy(*args, **kwargs):
    found = real(*args, **kwargs)
    with open(os.environ["SPY"], "a") as stream:
        print(os.getpid() == MAIN, "pydantic" in sys.modules, "libcst" in sys.modules, file=stream)
    return found
extractor.pipeline.workers.scan_batch = spy
real_warm_up = extractor.pipeline.workers._warm_up
def warm_up(parent):
    real_warm_up(parent)
    with open(os.environ["SPY"], "a") as stream:
        print("warm", "pydantic" in sys.modules, "libcst" in sys.modules, file=stream)
extractor.pipeline.workers._warm_up = warm_up
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli.main import run_and_exit
run_and_exit()
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
    imported the pipeline: that worker never imports pydantic (the scan's modules do not need it), nor
    libcst for messages the quick reading reads, and the main process scans nothing. The catalog is the
    one a single process makes, which does not import pydantic either (it writes its catalog as data)."""
    git_repo.commit(SMALL, tag="v1")
    parallel, seen = _run(git_repo, tmp_path, "--jobs", "2", "--quiet")
    # (scanned in the main process, pydantic imported there, libcst imported there)
    assert seen == ["False False False", "warm False False"]
    serial, seen = _run(git_repo, tmp_path, "--jobs", "1", "--quiet")
    assert seen == ["True False False"]  # (no worker)
    assert parallel == serial and parallel.count("\n") == len(SMALL)


def test_workers_are_started_ahead_only_in_a_command_line_process() -> None:
    """A library caller (here: the test process) never gets processes forked ahead."""
    workers.start_ahead(1)
    assert workers.take_ahead() is None


# Says on stderr when the command line forks workers.
FORKS_SPY = """
import sys
import extractor.pipeline.workers
real = extractor.pipeline.workers.start
def spy(count):
    print("forked", count, file=sys.__stderr__)
    return real(count)
extractor.pipeline.workers.start = spy
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli.main import run_and_exit
run_and_exit()
"""


def test_more_jobs_than_cores_fork_one_worker_per_core_at_most(git_repo: GitRepo, tmp_path: Path) -> None:
    """`--jobs 100000` would have forked as many processes: each core takes one, this one included."""
    git_repo.commit(SMALL, tag="v1")
    args = ["--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--jobs", "100000", "--output", "-"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = [sys.executable, "-c", FORKS_SPY, *args, "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    cores = len(os.sched_getaffinity(0))
    assert (result.returncode, result.stderr) == (0, f"forked {cores - 1}\n" if cores > 1 else "")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_whose_catalog_is_cached_forks_no_worker(git_repo: GitRepo, tmp_path: Path, jobs: str) -> None:
    """A catalog read back from the cache needs no worker: none is forked (it would only take a core
    from the main process), and the run gives the same bytes as the one that stored it."""
    git_repo.commit(SMALL, tag="v1")
    args = ["--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--jobs", jobs, "--output", "-"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1767225600"}
    command = [sys.executable, "-c", FORKS_SPY, *args, "--quiet"]
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert (first.returncode, first.stderr) == (0, "forked 1\n" if jobs == "2" else "")
    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout == first.stdout and first.stdout.count("\n") == len(SMALL)
    # Another revision's catalog is not in the cache: its workers are forked.
    git_repo.commit({"pkg/m0.py": "raise ValueError('changed')\n"}, tag="v2")
    again_v2 = [word if word != "v1" else "v2" for word in command]
    other = subprocess.run(again_v2, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert (other.returncode, other.stderr) == (0, "forked 1\n" if jobs == "2" else "")


# Says on stderr when workers are forked, and how many batches of a later revision they are given ahead.
_HISTORY_SPY = """
import sys
import extractor.pipeline.scheduler, extractor.pipeline.workers
real_start, real_ahead = extractor.pipeline.workers.start, extractor.pipeline.scheduler._scan_ahead
def start(count):
    print("forked", count, file=sys.__stderr__)
    return real_start(count)
def ahead(*args, **kwargs):
    given = real_ahead(*args, **kwargs)
    print("ahead", args[1].revision, len(given), file=sys.__stderr__)
    return given
extractor.pipeline.scheduler.start, extractor.pipeline.scheduler._scan_ahead = start, ahead
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli.main import run_and_exit
run_and_exit()
"""


def test_a_history_forks_its_workers_once_and_scans_each_revision_ahead(git_repo: GitRepo, tmp_path: Path) -> None:
    """A history keeps its workers from one revision to the next (forked once, not once per revision
    from an ever bigger process), and gives them the next two revisions' new files while the main process
    builds the last one's catalog, each file once. The history is the one a single process makes."""
    for number in range(4):  # each revision changes two files and adds one
        files = {
            f"pkg/m{i}.py": f"def f{i}(x):\n    if x:\n        raise ValueError('v{number} m{i} {{x}}')\n"
            for i in range(2)
        }
        git_repo.commit({**files, f"pkg/new{number}.py": f"raise ValueError('new in v{number}')\n"}, tag=f"v{number}")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1767225600"}
    command = [sys.executable, "-c", _HISTORY_SPY, "history", "--repo", str(git_repo.path), "v*", "--path", "pkg"]
    outputs = []
    for jobs in ("2", "1"):
        result = subprocess.run(
            [*command, "--jobs", jobs, "--output", str(tmp_path / jobs), "--quiet", "--no-cache"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
        # Forked once. While a revision's catalog is built, the next revision's new files go ahead, and of
        # the one after, those that can reuse nothing of the next one: here, the file it adds (the changed
        # ones go ahead a revision later, with the results of their versions in the next one).
        if jobs == "2":
            assert result.stderr.splitlines() == [
                "forked 1",
                *("ahead v1 1", "ahead v2 1"),  # while v0's catalog is built: v1's 3 files, v2's new one
                *("ahead v2 1", "ahead v3 1"),  # v1's: v2's 2 changed files, v3's new one
                "ahead v3 1",  # v2's: v3's 2 changed files
            ]
        else:
            assert result.stderr == ""
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == 2 + 4


def test_work_is_cut_as_it_is_handed_out_each_file_once_the_last_batches_small() -> None:
    """Batches come largest first from the front and smallest first from the back, each file once; they
    shrink as the work runs out, so the last ones a worker holds (which cannot be taken back) are small.
    The previous versions' results are read a batch at a time, as it is cut, each file's once."""
    from collections.abc import Sequence

    from extractor.pipeline.scheduler import _BATCH_BYTES, _largest_first, _Work
    from extractor.repo.git.blobs import Blob

    sizes = [200_000, 150_000, *[30_000] * 40, *[3_000] * 300, *[500] * 200]
    blobs = _largest_first([Blob(f"f{i}.py", f"{i:040x}", "100644", size) for i, size in enumerate(sizes)])
    size_of = {blob.oid: blob.size or 0 for blob in blobs}
    asked: list[list[str]] = []

    def previous(oids: Sequence[str]) -> dict[str, bytes]:  # every other file has a previous version
        asked.append(list(oids))
        return {oid: oid.encode() for oid in oids if int(oid, 16) % 2}

    work = _Work(blobs, previous, set(), scanners=2)
    assert asked == []  # nothing read before the first batch is cut
    cut: list[tuple[str, list[str]]] = []  # in the order handed out: (side, blob ids)
    while work:
        for side, batch in [("front", work.first()), *([("back", work.last())] if work else [])]:
            cut.append((side, [item[0] for item in batch]))
            assert all(item[1] == (item[0].encode() if int(item[0], 16) % 2 else None) for item in batch)
    assert asked == [oids for _, oids in cut]
    handed = [oid for _, oids in cut for oid in oids]
    assert sorted(handed) == sorted(size_of) and len(handed) == len(size_of)
    front = [oid for side, oids in cut if side == "front" for oid in oids]
    assert front == [blob.oid for blob in blobs][: len(front)]  # the largest, in order
    weight = [sum(size_of[oid] for oid in oids) for _, oids in cut]
    back = [w for (side, _), w in zip(cut, weight, strict=True) if side == "back"]
    assert max(weight) <= _BATCH_BYTES and back[0] > 4 * back[-1]  # the back's batches shrink
    assert all(w <= _BATCH_BYTES // 7 for w in weight[-3:])  # the last ones handed out are small
