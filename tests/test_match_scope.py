"""Match's scope: a pasted error is looked for in the whole package and every class unless the user narrows
it, and every answer says which catalogs and which scope it comes from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extractor.pipeline.write import RECORDS
from tests.conftest import GitRepo, cli, git
from tests.test_match import sdist
from tests.test_release import Index

CONFIG = """\
def check(n, limit):
    if n > limit:
        raise ValueError(f"max_model_len ({n}) must not exceed the model's limit of {limit} tokens.")
"""
KV_CACHE = """\
def fits(max_model_len, needed, free):
    if needed > free:
        raise ValueError(
            f"To serve at least one request with the model's max seq len ({max_model_len}), "
            f"({needed} GiB KV cache is needed, which is larger than the available KV cache memory ({free} GiB)."
        )
"""
ENGINE = """\
def start(attempts):
    raise RuntimeError(f"Engine core initialization failed after {attempts} attempts; see the root cause above.")
"""
FILES = {"vllm/config/model.py": CONFIG, "vllm/v1/core/kv_cache_utils.py": KV_CACHE, "vllm/engine/core.py": ENGINE}

# Raised outside the old default scope (vllm/config, ValueError): a ValueError in another folder, a RuntimeError.
KV_PASTE = (
    "ValueError: To serve at least one request with the model's max seq len (32768), (4.0 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (2.5 GiB)."
)
ENGINE_PASTE = "RuntimeError: Engine core initialization failed after 3 attempts; see the root cause above."
CONFIG_PASTE = "ValueError: max_model_len (8192) must not exceed the model's limit of 4096 tokens."
WHOLE = {"paths": ["vllm"], "exceptions": ["*"]}


@pytest.fixture
def releases(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    """An index on loopback with 9.8.0 and 9.9.0, each raising in vllm/config and outside it."""
    index = Index({f"vllm-{version}.tar.gz": sdist(version, FILES) for version in ("9.8.0", "9.9.0")})
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    yield index
    index.server.shutdown()


def answers(*args: str, code: int) -> list[dict[str, Any]]:
    """`match ARGS`'s JSON answers, once it exited with `code` (0: every TEXT answered; 1: one was not)."""
    result = cli("match", *args)
    assert result.returncode == code, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def places(document: dict[str, Any]) -> list[str]:
    return [f"{m['filePath']}:{m['lineNumber']}" for m in document["matches"]]


def test_a_paste_raised_outside_the_config_folder_is_answered_from_the_whole_package(
    releases: Index, isolated_cache: Path
) -> None:
    """With no scope option, a release is read whole, every class: the ValueError of vllm/v1 and the
    RuntimeError are answered (they were "no matching record", exit 1), and so is vllm/config's."""
    documents = answers("--catalog", "release:9.9.0", KV_PASTE, ENGINE_PASTE, CONFIG_PASTE, code=0)
    assert [places(d) for d in documents] == [
        ["vllm/v1/core/kv_cache_utils.py:3"],
        ["vllm/engine/core.py:2"],
        ["vllm/config/model.py:3"],
    ]
    assert [d["catalogs"] for d in documents] == [[{"labels": ["9.9.0"], "scope": WHOLE}]] * 3
    # The index is cached: read again with nothing asked of the package index; the same scope given in full
    # is the same answer, from the same index.
    (cached,) = (isolated_cache / "extractor" / "match").iterdir()
    hits = releases.hits
    assert answers("--catalog", "release:9.9.0", KV_PASTE, ENGINE_PASTE, CONFIG_PASTE, code=0) == documents
    assert (
        answers("--catalog", "release:9.9.0", "--path", "vllm", "--exception", "*", KV_PASTE, code=0) == documents[:1]
    )
    assert releases.hits == hits
    assert list((isolated_cache / "extractor" / "match").iterdir()) == [cached]


def test_the_text_answer_ends_with_the_catalog_and_scope_it_came_from(releases: Index) -> None:
    result = cli("match", "--catalog", "release:9.9.0", "--format", "text", ENGINE_PASTE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{ENGINE_PASTE}\n  -> vllm/engine/core.py:2  ")
    assert result.stdout.endswith(
        "\n  in release 9.9.0, scope vllm (every class)\n"
        "  next: extractor explain --catalog release:9.9.0 --path vllm --exception '*' "
        "engine-core-initialization-failed-after-attempts\n"
    )
    missed = cli("match", "--catalog", "release:9.9.0", "--format", "text", "--path", "vllm/config", ENGINE_PASTE)
    assert (missed.returncode, missed.stdout) == (
        1,
        f"{ENGINE_PASTE}\n  no matching record\n  in release 9.9.0, scope vllm/config (every class)\n",
    )


@pytest.mark.parametrize(
    ("scope", "scope_json", "answered"),
    [
        pytest.param(["--path", "vllm/config"], {"paths": ["vllm/config"], "exceptions": ["*"]}, [2], id="path"),
        pytest.param(
            ["--exception", "ValueError"], {"paths": ["vllm"], "exceptions": ["ValueError"]}, [0, 2], id="class"
        ),
        pytest.param(
            ["--path", "vllm/config", "--exception", "ValueError"],
            {"paths": ["vllm/config"], "exceptions": ["ValueError"]},
            [2],
            id="both",
        ),
    ],
)
def test_a_scope_option_narrows_it_with_no_fallback(
    releases: Index, scope: list[str], scope_json: dict[str, list[str]], answered: list[int]
) -> None:
    """--path or --exception given is the user's scope, used as is (what it leaves out is not looked for
    anyway); the one not given stays the whole package's, or every class."""
    documents = answers("--catalog", "release:9.9.0", *scope, KV_PASTE, ENGINE_PASTE, CONFIG_PASTE, code=1)
    assert [n for n, d in enumerate(documents) if d["matches"]] == answered
    assert [d["catalogs"] for d in documents] == [[{"labels": ["9.9.0"], "scope": scope_json}]] * 3


def test_a_range_of_releases_is_read_whole_too(releases: Index) -> None:
    (document,) = answers("--catalog", "release:9.8.0..9.9.0", ENGINE_PASTE, code=0)
    (match,) = document["matches"]
    assert (match["filePath"], match["releases"]) == ("vllm/engine/core.py", ["9.8.0", "9.9.0"])
    # (over a range, a path follows a module that becomes a package: vllm.py beside vllm/)
    assert document["catalogs"] == [
        {"labels": ["9.8.0", "9.9.0"], "scope": {"paths": ["vllm", "vllm.py"], "exceptions": ["*"]}}
    ]
    text = cli("match", "--catalog", "release:9.8.0..9.9.0", "--format", "text", ENGINE_PASTE)
    assert "\n  in releases 9.8.0, 9.9.0, scope vllm (every class)\n  next: " in text.stdout


def test_a_catalog_on_disk_is_read_in_its_own_scope_and_says_it(releases: Index, tmp_path: Path) -> None:
    """A folder written before keeps the scope it was written in (here the extraction's default), and the
    answer says it; a records.jsonl alone records no scope."""
    assert cli("--release", "9.9.0", "--output", str(tmp_path / "out"), "--quiet").returncode == 0
    (folder,) = (tmp_path / "out").iterdir()
    documents = answers("--catalog", str(folder), KV_PASTE, CONFIG_PASTE, code=1)
    assert [places(d) for d in documents] == [[], ["vllm/config/model.py:3"]]
    own = {"paths": ["vllm/config"], "exceptions": ["ValueError"]}
    assert [d["catalogs"] for d in documents] == [[{"labels": ["9.9.0"], "scope": own}]] * 2
    text = cli("match", "--catalog", str(folder), "--format", "text", CONFIG_PASTE)
    assert text.stdout.endswith(
        f"\n  in {folder}, scope vllm/config (ValueError)\n"
        f"  next: extractor explain --catalog {folder} max-model-len-must-not-exceed-the-model-s-limit-of\n"
    )

    alone = tmp_path / "alone.jsonl"
    alone.write_bytes((folder / RECORDS).read_bytes())
    (document,) = answers("--catalog", str(alone), CONFIG_PASTE, code=0)
    assert document["catalogs"][0]["scope"] is None
    text = cli("match", "--catalog", str(alone), "--format", "text", CONFIG_PASTE)
    assert f"\n  in {alone}, scope not recorded\n  next: " in text.stdout


def test_a_nightly_roots_latest_catalog_is_still_the_default_scopes(git_repo: GitRepo, tmp_path: Path) -> None:
    """A nightly root holding catalogs of two scopes (the night's, and one extracted into it: a night of
    another scope is refused there, as it would share the index and history) stands, with no scope option,
    for the default scope's catalog, as before: it is a catalog on disk, read as written; the answer says
    which. With one, for that scope's."""
    git_repo.commit(FILES, tag="v1")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(git_repo.path), str(bare))
    out = tmp_path / "pub"
    assert cli("nightly", "--repo", str(bare), "--output", str(out), "--quiet").returncode == 0
    whole = ["--repo", str(bare), "--sha", "main", "--path", "vllm", "--exception", "*", "--output", str(out)]
    assert cli(*whole, "--quiet").returncode == 0
    (document,) = answers("--catalog", str(out), CONFIG_PASTE, code=0)
    assert document["catalogs"][0]["scope"] == {"paths": ["vllm/config"], "exceptions": ["ValueError"]}
    # A scope option names the scope it is looked for in: --path vllm, with every class (match's default).
    (document,) = answers("--catalog", str(out), "--path", "vllm", KV_PASTE, code=0)
    assert places(document) == ["vllm/v1/core/kv_cache_utils.py:3"]
    assert document["catalogs"][0]["scope"] == WHOLE


def test_a_revision_of_another_repository_names_its_package_with_path(git_repo: GitRepo, tmp_path: Path) -> None:
    """The whole package is vLLM's: a repository with no vllm/ folder says to name its own with --path."""
    git_repo.commit({"pkg/core.py": ENGINE}, tag="v1")
    repo = ["--catalog", "v1", "--repo", str(git_repo.path)]
    result = cli("match", *repo, ENGINE_PASTE, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.endswith("; match looks in the whole vllm package unless --path names where to look\n")
    (document,) = answers(*repo, "--path", "pkg", ENGINE_PASTE, code=0)
    assert places(document) == ["pkg/core.py:2"]
    assert document["catalogs"] == [{"labels": ["v1"], "scope": {"paths": ["pkg"], "exceptions": ["*"]}}]


def test_only_matchs_help_says_the_whole_package() -> None:
    """match's --path and --exception default to the whole package and every class; the other commands keep
    the extraction's defaults."""
    said = " ".join(cli("match", "--help").stdout.split())
    assert "(default: vllm, the whole package)" in said and "(default: every class)" in said
    for command in ("explain", "diff", "list", "history"):
        said = " ".join(cli(command, "--help").stdout.split())
        assert "(default: vllm/config)" in said and "(default: ValueError)" in said, command


def test_render_adds_the_source_to_json_and_as_the_last_line_of_text() -> None:
    from extractor.catalog.spec import OnDisk, Release
    from extractor.query.match.index import Provenance, ScopeShown
    from extractor.query.match.matcher import Matcher

    result = Matcher([]).match("ValueError: anything")
    whole = ScopeShown(("vllm",), ("*",))
    release = (("0.28.0", Release.of("0.28.0")),)
    source = Provenance(((release, whole),))
    assert json.loads(result.render(format="json", source=source))["catalogs"] == [
        {"labels": ["0.28.0"], "scope": WHOLE}
    ]
    assert result.render(format="text", source=source) == (
        "ValueError: anything\n  no matching record\n  in release 0.28.0, scope vllm (every class)\n"
    )
    assert "catalogs" not in json.loads(result.render(format="json"))
    releases = tuple((version, Release.of(version)) for version in ("0.9.0", "0.27.0", "0.27.1", "0.28.0"))
    folder = (("v1", OnDisk("out/v1", Path("out/v1"))),)
    many = Provenance(((releases, whole), (folder, ScopeShown(("vllm/config",), ("TypeError", "ValueError")))))
    assert many.to_text() == (
        "in 4 releases 0.9.0 .. 0.28.0, scope vllm (every class); out/v1, scope vllm/config (TypeError, ValueError)"
    )


@pytest.mark.parametrize(
    "scope",
    [[], ["--path", "vllm/v1", "--exception", "ValueError"], ["--context", "3"]],
    ids=["whole package", "narrowed", "other options"],
)
def test_a_text_answer_ends_with_the_explain_command_that_runs_next(releases: Index, scope: list[str]) -> None:
    """`match --format text` ended without saying what to run next (issue 56, 17): its last line is the
    explain command of the record found, over the same catalogs in the same scope, and it runs as shown."""
    import shlex

    result = cli("match", "--catalog", "release:9.8.0..9.9.0", *scope, "--format", "text", KV_PASTE)
    assert result.returncode == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith("  next: extractor explain --catalog release:9.8.0..9.9.0 ")
    argv = shlex.split(last.removeprefix("  next: "))
    explained = cli(*argv[1:])
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.startswith("ValueError: To serve at least one request with the model's max seq len")
    assert "vllm/v1/core/kv_cache_utils.py:3" in explained.stdout
