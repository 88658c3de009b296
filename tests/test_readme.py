"""Every shell command of the code blocks of README.md and the guide works as written, in a fresh copy of the repo.

The pages, their blocks, the labels of their commands and the order the blocks run in are tests/guide.py's.
Commands run in one directory holding a copy of the repository (its tracked and untracked files, as a fresh
clone with these edits would), each in its own `bash`: the install line makes `.venv`, and every later command
runs with `.venv/bin` first on PATH, as in the shell the install line activated. Only the package index and a
local repository are reachable: `~/src/vllm` (HOME is a temporary directory) is a clone of the vLLM releases
built from their sdists, with a `main` branch, and git may use no network protocol at all. The user cache,
shared by every command, is a temporary one, seeded with the release sdists already downloaded and the tests'
release repository (hard links: no download, no rebuild).

Each code block is a test of its own, named after its page and its number there (`docs/diff.md#2`), so that
the session's workers share them out: whichever worker needs a block first runs it, after the blocks it
depends on, once per session. The copy is made once per session, by the first worker; a second session of the
same work tree waits until the first one ends.

The install line alone takes about a minute (pip installs some fifty packages: 45 s of CPU), so it is not
run again for what it already made. When the tests run in the checkout's own `.venv` and that is the line's
work (this repository installed editable, with the requirements pyproject.toml asks for now), as it is for
a newcomer who followed the README and for `.ci/run`, which runs the same line, the copy's `.venv` is a link
to it. Otherwise the line runs in the copy and its `.venv` is kept, on purpose, in the repository's
`.test-cache/readme/` (ignored by git), where the copy is made each session: it runs again whenever
pyproject.toml, the line itself or the Python it runs with change. EXTRACTOR_TEST_FRESH_VENV=1 runs it always.

A `pytest` command is only collected (its asserts not rewritten: they do not run): running the suite inside
itself would never end.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import copy_scans, git, release_store
from tests.guide import (
    COMMANDS,
    ROOT,
    Block,
    Command,
    block_dependencies,
    is_install,
    repeats,
    run_order,
)

pytestmark = pytest.mark.release


def _copy_repository(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_symlink():  # as git checks it out: a link (schemas/ is the package's folder)
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).symlink_to(os.readlink(source))
        elif source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


WORK = ROOT / ".test-cache" / "readme"


def _seed_cache(cache: Path, repository: Path, scans: Path) -> None:
    """Hard-link the release sdists already downloaded (with their checked sha256) into a fresh cache, clone
    the tests' release repository there (its objects hard-linked too), and copy the session's scans of the
    whole package (so `--path vllm` over releases reads them)."""
    (cache / "extractor" / "releases").mkdir(parents=True)
    clone = cache / "extractor" / "releases" / "vllm.git"
    git(cache, "clone", "--quiet", "--bare", str(repository), str(clone))
    # Its objects are the release repository's, stored whole: marked as the extractor marks the ones it builds.
    git(clone, "config", "extractor.wholeObjects", git(repository, "config", "extractor.wholeObjects"))
    copy_scans(scans, cache)
    sdists = release_store() / "sdists"
    target = cache / "extractor" / "sdists"
    target.mkdir(parents=True)
    for sidecar in sdists.glob("vllm-*.tar.gz.sha256"):
        archive = sidecar.with_name(sidecar.name.removesuffix(".sha256"))
        if archive.is_file():
            for path in (archive, sidecar):
                try:
                    os.link(path, target / path.name)
                except OSError:
                    shutil.copy2(path, target / path.name)


def _run(command: Command, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    text = command.text
    if re.search(r"(^|\s|/)(python3? -m )?pytest\b", text):
        # Collected, not run: no assertion to rewrite, and no test workers started (-n0): none would run a test.
        text += " --collect-only -q --assert=plain -n0"
    venv = cwd / ".venv" / "bin"
    path = f"{venv}{os.pathsep}{env['PATH']}" if venv.is_dir() else env["PATH"]
    return subprocess.run(
        ["bash", "-c", text],
        cwd=cwd,
        env={**env, "PATH": path},
        capture_output=True,
        text=True,
        timeout=900,
    )


def _venv_stamp(commands: list[Command]) -> str:
    """What the kept `.venv` depends on: pyproject.toml, the install line, the Python that runs it."""
    python = subprocess.run(["python3", "--version"], capture_output=True, text=True).stdout
    parts = [(ROOT / "pyproject.toml").read_text(), python, *(c.text for c in commands if is_install(c))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _fresh_copy(cwd: Path, stamp: str) -> bool:
    """Make `cwd` a fresh copy of the repository, keeping its `.venv` when made for `stamp`; say whether."""
    keep = not os.environ.get("EXTRACTOR_TEST_FRESH_VENV") and (cwd.parent / "venv.stamp").is_file()
    keep = keep and (cwd.parent / "venv.stamp").read_text() == stamp and (cwd / ".venv" / "bin").is_dir()
    if cwd.exists():
        for entry in cwd.iterdir():
            if entry.name == ".venv" and keep:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    cwd.mkdir(parents=True, exist_ok=True)
    _copy_repository(cwd)
    return keep


DEPENDS = block_dependencies(COMMANDS)
REPEATS = repeats(COMMANDS)
# Each block a test, named after its page and number; blocks made only of `needs GitHub` are left out.
BLOCKS = [block for block in run_order(COMMANDS) if any(c.key == block and not c.needs_github for c in COMMANDS)]


@dataclass(frozen=True)
class Workspace:
    """Where the session's commands of the README and the guide run: the copy, its environment, and what each
    block left."""

    cwd: Path
    env: dict[str, str]
    kept: bool  # the install line's `.venv` was kept from an earlier session
    stamp: str
    results: Path

    def run_block(self, block: Block) -> list[str]:
        """Run a block once per session (after the blocks it depends on), and return its failures."""
        done = self.results / f"{block.page.replace('/', '_')}-{block.number}.json"
        with FileLock(str(done) + ".lock"):
            if not done.exists():
                for earlier in DEPENDS[block]:
                    self.run_block(earlier)
                done.write_text(json.dumps(self._failures(block)))
        failures: list[str] = json.loads(done.read_text())
        return failures

    def _failures(self, block: Block) -> list[str]:
        failures = []
        for command in (c for c in COMMANDS if c.key == block and not c.needs_github and c not in REPEATS):
            if is_install(command) and self.kept:
                continue
            result = _run(command, self.cwd, self.env)
            if is_install(command) and result.returncode == 0:
                (WORK / "venv.stamp").write_text(self.stamp)
            if result.returncode != command.status:
                failures.append(
                    f"{command.page}:{command.line}: `{command.text}` exited {result.returncode}, "
                    f"not {command.status}:\n{result.stderr[-1500:]}"
                )
        return failures


def _checkout_venv() -> Path | None:
    """The checkout's `.venv`, if the tests run in it and it is what the install line makes: this repository
    installed editable, with the requirements (and the test extra's) that pyproject.toml lists now."""
    venv = ROOT / ".venv"
    if os.environ.get("EXTRACTOR_TEST_FRESH_VENV") or not venv.is_dir():
        return None
    if Path(sys.prefix).resolve() != venv.resolve():
        return None
    # As installed in the venv (an `extractor.egg-info` left in the checkout by the build is not the install).
    found = importlib.metadata.distributions(name="extractor", path=[sysconfig.get_path("purelib")])
    installed = next(iter(found), None)
    if installed is None:
        return None
    origin = json.loads(installed.read_text("direct_url.json") or "{}")
    if origin.get("url") != ROOT.as_uri() or not origin.get("dir_info", {}).get("editable"):
        return None
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("test", [])]
    return venv if _requirements(installed.requires or []) == _requirements(wanted) else None


def _requirements(lines: list[str]) -> set[tuple[str, str]]:
    """What `pip install -e '.[test]'` installs for these requirements: (name, versions), markers applied."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    chosen = set()
    for line in lines:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": "test"}):
            chosen.add((canonicalize_name(requirement.name), str(requirement.specifier)))
    return chosen


def _prepare(state: Path, vllm_repo: Path, scans: Path) -> bool:
    """Make the session's copy, home and cache; say whether the install line's `.venv` is there already."""
    stamp = _venv_stamp(COMMANDS)
    kept = _fresh_copy(WORK / "repo", stamp)
    if not kept:
        (WORK / "venv.stamp").unlink(missing_ok=True)
        checkout = _checkout_venv()
        if checkout is not None:  # the line's own work, in the checkout: linked, not made again
            (WORK / "repo" / ".venv").symlink_to(checkout, target_is_directory=True)
            kept = True
    shutil.rmtree(state, ignore_errors=True)
    (state / "results").mkdir(parents=True)
    _seed_cache(state / "cache", vllm_repo, scans)
    clone = state / "home" / "src" / "vllm"
    git(state, "clone", "--quiet", str(vllm_repo), str(clone))
    git(clone, "checkout", "--quiet", "-B", "main", "v0.28.0")
    (state / "kept").write_text(json.dumps(kept))
    return kept


@contextlib.contextmanager
def _shared_copy(state: Path, vllm_repo: Path, scans: Path) -> Iterator[bool]:
    """Hold `.test-cache/readme/` for this session: the first worker makes the copy (holding the lock
    alone), then every worker of the session holds it shared until it ends; another session waits."""
    WORK.mkdir(parents=True, exist_ok=True)
    marker = WORK / "session"
    with open(WORK / ".lock", "a") as lock:
        while True:
            fcntl.flock(lock, fcntl.LOCK_SH)
            if marker.is_file() and marker.read_text() == str(state) and (state / "kept").is_file():
                break
            fcntl.flock(lock, fcntl.LOCK_UN)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another worker prepares, or another session holds it
                time.sleep(0.2)
                continue
            if not (marker.is_file() and marker.read_text() == str(state)):
                marker.unlink(missing_ok=True)
                _prepare(state, vllm_repo, scans)
                marker.write_text(str(state))
            fcntl.flock(lock, fcntl.LOCK_UN)
        yield json.loads((state / "kept").read_text())


# What a reader's shell would not have; PYTHONDONTWRITEBYTECODE neither: the copy is compiled once, not per command.
_NOT_A_READERS = ("PYTHONPATH", "VIRTUAL_ENV", "SOURCE_DATE_EPOCH", "XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE")


@pytest.fixture(scope="session")
def readme_workspace(vllm_repo: Path, whole_package_cache: Path) -> Iterator[Workspace]:
    state = Path(os.environ["XDG_CACHE_HOME"]) / "readme"  # the session's: every worker's the same
    with _shared_copy(state, vllm_repo, whole_package_cache) as kept:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in _NOT_A_READERS and not key.startswith("EXTRACTOR_")
        }
        # No GitHub, wherever this runs: git may use no network protocol, only local paths.
        env.update(
            HOME=str(state / "home"), XDG_CACHE_HOME=str(state / "cache"), GIT_ALLOW_PROTOCOL="file", PIP_NO_INPUT="1"
        )
        yield Workspace(WORK / "repo", env, kept, _venv_stamp(COMMANDS), state / "results")


@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_block_works_as_written(readme_workspace: Workspace, block: Block) -> None:
    failures = readme_workspace.run_block(block)
    assert not failures, "\n\n".join(failures)
