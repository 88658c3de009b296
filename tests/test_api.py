"""The public API of `extractor/__init__.py`: each name it lists is what its docstring says, imported on first
use; and, end to end, what a library caller does with it: extract, scan, open a catalog, diff two, match text,
build a history. The package ships its types (py.typed) and its JSON Schemas as package data."""

from __future__ import annotations

import importlib.resources
import subprocess
import sys
from pathlib import Path

import extractor
from tests.conftest import GitRepo

SOURCE_V1 = """\
class CacheConfig:
    def check(self, block_size):
        if block_size > 64:
            raise ValueError(f"block_size ({block_size}) is too large.")
"""
SOURCE_V2 = (
    SOURCE_V1
    + """\
        if block_size < 1:
            raise ValueError("block_size must be positive.")
"""
)


def test_every_public_name_resolves_to_what_its_module_defines() -> None:
    for name in extractor.__all__:
        value = getattr(extractor, name)
        if name != "__version__":
            assert value.__module__.startswith("extractor."), name
            assert getattr(sys.modules[value.__module__], name) is value, name
    assert sorted(extractor.__all__) == extractor.__all__
    assert set(extractor.__all__) <= set(dir(extractor))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        extractor.nothing_of_the_kind  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert "nothing_of_the_kind" in str(error)
    else:
        raise AssertionError("no AttributeError")


def test_importing_the_package_imports_no_stage() -> None:
    """`import extractor` is light: the parser, pydantic and the stages come with the first name used, and
    `extract` and `scan` are the functions whatever was imported before."""
    script = """
import sys
import extractor
loaded = [name for name in sys.modules if name.startswith(("extractor.", "pydantic", "libcst"))]
assert loaded == ["extractor._version"], loaded
import extractor.pipeline.extract, extractor.scanning.scan
from extractor import extract, scan
assert callable(extract) and extract.__module__ == "extractor.pipeline.extract", extract
assert callable(scan) and scan.__module__ == "extractor.scanning.scan", scan
print("light")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout == "light\n", result.stderr


def test_the_package_ships_its_types_and_schemas() -> None:
    from extractor.model.schema import SCHEMAS, render_schema

    package = importlib.resources.files("extractor")
    assert package.joinpath("py.typed").is_file()
    for name in SCHEMAS:
        assert importlib.resources.files("extractor.model").joinpath("schemas", name).read_bytes() == render_schema(
            name
        )
    # The repository's schemas/ is the package's folder, not a copy of it.
    root = Path(__file__).resolve().parents[1]
    assert (root / "schemas").resolve() == (root / "extractor" / "model" / "schemas").resolve()


def test_extract_open_diff_match_and_follow_a_history(git_repo: GitRepo, tmp_path: Path) -> None:
    """What the module's docstring shows, run: every step through the package's own names."""
    git_repo.commit({"pkg/cache.py": SOURCE_V1}, tag="v1")
    git_repo.commit({"pkg/cache.py": SOURCE_V2}, tag="v2")
    options = extractor.ExtractOptions(paths=("pkg",), jobs=1, cache=False)

    catalog = extractor.extract(repo=str(git_repo.path), revision="v1", options=options)
    assert isinstance(catalog, extractor.Catalog)
    assert [line.record.errorMessage for line in catalog.lines] == ["block_size ({block_size}) is too large."]

    old = extractor.open_catalog("v1", repo=str(git_repo.path), options=options, root=tmp_path)
    new = extractor.open_catalog("v2", repo=str(git_repo.path), options=options, root=tmp_path)
    changes = extractor.diff_catalogs(old, new)
    assert isinstance(changes, extractor.CatalogDiff) and changes.differs
    added = [change.new for change in changes.changes if change.kind == "added"]
    assert [line.record.errorMessage for line in added if line is not None] == ["block_size must be positive."]

    matcher = extractor.Matcher(extractor.templates_of(new.lines))
    result = matcher.match("ValueError: block_size (128) is too large.")
    assert isinstance(result, extractor.MatchResult)
    assert [(match.site.filePath, match.values) for match in result.matches] == [
        ("pkg/cache.py", {"block_size": "128"})
    ]

    revisions = extractor.list_revisions(["v1..v2"], repo=str(git_repo.path))
    history = extractor.build_history(revisions, options=options)
    assert isinstance(history, extractor.History)
    assert [revision.summary["introduced"] for revision in history.revisions] == [1, 1]


def test_scan_and_message_template_read_one_file() -> None:
    scanned = extractor.scan(SOURCE_V2.encode(), options=extractor.ScanOptions(exceptions=("ValueError",)))
    assert [site.errorMessage for site in scanned.sites] == [
        "block_size ({block_size}) is too large.",
        "block_size must be positive.",
    ]


def test_a_built_wheel_holds_the_schemas_templates_and_types(tmp_path: Path) -> None:
    """What the package reads as package data is in what pip installs, not only in a source checkout."""
    import zipfile

    root = Path(__file__).resolve().parents[1]
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("extractor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    from extractor.model.schema import SCHEMAS

    assert {f"extractor/model/schemas/{name}" for name in SCHEMAS} <= names
    assert {"extractor/py.typed", "extractor/publish/site/assets/static/site.css"} <= names
    assert "extractor/publish/site/assets/templates/record.html" in names
