"""The nightly job: publish, no-op re-runs, moving branches, --keep, bad input, kills and concurrent runs."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from extractor.catalog.load import folder_name
from extractor.cli.main import main
from extractor.model.records import Manifest, Scope
from extractor.pipeline.extract import ExtractOptions
from extractor.pipeline.write import MANIFEST, RECORDS, records_digest
from tests.conftest import GitRepo, cli, copy_scans, git

V1 = 'def f(n):\n    if n:\n        raise ValueError("first check")\n'
V2 = V1 + 'def g(n):\n    raise ValueError(f"second check {n}")\n'


@pytest.fixture
def bare(git_repo: GitRepo, tmp_path: Path) -> Path:
    """A bare repository whose main can be moved between the tagged commits v1 and v2."""
    git_repo.commit({"vllm/config/a.py": V1}, tag="v1")
    git_repo.commit({"vllm/config/a.py": V2}, tag="v2")
    path = tmp_path / "bare.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(git_repo.path), str(path))
    move(path, "v1")
    return path


def move(repo: Path, tag: str) -> str:
    git(repo, "update-ref", "refs/heads/main", f"refs/tags/{tag}")
    return git(repo, "rev-parse", "refs/heads/main")


def index(output: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((output / "index.json").read_text())


def snapshot(output: Path) -> dict[str, int]:
    return {str(p.relative_to(output)): p.stat().st_mtime_ns for p in sorted(output.rglob("*"))}


def test_publish_then_no_op_then_follow_the_branch(bare: Path, tmp_path: Path) -> None:
    out = tmp_path / "pub"
    first = git(bare, "rev-parse", "refs/tags/v1")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    assert index(out)["latest"] == first
    assert [c["summary"] for c in index(out)["catalogs"]] == [None]
    assert not (out / first / "diff.json").exists()

    before = snapshot(out)
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    assert snapshot(out) == before  # nothing rewritten, not even the lock

    second = move(bare, "v2")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    document = index(out)
    assert document["latest"] == second
    assert [c["sha"] for c in document["catalogs"]] == [second, first]
    assert document["catalogs"][0]["summary"]["added"] == 1
    assert json.loads((out / second / "diff.json").read_text())["summary"]["added"] == 1
    assert "## Added (1)" in (out / second / "diff.md").read_text()

    move(bare, "v1")  # the branch moved back: latest names the head's catalog again, listed once
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    document = index(out)
    assert document["latest"] == first
    assert [c["sha"] for c in document["catalogs"]] == [first, second]
    assert document["catalogs"][0]["summary"]["removed"] == 1


def test_keep_removes_older_catalogs_from_disk_and_index(bare: Path, tmp_path: Path) -> None:
    out = tmp_path / "pub"
    first = git(bare, "rev-parse", "refs/tags/v1")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    second = move(bare, "v2")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--keep", "1", "--quiet"]) == 0
    assert [c["sha"] for c in index(out)["catalogs"]] == [second]
    assert not (out / first).exists() and (out / second / "records.jsonl").exists()


def test_logs_one_line_per_step_with_timings(bare: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nightly", "--repo", str(bare), "--output", str(tmp_path / "pub")]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert all(line.startswith("extractor nightly: ") for line in lines)
    assert [line.split(": ", 1)[1].split()[0] for line in lines] == [
        "resolved",
        "took",
        "extracted",
        "first",
        "analysis",
        "rolled",
        "published",
        "done",
    ]
    assert lines[-1].endswith("s)")


@pytest.mark.parametrize("args", [["--branch", "nope"], ["--repo", "/nonexistent/repo"]])
def test_bad_branch_or_repository_writes_nothing(bare: Path, tmp_path: Path, args: list[str]) -> None:
    out = tmp_path / "pub"
    cmd = [sys.executable, "-m", "extractor", "nightly", "--repo", str(bare), "--output", str(out), *args]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("extractor: error: ") and len(result.stderr.splitlines()) == 1
    assert not out.exists()


def nightly_process(repo: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "extractor", "nightly", "--repo", str(repo), "--output", str(out), *extra],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )


def test_two_runs_started_together_both_succeed_and_publish_once(bare: Path, tmp_path: Path) -> None:
    out = tmp_path / "pub"
    runs = [nightly_process(bare, out) for _ in range(2)]
    assert [run.wait(timeout=120) for run in runs] == [0, 0]
    document = index(out)
    assert [c["sha"] for c in document["catalogs"]] == [git(bare, "rev-parse", "refs/tags/v1")]


def assert_published_state_is_whole(out: Path, scope: Scope) -> str | None:
    """The index is valid and names only whole catalogs (each in the folder of its SHA and scope: a manifest,
    and records.jsonl as that manifest sealed it, as many lines as the index counts); return its latest.
    Whole is what a kill could break; the lines themselves are validated where they are written."""
    if not (out / "index.json").exists():
        return None
    document = index(out)
    for entry in document["catalogs"]:
        folder = out / folder_name(sha=entry["sha"], scope=scope.model_dump(mode="json"))
        manifest = Manifest.model_validate_json((folder / MANIFEST).read_bytes())
        records = (folder / RECORDS).read_bytes()
        assert manifest.recordsSha256 == records_digest(records)
        assert records.count(b"\n") == manifest.counts.records == entry["records"]
    return document["latest"]


WHOLE_PACKAGE = ["--path", "vllm"]


@pytest.fixture(scope="session")
def published_0_27(vllm_repo: Path, whole_package_cache: Path) -> Published:
    """vLLM 0.27.0's whole package published once a session (from the session's scans), by whichever test
    worker asks first, for each killed run to copy: a bare clone of the releases whose main has then moved
    on to 0.28.0, what was published, and the two SHAs."""
    from filelock import FileLock

    root = Path(os.environ["XDG_CACHE_HOME"]) / "published-0.27"
    bare, done = root / "vllm.git", root / "shas.json"
    with FileLock(str(root) + ".lock"):
        if not done.exists():
            root.mkdir()
            git(root, "clone", "--quiet", "--bare", str(vllm_repo), str(bare))
            old = move(bare, "v0.27.0")
            copy_scans(whole_package_cache, root / "cache")
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("XDG_CACHE_HOME", str(root / "cache"))
                command = ["nightly", "--repo", str(bare), "--output", str(root / "pub"), "--quiet", *WHOLE_PACKAGE]
                assert main(command) == 0
            done.write_text(json.dumps([old, move(bare, "v0.28.0")]))
    old, new = json.loads(done.read_text())
    return Published(bare, root / "pub", old, new)


@dataclass(frozen=True)
class Published:
    bare: Path
    out: Path
    old: str
    new: str


@pytest.mark.release
@pytest.mark.parametrize(
    ("marker", "delay"),
    [
        pytest.param("resolved", 0.0, id="early"),
        pytest.param("took", 0.8, id="mid-extraction"),
        pytest.param("extracted", 0.0, id="while publishing"),
        pytest.param("diffed", 0.0, id="while writing the index"),
    ],
)
def test_killed_runs_leave_the_published_state_whole(
    published_0_27: Published, whole_package_scans: Path, tmp_path: Path, marker: str, delay: float
) -> None:
    """SIGKILL at several moments of publishing vLLM 0.28.0 over 0.27.0 (whole package, several seconds; its
    scans are the session's, its catalog made by each run, over a copy of the module's 0.27.0 publication)."""
    import time

    bare, old, new = published_0_27.bare, published_0_27.old, published_0_27.new
    out = tmp_path / "pub"
    shutil.copytree(published_0_27.out, out, symlinks=True)
    scope = WHOLE_PACKAGE

    run = nightly_process(bare, out, *scope)
    assert run.stderr is not None
    for line in run.stderr:
        if line.split(": ", 1)[-1].startswith(marker):
            break
    else:
        pytest.fail(f"the run never logged {marker!r}: the kill would land after it ended")
    time.sleep(delay)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    published = ExtractOptions(paths=("vllm",)).scope  # not the default scope: folders are <sha>-vllm-ValueError
    assert assert_published_state_is_whole(out, published) in (old, new)

    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet", *scope]) == 0
    assert assert_published_state_is_whole(out, published) == new
    document = index(out)
    assert [c["sha"] for c in document["catalogs"]] == [new, old]
    assert document["catalogs"][0]["summary"]["added"] >= 1
    assert not list((out / f"{new}-vllm-ValueError").glob(".*.tmp"))


@pytest.mark.release
def test_vllm_0_27_then_0_28(vllm_repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "vllm.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(vllm_repo), str(bare))
    out = tmp_path / "pub"
    old = move(bare, "v0.27.0")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    assert index(out)["latest"] == old and index(out)["catalogs"][0]["records"] == 179
    before = snapshot(out)
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    assert snapshot(out) == before
    new = move(bare, "v0.28.0")
    runs = [nightly_process(bare, out) for _ in range(2)]
    assert [run.wait(timeout=300) for run in runs] == [0, 0]
    document = index(out)
    assert [c["sha"] for c in document["catalogs"]] == [new, old]
    assert document["catalogs"][0]["summary"]["added"] >= 1


def test_what_killed_runs_left_and_no_index_names_is_removed(bare: Path, tmp_path: Path) -> None:
    """Folders of runs killed before publishing, and temporary files, go at the next publishing run."""
    out = tmp_path / "pub"
    first = git(bare, "rev-parse", "refs/tags/v1")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    killed = out / ("ab" * 20)
    killed.mkdir()
    (killed / "records.jsonl").write_text("{}\n")
    token = "0123456789abcdef" * 2  # as atomic writes name their temporary files
    leftovers = [out / f".index.json.{token}.tmp", out / first / f".records.jsonl.{token}.tmp"]
    for leftover in [*leftovers, killed / f".manifest.json.{token}.tmp"]:
        leftover.write_text("partial")
    # Never touched: what a person put there, even named like hexadecimal, and a complete catalog an
    # extraction wrote in the same root.
    (out / "notes").mkdir()
    (out / "20241201").mkdir()
    (out / "20241201" / "report.pdf").write_text("mine")
    (out / "notes" / f".draft.{token}.tmp").write_text("mine")
    (out / "photos").mkdir()
    (out / "photos" / ".draft.tmp").write_text("mine")
    assert main(["--repo", str(bare), "--sha", first, "--output", str(out / "by-hand"), "--quiet"]) == 0
    (by_hand,) = (out / "by-hand").iterdir()
    complete = out / ("cd" * 20)
    by_hand.rename(complete)
    second = move(bare, "v2")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    published = [".nightly.lock", "index.json", "history.json", "history.jsonl", first, second]
    mine = ["notes", "20241201", "photos", "by-hand", complete.name]
    assert sorted(p.name for p in out.iterdir()) == sorted([*published, *mine])
    assert not any(leftover.exists() for leftover in leftovers) and not killed.exists()
    assert (out / "20241201" / "report.pdf").exists() and (out / "photos" / ".draft.tmp").exists()
    assert (out / "notes" / f".draft.{token}.tmp").exists() and (complete / "manifest.json").exists()


def test_without_an_earlier_index_unnamed_folders_stay(bare: Path, tmp_path: Path) -> None:
    """They may be catalogs a lost index named: only temporary files go."""
    out = tmp_path / "pub"
    other = out / ("cd" * 20)
    other.mkdir(parents=True)
    (other / f".records.jsonl.{'ab' * 16}.tmp").write_text("partial")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    assert other.is_dir() and not list(other.iterdir())


def test_a_cut_published_catalog_is_extracted_again(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    out = tmp_path / "pub"
    first = git(bare, "rev-parse", "refs/tags/v1")
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    records = out / first / "records.jsonl"
    whole = records.read_bytes()
    records.write_bytes(b"")  # cut at a line boundary: zero records, the manifest counts one
    assert main(["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]) == 0
    assert records.read_bytes() == whole


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("field", "index.json: not a valid nightly index: catalogs.0.sha: String should match pattern"),
        ("json", "index.json: not a valid nightly index: the document: Invalid JSON"),
        ("index dir", "cannot read {out}/index.json: Is a directory"),
        ("lock dir", "cannot take the lock {out}/.nightly.lock: Is a directory"),
    ],
)
def test_a_damaged_index_or_lock_is_one_line_naming_what_is_wrong(
    bare: Path, tmp_path: Path, damage: str, message: str
) -> None:
    out = tmp_path / "pub"
    out.mkdir()
    if damage == "field":
        (out / "index.json").write_text('{"latest": null, "catalogs": [{"sha": "nope"}]}')
    elif damage == "json":
        (out / "index.json").write_text('{"latest": null, "catalogs": [')
    else:
        (out / ("index.json" if damage == "index dir" else ".nightly.lock")).mkdir()
    cmd = [sys.executable, "-m", "extractor", "nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("extractor: error: ") and message.format(out=out) in result.stderr
    if damage in ("field", "json"):
        assert "restore it, or move it away to start a new index" in result.stderr


def test_a_night_that_fails_leaves_what_was_published_as_it_was(bare: Path, tmp_path: Path) -> None:
    """Inputs that would make a night fail after it wrote are refused first (fresh analysis that cannot be
    read, a site folder that cannot be one), and a night that fails anyway (a published history that
    cannot be read back) removes the folder it made for its catalog: a failed night leaves nothing the
    index does not name, and a root it made, nothing at all (not even its lock)."""
    from extractor.cli.main import main as run

    out = tmp_path / "pub"
    bad = tmp_path / "analysis.jsonl"
    bad.write_text("not json\n")
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert run([*base, "--analysis", str(bad)]) == 2
    assert not out.exists()
    assert run([*base, "--path", "nowhere"]) == 2
    assert not out.exists()

    assert run(base) == 0
    first = snapshot(out)
    move(bare, "v2")
    (tmp_path / "afile").write_text("mine")
    assert run([*base, "--site", str(tmp_path / "afile")]) == 2
    assert run([*base, "--analysis", str(bad)]) == 2
    (out / "history.jsonl").write_text("cut")
    assert run(base) == 2
    (out / "history.jsonl").unlink()
    assert snapshot(out).keys() == first.keys() - {"history.jsonl"}

    # A failure the checks cannot see coming (here: the analysis of the last night, damaged) comes after
    # the catalog is written: its folder goes.
    (out / "history.jsonl").write_bytes(b"")
    last = git(bare, "rev-parse", "refs/tags/v1")
    (out / last / "analysis.jsonl").write_text("not json\n")
    before = set(snapshot(out))
    assert run(base) == 2
    assert set(snapshot(out)) == before


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """Make `folder` one nobody can write into: by its mode, or as root (whom a mode does not stop) by the
    immutable attribute; skip where neither holds."""
    folder.mkdir(exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("as root only an immutable folder cannot be written, and chattr +i does not work here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def lsnapshot(output: Path) -> dict[str, int]:
    """What `snapshot` says, symlinks taken as themselves (one round a loop has no target to stat)."""
    return {str(p.relative_to(output)): p.lstat().st_mtime_ns for p in sorted(output.rglob("*"))}


@pytest.mark.parametrize("target", ["a folder of the user's", "a link to a folder of the user's", "a read-only folder"])
def test_a_site_that_cannot_go_where_asked_is_refused_before_the_night_publishes(
    bare: Path, tmp_path: Path, target: str
) -> None:
    """`--site` is checked as the site step checks it, before anything is published: a night that would fail
    there leaves the published state (index, history, catalogs) as it was, and the user's folder too."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    readonly = tmp_path / "readonly"
    if target == "a folder of the user's":
        site, message = mine, f"{mine} exists and is not a site built by extractor: not replacing it (name another "
        message += "folder with --site)"
    elif target == "a link to a folder of the user's":
        site = tmp_path / "link"
        site.symlink_to(mine)
        message = f"{site} points at {mine.resolve()}, which is not a site built by extractor (name another "
        message += "folder with --site)"
    else:
        site = readonly / "site"
        message = f"cannot write {site}: {readonly} is not writable (name one that can be written with --site)"
    move(bare, "v2")
    before = snapshot(out)
    with read_only(readonly) if target == "a read-only folder" else contextlib.nullcontext():
        result = cli(*base, "--site", str(site))
    assert (result.returncode, result.stderr) == (2, f"extractor: error: {message}\n")
    assert snapshot(out) == before
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def test_an_up_to_date_root_that_cannot_be_written_is_still_nothing_to_do(bare: Path, tmp_path: Path) -> None:
    """The site target's checks come after the no-op test: a published copy that cannot be written (a
    read-only mount) whose index and site are current needs no write, so it is not refused."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet", "--site"]
    assert main(base) == 0
    with read_only(out):
        assert main(base) == 0


@pytest.mark.parametrize(
    ("name", "to"),
    [
        ("index.json", "index.json"),
        ("index.json", "gone.json"),
        ("history.json", "history.json"),
        ("history.jsonl", "history.jsonl"),
    ],
)
def test_a_published_file_that_leads_nowhere_is_one_error_line_not_a_fresh_start(
    bare: Path, tmp_path: Path, name: str, to: str
) -> None:
    """A symlink that leads nowhere (round a loop, or to nothing) where the index or the rolling history is
    read back is refused as a folder or a FIFO there is, not taken for no index (or history) yet."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    (out / name).unlink()
    (out / name).symlink_to(to)
    move(bare, "v2")
    before = lsnapshot(out)
    result = cli(*base)
    assert (result.returncode, result.stderr) == (
        2,
        f"extractor: error: cannot read {out / name}: it is a symlink to {to}, which leads nowhere\n",
    )
    assert lsnapshot(out) == before


@pytest.mark.parametrize("damage", ["a cut diff.json", "an analysis.jsonl that leads nowhere"])
def test_fresh_analysis_merged_into_a_published_catalog_says_what_beside_it_cannot_be_read(
    bare: Path, tmp_path: Path, damage: str
) -> None:
    """Merging analysis into the catalog published already reads its diff.json (the reworded records) and
    its analysis.jsonl back: one that cannot be read is one line naming it, never read as none."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    second = move(bare, "v2")
    assert main(base) == 0
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("")
    if damage == "a cut diff.json":
        path = out / second / "diff.json"
        path.write_text('{"old": ')
        message = f"{path}: not a valid diff: the document: Invalid JSON"
    else:
        path = out / second / "analysis.jsonl"
        path.unlink()
        path.symlink_to("analysis.jsonl")
        message = f"cannot read {path}: it is a symlink to analysis.jsonl, which leads nowhere"
    result = cli(*base, "--analysis", str(fresh))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"extractor: error: {message}")


NIGHT = ("history.jsonl", "history.json", "index.json")  # what a night publishes beside its catalog, in order


@pytest.mark.parametrize("failing", NIGHT)
def test_a_night_that_cannot_write_its_index_or_history_changes_neither(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """The index and the rolling history are one write: a full disk at any of their files leaves all three
    as the night before wrote them, and nothing the index does not name (written one after the other, the
    history moved on while the index still named the night before)."""
    import errno

    from extractor.util import atomic

    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    before = {name: (out / name).read_bytes() for name in NIGHT}
    names = sorted(p.name for p in out.iterdir())
    second = move(bare, "v2")
    create = atomic._create

    def full(temporary: Path) -> object:
        if temporary.name.startswith(f".{failing}."):
            raise OSError(errno.ENOSPC, "No space left on device", str(temporary))
        return create(temporary)

    monkeypatch.setattr(atomic, "_create", full)
    result = cli(*base)
    assert (result.returncode, result.stderr) == (
        2,
        f"extractor: error: cannot write {out / failing}: No space left on device\n",
    )
    assert {name: (out / name).read_bytes() for name in NIGHT} == before
    assert sorted(p.name for p in out.iterdir()) == names

    monkeypatch.undo()
    assert main(base) == 0
    assert index(out)["latest"] == second
    assert json.loads((out / "history.json").read_text())["revisions"][-1]["sha"] == second


_STOPPED_AMID_THE_RENAMES = """
import os, signal, sys
from extractor.util import atomic

rename = os.replace

def stopped(source, target):
    rename(source, target)
    if str(target).endswith("history.jsonl"):
        os.kill(os.getpid(), signal.SIGTERM)

atomic.os.replace = stopped
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli.main import run_and_exit
run_and_exit()
"""


def test_a_stop_signal_while_the_history_is_renamed_lands_after_the_index(bare: Path, tmp_path: Path) -> None:
    """SIGTERM once the history is replaced, before the index is: the index and the history are renamed
    with stop signals held, so the run ends interrupted with both naming the new catalog (written one after
    the other, the index still named the night before, and history.json did not count history.jsonl)."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    second = move(bare, "v2")
    command = [sys.executable, "-c", _STOPPED_AMID_THE_RENAMES, *base]
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "EXTRACTOR_DEBUG": ""})
    assert (result.returncode, result.stderr) == (128 + signal.SIGTERM, "extractor: interrupted\n")
    assert index(out)["latest"] == second
    history = json.loads((out / "history.json").read_text())
    assert history["revisions"][-1]["sha"] == second
    assert history["lineages"] == len((out / "history.jsonl").read_bytes().splitlines())


def test_a_kill_between_the_renames_of_a_nights_commit_leaves_it_whole(bare: Path, tmp_path: Path) -> None:
    """SIGKILL (nothing holds it back) after a night's history.jsonl is renamed into place and before its
    history.json and index are: the journal the commit wrote first has the next run (or any reader)
    complete it, and the root ends byte for byte as a night never interrupted leaves it; the history is never
    restarted nor unreadable."""
    from tests.conftest import run_cli

    env = {"SOURCE_DATE_EPOCH": "1767225600"}
    out, reference = tmp_path / "pub", tmp_path / "reference"

    def night(root: Path, **more: str) -> int:
        return run_cli("nightly", "--repo", str(bare), "--output", str(root), "--quiet", env={**env, **more}).returncode

    assert night(out) == night(reference) == 0
    move(bare, "v2")
    assert night(out, EXTRACTOR_KILL_AT="renamed:history.jsonl") == -signal.SIGKILL
    assert list(out.glob(".extractor-commit-*.json")), "the commit's journal is left by the kill"
    # A reader completes it: what explain reads of the history is the new night's, whole.
    assert json.loads((out / "history.json").read_bytes())["revisions"] and night(out) == 0
    assert night(reference) == 0
    assert not list(out.glob(".extractor-commit-*.json"))
    for name in ("history.jsonl", "history.json", "index.json"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    assert len(json.loads((out / "history.json").read_bytes())["revisions"]) == 2


def test_fresh_analysis_merges_field_by_field_and_a_stale_entry_never_replaces_a_current_one(
    bare: Path, tmp_path: Path
) -> None:
    """`--analysis` with an entry written for an older wording of a record keeps the analysis of its current
    wording; an entry with some fields only (`{id, tags}`) sets those and keeps the rest."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    sha = git(bare, "rev-parse", "refs/heads/main")
    (line,) = [json.loads(text) for text in (out / sha / "records.jsonl").read_text().splitlines()]
    record = line["record"]
    good = {"id": record["id"], "errorMessage": record["errorMessage"], "documentation": "The good one.",
            "solutions": ["Pass a smaller n."]}  # fmt: skip
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text(json.dumps(good) + "\n")
    assert main([*base, "--analysis", str(fresh)]) == 0
    stale = {"id": record["id"], "errorMessage": "an older wording of it", "documentation": "Stale."}
    fresh.write_text(json.dumps(stale) + "\n")
    assert main([*base, "--analysis", str(fresh)]) == 0
    (kept,) = [json.loads(text) for text in (out / sha / "analysis.jsonl").read_text().splitlines()]
    assert kept["documentation"] == "The good one." and kept["solutions"] == ["Pass a smaller n."]
    fresh.write_text(json.dumps({"id": record["id"], "tags": ["config"]}) + "\n")
    assert main([*base, "--analysis", str(fresh)]) == 0
    (kept,) = [json.loads(text) for text in (out / sha / "analysis.jsonl").read_text().splitlines()]
    assert kept["tags"] == ["config"] and kept["documentation"] == "The good one."
    assert kept["solutions"] == ["Pass a smaller n."] and kept["errorMessage"] == record["errorMessage"]


def test_a_second_scope_is_refused_a_root_that_publishes_another(bare: Path, tmp_path: Path) -> None:
    """Two scopes in one root would share its index.json and history.jsonl, each night wiping the other's:
    the second is refused, naming both, and nothing of the first changes."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    before = snapshot(out)
    move(bare, "v2")
    other = cli(*base, "--exception", "*", "--path", "vllm")
    assert other.returncode == 2
    assert other.stderr.startswith(
        f"extractor: error: {out} publishes the nightly of another scope (--path vllm/config"
    )
    assert "into a root of its own with another --output" in other.stderr
    assert snapshot(out) == before


def test_a_catalog_extracted_again_in_place_with_other_ids_restarts_the_history_on_it(
    bare: Path, tmp_path: Path
) -> None:
    """After an upgrade, the night re-extracts the same commit in place; where its ids are not those the
    rolling history holds for that night, the history starts again on it (never explain's lookups by the
    catalog's ids missing from it)."""
    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet"]
    assert main(base) == 0
    sha = git(bare, "rev-parse", "refs/heads/main")
    (record_id,) = [json.loads(text)["record"]["id"] for text in (out / sha / "records.jsonl").read_text().splitlines()]
    history = out / "history.jsonl"
    history.write_text(history.read_text().replace(record_id, "0123456789abcdef"))  # (as an older tool's ids)
    manifest = json.loads((out / sha / "manifest.json").read_text())
    (out / sha / "manifest.json").write_text(json.dumps({**manifest, "extractorVersion": "0.0.1"}))
    assert main(base) == 0  # (made by another version: extracted again, in place)
    ids = {json.loads(text)["id"] for text in history.read_text().splitlines()}
    assert ids == {record_id}


def test_a_killed_nights_complete_catalog_goes_once_a_later_night_does_not_index_it(
    git_repo: GitRepo, bare: Path, tmp_path: Path
) -> None:
    """A night killed once its catalog's manifest is written leaves a complete folder no index names; the
    next night that completes (here with --keep 3, for another commit) removes it, and never a catalog an
    extraction wrote into the root."""
    from tests.conftest import run_cli

    out = tmp_path / "pub"
    base = ["nightly", "--repo", str(bare), "--output", str(out), "--quiet", "--keep", "3"]
    assert run_cli(*base).returncode == 0
    second = move(bare, "v2")
    assert run_cli(*base, env={"EXTRACTOR_KILL_AT": "catalog written"}).returncode == -signal.SIGKILL
    assert (out / second / "manifest.json").is_file()
    git_repo.commit({"vllm/config/a.py": V2 + 'def h():\n    raise ValueError("third check")\n'}, tag="v3")
    git(bare, "fetch", "--quiet", str(git_repo.path), "refs/tags/v3:refs/tags/v3")
    extracted = run_cli("--repo", str(bare), "--sha", "v2", "--output", str(tmp_path / "mine"), "--quiet")
    assert extracted.returncode == 0
    mine = next((tmp_path / "mine").iterdir())  # (an extraction's catalog, copied into the root by a person)
    shutil.copytree(mine, out / ("f" * 40))
    third = move(bare, "v3")
    assert run_cli(*base).returncode == 0
    assert not (out / second).exists()
    assert (out / third / "manifest.json").is_file() and (out / ("f" * 40) / "manifest.json").is_file()
    assert [entry["sha"] for entry in index(out)["catalogs"]] == [third, git(bare, "rev-parse", "refs/tags/v1")]
