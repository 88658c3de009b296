"""The package's import graph, read with `ast`: no cycle, and every import goes down the declared layers; and
its names: each public class and function is defined in one module.

Every import of a module of the package counts, wherever it is written: at the top, inside a function
(an import delayed for speed is still a dependency) and under `if TYPE_CHECKING:` (a type-only import
makes no cycle at run time, but it still ties a module to another's names: a reader and mypy must load
both, and a type the lower module needs belongs in the lower module). So does `from extractor import x`
where x is a module.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "extractor"

# The stages, lowest first: a module may import modules of its own stage's earlier layers and of earlier
# stages, never of a later stage. `""` is the package's own top (its errors and version, below everything;
# its API and entry point, above everything). Modules of one layer are peers that know nothing of each other.
# A new module must be given its place here.
STAGES: list[tuple[str, list[tuple[str, ...]]]] = [
    ("", [("_version", "errors")]),
    ("util", [("suggest", "markdown"), ("lifecycle",), ("progress", "atomic")]),  # the process; its stderr; files
    (
        "model",  # the scan's values without pydantic (a worker scans without it), the published models
        [("kinds",), ("scanned",), ("records", "manifest"), ("schema",)],
    ),
    (
        "repo",  # the user cache's folders; git/ (every git call of the package); release sdists
        [
            ("housekeeping",),  # the user cache directory and what it holds
            ("git.run",),  # git run, what it said when it failed, names as it gives them
            ("git.clone", "git.write"),  # a repository opened (a URL's clone cached); the release repository written
            ("git.commit",),  # a revision resolved once
            ("git.blobs", "git.history"),  # a commit's files listed and read; tags, logs, ancestry
            ("release",),  # release sdists -> the release repository
        ],
    ),
    (
        "scanning",  # what the walk uses; a message -> its template (template/); the walk; pieces; the scan API
        [
            ("source", "chains", "slugs", "resolve", "facts"),
            ("template.pattern",),  # a template's parts laid out as message, regex and placeholders
            ("template.reading",),  # what both readings share
            ("template.quick", "template.cst"),  # the quick reading; libcst's, for what it leaves
            ("template.argument",),  # one argument: the quick reading, else libcst's
            ("template.builtins",),  # what the builtin exceptions print
            ("template.message",),  # a raise's template
            ("walk",),
            ("pieces",),
            ("scan",),
        ],
    ),
    (
        "pipeline",  # lines, options and worker processes; the cache; where results come from; the run
        [("lines", "options", "workers"), ("cache",), ("fields", "scheduler", "write"), ("extract",)],
    ),
    ("catalog", [("spec",), ("load",), ("published",)]),  # what names catalogs; a catalog from anywhere; a nightly root
    (
        "query",  # what is read from catalogs; match/: what placeholders print and who else prints what (kinds,
        # background), a paste's class, the templates, a paste made plain, the
        # templates' programs, where they stand in a paste (locate), what a match is worth (score), the finder,
        # answers, matcher, index;
        # history/: revisions, their checks, lineages, the written folder
        [
            ("match.kinds", "match.background"),
            ("similarity", "match.normalize", "match.pattern", "match.paste", "analysis", "listing"),
            ("match.programs", "reproductions"),
            ("match.locate",),
            ("match.score",),
            ("match.find", "match.prefilter"),
            ("match.answer",),
            ("match.matcher",),
            ("rewording", "match.index"),
            ("diff",),
            ("history.revisions", "history.checks", "history.changelog", "explain"),
            ("history.lineage",),
            ("history.store",),
        ],
    ),
    # A catalog's text read as data, programs built as nodes; the runtime's search and its child process (standard
    # library only) and its probe of the serve path, the runtime; a record's trigger and fix;
    # running them.
    (
        "reproduce",
        [
            ("programs", "definitions"),
            ("reads",),  # validationCode: what a check reads (a local by its definition), a record's check, filled
            ("validation",),
            ("filled",),
            # the search (explore): tiny models, the raise's source, values; its target; choices; kinds of trigger
            ("explore_models", "explore_source", "explore_values"),
            ("explore_target",),
            ("explore_choices",),
            ("explore_kinds",),
            ("explore_search",),
            ("explore", "serving"),
            ("probing",),
            ("child", "runtime", "triggers"),
            ("lifting",),
            ("verify",),
            ("user_fix",),
        ],
    ),
    (
        "publish",  # the site's inputs, its highlighting, its pages and build; the nightly job that publishes
        [("site.lexer", "site.inputs"), ("site.highlight",), ("site.pages",), ("site.build",), ("nightly",)],
    ),
    (
        "cli",  # what the parsers share; each command (found by name, imported when used); the process
        [
            ("options",),
            # every module of cli/commands/, by rule (a new command is a file there, and needs no line here)
            ("extract", *(f"commands.{path.stem}" for path in (PACKAGE / "cli" / "commands").glob("[!_]*.py"))),
            ("main",),
        ],
    ),
    ("", [("__main__", "__init__")]),
]


def _layers(stages: Sequence[tuple[str, list[tuple[str, ...]]]] = STAGES) -> list[tuple[str, ...]]:
    """Every module's dotted name (below `extractor.`), layer by layer, lowest first."""
    return [
        tuple(f"{stage}.{name}" if stage and name != stage else name for name in layer)
        for stage, layers in stages
        for layer in layers
    ]


def _modules(package: Path) -> list[str]:
    """The package's modules by dotted name below it; a subpackage's `__init__.py` is the subpackage."""
    found = []
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        if len(parts) > 1 and parts[-1] == "__init__":
            parts = parts[:-1]
        found.append(".".join(parts))
    return sorted(found)


def _subpackages(package: Path) -> list[str]:
    """The package's folders by dotted name below it, a stage's (`query`) and one inside a stage (`query.match`)."""
    return sorted(".".join(path.parent.relative_to(package).parts) for path in package.rglob("*/__init__.py"))


def _file(package: Path, module: str) -> Path:
    path = package.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _imports(path: Path, modules: Iterable[str], module: str = "") -> dict[str, int]:
    """The package's modules that `path` imports anywhere (top, function, TYPE_CHECKING), each with the
    line of its first import: `from extractor.a import b` imports `a.b` where that is a module, else `a`."""
    known = set(modules)
    found: dict[str, int] = {}

    def add(dotted: str, line: int) -> None:
        parts = dotted.split(".")
        if parts[0] != "extractor":
            return
        name = ".".join(parts[1:]) or "__init__"
        while name not in known and "." in name:  # an attribute of a module, not a module
            name = name.rsplit(".", 1)[0]
        if name in known:
            found.setdefault(name, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            for alias in node.names:
                add(f"{node.module}.{alias.name}", node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: a relative import (the package imports by full name)")
    found.pop(module, None)
    return found


def _graph(package: Path) -> dict[str, dict[str, int]]:
    modules = _modules(package)
    return {name: _imports(_file(package, name), modules, name) for name in modules}


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def _backwards(graph: dict[str, dict[str, int]], layers: Sequence[tuple[str, ...]]) -> list[str]:
    """Each import of a module of the same or a later layer, as `a:LINE imports b (layer i -> j)`."""
    layer = {name: position for position, names in enumerate(layers) for name in names}
    return [
        f"{module}:{line} imports {other} (layer {layer[module]} -> {layer[other]})"
        for module, imported in sorted(graph.items())
        for other, line in sorted(imported.items())
        if layer.get(other, -1) >= layer.get(module, -1)  # an unlisted module fails the test above
    ]


def test_every_module_has_one_layer() -> None:
    listed = [name for names in _layers() for name in names]
    assert sorted(set(listed)) == sorted(listed), "a module listed twice"
    assert sorted([*listed, *_subpackages(PACKAGE)]) == _modules(PACKAGE), (
        "every module has its place in STAGES, and only those"
    )


def test_the_reader_sees_the_subpackages() -> None:
    """The graph is read from every folder of the package, not its top alone: a test that globbed `*.py`
    at the top would pass while checking nothing."""
    graph = _graph(PACKAGE)
    assert {"scanning.walk", "query.diff", "publish.site"} <= set(graph)
    assert "scanning.template.message" in graph["scanning.walk"]
    assert "model.records" in graph["query.diff"]


def test_subpackages_are_folders_that_import_nothing() -> None:
    """A subpackage's `__init__.py` says what lives there and imports nothing: importing one module of a
    stage (or of a folder inside one) never loads the rest of it."""
    graph = _graph(PACKAGE)
    subpackages = _subpackages(PACKAGE)
    assert {
        "util",
        "cli.commands",
        "publish.site",
        "query.match",
        "query.history",
        "repo.git",
        "scanning.template",
    } <= set(subpackages)
    assert {name: graph[name] for name in subpackages if graph[name]} == {}


def test_no_import_cycle() -> None:
    assert _cycles(_graph(PACKAGE)) == []


def test_imports_go_down_the_layers() -> None:
    assert _backwards(_graph(PACKAGE), _layers()) == []


def test_function_level_and_type_checking_imports_count(tmp_path: Path) -> None:
    """The reader sees every kind of import; a cycle hidden inside functions or under TYPE_CHECKING is one."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "s" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from extractor.b import B\n", encoding="utf-8"
    )
    (tmp_path / "b.py").write_text("def f():\n    from extractor import c\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("import extractor.s.a as a\nfrom extractor import nothing\n", encoding="utf-8")
    graph = _graph(tmp_path)
    assert graph == {"s": {}, "s.a": {"b": 3}, "b": {"c": 2}, "c": {"s.a": 1}}
    assert _cycles(graph) == [["b", "c", "s.a"]]
    assert _backwards(graph, [("c",), ("b",), ("s.a",)]) == ["c:1 imports s.a (layer 0 -> 2)"]


# What the command line calls in a command's module (cli/extract.py, cli/commands/*.py) by these names: every
# command defines them, so a module that defines both is a command, and the commands' are one definition.
COMMAND_PROTOCOL = frozenset({"parser", "run"})
COMMANDS = "(the commands)"


def _defined(path: Path) -> set[str]:
    """The public classes and functions a module defines at its top, under an `if`, `try` or `with` there
    too (a name defined under `if TYPE_CHECKING:` is defined all the same)."""
    names: set[str] = set()

    def read(body: Sequence[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                if not node.name.startswith("_"):
                    names.add(node.name)
            elif isinstance(node, ast.If | ast.With):
                read(node.body)
                read(getattr(node, "orelse", []))
            elif isinstance(node, ast.Try | ast.TryStar):
                for block in (node.body, *(handler.body for handler in node.handlers), node.orelse, node.finalbody):
                    read(block)

    read(ast.parse(path.read_text(encoding="utf-8"), str(path)).body)
    return names


def _defined_twice(package: Path) -> dict[str, list[str]]:
    """Each public name more than one module of the package defines, with those modules. The commands'
    `parser` and `run` count as one definition, COMMANDS: a module that is no command and defines either
    gives the name a second meaning."""
    homes: defaultdict[str, set[str]] = defaultdict(set)
    for module in _modules(package):
        names = _defined(_file(package, module))
        command = names >= COMMAND_PROTOCOL
        for name in names:
            homes[name].add(COMMANDS if command and name in COMMAND_PROTOCOL else module)
    return {name: sorted(modules) for name, modules in sorted(homes.items()) if len(modules) > 1}


def test_each_public_name_is_defined_once() -> None:
    """A public class or function has one home: a name read in one module means the same in every other
    (the scan's dataclasses are `Scanned*`, the published models keep the bare names). Only a command's
    `parser` and `run` are defined in every command module."""
    assert _defined_twice(PACKAGE) == {}


def test_a_name_defined_in_two_modules_is_found(tmp_path: Path) -> None:
    """The check reads every folder and what is defined under `if` and `try`; it lets the commands' `parser`
    and `run` be, but not a `run` in a module that is no command."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "s" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    class Site: ...\n"
        "def parser(): ...\ndef run(argv): ...\ndef _helper(): ...\n",
        encoding="utf-8",
    )
    (tmp_path / "b.py").write_text(
        "try:\n    def folder_name(): ...\nexcept ImportError:\n    pass\nclass Site: ...\ndef _helper(): ...\n"
        "def parser(): ...\ndef run(argv): ...\n",
        encoding="utf-8",
    )
    (tmp_path / "c.py").write_text("def folder_name(): ...\n", encoding="utf-8")
    assert _defined_twice(tmp_path) == {"Site": ["b", "s.a"], "folder_name": ["b", "c"]}
    (tmp_path / "d.py").write_text("def run(): ...\n", encoding="utf-8")
    assert _defined_twice(tmp_path)["run"] == [COMMANDS, "d"]


def test_the_cache_key_covers_all_the_code_a_scan_runs() -> None:
    """A per-blob cache entry is keyed by a digest of the subpackages that make it: scan.py and every module
    it imports, directly or not, must live there (an edit anywhere among them must not read old entries)."""
    from extractor.pipeline.cache import PRODUCERS

    graph = _graph(PACKAGE)
    reached, todo = set(), ["scanning.scan"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += graph[module]
    assert sorted(module for module in reached if module.split(".")[0] not in PRODUCERS) == []
    assert {module.split(".")[0] for module in reached} == set(PRODUCERS)


def test_the_code_digest_reads_every_subpackage(tmp_path: Path) -> None:
    """An edit in any folder of the package makes a new whole-package digest (catalogs and match indexes
    are keyed by it), and one in a producer's folder a new scan digest."""
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "extractor"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    script = "from extractor._version import code_digest; print(code_digest(), code_digest(('model', 'scanning')))"

    def digests() -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True
        )
        return result.stdout.split()

    before = digests()
    with (copy / "publish" / "site.py").open("a", encoding="utf-8") as stream:
        stream.write("\n# an edit\n")
    after_site = digests()
    assert after_site[0] != before[0] and after_site[1] == before[1]
    with (copy / "scanning" / "walk.py").open("a", encoding="utf-8") as stream:
        stream.write("\n# an edit\n")
    after_walk = digests()
    assert after_walk[0] != after_site[0] and after_walk[1] != after_site[1]
