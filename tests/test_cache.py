"""The per-file cache and parallel scanning never change a byte of output."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import re
import shutil
import sqlite3
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from extractor.errors import ExtractorError
from extractor.pipeline.cache import opened, wait_for_writes
from extractor.pipeline.extract import ExtractOptions, extract
from extractor.pipeline.write import encode_lines
from extractor.repo.git.commit import resolve
from tests.conftest import GitRepo

SOURCES = {
    f"pkg/m{i}.py": f"""
class C{i}:
    def check(self, n):
        if n > {i}:
            raise ValueError(f"n ({{n}}) exceeds {i}" + " " * {i % 3})
        raise TypeError("other")
"""
    + "\n# padding\n" * 2000  # large enough to be parsed in worker processes
    for i in range(12)
}
SOURCES["pkg/broken.py"] = "def f(:\n    raise ValueError('x')\n"
SOURCES["pkg/quiet.py"] = "x = 1\n"


@pytest.fixture
def repo(git_repo: GitRepo, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    git_repo.commit(SOURCES, tag="v1")
    return git_repo


def output(repo: GitRepo, **options: object) -> bytes:
    catalog = extract(repo=str(repo.path), revision="v1", options=ExtractOptions(paths=("pkg",), **options))  # type: ignore[arg-type]
    wait_for_writes()  # the tests below read and break the cache file behind the extractor's back
    # What is written is built as plain data: it must be what the models themselves serialize.
    assert catalog.encoded == encode_lines(catalog.lines)
    assert list(catalog.manifest.model_dump(mode="json").items()) == list(catalog.manifest_data.items())
    return catalog.encoded + catalog.manifest.model_dump_json().encode()


def entries(cache: Path) -> list[tuple[str, str, bytes]]:
    path = cache / "extractor" / "scan.sqlite3"
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(path)) as db:
        return sorted(db.execute("SELECT scope, oid, data FROM results").fetchall())


def overwrite(cache: Path, oid: str, data: bytes) -> None:
    """Corrupt one file's entry, and forget whole catalogs so that the next run reads the entries."""
    with contextlib.closing(sqlite3.connect(cache / "extractor" / "scan.sqlite3")) as db, db:
        db.execute("UPDATE results SET data = ? WHERE oid = ?", (data, oid))
    shutil.rmtree(cache / "extractor" / "catalogs", ignore_errors=True)


def test_output_is_identical_serial_parallel_cold_and_warm(repo: GitRepo, isolated_cache: Path) -> None:
    serial = output(repo, jobs=1, cache=False)
    parallel = output(repo, jobs=2, cache=False)
    assert entries(isolated_cache) == []  # --no-cache writes nothing
    cold = output(repo, jobs=2)
    assert len(entries(isolated_cache)) == len(SOURCES)  # one entry per blob, ruled-out and broken included
    warm = output(repo, jobs=2)
    assert serial == parallel == cold == warm
    assert b"syntax error: invalid syntax (line 1)" in serial


def test_warm_run_reads_the_cache_and_never_parses(
    repo: GitRepo, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output(repo, jobs=1)
    import importlib

    scan_module = importlib.import_module("extractor.scanning.scan")  # (extractor.scanning.scan is the function)

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(scan_module, "scan_many", fail)
    monkeypatch.setattr(scan_module, "scan", fail)
    output(repo, jobs=1)


def test_corrupt_or_foreign_entries_are_ignored_and_rewritten(repo: GitRepo, isolated_cache: Path) -> None:
    expected = output(repo, jobs=1)
    stored = entries(isolated_cache)
    overwrite(isolated_cache, stored[0][1], b"{not json")
    overwrite(isolated_cache, stored[1][1], b'{"kind": "scanned", "sites": [{"surprise": 1}]}')
    assert output(repo, jobs=1) == expected
    assert entries(isolated_cache) == stored


def test_a_corrupt_cache_file_is_set_aside(repo: GitRepo, isolated_cache: Path) -> None:
    expected = output(repo, jobs=1)
    database = isolated_cache / "extractor" / "scan.sqlite3"
    for extra in database.parent.glob("scan.sqlite3-*"):
        extra.unlink()
    database.write_bytes(b"this is not a database" * 100)
    shutil.rmtree(database.parent / "catalogs")  # whole catalogs are files of their own
    assert output(repo, jobs=1) == expected
    assert (isolated_cache / "extractor" / "scan.corrupt").exists()
    assert len(entries(isolated_cache)) == len(SOURCES)


def test_a_whole_catalog_is_read_back_and_restamped(
    repo: GitRepo, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = output(repo, jobs=1)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1798761600")
    import importlib

    extract_module = importlib.import_module(
        "extractor.pipeline.extract"
    )  # (extractor.pipeline.extract is the function)

    monkeypatch.setattr(extract_module, "_extract_commit", lambda *a, **k: pytest.fail("extracted again"))
    again = output(repo, jobs=1)
    assert again == first.replace(b"2026-01-01T00:00:00.000Z", b"2027-01-01T00:00:00.000Z")
    assert again != first


def test_cache_key_follows_the_options(repo: GitRepo, isolated_cache: Path) -> None:
    output(repo, jobs=1)
    output(repo, jobs=1, context=3)
    output(repo, jobs=1, exceptions=("*",))
    assert len({scope for scope, _, _ in entries(isolated_cache)}) == 3


def test_the_cache_says_whether_a_catalog_is_stored_and_no_cache_holds_none(repo: GitRepo) -> None:
    """What the command line asks before it forks the workers (none are needed for a stored catalog): whether
    any catalog is stored, and this commit's, for the SHA its records point at. A cache opened for a run
    with --no-cache holds nothing, even where the catalog is stored."""
    commit, options = resolve(str(repo.path), "v1"), ExtractOptions(paths=("pkg",), jobs=1)
    with opened(options) as cache:
        assert (cache.holds_catalogs(), cache.holds_catalog(commit, None)) == (False, False)
    stamp = "2026-01-01T00:00:00.000Z"
    output(repo, jobs=1)
    with opened(options) as cache, opened(dataclasses.replace(options, cache=False)) as uncached:
        assert (cache.holds_catalogs(), cache.holds_catalog(commit, None)) == (True, True)
        assert cache.catalog(commit, None, stamp=stamp) is not None
        assert not cache.holds_catalog(commit, "abcdef1")  # (pointing at another SHA: another catalog)
        assert (uncached.holds_catalogs(), uncached.holds_catalog(commit, None)) == (False, False)
        assert uncached.catalog(commit, None, stamp=stamp) is None


def test_prefilter_and_skipped_files_agree(repo: GitRepo) -> None:
    """A file the prefilter rules out cannot hold a site; a file that could and fails to parse is named."""
    from extractor.scanning.scan import Scanned, ScanOptions, could_hold, scan

    catalog = extract(repo=str(repo.path), revision="v1", options=ExtractOptions(paths=("pkg",), cache=False))
    assert [s.path for s in catalog.manifest.skippedFiles] == ["pkg/broken.py"]
    options = ScanOptions()
    ruled_out = [path for path, source in SOURCES.items() if not could_hold(source.encode(), options)]
    assert ruled_out == ["pkg/quiet.py"]
    for path in ruled_out:
        result = scan(SOURCES[path].encode(), options=options)
        assert isinstance(result, Scanned) and result.sites == ()
    assert catalog.manifest.counts.filesParsed == len(SOURCES) - 1


def test_an_altered_whole_catalog_is_not_trusted(repo: GitRepo, isolated_cache: Path) -> None:
    expected = output(repo, jobs=1)
    (stored,) = (isolated_cache / "extractor" / "catalogs").iterdir()
    data = stored.read_bytes()
    assert b'"errorClass":"ValueError"' in data
    stored.write_bytes(data.replace(b'"errorClass":"ValueError"', b'"errorClass":"OSError"'))
    assert output(repo, jobs=1) == expected
    assert stored.read_bytes() == data  # rewritten


def test_only_the_most_recently_used_whole_catalogs_are_kept(
    repo: GitRepo, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import extractor.pipeline.cache

    monkeypatch.setattr(extractor.pipeline.cache, "_KEEP_CATALOGS", 2)
    folder = isolated_cache / "extractor" / "catalogs"
    first = output(repo, jobs=1)
    (oldest,) = folder.iterdir()
    output(repo, jobs=1, context=3)
    assert output(repo, jobs=1) == first  # read back: now the most recently used
    output(repo, jobs=1, context=4)
    assert len(list(folder.iterdir())) == 2 and oldest.exists()


def test_what_was_scanned_before_an_interruption_is_kept(
    git_repo: GitRepo, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    scan_module = importlib.import_module("extractor.scanning.scan")  # (extractor.scanning.scan is the function)

    files = {f"pkg/m{i}.py": f"raise ValueError('m{i}')\n" + "# padding\n" * 4000 for i in range(8)}
    git_repo.commit(files, tag="v2")
    real = scan_module.scan_many
    calls: list[int] = []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 4:  # one file per batch: three are scanned by then
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "scan_many", interrupted)
    with pytest.raises(KeyboardInterrupt):
        extract(repo=str(git_repo.path), revision="v2", options=ExtractOptions(paths=("pkg",), jobs=1))
    wait_for_writes()
    assert len(entries(isolated_cache)) == 3


def test_an_extraction_leaves_the_callers_garbage_to_the_collector(repo: GitRepo) -> None:
    """Only a command-line run, which leaves without tearing down, hides its objects from the collector."""

    class Node:
        other: object = None

    gc.disable()
    try:
        first, second = Node(), Node()
        first.other, second.other = second, first
        gone = weakref.ref(first)
        del first, second
        output(repo, jobs=1)
    finally:
        gc.enable()
    gc.collect()
    assert gone() is None


def test_entries_without_the_facts_now_wanted_are_scanned_with_the_rest(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files first scanned for their sites alone, then wanted for their classes too, are scanned again
    in the one parallel pass (not one by one after it)."""
    import extractor.pipeline.scheduler

    output(repo, jobs=2)
    real = extractor.pipeline.scheduler._scan_missing
    passes: list[tuple[list[str], int]] = []

    def spy(commit: Any, missing: list[Any], *args: Any, **kwargs: Any) -> None:
        passes.append((sorted(blob.path for blob in missing), kwargs["pool"].workers))
        real(commit, missing, *args, **kwargs)

    monkeypatch.setattr(extractor.pipeline.scheduler, "_scan_missing", spy)
    facts = output(repo, jobs=2, config_from=("pkg",))
    assert passes == [(sorted(SOURCES), 1)]
    monkeypatch.setattr(extractor.pipeline.scheduler, "_scan_missing", real)
    assert facts == output(repo, jobs=2, config_from=("pkg",), cache=False)


def test_a_catalog_still_being_stored_is_found(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import extractor.pipeline.cache

    extract_module = importlib.import_module(
        "extractor.pipeline.extract"
    )  # (extractor.pipeline.extract is the function)

    real = extractor.pipeline.cache._sealed

    def slow(pieces: list[bytes]) -> list[bytes]:  # the writing thread is still at it when the second run looks
        time.sleep(0.3)
        return real(pieces)

    monkeypatch.setattr(extractor.pipeline.cache, "_sealed", slow)
    options = ExtractOptions(paths=("pkg",), jobs=1)
    first = extract(repo=str(repo.path), revision="v1", options=options)
    monkeypatch.setattr(extract_module, "_extract_commit", lambda *a, **k: pytest.fail("extracted again"))
    assert extract(repo=str(repo.path), revision="v1", options=options).encoded == first.encoded


def test_files_read_for_their_facts_count_as_parsed_only_where_facts_are_wanted(repo: GitRepo) -> None:
    """pkg/quiet.py holds no raise: read for its classes it is parsed, otherwise ruled out, whatever the
    cache holds from a run that wanted its classes."""
    output(repo, jobs=1, config_from=("pkg",))
    assert output(repo, jobs=1) == output(repo, jobs=1, cache=False)


def test_cache_info_and_clear_know_what_the_test_suite_and_the_benchmark_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test-releases/ and test-wheels/ (tests/conftest.py keeps them between sessions) and bench-peers/ are the
    cache's too: counted by `cache info`, removed by `cache clear`."""
    from tests.conftest import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    root = tmp_path / "extractor"
    tags = root / "test-releases" / "vllm.git" / "refs" / "tags"
    tags.mkdir(parents=True)
    (tags / "v9.9.0").write_text("0" * 40 + "\n")
    (root / "test-wheels").mkdir()
    (root / "test-wheels" / "attrs-24.2.0-py3-none-any.whl").write_bytes(b"x" * 3000)
    (root / "bench-peers" / "bin").mkdir(parents=True)
    info = cli("cache", "info")
    assert info.returncode == 0, info.stderr
    assert re.search(r"\n  tests +3\.0 kB .*\(releases and wheels: 2\)\n", info.stdout), info.stdout
    assert re.search(r"\n  bench +.*\(environments: 1\)\n", info.stdout), info.stdout
    assert cli("cache", "clear").returncode == 0
    assert not any(root.iterdir())


def test_cache_info_and_clear_read_a_release_repository_whose_refs_are_not_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A packed-refs holding a name that is not UTF-8 (git allows it) is counted, not an unexpected error;
    a garbled sdist checksum beside a kept sdist is no error either (the sdist is fetched again)."""
    from extractor.repo.release import fetch_sdist
    from tests.conftest import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    git = tmp_path / "extractor" / "releases" / "vllm.git"
    git.mkdir(parents=True)
    (git / "packed-refs").write_bytes(b"# pack-refs with: peeled\n" + b"0" * 40 + b" refs/tags/v9.9.\xff\n")
    info = cli("cache", "info", "--format", "json")
    assert info.returncode == 0, info.stderr
    parts = {part["name"]: part for part in json.loads(info.stdout)["parts"]}
    assert parts["releases"]["releases"] == 1
    assert cli("cache", "clear", "releases").returncode == 0 and not git.exists()
    sdists = tmp_path / "extractor" / "sdists"
    sdists.mkdir()
    (sdists / "vllm-9.9.0.tar.gz").write_bytes(b"kept")
    (sdists / "vllm-9.9.0.tar.gz.sha256").write_bytes(b"\xff\xfe")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # (nothing listens: the index is asked)
    with pytest.raises(ExtractorError, match="package index"):
        fetch_sdist("9.9.0")
