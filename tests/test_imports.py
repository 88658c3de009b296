"""The package's import graph, read with `ast`: no cycle, and every import goes down the declared layers.

Every import of a module of the package counts, wherever it is written: at the top, inside a function
(an import delayed for speed is still a dependency) and under `if TYPE_CHECKING:` (a type-only import
makes no cycle at run time, but it still ties a module to another's names: a reader and mypy must load
both, and a type the lower module needs belongs in the lower module). So does `from extractor import x`
where x is a module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "extractor"

# The stages, lowest first. A module may import only modules of earlier layers: modules of one layer
# are peers that know nothing of each other. A new module must be given its place here.
LAYERS: list[tuple[str, ...]] = [
    ("_version", "errors", "progress", "suggest", "housekeeping", "similarity", "markdown"),  # no package import
    ("kinds", "rewording"),  # the scan's enumerations and pieces, without pydantic; pairing rewordings (numpy)
    ("scanned",),  # the scan's typed values (slotted dataclasses): a worker scans without pydantic
    ("models", "manifest", "lifecycle", "git"),  # the record models, the manifest as data; signals and exit; git
    ("atomic",),  # the one way files are written (a temporary beside the target, then a rename)
    ("source", "chains", "slugs", "resolve", "schema", "facts"),  # what the walk uses
    ("template",),  # a message expression -> its template (libcst)
    ("walk",),  # the AST walk of one parsed file: sites, conditions, message resolution
    ("pieces",),  # incremental rescanning, on top of the walk
    ("scan",),  # the scan API: one blob's bytes -> its result, as the cache stores it
    ("workers",),  # the processes that scan beside the main one (the command line forks them first thing)
    ("records", "cache", "release"),  # catalog lines; per-blob and whole-catalog cache; sdists
    ("options",),  # what an extraction is asked for, known to the command line before the pipeline
    ("scheduler", "write"),  # where each blob's result comes from (the cache, or a scan); writing catalogs
    ("fields",),  # resolving the chains a record reads to config fields (catalog time)
    ("extract",),  # the pipeline: git -> scan -> records -> fields
    ("catalog",),  # a catalog from a revision, a release or a directory
    ("diff", "match", "analysis", "listing", "published"),  # what is read from catalogs
    ("changelog", "matchindex", "history"),
    ("explain", "site_lexer", "site_inputs"),
    ("site",),
    ("nightly",),
    ("cli",),
    ("__main__", "__init__"),
]


def _modules(package: Path) -> list[str]:
    return sorted(path.stem for path in package.glob("*.py"))


def _imports(path: Path, modules: Iterable[str]) -> dict[str, int]:
    """The package's modules that `path` imports anywhere (top, function, TYPE_CHECKING), each with the
    line of its first import."""
    known = set(modules)
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module == "extractor":  # `from extractor import git`: the module, else the package
                names = [f"extractor.{a.name}" if a.name in known else "extractor.__init__" for a in node.names]
            else:
                names = [node.module]
        elif isinstance(node, ast.ImportFrom) and node.level:
            names = [f"extractor.{node.module or '__init__'}"]
        for name in names:
            parts = name.split(".")
            if parts[0] == "extractor" and len(parts) > 1 and parts[1] in known:
                found.setdefault(parts[1], node.lineno)
    found.pop(path.stem, None)
    return found


def _graph(package: Path) -> dict[str, dict[str, int]]:
    modules = _modules(package)
    return {name: _imports(package / f"{name}.py", modules) for name in modules}


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
        f"{module}.py:{line} imports {other} (layer {layer[module]} -> {layer[other]})"
        for module, imported in sorted(graph.items())
        for other, line in sorted(imported.items())
        if layer.get(other, -1) >= layer.get(module, -1)  # an unlisted module fails the test above
    ]


def test_every_module_has_one_layer() -> None:
    listed = [name for names in LAYERS for name in names]
    assert sorted(set(listed)) == sorted(listed), "a module listed twice"
    assert sorted(listed) == _modules(PACKAGE), "every module of extractor/ has its place in LAYERS, and only those"


def test_no_import_cycle() -> None:
    assert _cycles(_graph(PACKAGE)) == []


def test_imports_go_down_the_layers() -> None:
    assert _backwards(_graph(PACKAGE), LAYERS) == []


def test_function_level_and_type_checking_imports_count(tmp_path: Path) -> None:
    """The reader sees every kind of import; a cycle hidden inside functions or under TYPE_CHECKING is one."""
    (tmp_path / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from extractor.b import B\n", encoding="utf-8"
    )
    (tmp_path / "b.py").write_text("def f():\n    from extractor import c\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("import extractor.a as a\nfrom extractor import nothing\n", encoding="utf-8")
    graph = _graph(tmp_path)
    assert graph == {"a": {"b": 3}, "b": {"c": 2}, "c": {"a": 1}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _backwards(graph, [("c",), ("b",), ("a",)]) == ["c.py:1 imports a (layer 0 -> 2)"]


def test_the_cache_key_covers_all_the_code_a_scan_runs() -> None:
    """A per-blob cache entry is keyed by a digest of the modules that make it: scan.py and every module
    it imports, directly or not (an edit anywhere among them must not read old entries)."""
    from extractor.cache import _PRODUCERS

    graph = _graph(PACKAGE)
    reached, todo = set(), ["scan"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += graph[module]
    assert sorted(_PRODUCERS) == sorted(f"{module}.py" for module in reached)


def test_the_packages_extract_and_scan_are_the_functions_whatever_was_imported() -> None:
    """`extract` and `scan` name both a function the package exports and a module of it: once the module
    was imported (the command line does), `from extractor import extract` gave the module."""
    import subprocess
    import sys

    script = """
import extractor.extract, extractor.scan
import extractor
from extractor import extract, scan
from extractor.extract import extract as defined
assert extract is defined and extractor.extract is defined, extract
assert callable(scan) and scan.__module__ == "extractor.scan", scan
print("functions")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout == "functions\n", result.stderr
