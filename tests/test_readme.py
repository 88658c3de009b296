"""README.md: every shell command of its code blocks works as written, in a fresh copy of the repository.

Commands run in order, each in its own `bash`, in one directory holding a copy of the repository (its
tracked and untracked files, as a fresh clone with these edits would): the install line makes `.venv`, and
every later command runs with `.venv/bin` first on PATH, as in the shell the install line activated. Only
the package index and a local repository are reachable: `~/src/vllm` (HOME is a temporary directory) is a
clone of the vLLM releases built from their sdists, with a `main` branch, and git may use no network
protocol at all. The user cache is a temporary one, seeded with the release sdists already downloaded and
the tests' release repository (hard links: no download, no rebuild, and `cache clear` touches nothing else).

The install line alone takes minutes (pip installs some fifty packages), so its `.venv` is kept, on
purpose, in the repository's `.test-cache/readme/` (ignored by git), where the copy is made each time: it
runs again whenever pyproject.toml, the line itself or the Python it runs with change (EXTRACTOR_TEST_FRESH_VENV=1
runs it always).

Labels, in a command's trailing comment: `needs GitHub` leaves it out, `exits N` expects exit status N
(else 0). A `pytest` command is only collected: running the suite inside itself would never end.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import git, release_store

pytestmark = pytest.mark.release

ROOT = Path(__file__).resolve().parents[1]
SHELLS = {"sh", "bash", "shell", "console"}


@dataclass(frozen=True)
class Command:
    line: int
    text: str
    comment: str

    @property
    def needs_github(self) -> bool:
        return "needs github" in self.comment.lower()

    @property
    def status(self) -> int:
        found = re.search(r"\bexit(?:s| status) (\d+)\b", self.comment)
        return int(found[1]) if found else 0


def _split_comment(line: str) -> tuple[str, str]:
    """Cut a shell line at its comment: a `#` after whitespace, outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip(), line[index + 1 :].strip()
    return line.rstrip(), ""


def readme_commands(text: str) -> list[Command]:
    """Every command of the README's shell code blocks, in order (a trailing `\\` joins lines)."""
    commands: list[Command] = []
    language: str | None = None
    pending = ""
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence:
            language = fence[1] if language is None else None
            continue
        if language not in SHELLS:
            continue
        if language == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command, comment = _split_comment(pending + line)
        pending = ""
        if command.strip():
            commands.append(Command(start, command.strip(), comment))
    return commands


def test_commands_are_read_with_their_labels() -> None:
    text = """
Some prose with `python -m not-a-command`.

```sh
python -m extractor --release 0.28.0   # needs only the package index
python -m extractor --sha abc          # needs GitHub: clones
python -m extractor diff a b \\
    --format markdown                  # exits 1: they differ
# a comment line alone
echo "a # inside quotes" # exit status 3
```

```python
print("not shell")
```
"""
    assert [(c.line, c.text, c.needs_github, c.status) for c in readme_commands(text)] == [
        (5, "python -m extractor --release 0.28.0", False, 0),
        (6, "python -m extractor --sha abc", True, 0),
        (7, "python -m extractor diff a b      --format markdown", False, 1),
        (10, 'echo "a # inside quotes"', False, 3),
    ]


def _copy_repository(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


WORK = ROOT / ".test-cache" / "readme"


def _seed_cache(cache: Path, repository: Path, scans: Path) -> None:
    """Hard-link the release sdists already downloaded (with their checked sha256) into a fresh cache, clone
    the tests' release repository there (its objects hard-linked too), and copy the session's scans of the
    whole package (so `--path vllm --exception '*'` over releases reads them: test_vllm scans cold)."""
    (cache / "extractor" / "releases").mkdir(parents=True)
    git(cache, "clone", "--quiet", "--bare", str(repository), str(cache / "extractor" / "releases" / "vllm.git"))
    source, copy = (
        sqlite3.connect(scans / "extractor" / "scan.sqlite3"),
        sqlite3.connect(cache / "extractor" / "scan.sqlite3"),
    )
    with contextlib.closing(source), contextlib.closing(copy):
        source.backup(copy)
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
        text += " --collect-only -q"
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


def _is_install(command: Command) -> bool:
    return "venv .venv" in command.text


def _venv_stamp(commands: list[Command]) -> str:
    """What the kept `.venv` depends on: pyproject.toml, the install line, the Python that runs it."""
    python = subprocess.run(["python3", "--version"], capture_output=True, text=True).stdout
    parts = [(ROOT / "pyproject.toml").read_text(), python, *(c.text for c in commands if _is_install(c))]
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


def test_every_readme_command_works_as_written(vllm_repo: Path, whole_package_cache: Path, tmp_path: Path) -> None:
    commands = readme_commands((ROOT / "README.md").read_text())
    assert len(commands) >= 10 and sum(map(_is_install, commands)) == 1
    WORK.mkdir(parents=True, exist_ok=True)
    with FileLock(str(WORK / ".lock")):  # two sessions of this work tree take turns
        _run_every_command(commands, vllm_repo, whole_package_cache, tmp_path)


def _run_every_command(commands: list[Command], vllm_repo: Path, scans: Path, tmp_path: Path) -> None:
    home, cwd, cache = tmp_path / "home", WORK / "repo", tmp_path / "cache"
    stamp = _venv_stamp(commands)
    kept = _fresh_copy(cwd, stamp)
    if not kept:
        (WORK / "venv.stamp").unlink(missing_ok=True)
    _seed_cache(cache, vllm_repo, scans)
    clone = home / "src" / "vllm"
    git(tmp_path, "clone", "--quiet", str(vllm_repo), str(clone))
    git(clone, "checkout", "--quiet", "-B", "main", "v0.28.0")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV", "SOURCE_DATE_EPOCH", "XDG_CACHE_HOME")
        and not key.startswith("EXTRACTOR_")
    }
    # No GitHub, wherever this runs: git may use no network protocol, only local paths.
    env.update(HOME=str(home), XDG_CACHE_HOME=str(cache), GIT_ALLOW_PROTOCOL="file", PIP_NO_INPUT="1")
    failures = []
    ran = 0
    for command in commands:
        if command.needs_github:
            continue
        ran += 1
        if _is_install(command) and kept:
            continue
        result = _run(command, cwd, env)
        if _is_install(command) and result.returncode == 0:
            (WORK / "venv.stamp").write_text(stamp)
        if result.returncode != command.status:
            failures.append(
                f"README.md:{command.line}: `{command.text}` exited {result.returncode}, not {command.status}:\n"
                f"{result.stderr[-1500:]}"
            )
    assert not failures, "\n\n".join(failures)
    assert ran >= 8
