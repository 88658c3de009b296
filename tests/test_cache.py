"""The per-file cache and parallel scanning never change a byte of output."""

from __future__ import annotations

from pathlib import Path

import pytest

from extractor.extract import ExtractOptions, extract
from extractor.write import dumps_line
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
    return b"".join(dumps_line(line) + b"\n" for line in catalog.lines) + catalog.manifest.model_dump_json().encode()


def cache_files(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "extractor").rglob("*.json"))


def test_output_is_identical_serial_parallel_cold_and_warm(repo: GitRepo, isolated_cache: Path) -> None:
    serial = output(repo, jobs=1, cache=False)
    parallel = output(repo, jobs=2, cache=False)
    assert cache_files(isolated_cache) == []  # --no-cache writes nothing
    cold = output(repo, jobs=2)
    entries = cache_files(isolated_cache)
    assert len(entries) == len(SOURCES)  # one entry per blob, the ruled-out and the broken included
    warm = output(repo, jobs=2)
    assert serial == parallel == cold == warm
    assert b"syntax error: invalid syntax (line 1)" in serial


def test_warm_run_reads_the_cache_and_never_parses(
    repo: GitRepo, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output(repo, jobs=1)
    import extractor.scan

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(extractor.scan, "scan_many", fail)
    monkeypatch.setattr(extractor.scan, "scan", fail)
    output(repo, jobs=1)


def test_corrupt_or_foreign_entries_are_ignored_and_rewritten(repo: GitRepo, isolated_cache: Path) -> None:
    expected = output(repo, jobs=1)
    entries = cache_files(isolated_cache)
    entries[0].write_bytes(b"{not json")
    entries[1].write_bytes(b'{"kind": "scanned", "sites": [{"surprise": 1}]}')
    entries[2].unlink()
    again = output(repo, jobs=1)
    assert again == expected
    assert entries[0].read_bytes() != b"{not json" and b"surprise" not in entries[1].read_bytes()


def test_cache_key_follows_the_options(repo: GitRepo, isolated_cache: Path) -> None:
    output(repo, jobs=1)
    output(repo, jobs=1, context=3)
    output(repo, jobs=1, exceptions=("*",))
    keys = {p.parent.parent.name for p in cache_files(isolated_cache)}
    assert len(keys) == 3


def test_prefilter_and_skipped_files_agree(repo: GitRepo) -> None:
    """A file the prefilter rules out cannot hold a site; a file that could and fails to parse is named."""
    from extractor.scan import Scanned, ScanOptions, could_hold, scan

    catalog = extract(repo=str(repo.path), revision="v1", options=ExtractOptions(paths=("pkg",), cache=False))
    assert [s.path for s in catalog.manifest.skippedFiles] == ["pkg/broken.py"]
    options = ScanOptions()
    for source in SOURCES.values():
        data = source.encode()
        if not could_hold(data, options):
            result = scan(data, options=options)
            assert isinstance(result, Scanned) and result.sites == ()
    assert catalog.manifest.counts.filesParsed == len(SOURCES) - 1
