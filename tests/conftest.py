"""Shared fixtures: temporary git repositories with tagged commits, and real vLLM releases.

The suite is self-contained: every test session (and every process it starts, xdist workers and the
`python -m extractor` subprocesses alike, through the environment) uses a temporary user cache
(XDG_CACHE_HOME), removed at the end. The one exception is the release store: vLLM's release sdists
and the git repository the tests build from them are kept between sessions, deliberately, in
`EXTRACTOR_TEST_RELEASES` (default: the extractor's own user cache directory): DIR/sdists is where the
extractor keeps the sdists it downloads (shared with `--release`), DIR/test-releases/vllm.git holds
only the releases the tests ask for, DIR/test-wheels the wheels of the real codebases tests/test_rendering.py
reads. The temporary cache reaches the first two through symbolic links.
"""

from __future__ import annotations

import compileall
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
import pytest

if TYPE_CHECKING:
    from extractor.query.match.matcher import Matcher

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m extractor ARGS` in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "extractor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, input: str | bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the command line in this process (`extractor.cli.main.main`, then the cache's last writes, as `python
    -m extractor` does) with stdin, stdout and stderr of its own, in `cwd`, with `env` added to the
    environment; return what `run_cli` would. For the tests that are not about the process itself (its
    signals, its streams as files, what a fresh interpreter does): they save starting Python and importing
    the parser, some 0.7 s of CPU a call."""
    import io

    from extractor.cli.main import main
    from extractor.pipeline.cache import wait_for_writes

    # As a process's: stderr shows what UTF-8 cannot carry (lone surrogates) as escapes, stdout refuses it.
    streams = {
        name: io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)
        for name, errors in (("out", "strict"), ("err", "backslashreplace"))
    }
    data = input.encode() if isinstance(input, str) else input or b""
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.update(env or {})
    try:
        with (
            contextlib.redirect_stdout(streams["out"]),
            contextlib.redirect_stderr(streams["err"]),
            _replaced_stdin(stdin),
        ):
            if cwd is not None:
                os.chdir(cwd)
            try:
                code = main(list(args))
            except SystemExit as exit:  # argparse: --help, or a usage error
                code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 2
            wait_for_writes()
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)

    def text(stream: io.TextIOWrapper) -> str:  # decoded as `text=True` does: universal newlines
        data = stream.buffer.getvalue()  # type: ignore[attr-defined]
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None).read()

    return subprocess.CompletedProcess(["extractor", *args], code, text(streams["out"]), text(streams["err"]))


@contextlib.contextmanager
def _replaced_stdin(stream: object) -> Iterator[None]:
    saved = sys.stdin
    sys.stdin = stream  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdin = saved


def git(cwd: Path, *args: str, input: str | None = None) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return result.stdout.strip()


RELEASES_VARIABLE = "EXTRACTOR_TEST_RELEASES"
_SESSION_CACHE = pytest.StashKey[Path]()


def release_store() -> Path:
    """The folder whose sdists/ and test-releases/ outlive a test session (see the module's docstring)."""
    configured = os.environ.get(RELEASES_VARIABLE)
    return Path(configured) if configured else Path(platformdirs.user_cache_dir("extractor", appauthor=False))


def pytest_configure(config: pytest.Config) -> None:
    """Point the user cache at a temporary folder for the whole session (done once, by the process that
    runs the session: xdist workers and subprocesses inherit the environment).

    Also in every worker: a suite started in the background by a non-interactive shell (`.ci/run &`)
    inherits Ctrl-C ignored, and so would every process it starts; the command line rightly leaves an
    ignored SIGINT ignored, and the tests that deliver Ctrl-C to it would see it finish instead. The same for
    SIGHUP under `nohup`: the tests that hang up on a run would see it go on."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if hasattr(config, "workerinput"):
        return
    # The package's bytecode, written once for the session's processes: it starts a hundred-odd `python -m
    # extractor` and each of its workers imports the package, and under PYTHONDONTWRITEBYTECODE (set on
    # this machine) none would write what it compiled, so each would compile again every module it imports
    # (in a fresh clone, four subprocess-heavy test modules took 64 to 66 s of user CPU so, 55 to 57 s with
    # the bytecode). Up-to-date files are left as they are.
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "extractor", quiet=1)
    store = release_store()  # read before XDG_CACHE_HOME moves
    session = Path(tempfile.mkdtemp(prefix="extractor-tests-"))
    (session / "extractor").mkdir()
    for part, target in (("sdists", store / "sdists"), ("releases", store / "test-releases")):
        target.mkdir(parents=True, exist_ok=True)
        (session / "extractor" / part).symlink_to(target, target_is_directory=True)
    os.environ[RELEASES_VARIABLE] = str(store)
    os.environ["XDG_CACHE_HOME"] = str(session)
    config.stash[_SESSION_CACHE] = session


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest first, so that the session does not end on one of them while the other workers idle
    (xdist's worksteal hands each worker a run of the list, and the idle ones take half of the longest
    queue): the tests of the whole package's scans (the session's setup, made by the first to ask, and the
    README's and the guide's blocks, nightly runs and whole-package checks that read them), then the real
    codebases, then the rest, each group in its own order (a module's tests stay together: its fixtures are
    made once)."""

    def rank(item: pytest.Item) -> int:
        if "whole_package_cache" in getattr(item, "fixturenames", ()):
            return 0
        return 1 if item.get_closest_marker("codebases") else 2

    items.sort(key=rank)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_CACHE, None)
    if session is not None:
        shutil.rmtree(session, ignore_errors=True)


class GitRepo:
    """A real work tree whose commits are made from {path: source} mappings, each optionally tagged."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "--quiet", "--initial-branch=main")

    def commit(
        self, files: Mapping[str, str | bytes | None], *, tag: str | None = None, message: str = "change"
    ) -> str:
        """Write (or, for None, delete) files, commit them, tag the commit, and return its SHA."""
        for name, content in files.items():
            target = self.path / name
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(textwrap.dedent(content))
        git(self.path, "add", "--all")
        git(self.path, "commit", "--quiet", "--allow-empty", "-m", message)
        if tag:
            git(self.path, "tag", tag)
        return git(self.path, "rev-parse", "HEAD")


def matcher_of(folder: Path, files: Mapping[str, str]) -> Matcher:
    """The matcher `match` builds of a package `pkg/` holding `files` (every class), committed to a repository
    made in `folder` and tagged v1."""
    from extractor.pipeline.extract import ExtractOptions, extract
    from extractor.query.match.matcher import Matcher

    repo = GitRepo(folder)
    repo.commit(dict(files), tag="v1")
    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    return Matcher.of_lines(extract(repo=str(repo.path), revision="v1", options=options).lines)


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str], GitRepo]:
    return lambda name: GitRepo(tmp_path / name)


@pytest.fixture(autouse=True)
def _no_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the user cache (clones of URLs) at a fresh directory."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


# The releases the tests read: 0.27.1 too, because the guide's `release:0.27.0..0.28.0` holds it.
RELEASES = ["0.27.0", "0.27.1", "0.28.0", "0.33.0"]


@pytest.fixture(scope="session")
def vllm_repo() -> Path:
    """A bare repository holding vLLM 0.27.0, 0.27.1, 0.28.0 and 0.33.0 (from their sdists), tagged vX.Y.Z."""
    from extractor.repo.release import release_repo

    return release_repo(RELEASES)


WHOLE_PACKAGE = ["0.27.0", "0.27.1", "0.28.0"]
# The ValueErrors of the whole package at the releases the end-to-end tests read: 0.28.0 first, cold, as
# test_vllm's whole-package test checks it against Python's ast.
WHOLE_PACKAGE_VALUE_ERRORS = ["0.28.0", "0.27.0"]


@pytest.fixture(scope="session")
def whole_package_cache(vllm_repo: Path) -> Path:
    """A user cache that scanned the whole vllm/ package for every class at 0.27.0 (cold), then 0.27.1 and
    0.28.0 (each rescanning what changed from pieces of the one before), and for ValueError at 0.28.0 (cold)
    then 0.27.0, built once per session by whichever worker asks first. Beside its `extractor/`,
    `incremental.json` holds the 0.28.0 catalog of every class those rescans made (records.jsonl as
    written, and the manifest as data, SOURCE_DATE_EPOCH fixed), and `cold/` is a user cache holding the
    scans of 0.27.0 alone."""
    import json

    from filelock import FileLock

    from extractor.pipeline.cache import wait_for_writes
    from extractor.pipeline.extract import ExtractOptions, extract
    from tests.rendering import collector_paused

    root = Path(os.environ["XDG_CACHE_HOME"]) / "whole-package"
    done = root / "incremental.json"
    with FileLock(str(root) + ".lock"):
        if done.exists():
            return root
        root.mkdir(exist_ok=True)
        # In this process alone: the other test workers keep the cores busy, and a scanning process beside
        # them would add the cost of its start and of shipping results (about 4 s of CPU in all).
        every = ExtractOptions(paths=("vllm",), exceptions=("*",), jobs=1)
        saved = {key: os.environ.get(key) for key in ("XDG_CACHE_HOME", "SOURCE_DATE_EPOCH")}
        os.environ.update(XDG_CACHE_HOME=str(root), SOURCE_DATE_EPOCH="1767225600")
        try:
            with collector_paused():  # as on the command line (a library caller's collector is left alone)
                for version in WHOLE_PACKAGE:
                    catalog = extract(repo=str(vllm_repo), revision=f"v{version}", options=every)
                    if version == WHOLE_PACKAGE[0]:  # the cold scans, apart: test_vllm's reference reads them
                        wait_for_writes()
                        copy_scans(root, root / "cold")
                for version in WHOLE_PACKAGE_VALUE_ERRORS:
                    extract(
                        repo=str(vllm_repo), revision=f"v{version}", options=ExtractOptions(paths=("vllm",), jobs=1)
                    )
            wait_for_writes()  # every scan stored before the workers copy them
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        records = catalog.encoded.decode()
        done.write_text(json.dumps({"records": records, "manifest": catalog.manifest.model_dump(mode="json")}))
    return root


def copy_scans(scans: Path, cache: Path) -> None:
    """Copy the scans (not the catalogs) of the user cache `scans` into the user cache `cache`."""
    import contextlib
    import sqlite3

    (cache / "extractor").mkdir(parents=True, exist_ok=True)
    source, copy = (
        sqlite3.connect(scans / "extractor" / "scan.sqlite3"),
        sqlite3.connect(cache / "extractor" / "scan.sqlite3"),
    )
    with contextlib.closing(source), contextlib.closing(copy):
        source.backup(copy)


@pytest.fixture
def whole_package_scans(whole_package_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache of this test's own holding the session's scans of the whole package (see
    whole_package_cache): what the test extracts from vllm/ at those releases is read from them, the
    catalogs are made again. The scans themselves are checked by test_vllm: its incremental test (every
    class, against a cold scan) and its whole-package test (the ValueErrors at 0.28.0, against Python's ast)."""
    cache = tmp_path / "whole-package-scans"
    copy_scans(whole_package_cache, cache)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache
