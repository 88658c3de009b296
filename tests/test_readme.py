"""Every shell command of the code blocks of README.md and the guide works as written, in a fresh copy of the repo.

The pages are README.md, then the pages under `docs/` its "Read more" section lists, in its order, then any
other page under `docs/` (sorted): the guide's pages and the contributors'. Commands run in one directory
holding a copy of the repository (its tracked and untracked files, as a fresh clone with these edits
would), each in its own `bash`: the install line makes `.venv`, and every later command runs with
`.venv/bin` first on PATH, as in the shell the install line activated. Only the package index and a local
repository are reachable: `~/src/vllm` (HOME is a temporary directory) is a clone of the vLLM releases built
from their sdists, with a `main` branch, and git may use no network protocol at all. The user cache, shared
by every command, is a temporary one, seeded with the release sdists already downloaded and the tests'
release repository (hard links: no download, no rebuild).

Each code block is a test of its own, named after its page and its number there (`docs/diff.md#2`), so
that the session's workers share them out. The blocks of all pages run in one order: the pages' order,
except that a block that clears the cache runs after every other block. The commands of a block run in
order, and a block runs after the earlier blocks it depends on: those that write a file or folder its
commands name (`--output X`, `> X`, an extraction's default `output`), those that read the same catalogs
of a scope given with `--path` or `--exception` (extracted once, then read from the cache), every earlier
block when it clears the cache, and the block that ran a command it repeats. A command an earlier block
ran, word for word, is not run again (a guide page repeating the README's example), unless its own block
ran it already (a deliberate second run) or a block that clears the cache came between. Whichever worker
needs a block first runs it, once per session. The copy is made once per session, by the first worker; a
second session of the same work tree waits until the first one ends.

The install line alone takes about a minute (pip installs some fifty packages: 45 s of CPU), so it is not
run again for what it already made. When the tests run in the checkout's own `.venv` and that is the line's
work (this repository installed editable, with the requirements pyproject.toml asks for now), as it is for
a newcomer who followed the README and for `.ci/run`, which runs the same line, the copy's `.venv` is a link
to it. Otherwise the line runs in the copy and its `.venv` is kept, on purpose, in the repository's
`.test-cache/readme/` (ignored by git), where the copy is made each session: it runs again whenever
pyproject.toml, the line itself or the Python it runs with change. EXTRACTOR_TEST_FRESH_VENV=1 runs it always.

Labels, in a command's trailing comment: `needs GitHub` (or `needs a runtime`) leaves it out, `exits N` expects
exit status N (else 0). A `pytest` command is only collected (its asserts not rewritten: they do not run): running the
suite inside itself would never end.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest
from filelock import FileLock

from tests.conftest import copy_scans, git, release_store

pytestmark = pytest.mark.release

ROOT = Path(__file__).resolve().parents[1]
SHELLS = {"sh", "bash", "shell", "console"}


class Block(NamedTuple):
    """A shell code block: its page and its number there, counted from 0 (shown from 1: `docs/diff.md#2`)."""

    page: str
    number: int

    def __str__(self) -> str:
        return f"{self.page}#{self.number + 1}"


@dataclass(frozen=True)
class Command:
    line: int
    text: str
    comment: str
    block: int = 0  # which shell code block of its page holds it, counted from 0
    page: str = "README.md"

    @property
    def key(self) -> Block:
        return Block(self.page, self.block)

    @property
    def needs_github(self) -> bool:
        """Whether the command is left out: it needs GitHub, or a runtime of vLLM installed (several GB)."""
        comment = self.comment.lower()
        return "needs github" in comment or "needs a runtime" in comment

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


def shell_commands(text: str, page: str = "README.md") -> list[Command]:
    """Every command of a page's shell code blocks, in order (a trailing `\\` joins lines)."""
    commands: list[Command] = []
    language: str | None = None
    pending = ""
    start = 0
    block = -1
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence:
            language = fence[1] if language is None else None
            block += language in SHELLS
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
            commands.append(Command(start, command.strip(), comment, block, page))
    return commands


def test_commands_are_read_with_their_labels_and_blocks() -> None:
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

```console
$ python -m extractor list
output here
```
"""
    assert [(c.line, c.text, c.needs_github, c.status, c.block) for c in shell_commands(text)] == [
        (5, "python -m extractor --release 0.28.0", False, 0, 0),
        (6, "python -m extractor --sha abc", True, 0, 0),
        (7, "python -m extractor diff a b      --format markdown", False, 1, 0),
        (10, 'echo "a # inside quotes"', False, 3, 0),
        (18, "python -m extractor list", False, 0, 1),
    ]


def _words(command: Command) -> list[str]:
    try:
        return shlex.split(command.text)
    except ValueError:
        return command.text.split()


def _first(word: str) -> str:
    """The file or folder of the working directory a word names, if it is a relative path."""
    return (Path(word).parts or (word,))[0]


def _writes(command: Command) -> set[str]:
    """The files and folders of the working directory a command writes: `--output X`, `> X`, and the
    default `output` of an extraction (`python -m extractor` followed by an option, not a subcommand)."""
    words = _words(command)
    written = {after for word, after in itertools.pairwise(words) if word in ("--output", ">", ">>")}
    written |= {word.lstrip(">") for word in words if word.startswith(">") and word.lstrip(">")}
    starts = [i + 3 for i in range(len(words) - 2) if words[i + 1 : i + 3] == ["-m", "extractor"]]
    if any(i < len(words) and words[i].startswith("-") for i in starts) and "--output" not in words:
        written.add("output")
    return {_first(name) for name in written if name not in ("-", "")}


def _names(command: Command) -> set[str]:
    """The first part of every word of a command (of the value, for `NAME=value`): what it may read or write in
    the working directory."""
    words = [re.sub(r"^[A-Za-z_]\w*=", "", word).lstrip(">") for word in _words(command)]
    return {_first(word) for word in words if word} | _writes(command)


def _catalogs(command: Command) -> set[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """The catalogs of a scope given on the command line (`--path`, `--exception`: the whole package's, long
    to extract; the default scope's take a second) a command extracts or reads from the cache: each source
    (`--catalog X`, `--release X`, an argument `release:X`) with the scope options. `match` reads the whole
    package and every class where neither option narrows it (`--path vllm`, `--exception '*'`)."""
    words = _words(command)
    options = {
        option: tuple(after for word, after in itertools.pairwise(words) if word == option)
        for option in ("--path", "--exception")
    }
    if any(word == "extractor" and after == "match" for word, after in itertools.pairwise(words)):
        options = {"--path": options["--path"] or ("vllm",), "--exception": options["--exception"] or ("*",)}
    sources = {after for word, after in itertools.pairwise(words) if word == "--catalog"}
    sources |= {f"release:{after}" for word, after in itertools.pairwise(words) if word == "--release"}
    sources |= {word for word in words if word.startswith("release:")}
    if not any(options.values()):
        return set()
    return {(source, options["--path"], options["--exception"]) for source in sources}


def _clears_cache(command: Command) -> bool:
    return bool(re.search(r"\bcache clear\b", command.text))


def run_order(commands: list[Command]) -> list[Block]:
    """The blocks in the order of their pages and, in a page, of their place, but those that clear the cache
    last: whatever reads the cache must have run before."""
    blocks = list(dict.fromkeys(c.key for c in commands))
    clearing = {c.key for c in commands if _clears_cache(c) and not c.needs_github}
    return [b for b in blocks if b not in clearing] + [b for b in blocks if b in clearing]


def repeats(commands: list[Command]) -> dict[Command, Block]:
    """The commands an earlier block already ran, word for word, each with that block: not run again. A command
    its own block ran before is run again (a second run is the point), and so is anything after a command
    that clears the cache."""
    order = {block: place for place, block in enumerate(run_order(commands))}
    seen: dict[tuple[str, int], Block] = {}
    in_block: set[tuple[Block, tuple[str, int]]] = set()
    found: dict[Command, Block] = {}
    for command in sorted((c for c in commands if not c.needs_github), key=lambda c: (order[c.key], c.line)):
        if _clears_cache(command):
            break
        same = (command.text, command.status)
        if same in seen and (command.key, same) not in in_block:
            found[command] = seen[same]
        seen.setdefault(same, command.key)
        in_block.add((command.key, same))
    return found


def block_dependencies(commands: list[Command]) -> dict[Block, list[Block]]:
    """For each block, the blocks that must have run before it, in run order (see the module's docstring): the
    install line's, those that write what it names or name what it writes, those that read the same catalogs
    of a given scope (so that they are extracted once, and read from the cache after), those that ran a
    command it repeats, and all of them for a block that clears the cache."""
    blocks = run_order(commands)
    of = {b: [c for c in commands if c.key == b and not c.needs_github] for b in blocks}
    install = {c.key for c in commands if _is_install(c)}
    ran = repeats(commands)
    depends: dict[Block, list[Block]] = {}
    for place, later in enumerate(blocks):
        names = set().union(*map(_names, of[later]))
        writes = set().union(*map(_writes, of[later]))
        catalogs = set().union(*map(_catalogs, of[later]))
        clears = any(map(_clears_cache, of[later]))
        repeated = {ran[c] for c in of[later] if c in ran}
        depends[later] = [
            earlier
            for earlier in blocks[:place]
            if earlier in install
            or clears
            or earlier in repeated
            or names & set().union(*map(_writes, of[earlier]))
            or writes & set().union(*map(_names, of[earlier]))
            or catalogs & set().union(*map(_catalogs, of[earlier]))
        ]
    return depends


def test_blocks_wait_for_the_blocks_they_read_from() -> None:
    text = """
```sh
python3 -m venv .venv && . .venv/bin/activate && pip install -e .
```
```sh
python -m extractor --release 0.28.0
python -m extractor history a..b --output hist > history.md
```
```sh
python -m extractor diff a b   # names nothing written before
python -m extractor history 'v*' --output hist-tags
```
```sh
python -m extractor explain --catalog x --history hist
python -m extractor list --catalog output/vllm-project/vllm/release-0.28.0
```
```sh
python -m extractor explain --output - x   # stdout
cat history.md
```
```sh
python -m extractor match --catalog release:0.28.0 --path vllm "text"   # another scope: not block 1's
python -m extractor match --catalog release:0.27.0..0.28.0 --exception '*' "text"
```
```sh
python -m extractor match --catalog release:0.27.0..0.28.0 --exception '*' "t"   # block 5's, from the cache
python -m extractor explain --catalog release:0.27.0..0.28.0 "text"   # the default scope: no wait
```
```sh
python -m extractor match --catalog release:0.27.0..0.28.0 "x"   # match's default: the whole package, block 5's
```
```sh
python -m extractor cache clear catalogs
```
"""
    readme = [Block("README.md", n) for n in range(9)]
    assert block_dependencies(shell_commands(text)) == {
        readme[0]: [],
        readme[1]: readme[:1],
        readme[2]: readme[:1],
        readme[3]: readme[:2],
        readme[4]: readme[:2],
        readme[5]: readme[:1],
        readme[6]: [readme[0], readme[5]],
        readme[7]: [readme[0], readme[5], readme[6]],
        readme[8]: readme[:8],
    }


def test_the_blocks_of_several_pages_run_once_in_one_order() -> None:
    """The pages' blocks in the pages' order, the one that clears the cache last (after the later pages' too);
    a command a later page repeats is run once, by the first block, and the later one waits for it, unless
    the later block runs it twice on purpose; a `NAME=value` word names its value."""
    readme = """
```sh
python -m extractor --release 0.28.0
python -m extractor cache clear catalogs
```
```sh
python -m extractor nightly --repo ~/src/vllm --output published
```
```sh
python -m extractor list --catalog release:0.28.0   # reads nothing a block writes
```
"""
    guide = """
```sh
python -m extractor list --catalog release:0.28.0
python -m extractor nightly --repo ~/src/vllm --output published   # needs GitHub: left out
```
```sh
python -m extractor nightly --repo ~/src/vllm --output published
python -m extractor nightly --repo ~/src/vllm --output published   # again: nothing to do
```
```sh
EXTRACTOR_OUTPUT=published scripts/nightly.sh
```
"""
    commands = shell_commands(readme) + shell_commands(guide, "docs/nightly.md")
    first, nightly, listing = (Block("README.md", n) for n in range(3))
    page = [Block("docs/nightly.md", n) for n in range(3)]
    assert [str(b) for b in run_order(commands)] == [
        "README.md#2",
        "README.md#3",
        "docs/nightly.md#1",
        "docs/nightly.md#2",
        "docs/nightly.md#3",
        "README.md#1",
    ]
    assert {(c.page, c.line): str(b) for c, b in repeats(commands).items()} == {
        ("docs/nightly.md", 3): "README.md#3",  # the same list
        ("docs/nightly.md", 7): "README.md#2",  # the same night, the README's; the second is run
    }
    assert block_dependencies(commands) == {
        nightly: [],
        listing: [],
        page[0]: [listing],
        page[1]: [nightly],
        page[2]: [nightly, page[1]],
        first: [nightly, listing, *page],
    }


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


def guide_pages(root: Path) -> list[str]:
    """README.md, then the pages under `docs/` that its "Read more" section lists, in its order (those that
    exist), then every other page under `docs/`, sorted: paths relative to `root`."""
    contents = (root / "README.md").read_text().partition("\n## Read more\n")[2]
    listed = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)]*)?\)", contents)
    every = sorted(path.relative_to(root).as_posix() for path in (root / "docs").rglob("*.md"))
    return list(dict.fromkeys(["README.md", *(page for page in listed if page in every), *every]))


PAGES = guide_pages(ROOT)
COMMANDS = [command for page in PAGES for command in shell_commands((ROOT / page).read_text(), page)]
DEPENDS = block_dependencies(COMMANDS)
REPEATS = repeats(COMMANDS)
# Each block a test, named after its page and number; blocks made only of `needs GitHub` are left out.
BLOCKS = [block for block in run_order(COMMANDS) if any(c.key == block and not c.needs_github for c in COMMANDS)]


def test_the_readme_has_its_commands() -> None:
    readme = [c for c in COMMANDS if c.page == "README.md"]
    assert len(readme) >= 10 and sum(map(_is_install, COMMANDS)) == sum(map(_is_install, readme)) == 1
    assert sum(not c.needs_github for c in readme) >= 8


def test_every_page_of_the_guide_is_read_in_order() -> None:
    """README.md first, then the guide's pages as the README's "Read more" lists them, then any page it does not."""
    assert PAGES[0] == "README.md" and sorted(PAGES[1:]) == sorted(
        path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md")
    )
    assert PAGES.index("docs/extract.md") < PAGES.index("docs/diff.md") < PAGES.index("docs/contributing/testing.md")
    assert {c.page for c in COMMANDS} >= {"README.md", "docs/extract.md", "docs/troubleshooting.md"}


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
            if _is_install(command) and self.kept:
                continue
            result = _run(command, self.cwd, self.env)
            if _is_install(command) and result.returncode == 0:
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


def test_the_guides_examples_write_where_git_status_stays_clean() -> None:
    """What the README's and the guide's commands write (`--output X`, `> X`) goes under output/ (ignored by
    git), to standard output, or outside the clone: following them leaves `git status` clean."""
    written: list[tuple[str, str]] = []
    for command in COMMANDS:
        for target in re.findall(r"(?:--output|--output-dir)[ =](\S+)|(?<![\d&2])>\s*(\S+)", command.text):
            path = next(part for part in target if part)
            if path not in ("-", "/dev/null") and not path.startswith(("output/", "/", "~", "$")):
                written.append((f"{command.page}:{command.line}", path))
    assert written == []
