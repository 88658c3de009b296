"""The corpus of real pastes (tests/data/pastes/corpus.jsonl) that scripts/pastes.py measures `match` on.

Its ground truth was made by reading vLLM's source, so these checks need no catalog: the fields and their
kinds, the shapes, the splits, and enough positives and negatives in each for the figures to mean something.
tests/data/pastes/fresh.jsonl, a later set of pastes none of whose texts the matcher was tuned on, is checked
for the same well-formedness (all its lines are in the held-out split; `--corpus` points the script at it).
tests/data/pastes/fresh2.jsonl, a third set collected for issue 55 and split into dev and held-out before
`match` ever ran on it, is checked alike; its lines may also say `elsewhere`: who else prints the text.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).parent / "data" / "pastes" / "corpus.jsonl"
FRESH = Path(__file__).parent / "data" / "pastes" / "fresh.jsonl"
FRESH2 = Path(__file__).parent / "data" / "pastes" / "fresh2.jsonl"
SHAPES = {
    "plain",
    "log line",
    "traceback",
    "in prose",
    "issue title",
    "quoted in a sentence",
    "foreign prefix",
    "wrapped in another error",
    "short cut",
    "long values",
    "retyped",
    "hard-wrapped",
    "pydantic",
    "json body",
    "other library",
    "long generic",
}
# the releases whose sdists the project caches
RELEASES = {"0.6.3.post1", "0.6.6", "0.9.0", "0.27.0", "0.27.1", "0.28.0", "0.33.0"}
FIELDS = {"text", "shape", "source", "release", "expect", "split"}


def _read(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return _read(CORPUS)


@pytest.fixture(scope="module")
def fresh_rows() -> list[dict[str, Any]]:
    return _read(FRESH)


@pytest.fixture(scope="module")
def fresh2_rows() -> list[dict[str, Any]]:
    return _read(FRESH2)


def _site_ok(site: object) -> bool:
    return (
        isinstance(site, dict)
        and set(site) == {"filePath", "lineNumber"}
        and isinstance(site["filePath"], str)
        and site["filePath"].startswith("vllm/")
        and site["filePath"].endswith(".py")
        and isinstance(site["lineNumber"], int)
        and site["lineNumber"] > 0
    )


def test_every_line_is_well_formed(rows: list[dict[str, Any]]) -> None:
    _check_well_formed(rows)


def test_every_fresh_line_is_well_formed(fresh_rows: list[dict[str, Any]]) -> None:
    _check_well_formed(fresh_rows)
    assert all(row["split"] == "held-out" for row in fresh_rows)
    assert any(row["expect"] is None for row in fresh_rows) and any(row["expect"] for row in fresh_rows)


def test_fresh_texts_are_new(rows: list[dict[str, Any]], fresh_rows: list[dict[str, Any]]) -> None:
    texts = [row["text"] for row in fresh_rows]
    assert len(set(texts)) == len(texts)
    assert not set(texts) & {row["text"] for row in rows}


def test_every_fresh2_line_is_well_formed(fresh2_rows: list[dict[str, Any]]) -> None:
    _check_well_formed(fresh2_rows, optional={"also", "elsewhere"})
    for row in fresh2_rows:
        assert "elsewhere" not in row or (isinstance(row["elsewhere"], str) and row["elsewhere"]), row
    for split in ("dev", "held-out"):
        assert any(row["split"] == split and row["expect"] for row in fresh2_rows), split
        assert any(row["split"] == split and row["expect"] is None for row in fresh2_rows), split
    _check_one_site_one_split(fresh2_rows)


def test_fresh2_texts_are_new(
    rows: list[dict[str, Any]], fresh_rows: list[dict[str, Any]], fresh2_rows: list[dict[str, Any]]
) -> None:
    texts = [row["text"] for row in fresh2_rows]
    assert len(set(texts)) == len(texts)
    assert not set(texts) & {row["text"] for row in rows + fresh_rows}


def _check_well_formed(rows: list[dict[str, Any]], optional: set[str] | None = None) -> None:
    optional = {"also"} if optional is None else optional
    for row in rows:
        assert FIELDS <= set(row) <= FIELDS | optional, row
        assert isinstance(row["text"], str) and row["text"].strip(), row
        assert row["shape"] in SHAPES, row["shape"]
        assert isinstance(row["source"], str) and row["source"], row
        assert row["release"] in RELEASES, row["release"]
        assert row["split"] in {"dev", "held-out"}, row["split"]
        assert row["expect"] is None or _site_ok(row["expect"]), row
        if "also" in row:
            assert row["expect"] is not None and row["also"], row
            assert all(_site_ok(site) for site in row["also"]), row
            assert row["expect"] not in row["also"], row


def test_texts_are_not_repeated(rows: list[dict[str, Any]]) -> None:
    repeated = [text for text, n in Counter(row["text"] for row in rows).items() if n > 1]
    assert not repeated


def test_positives_and_negatives_are_enough(rows: list[dict[str, Any]]) -> None:
    positives = [row for row in rows if row["expect"] is not None]
    negatives = [row for row in rows if row["expect"] is None]
    assert len(positives) >= 100 and len(negatives) >= 40
    for split in ("dev", "held-out"):
        assert sum(row["split"] == split for row in positives) >= 30, split
        assert sum(row["split"] == split for row in negatives) >= 10, split
    # Every shape a user pastes vLLM's errors in holds a few of them.
    by_shape = Counter(row["shape"] for row in positives)
    assert all(by_shape[shape] >= 4 for shape in SHAPES - {"other library", "long generic"}), by_shape


def test_held_out_is_about_a_third(rows: list[dict[str, Any]]) -> None:
    held_out = sum(row["split"] == "held-out" for row in rows)
    assert 0.25 <= held_out / len(rows) <= 0.45


def test_one_site_is_in_one_split(rows: list[dict[str, Any]]) -> None:
    """Pastes of the same message stay together, so that held-out measures messages tuning never saw."""
    _check_one_site_one_split(rows)


def _check_one_site_one_split(rows: list[dict[str, Any]]) -> None:
    splits: dict[tuple[str, str, int], set[str]] = {}
    for row in rows:
        if row["expect"] is not None:
            key = (row["release"], row["expect"]["filePath"], row["expect"]["lineNumber"])
            splits.setdefault(key, set()).add(row["split"])
    assert all(len(found) == 1 for found in splits.values())


def test_the_corpus_stays_small() -> None:
    assert CORPUS.stat().st_size < 300_000
    assert FRESH.stat().st_size < 300_000
    assert FRESH2.stat().st_size < 300_000
