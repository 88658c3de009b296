"""The guide's pages as the tests read them: README.md and the pages under `docs/`, their shell code blocks and
the commands in them, with their labels, and the order in which the blocks run and what each waits for.

The pages are README.md, then the pages under `docs/` its "Read more" section lists, in its order, then any
other page under `docs/` (sorted). Each shell code block (```sh, bash, shell, console) is named after its page
and its number there (`docs/diff.md#2`). Labels go in a command's trailing comment: `needs GitHub` (or `needs a
runtime`) leaves it out of the runs, `exits N` expects exit status N (else 0).

The blocks of all pages run in one order: the pages' order, except that a block that clears the cache runs
after every other block. A block runs after the earlier blocks it depends on: those that write a file or folder
its commands name (`--output X`, `> X`, an extraction's default `output`), those that read the same catalogs of
a scope given with `--path` or `--exception` (extracted once, then read from the cache), every earlier block
when it clears the cache, and the block that ran a command it repeats. A command an earlier block ran, word for
word, is not run again (a guide page repeating the README's example), unless its own block ran it already (a
deliberate second run) or a block that clears the cache came between.

tests/test_readme.py runs every block as written, against the package index; tests/test_docs.py parses every
command with the real parser and runs offline those that need no release.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

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
    install = {c.key for c in commands if is_install(c)}
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


def is_install(command: Command) -> bool:
    return "venv .venv" in command.text


def guide_pages(root: Path) -> list[str]:
    """README.md, then the pages under `docs/` that its "Read more" section lists, in its order (those that
    exist), then every other page under `docs/`, sorted: paths relative to `root`."""
    contents = (root / "README.md").read_text().partition("\n## Read more\n")[2]
    listed = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)]*)?\)", contents)
    every = sorted(path.relative_to(root).as_posix() for path in (root / "docs").rglob("*.md"))
    return list(dict.fromkeys(["README.md", *(page for page in listed if page in every), *every]))


PAGES = guide_pages(ROOT)
COMMANDS = [command for page in PAGES for command in shell_commands((ROOT / page).read_text(), page)]
