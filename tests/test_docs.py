"""The docs read against the code: what README.md and the pages under docs/ say of the code is what the code is.

- The tree of docs/contributing/architecture.md names every subpackage and module of extractor/ in its place (a
  module `name.py`, a folder `name/`), and every path it names there exists.
- A name of the code a page writes in backticks is there: a path of the repository (`tests/test_imports.py`,
  `pipeline/cache.py`, a folder of the package `scanning/template/`), or an attribute reached from a module of the
  package (`pipeline/cache.PRODUCERS`, `pieces.skim`, `match.pattern.Row.of`, `LoadedCatalog.lines`). A dotted
  name that starts from nothing of the package is another codebase's (`SchedulerConfig.verify_max_model_len`) and
  is left alone. performance.md is left out: a log names the code as it was.
- A figure a page takes from the code is written `NAME` = value (`MAX_LINE` = 16,384 characters,
  `verify._MEMORY` = 4 GiB): NAME is one constant of the package (qualified by the end of its module's name
  where several modules hold one: `rewording._KEPT`; `ExitCode.INTERRUPTED` for a class's) and holds that
  value. A constant of the package quoted with its value in another form (`KEY` (24)) fails too.
- Every `python -m extractor ...` and `extractor ...` command of the pages' shell blocks parses with the command
  line's own parsers (a usage error only where its label says `exits 2` and quotes it), and the README shows
  every subcommand. Those that need no release sdist, GitHub or runtime run for real, as written, on a small
  repository standing for `~/src/vllm`; tests/test_readme.py (marked `release`) runs them all on vLLM's releases.
- The reader of the guide's pages (tests/guide.py): commands, labels, blocks and their order.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import itertools
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GitRepo
from tests.guide import (
    COMMANDS,
    PAGES,
    ROOT,
    Block,
    Command,
    block_dependencies,
    is_install,
    repeats,
    run_order,
    shell_commands,
)

PACKAGE = ROOT / "extractor"
ARCHITECTURE = "docs/contributing/architecture.md"
LOG = "docs/contributing/performance.md"  # a log: the code it names is the code of its day


# -- the package as the docs name it ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    """A module of the package: its import name, what its top level defines, and the constants it assigns."""

    name: str  # extractor.query.match.find
    starts: frozenset[str]  # the classes it defines and the names it imports: where a dotted name may start
    constants: frozenset[str]  # assigned at the top level, or classes (whose assignments are read through them)


@cache
def package_modules() -> tuple[Module, ...]:
    """Every module of the package but `extractor` itself and `__main__` (which runs the command line)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) == 1 or parts[-1] == "__main__":
            continue
        starts, constants = set(), set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                starts |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ClassDef):
                starts.add(node.name)
                constants.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                constants |= {target.id for target in targets if isinstance(target, ast.Name)}
        found.append(Module(".".join(parts), frozenset(starts), frozenset(constants)))
    return tuple(found)


def _starts(dotted: str, *, constants: bool = False) -> list[tuple[Module, tuple[str, ...]]]:
    """The modules a dotted name may start from, each with the attributes to look up in it: a module whose name
    ends with the name's first parts (`match.pattern.Row.of`: query/match/pattern.py, then Row.of), or one whose
    top level defines or imports its first part as a class or module (`Finder.answer`, `ast.parse`); with
    `constants`, one that assigns it or defines it as a class (`MAX_LINE`, `ExitCode.INTERRUPTED`)."""
    parts = tuple(dotted.split("."))
    starts = []
    for module in package_modules():
        names = tuple(module.name.split("."))
        matched = next((k for k in range(len(parts), 0, -1) if names[-k:] == parts[:k]), 0)
        if matched:
            starts.append((module, parts[matched:]))
        elif parts[0] in (module.constants if constants else module.starts):
            starts.append((module, parts))
    return starts


def _attribute(owner: Any, names: tuple[str, ...]) -> tuple[bool, Any]:
    """Whether the attributes `names` are reached from `owner` (a model's or dataclass's field counts: its
    class has no attribute of that name), and the last one reached."""
    for name in names:
        if hasattr(owner, name):
            owner = getattr(owner, name)
            continue
        fields = {*getattr(owner, "model_fields", ()), *getattr(owner, "__dataclass_fields__", ())}
        for klass in getattr(owner, "__mro__", ()):
            fields |= set(getattr(klass, "__annotations__", {}))
        return name in fields, None  # (a field's own attributes are its type's: not followed)
    return True, owner


def resolved(dotted: str, *, constants: bool = False) -> list[tuple[str, Any]]:
    """What a dotted name of the code reaches: (where, the object) for each way it resolves."""
    found = []
    for module, names in _starts(dotted, constants=constants):
        reached, value = _attribute(importlib.import_module(module.name), names)
        if reached:
            found.append((".".join([module.name, *names]), value))
    return found


def _subpackages() -> set[str]:
    return {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}


def check_path(written: str) -> str | None:
    """Why a path a page names is not there (None when it is, or when it is not the repository's): a path of
    the repository (`tests/...`, `scripts/...`) or of the package (`pipeline/cache.py`, `query/match/`), with
    attributes after a module (`catalog/load.open_catalog`)."""
    first = written.split("/")[0]
    if not re.fullmatch(r"[\w-]+", first):
        return None  # (`./model`, `../x`: relative to somewhere else)
    if first in _subpackages():
        base = PACKAGE
    elif (ROOT / first).is_dir() and first not in ("output", ".venv") and not first.startswith(".test"):
        base = ROOT
    else:
        return None  # vLLM's (`vllm/config/scheduler.py`), the cache's, an output's
    if (base / written).exists():
        return None
    folder, _, last = written.rstrip("/").rpartition("/")
    module, *names = last.split(".")
    source = base / folder / f"{module}.py"
    if not names or not source.is_file() or base is not PACKAGE:
        return f"no {written} in {base.relative_to(ROOT) if base != ROOT else 'the repository'}"
    dotted = ".".join(source.relative_to(ROOT).with_suffix("").parts)
    if not _attribute(importlib.import_module(dotted), tuple(names))[0]:
        return f"{dotted} has no {'.'.join(names)}"
    return None


# -- the pages ---------------------------------------------------------------------------------------------------


def _prose(text: str) -> str:
    """A page without its fenced code blocks (their lines blank, so that line numbers stay)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


@dataclass(frozen=True)
class Span:
    """A code span of a page's prose: `text`, where it stands, and the prose right after it."""

    page: str
    line: int
    text: str
    after: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: `{self.text}`"


def spans(page: str) -> Iterator[Span]:
    text = _prose((ROOT / page).read_text())
    for found in re.finditer(r"(?<!`)(`+)(?!`)([^\n]+?)(?<!`)\1(?!`)", text):  # (`` a `quoted` span ``)
        line = text.count("\n", 0, found.start()) + 1
        yield Span(
            page, line, found[2].strip() if len(found[1]) > 1 else found[2], text[found.end() : found.end() + 40]
        )


# -- architecture.md's tree ------------------------------------------------------------------------------------

_NAMED = re.compile(r"(?<![\w./-])([\w-]+(?:/[\w-]+)*(?:\.(?:py|js|typed)|/))(?![\w/])")


def tree_names(tree: str, root: Path) -> list[tuple[int, str, Path]]:
    """The paths the tree names, each with its line and the folder it stands in: each line one indentation step
    (two spaces) in from its folder's names an entry (`walk.py`, `match/`) and maybe more (`explain.py,
    listing.py`); a line further in goes on with the one before. What a folder's line names after the folder
    is in that folder (`match/  a paste -> its records: normalize.py, ...`); what a file's line names is beside
    it (`walk.py  ...; resolve.py chains.py`)."""
    found: list[tuple[int, str, Path]] = []
    folders: list[tuple[int, Path]] = [(-2, root.parent)]
    here = root.parent  # where the names of the current line and its continuation stand
    entry_indent = -2
    for number, line in enumerate(tree.split("\n"), start=1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        names = _NAMED.findall(line)
        if indent <= entry_indent + 2:  # an entry
            while folders[-1][0] >= indent:
                folders.pop()
            here = folders[-1][1]
            entry_indent = indent
            first = line.split()[0].rstrip(",")
            if first.endswith("/") and names and names[0] == first:
                here = here / first.rstrip("/")
                folders.append((indent, here))
                found.append((number, first, here))
                names = names[1:]
        found += [(number, name, here / name) for name in names]
    return found


def _tree() -> tuple[int, str]:
    """The code block of architecture.md that draws `extractor/`, and the line it starts at."""
    text = (ROOT / ARCHITECTURE).read_text()
    found = re.search(r"^```\n(extractor/\n.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert found, f"{ARCHITECTURE} draws no tree of extractor/ in a code block"
    return text.count("\n", 0, found.start(1)), found[1]


def test_the_tree_reader_places_each_name_in_its_folder(tmp_path: Path) -> None:
    tree = (
        "pkg/\n"
        "  __init__.py     the API\n"
        "  sub/            what lives here: one.py, two.py\n"
        "    three.py      a module; four.py beside it\n"
        "                  and more of three's words, five.py\n"
        "    deep/         six.py (static/seven.js)\n"
        "  eight.py, nine.py  two of the top\n"
    )
    named = [
        (line, name, path.relative_to(tmp_path).as_posix()) for line, name, path in tree_names(tree, tmp_path / "pkg")
    ]
    assert named == [
        (1, "pkg/", "pkg"),
        (2, "__init__.py", "pkg/__init__.py"),
        (3, "sub/", "pkg/sub"),
        (3, "one.py", "pkg/sub/one.py"),
        (3, "two.py", "pkg/sub/two.py"),
        (4, "three.py", "pkg/sub/three.py"),
        (4, "four.py", "pkg/sub/four.py"),
        (5, "five.py", "pkg/sub/five.py"),
        (6, "deep/", "pkg/sub/deep"),
        (6, "six.py", "pkg/sub/deep/six.py"),
        (6, "static/seven.js", "pkg/sub/deep/static/seven.js"),
        (7, "eight.py", "pkg/eight.py"),
        (7, "nine.py", "pkg/nine.py"),
    ]


def test_the_architecture_tree_names_every_module_in_its_place_and_nothing_else() -> None:
    start, tree = _tree()
    named = tree_names(tree, PACKAGE)
    absent = []
    for line, name, path in named:
        there = path
        if name.split("/")[0] in ("tests", "scripts", "docs"):  # (the repository's: `tests/test_api.py`)
            there = ROOT / name
        # A file that is no module may stand anywhere in the package (the site's `static/find.js`, named
        # where `match/` says it is its copy).
        elif not name.endswith((".py", "/")):
            there = next(PACKAGE.rglob(name), path)
        if not there.exists():
            absent.append(f"{ARCHITECTURE}:{start + line}: {name} (no {there.relative_to(ROOT)})")
    assert absent == [], "the tree names what is not there:\n" + "\n".join(absent)
    places = {path for _, _, path in named}
    modules = [path for path in sorted(PACKAGE.rglob("*.py")) if path.name != "__init__.py" or path.parent == PACKAGE]
    packages = [path.parent for path in sorted(PACKAGE.rglob("__init__.py")) if path.parent != PACKAGE]
    unnamed = [path.relative_to(ROOT).as_posix() for path in [*packages, *modules] if path not in places]
    assert unnamed == [], f"{ARCHITECTURE}'s tree does not name these in their place: " + ", ".join(unnamed)


# -- names of the code ---------------------------------------------------------------------------------------

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?")
_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+/?|[\w-]+/")


def code_name_problems(span: Span) -> str | None:
    """Why a code span that names code of the repository names nothing there (None: it does, or it is not the
    repository's)."""
    text = span.text
    if _PATH.fullmatch(text):
        return check_path(text)
    if _DOTTED.fullmatch(text) and not re.search(
        r"\.(?:py|md|json|jsonl|js|html|svg|png|txt|toml|sh|git|lock|sqlite3|gz)$", text
    ):
        dotted = text.removesuffix("()")
        if _starts(dotted) and not resolved(dotted):
            return f"{dotted} names nothing of the package"
    return None


def test_the_pages_name_code_that_is_there() -> None:
    problems = [
        f"{span}: {problem}"
        for page in PAGES
        if page != LOG
        for span in spans(page)
        if (problem := code_name_problems(span)) is not None
    ]
    assert problems == [], "\n".join(problems)


def test_a_name_of_the_code_is_checked_from_where_it_starts() -> None:
    assert code_name_problems(Span("p", 1, "pipeline/cache.PRODUCERS", "")) is None
    assert code_name_problems(Span("p", 1, "query/match/", "")) is None
    assert code_name_problems(Span("p", 1, "match.pattern.Row.of", "")) is None
    assert code_name_problems(Span("p", 1, "LoadedCatalog.lines", "")) is None  # (a model's field)
    assert code_name_problems(Span("p", 1, "SchedulerConfig.verify_max_model_len", "")) is None  # (vLLM's)
    assert code_name_problems(Span("p", 1, "vllm/config/scheduler.py", "")) is None
    assert code_name_problems(Span("p", 1, "pipeline/cache.PRODUCER", "")) == "extractor.pipeline.cache has no PRODUCER"
    assert code_name_problems(Span("p", 1, "pieces.skimmed", "")) == "pieces.skimmed names nothing of the package"
    assert code_name_problems(Span("p", 1, "tests/test_nothing.py", "")) == "no tests/test_nothing.py in the repository"
    assert code_name_problems(Span("p", 1, "scanning/nowhere/", "")) == "no scanning/nowhere/ in extractor"


# -- figures taken from the code ------------------------------------------------------------------------------

_CONSTANT = r"(?:[A-Za-z_]\w*\.)*_?[A-Z][A-Z0-9_]*"
_VALUE = r"(-?\d[\d,]*(?:\.\d+)?)(?:\^(\d+))?(?:\s+(KiB|MiB|GiB)\b)?"
_QUOTED = re.compile(rf"`({_CONSTANT})`\s+=\s+{_VALUE}")  # (a line may end at the `=`)
_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def quoted_value(number: str, power: str | None, unit: str | None) -> float:
    """The number a page writes (`16,384`, `0.85`, `10^9`, `4 GiB`)."""
    value = float(number.replace(",", "")) ** (int(power) if power else 1)
    return value * _UNITS.get(unit or "", 1)


def constant(name: str) -> tuple[str, Any] | str:
    """The one constant of the package `name` names, as (where, value), or why there is none."""
    found = resolved(name, constants=True)
    if not found:
        return f"`{name}` is no constant of the package"
    if len({where for where, _ in found}) > 1:
        return f"`{name}` is ambiguous ({', '.join(sorted(where for where, _ in found))}): qualify it by its module"
    return found[0]


def quoted_constants(page: str) -> Iterator[tuple[int, str, float]]:
    """Each `NAME` = value of a page's prose: its line, NAME, the value written."""
    text = _prose((ROOT / page).read_text())
    for found in _QUOTED.finditer(text):
        yield text.count("\n", 0, found.start()) + 1, found[1], quoted_value(found[2], found[3], found[4])


def constant_problems(page: str) -> list[str]:
    problems = []
    for line, name, value in quoted_constants(page):
        answer = constant(name)
        if isinstance(answer, str):
            problems.append(f"{page}:{line}: {answer}")
        elif isinstance(answer[1], bool) or not isinstance(answer[1], (int, float)):
            problems.append(f"{page}:{line}: `{name}` is {answer[1]!r}, not a number")
        elif float(answer[1]) != value:
            problems.append(f"{page}:{line}: `{name}` = {value:g} in the page, {answer[1]!r} in {answer[0]}")
    for span in spans(page):
        if not re.fullmatch(_CONSTANT, span.text) or re.match(r"\s+=\s", span.after):
            continue
        # A constant of the package with a number beside it in another form: `KEY` (24), `KEY` is 24.
        if re.match(r"\s*(?:\(|is\b|of\b|:|,)?\s*-?\d", span.after):
            answer = constant(span.text)
            if not isinstance(answer, str) and isinstance(answer[1], (int, float)):
                problems.append(f"{span}: a quoted constant is written `{span.text}` = value")
    return problems


def test_every_figure_a_page_takes_from_the_code_is_the_codes() -> None:
    problems = [problem for page in PAGES for problem in constant_problems(page)]
    assert problems == [], "\n".join(problems)


def test_figures_are_read_as_written_and_checked_against_their_constant(tmp_path: Path) -> None:
    assert quoted_value("16,384", None, None) == 16384 and quoted_value("10", "9", None) == 10**9
    assert quoted_value("0.85", None, None) == 0.85 and quoted_value("4", None, "GiB") == 4 << 30
    assert constant("MAX_LINE")[1] == 16_384
    assert constant("rewording._KEPT")[1] == 16
    assert constant("ExitCode.INTERRUPTED")[1] == 130
    assert "ambiguous" in constant("_MEMORY")  # (verify's and lifting's)
    assert constant("NO_SUCH_CONSTANT") == "`NO_SUCH_CONSTANT` is no constant of the package"
    page = tmp_path / "page.md"
    page.write_text(
        "Keys are `KEY` = 24 characters, lines `MAX_LINE` = 16,384 and `NOWHERE` = 3.\n"
        "`KEY` (16) and `MIN_KEY` is 4; `SOURCE_DATE_EPOCH` is 0 (not ours).\n"
        "```sh\nKEY=7 `KEY` = 3\n```\n"
    )
    assert constant_problems(str(page)) == [
        f"{page}:1: `KEY` = 24 in the page, 16 in extractor.query.match.programs.KEY",
        f"{page}:1: `NOWHERE` is no constant of the package",
        f"{page}:2: `KEY`: a quoted constant is written `KEY` = value",
        f"{page}:2: `MIN_KEY`: a quoted constant is written `MIN_KEY` = value",
    ]


# -- the commands --------------------------------------------------------------------------------------------

_CONTROL = {"|", "||", "&&", ";", "&", "(", ")"}
_PYTHONS = (["python", "-m", "extractor"], ["python3", "-m", "extractor"])


def simple_commands(text: str) -> list[list[str]]:
    """A shell line's simple commands (between `|`, `&&`, `;`, ...), each as its words, without its variable
    assignments and redirections (`> FILE`, `2>/dev/null`)."""
    # (A descriptor's number written against its redirection, `2>`, is no word: `--jobs 1 > x` keeps its 1.)
    lexer = shlex.shlex(re.sub(r"(?<!\S)\d+(?=[<>])", "", text), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    out: list[list[str]] = [[]]
    redirected = False
    for word in lexer:
        if redirected:  # a redirection's target
            redirected = False
        elif word in _CONTROL:
            out.append([])
        elif set(word) <= set("<>&"):
            redirected = True
        elif out[-1] or not re.fullmatch(r"[A-Za-z_]\w*=.*", word, re.DOTALL):
            out[-1].append(word)
    return [words for words in out if words]


def invocations(text: str) -> list[list[str]]:
    """The extractor's arguments in each `python -m extractor ...` or `extractor ...` of a shell line."""
    found = []
    for words in simple_commands(text):
        if words[:3] in _PYTHONS:
            found.append(words[3:])
        elif words[0] == "extractor":
            found.append(words[1:])
    return found


def usage_error(argv: list[str]) -> str | None:
    """What the command line says of `argv` before doing anything, when it is a usage error (an unknown command,
    a missing or unknown option, a bad value); None when its parser takes it."""
    from extractor.cli.main import _unknown_command
    from extractor.cli.options import commands

    if not argv:
        return "nothing to do"
    if argv[0] in commands():
        parser, rest = importlib.import_module(f"extractor.cli.commands.{argv[0]}").parser(), argv[1:]
    elif argv[0].startswith("-"):
        from extractor.cli.extract import parser as extraction

        parser, rest = extraction(), argv
    else:
        return str(_unknown_command(argv[0]))
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(rest)
    except SystemExit as exit:  # --help and --version exit 0
        return said.getvalue().strip() or "a usage error" if exit.code else None
    return None


def _quoted(command: Command) -> list[str]:
    """The message a command's label quotes (`exits 2: "unknown command ..."`), in pieces around its `...`."""
    found = re.search(r'\bexits? \d+: "([^"]+)"', command.comment)
    return [piece for piece in re.split(r"\.\.\.|…", found[1]) if piece.strip("() ")] if found else []


def test_commands_are_split_into_the_extractors_arguments() -> None:
    line = (
        "printf 'a | b' | SOURCE_DATE_EPOCH=1 python -m extractor match --catalog x --format text > out.txt && "
        "extractor list 2>/dev/null; python3 -m extractor --sha 'v 1' --jobs 1 > x"
    )
    assert invocations(line) == [
        ["match", "--catalog", "x", "--format", "text"],
        ["list"],
        ["--sha", "v 1", "--jobs", "1"],
    ]
    assert simple_commands("EXTRACTOR_REPO=~/r scripts/nightly.sh") == [["scripts/nightly.sh"]]


def test_a_renamed_option_or_command_is_a_usage_error() -> None:
    assert usage_error(["diff", "a", "b", "--format", "markdown"]) is None
    assert usage_error(["--release", "0.28.0", "--path", "vllm"]) is None
    assert "unrecognized option '--formats'" in (usage_error(["diff", "a", "b", "--formats", "markdown"]) or "")
    assert "invalid choice" in (usage_error(["list", "--catalog", "x", "--format", "xml"]) or "")
    assert usage_error(["difff", "a"]) == "unknown command 'difff'; did you mean 'diff'?"
    assert "required" in (usage_error(["--path", "vllm"]) or "")


def test_every_command_of_the_guide_parses_with_the_command_lines_own_parser() -> None:
    """A renamed option or subcommand fails here, offline, before tests/test_readme.py runs the pages; a usage
    error is right only where the label says `exits 2` and quotes what the command line says."""
    checked, problems = 0, []
    for command in COMMANDS:
        for argv in invocations(command.text):
            checked += 1
            error = usage_error(argv)
            quoted = _quoted(command)
            if error is not None and not (command.status == 2 and quoted and all(q in error for q in quoted)):
                problems.append(f"{command.page}:{command.line}: `{command.text}`: {error}")
    assert problems == [], "\n".join(problems)
    assert checked >= 60, "the guide's commands were not found"


def test_the_readme_shows_every_subcommand() -> None:
    from extractor.cli.options import commands

    shown = {argv[0] for c in COMMANDS if c.page == "README.md" for argv in invocations(c.text) if argv}
    assert sorted(set(commands()) - shown) == []
    assert any(
        argv and argv[0].startswith("-") for c in COMMANDS if c.page == "README.md" for argv in invocations(c.text)
    )


# -- the commands that run offline -----------------------------------------------------------------------------


def _paths(words: list[str]) -> set[str]:
    """The relative paths among a command's words (a `NAME=value`'s value too), as written."""
    found = set()
    for word in words:
        value = re.sub(r"^[A-Za-z_]\w*=", "", word)
        if "/" in value and not value.startswith(("/", "~", "-", "release:")) and "://" not in value:
            found.add(value.rstrip("/"))
    return found


def _written(command: Command) -> set[str]:
    """What a command writes: `--output X`, `> X`, and an extraction's folder under `output/`."""
    words = command.text.split()
    written = {after for word, after in itertools.pairwise(words) if word in (">", ">>", "--output")}
    for argv in invocations(command.text):
        if argv and argv[0].startswith("-") and "--output" not in argv:
            release = argv[argv.index("--release") + 1] if "--release" in argv[:-1] else None
            written.add(f"output/vllm-project/vllm/release-{release}" if release else "output/vllm-project/vllm")
    return {path.rstrip("/") for path in written if path != "-"}


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def offline(commands: list[Command]) -> list[Command]:
    """The commands, in the order they run, that need neither a release sdist, nor GitHub, nor a runtime (their
    label), nor what such a command writes; a usage error needs nothing. The install line and the suite's own
    commands are tests/test_readme.py's."""
    ran = repeats(commands)
    chosen: list[Command] = []
    released: set[str] = set()
    for block in run_order(commands):
        for command in (c for c in commands if c.key == block):
            words = [word for simple in simple_commands(command.text) for word in simple]
            needs = command.needs_github or is_install(command) or "pytest" in words
            if not any(usage_error(argv) for argv in invocations(command.text)):
                needs = needs or any("release:" in w or w == "--release" for w in words)
            reads = _paths(words) - _written(command)
            needs = needs or any(_overlap(path, written) for path in reads for written in released)
            if needs:
                released |= _written(command)
            elif command not in ran:
                chosen.append(command)
    return chosen


def test_the_offline_commands_are_those_that_need_no_release_nor_what_one_wrote() -> None:
    readme = """
```sh
python -m extractor --release 0.28.0
python -m extractor --repo ~/src/vllm --sha v1 --output output/here   # a local clone
python -m extractor difff release:0.27.0   # exits 2: a usage error needs nothing
```
```sh
head -n 1 output/vllm-project/vllm/release-0.28.0/records.jsonl
cat output/here/x.json
python -m extractor site --catalog output/here --output output/site
python -m extractor nightly --branch main   # needs GitHub
```
```sh
python -m extractor --repo ~/src/vllm --sha v1 --output output/here   # a local clone
python -m pytest -m "not release"
```
"""
    commands = shell_commands(readme)
    assert [c.line for c in offline(commands)] == [4, 5, 9, 10]


@pytest.fixture
def small_vllm(tmp_path: Path) -> Path:
    """A clone standing for `~/src/vllm`: three releases tagged on `main`, whose configuration raises the checks
    the guide's examples name (0.28.0 adds one, so that its diff with 0.27.0 has something to say)."""
    repo = GitRepo(tmp_path / "origin")
    repo.commit(
        {"vllm/__init__.py": "", "vllm/config/__init__.py": "", "vllm/config/scheduler.py": SCHEDULER}, tag="v0.27.0"
    )
    repo.commit({"vllm/config/scheduler.py": SCHEDULER + "\n# (a comment)\n"}, tag="v0.27.1")
    repo.commit({"vllm/config/cache.py": CACHE}, tag="v0.28.0")
    clone = tmp_path / "home" / "src" / "vllm"
    subprocess.run(["git", "clone", "--quiet", str(repo.path), str(clone)], check=True, capture_output=True)
    return tmp_path


SCHEDULER = """\
from dataclasses import dataclass


@dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    max_num_seqs: int = 128

    def verify_max_model_len(self, max_model_len: int) -> None:
        if self.max_num_batched_tokens < max_model_len:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than max_model_len "
                f"({max_model_len}). This effectively limits the maximum sequence length to "
                "max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
                "max_num_batched_tokens or decrease max_model_len."
            )
        if self.max_num_seqs > self.max_num_batched_tokens:
            raise ValueError(f"max_num_seqs ({self.max_num_seqs}) exceeds max_num_batched_tokens")
"""
CACHE = """\
from dataclasses import dataclass


@dataclass
class CacheConfig:
    block_size: int = 16

    def __post_init__(self) -> None:
        if self.block_size <= 0:
            raise ValueError(f"block_size ({self.block_size}) must be a positive integer")
"""

# What a reader's shell would not have (as tests/test_readme.py's), and the package index: none may be asked.
_NOT_A_READERS = ("PYTHONPATH", "VIRTUAL_ENV", "SOURCE_DATE_EPOCH", "XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE")


def test_the_guides_commands_that_need_no_release_run_as_written(small_vllm: Path) -> None:
    """Each runs in one working directory (the repository's files reachable there: `scripts/nightly.sh`,
    `schemas`), with HOME holding `~/src/vllm` and a user cache of its own, no package index and no network
    protocol for git; it exits as its label says and prints the message its label quotes."""
    work = small_vllm / "work"
    work.mkdir()
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name != "output":
            (work / entry.name).symlink_to(entry)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _NOT_A_READERS and not key.startswith("EXTRACTOR_")
    }
    env.update(
        HOME=str(small_vllm / "home"),
        XDG_CACHE_HOME=str(small_vllm / "cache"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        GIT_ALLOW_PROTOCOL="file",
        PIP_INDEX_URL="http://127.0.0.1:9/simple/",  # (nothing listens there: a command that asks fails)
        PIP_NO_INPUT="1",
    )
    chosen = offline(COMMANDS)
    failures = []
    for command in chosen:
        ran = subprocess.run(
            ["bash", "-c", command.text], cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        said = [piece for piece in _quoted(command) if piece not in ran.stderr]
        if ran.returncode != command.status or said:
            failures.append(
                f"{command.page}:{command.line}: `{command.text}` exited {ran.returncode}, not {command.status}"
                + (f"; did not say {said}" if said else "")
                + f":\n{ran.stderr[-1500:]}"
            )
    assert failures == [], "\n\n".join(failures)
    assert len(chosen) >= 12 and {c.page for c in chosen} >= {"README.md", "docs/nightly.md", "docs/troubleshooting.md"}


# -- the guide's reader (tests/guide.py) ------------------------------------------------------------------------


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


def test_the_readme_has_its_commands() -> None:
    readme = [c for c in COMMANDS if c.page == "README.md"]
    assert len(readme) >= 10 and sum(map(is_install, COMMANDS)) == sum(map(is_install, readme)) == 1
    assert sum(not c.needs_github for c in readme) >= 8


def test_every_page_of_the_guide_is_read_in_order() -> None:
    """README.md first, then the guide's pages as the README's "Read more" lists them, then any page it does not."""
    assert PAGES[0] == "README.md" and sorted(PAGES[1:]) == sorted(
        path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md")
    )
    assert PAGES.index("docs/extract.md") < PAGES.index("docs/diff.md") < PAGES.index("docs/contributing/testing.md")
    assert {c.page for c in COMMANDS} >= {"README.md", "docs/extract.md", "docs/troubleshooting.md"}


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
