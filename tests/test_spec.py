"""Catalog specs: every form a catalog or a history's revisions are named by, read once into its typed value;
every refusal, in the words every command says it; the `release:` a mistyped prefix was meant as."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from extractor.catalog.spec import (
    OnDisk,
    Release,
    ReleaseRange,
    RepoRange,
    RepoRevision,
    TagGlob,
    each_catalog,
    parse_catalog,
    parse_catalogs,
    parse_revisions,
    release_label,
    release_of,
)
from extractor.errors import ReleaseError, RevisionError
from tests.conftest import GitRepo, cli

URL = "https://example.org/vllm"  # a remote repository: never asked what a bare version is
LISTED = ["0.2.0", "0.6.1", "0.6.1.post1", "0.9.2", "0.10.0"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("release:0.28.0", Release("release:0.28.0", "0.28.0"), id="release"),
        pytest.param("release:v0.28.0", Release("release:v0.28.0", "0.28.0"), id="release as its tag spells it"),
        pytest.param("0.28.0", Release("0.28.0", "0.28.0"), id="bare version"),
        pytest.param("v0.28.0", Release("v0.28.0", "0.28.0"), id="bare tag"),
        pytest.param("main", RepoRevision("main"), id="branch"),
        pytest.param("1234567", RepoRevision("1234567"), id="short sha"),
        pytest.param("HEAD:vllm", RepoRevision("HEAD:vllm"), id="a colon, no mistyped prefix"),
        pytest.param("out/catalog", OnDisk("out/catalog", Path("out/catalog")), id="missing path"),
        pytest.param("records.jsonl", OnDisk("records.jsonl", Path("records.jsonl")), id="missing jsonl"),
        pytest.param("./0.28.0", OnDisk("./0.28.0", Path("0.28.0")), id="a path, though a version"),
    ],
)
def test_one_catalog_named(text: str, expected: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_catalog(text, repo=URL) == expected
    assert parse_catalogs(text, repo=URL) == expected


def test_what_is_on_disk_is_a_catalog_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file, a folder holding records.jsonl, or any folder (a nightly root, or none: said when it is opened);
    a bare version that is a folder here is that folder, not the release."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "records.jsonl").write_text("")
    (tmp_path / "notes").mkdir()
    (tmp_path / "0.27.0").mkdir()
    (tmp_path / "file").write_text("")
    for name in ("catalog", "notes", "0.27.0", "file"):
        assert parse_catalog(name, repo=URL) == OnDisk(name, Path(name))
    assert parse_catalog("~", repo=URL) == OnDisk("~", Path.home())


def test_a_bare_version_is_a_revision_where_the_local_repository_has_it(git_repo: GitRepo) -> None:
    """vLLM tags are v0.28.0: a bare version that a local repository names is its revision; one it does not
    name is the release (a remote repository is not asked)."""
    git_repo.commit({"a.py": ""}, tag="1.2.3")
    local = str(git_repo.path)
    assert parse_catalog("1.2.3", repo=local) == RepoRevision("1.2.3")
    assert parse_catalog("1.2.3", repo=URL) == Release("1.2.3", "1.2.3")
    assert parse_catalog("0.28.0", repo=local) == Release("0.28.0", "0.28.0")
    assert parse_catalog("main", repo=local) == RepoRevision("main")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("release:all", ReleaseRange("release:all"), id="all"),
        pytest.param("release:0.5.0..0.8.0", ReleaseRange("release:0.5.0..0.8.0", Version("0.5.0"), Version("0.8.0"))),
        pytest.param("release:0.9.0..", ReleaseRange("release:0.9.0..", Version("0.9.0")), id="open above"),
        pytest.param("release:..0.6.1", ReleaseRange("release:..0.6.1", None, Version("0.6.1")), id="open below"),
        pytest.param("release:..", ReleaseRange("release:.."), id="open both ways"),
        pytest.param("release: 0.5 .. v0.8 ", ReleaseRange("release: 0.5 .. v0.8 ", Version("0.5"), Version("0.8"))),
    ],
)
def test_a_range_of_releases_where_several_catalogs_are_read(text: str, expected: ReleaseRange) -> None:
    assert parse_catalogs(text, repo=URL) == expected
    assert parse_revisions(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("release:all", LISTED, id="all"),
        pytest.param("release:0.6.1..0.10.0", ["0.6.1", "0.6.1.post1", "0.9.2", "0.10.0"], id="inclusive, by version"),
        pytest.param("release:0.3..0.9.2", ["0.6.1", "0.6.1.post1", "0.9.2"], id="ends need not be releases"),
        pytest.param("release:0.9.0..", ["0.9.2", "0.10.0"], id="open above"),
        pytest.param("release:..0.6.1", ["0.2.0", "0.6.1"], id="open below"),
        pytest.param("release:0.9.2..0.9.2", ["0.9.2"], id="one release"),
    ],
)
def test_the_releases_a_range_names(text: str, expected: list[str]) -> None:
    spec = parse_catalogs(text, repo=URL)
    assert isinstance(spec, ReleaseRange)
    assert spec.releases(listed=list(reversed(LISTED))) == [Release.of(version) for version in expected]


def test_each_catalog_opens_a_range_as_its_releases_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """A range as its releases (from the index), `release:vX.Y.Z` as `release:X.Y.Z`, a catalog named twice
    once; a bare version as written (it says so when it is read), the others as they are."""
    monkeypatch.setattr("extractor.repo.release.release_versions", lambda: LISTED)
    specs = [parse_catalogs(text, repo=URL) for text in ("release:v0.9.2", "release:0.9.0..", "0.2.0", "main")]
    assert each_catalog(specs) == [
        Release.of("0.9.2"),
        Release.of("0.10.0"),
        Release("0.2.0", "0.2.0"),
        RepoRevision("main"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("release:0.28.0", Release("release:0.28.0", "0.28.0"), id="release"),
        pytest.param("v1..v2", RepoRange("v1..v2", "v1", "v2"), id="range"),
        pytest.param("v1..", RepoRange("v1..", "v1", ""), id="range to HEAD"),
        pytest.param("v*", TagGlob("v*"), id="tag glob"),
        pytest.param("v0.[12]*", TagGlob("v0.[12]*"), id="tag glob with a class"),
        pytest.param("0.28.0", RepoRevision("0.28.0"), id="a bare version is a revision"),
        pytest.param("main", RepoRevision("main"), id="revision"),
    ],
)
def test_what_a_history_follows(text: str, expected: object) -> None:
    assert parse_revisions(text) == expected


def test_a_release_reads_as_its_catalog_records_it() -> None:
    release = parse_catalog("release:v0.28.0", repo=URL)
    assert isinstance(release, Release) and not release.bare
    assert release.label == release_label("0.28.0") == "release:0.28.0"
    assert release_of(release.label) == "0.28.0"
    assert release_of("v0.28.0") is None and release_of("main") is None
    assert Release("0.28.0", "0.28.0").bare


ONE_VERSION = "release: needs a version, as in release:0.28.0"
SEVERAL = "release: needs a version, a range A..B or all, as in release:0.5.0..0.8.0"


@pytest.mark.parametrize(
    ("text", "one", "several"),
    [
        pytest.param("release:", ONE_VERSION, SEVERAL, id="no version"),
        pytest.param("release:x", "not a release version: 'x'", "not a release version: 'x'", id="no version at all"),
        pytest.param("release:vx", "not a release version: 'vx'", "not a release version: 'vx'", id="a v, no version"),
        pytest.param(
            "release:al",
            "not a release version: 'al'",
            "not a release version: 'al'; did you mean release:all?",
            id="all mistyped",
        ),
        pytest.param("release:all", "not a release version: 'all'", None, id="all, where one catalog is read"),
        pytest.param("release:0.5..0.8", "not a release version: '0.5..0.8'", None, id="a range, where one is read"),
        pytest.param(
            "release:x..0.5.0",
            "not a release version: 'x..0.5.0'",
            "release:x..0.5.0: 'x' is not a version (try release:0.5.0..0.8.0)",
            id="a bound that is no version",
        ),
        pytest.param(
            "release:0.9.0..0.2.0",
            "not a release version: '0.9.0..0.2.0'",
            "release:0.9.0..0.2.0: the range is backwards (0.9.0 comes after 0.2.0)",
            id="backwards",
        ),
        pytest.param(
            "relase:0.28.0",
            "unknown prefix 'relase:' in relase:0.28.0; did you mean release:0.28.0?",
            "unknown prefix 'relase:' in relase:0.28.0; did you mean release:0.28.0?",
            id="prefix mistyped",
        ),
        pytest.param(
            "Release:all",
            "unknown prefix 'Release:' in Release:all; did you mean release:all?",
            "unknown prefix 'Release:' in Release:all; did you mean release:all?",
            id="prefix capitalized",
        ),
        pytest.param(
            "rel:0.28.0",
            "unknown prefix 'rel:' in rel:0.28.0; did you mean release:0.28.0?",
            "unknown prefix 'rel:' in rel:0.28.0; did you mean release:0.28.0?",
            id="prefix cut short",
        ),
    ],
)
def test_what_is_refused_and_in_which_words(
    text: str, one: str, several: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where one catalog is read a `release:` takes one version; where several are, or a history's, a range
    or all too: what is wrong is said before the package index is asked, in one place for every command."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ReleaseError) as one_error:
        parse_catalog(text, repo=URL)
    assert str(one_error.value) == one
    if several is None:
        assert parse_catalogs(text, repo=URL) == parse_revisions(text)
        return
    with pytest.raises(ReleaseError) as several_error:
        parse_catalogs(text, repo=URL)
    with pytest.raises(ReleaseError) as revisions_error:
        parse_revisions(text)
    assert str(several_error.value) == str(revisions_error.value) == several


def test_a_range_with_no_release_in_it_is_said() -> None:
    spec = parse_catalogs("release:0.3.0..0.5.0", repo=URL)
    assert isinstance(spec, ReleaseRange)
    with pytest.raises(ReleaseError) as error:
        spec.releases(listed=["0.2.0", "0.9.2"])
    assert str(error.value) == "release:0.3.0..0.5.0: no release of vllm on the package index in that range"


def test_a_symmetric_difference_is_no_range_to_follow() -> None:
    with pytest.raises(RevisionError) as error:
        parse_revisions("v1...v2")
    assert str(error.value) == "v1...v2: A...B is no range to follow: say A..B (A, then the commits after it up to B)"


def test_a_mistyped_prefix_is_a_path_where_one_is_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder of that name, or a path (`rel:x/y`), is no mistyped release: it is read, or said missing, as
    any path; a word far from `release` before a colon is no mistake either."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel:0.28.0").mkdir()
    assert parse_catalog("rel:0.28.0", repo=URL) == OnDisk("rel:0.28.0", Path("rel:0.28.0"))
    assert parse_catalog("rel:x/y", repo=URL) == OnDisk("rel:x/y", Path("rel:x/y"))
    assert parse_catalog("origin:0.28.0", repo=URL) == RepoRevision("origin:0.28.0")
    assert parse_revisions("origin:v1") == RepoRevision("origin:v1")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        pytest.param(
            ["list", "--catalog", "relase:0.28.0"],
            "unknown prefix 'relase:' in relase:0.28.0; did you mean release:0.28.0?",
            id="list",
        ),
        pytest.param(
            ["diff", "release:0.28.0", "Release:0.27.0"],
            "unknown prefix 'Release:' in Release:0.27.0; did you mean release:0.27.0?",
            id="diff",
        ),
        pytest.param(["history", "relese:all"], "unknown prefix 'relese:' in relese:all; did you mean release:all?"),
        pytest.param(["match", "--catalog", "release:", "x"], SEVERAL, id="match"),
        pytest.param(
            ["explain", "--catalog", "release:al", "x"], "not a release version: 'al'; did you mean release:all?"
        ),
        pytest.param(["reproduce", "--catalog", "release:"], ONE_VERSION, id="reproduce"),
    ],
)
def test_every_command_refuses_a_spec_in_one_line_before_any_work(
    argv: list[str], said: str, tmp_path: Path, isolated_cache: Path
) -> None:
    """The words the parser says, as one line and exit 2, before anything is cloned, downloaded or written."""
    result = cli(*argv, cwd=tmp_path, env={"PIP_INDEX_URL": "http://127.0.0.1:9/simple"})
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"extractor: error: {said}\n")
    assert not isolated_cache.exists()
