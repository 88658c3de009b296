"""README.md: every shell command of its code blocks works as written, in a fresh copy of the repository.

Commands run in order, each in its own `bash`, in one directory holding a copy of the repository (its
tracked and untracked files, as a fresh clone with these edits would): the install line makes `.venv`, and
every later command runs with `.venv/bin` first on PATH, as in the shell the install line activated. Only
the package index and a local repository are reachable: `~/src/vllm` (HOME is a temporary directory) is a
clone of the vLLM releases built from their sdists, with a `main` branch, and git may use no network
protocol at all. The user cache is a temporary one, seeded with the release sdists already downloaded (hard
links: no download, and `cache clear` touches nothing else).

Labels, in a command's trailing comment: `needs GitHub` leaves it out, `exits N` expects exit status N
(else 0). A `pytest` command is only collected: running the suite inside itself would never end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from extractor.git import cache_dir
from tests.conftest import git

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


def _seed_cache(cache: Path) -> None:
    """Hard-link the release sdists already downloaded (with their checked sha256) into a fresh cache."""
    sdists = cache_dir() / "sdists"
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


def test_every_readme_command_works_as_written(vllm_repo: Path, tmp_path: Path) -> None:
    commands = readme_commands((ROOT / "README.md").read_text())
    assert len(commands) >= 10
    home, cwd, cache = tmp_path / "home", tmp_path / "repo", tmp_path / "cache"
    cwd.mkdir()
    _copy_repository(cwd)
    _seed_cache(cache)
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
        result = _run(command, cwd, env)
        ran += 1
        if result.returncode != command.status:
            failures.append(
                f"README.md:{command.line}: `{command.text}` exited {result.returncode}, not {command.status}:\n"
                f"{result.stderr[-1500:]}"
            )
    assert not failures, "\n\n".join(failures)
    assert ran >= 8
