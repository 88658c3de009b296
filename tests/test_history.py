"""History: lineages over a small tagged repository (introduce, reword, move, remove, reintroduce), the
scope following a module that becomes a package, the CLI's files and formats, the nightly's rolling history."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import jsonschema
import orjson
import pytest

from extractor.model.schema import json_schema
from extractor.pipeline.extract import ExtractOptions
from extractor.query.history.changelog import lineage_sentence
from extractor.query.history.lineage import build_history
from extractor.query.history.revisions import following, list_revisions
from extractor.query.history.store import history_folder, write_history
from extractor.util import markdown
from tests.conftest import GitRepo, cli, git

CONFIG = """\
class Config:
    def check(self, n):
        if n < 0:
            raise ValueError("n must not be negative.")
        if self.backend == "x":
            raise ValueError("other is not supported with this backend.")
"""


@pytest.fixture
def history_repo(git_repo: GitRepo) -> GitRepo:
    """v1 introduces two checks; v2 rewords one; v3 turns the module into a package (both checks move);
    v4 removes the second; v5 brings it back; v6 only shifts lines."""
    git_repo.commit({"pkg/config.py": CONFIG, "pkg/other.py": 'raise ValueError("out of scope")\n'}, tag="v1")
    reworded = CONFIG.replace("must not be negative.", "must be zero or positive.")
    git_repo.commit({"pkg/config.py": reworded}, tag="v2")
    git_repo.commit({"pkg/config.py": None, "pkg/config/__init__.py": "", "pkg/config/model.py": reworded}, tag="v3")
    removed = reworded.replace(
        '        if self.backend == "x":\n            raise ValueError("other is not supported with this backend.")\n',
        "",
    )
    git_repo.commit({"pkg/config/model.py": removed}, tag="v4")
    git_repo.commit({"pkg/config/model.py": reworded}, tag="v5")
    git_repo.commit({"pkg/config/model.py": "import os\n\n" + reworded}, tag="v6")
    return git_repo


def events(history_lineage: object) -> list[tuple[str, str, str]]:
    return [(e.kind.value, e.revision, e.filePath) for e in history_lineage.events]  # type: ignore[attr-defined]


def test_following_names_a_module_and_the_package_it_becomes() -> None:
    assert following(["pkg/config"]) == ("pkg/config", "pkg/config.py")
    assert following(["pkg/config.py", "pkg/config/"]) == ("pkg/config", "pkg/config.py")
    assert following(["vllm/config", "vllm/engine/arg_utils.py"]) == (
        "vllm/config",
        "vllm/config.py",
        "vllm/engine/arg_utils",
        "vllm/engine/arg_utils.py",
    )


def test_lineages_follow_rewording_moves_removal_and_return(history_repo: GitRepo) -> None:
    options = ExtractOptions(paths=following(["pkg/config"]), config_from=following(["pkg/config"]))
    history = build_history(list_revisions(["v*"], repo=str(history_repo.path)), options=options)
    negative, backend = history.lineages
    assert events(negative) == [
        ("introduced", "v1", "pkg/config.py"),
        ("reworded", "v2", "pkg/config.py"),
        ("moved", "v3", "pkg/config/model.py"),
    ]
    assert negative.events[1].previous is not None
    assert negative.events[1].previous.errorMessage == "n must not be negative."
    assert negative.events[2].fields == ["filePath"]
    assert (negative.present, negative.firstSeen, negative.lastSeen) == (True, "v1", "v6")
    assert (negative.filePath, negative.lineNumber) == ("pkg/config/model.py", 6)  # v6 shifted it, silently
    assert events(backend) == [
        ("introduced", "v1", "pkg/config.py"),
        ("moved", "v3", "pkg/config/model.py"),
        ("removed", "v4", "pkg/config/model.py"),
        ("reintroduced", "v5", "pkg/config/model.py"),
    ]
    assert [r.revision for r in history.revisions] == ["v1", "v2", "v3", "v4", "v5", "v6"]
    assert [r.records for r in history.revisions] == [2, 2, 2, 1, 2, 2]
    assert history.revisions[3].summary == {
        "introduced": 0,
        "reworded": 0,
        "moved": 0,
        "modified": 0,
        "removed": 1,
        "reintroduced": 0,
    }
    assert lineage_sentence(negative) == (
        "introduced in v1, reworded in v2 (was: n must not be negative.), moved to pkg/config/model.py in v3, "
        "raised at pkg/config/model.py:6 in v6"
    )
    started = lineage_sentence(negative, start="v1")  # the history's first revision: maybe older than it
    assert started.startswith("present at v1 (the first revision followed), reworded in v2")


def test_a_scope_without_the_package_loses_the_checks_when_the_module_moves(history_repo: GitRepo) -> None:
    """Without following, `pkg/config.py` alone sees both checks removed at v3: why the scope follows."""
    options = ExtractOptions(paths=("pkg/config.py",))
    revisions = list_revisions(["v1..v3"], repo=str(history_repo.path))
    history = build_history(revisions, options=options)
    assert [events(lineage)[-1][0] for lineage in history.lineages] == ["removed", "removed"]
    # v3 holds nothing in scope: no records, and still the date it was committed (as every revision has)
    last = history.revisions[-1]
    assert (last.records, last.committedAt) == (0, revisions[-1].commit.committed_at)
    assert last.committedAt is not None


def test_cli_writes_history_files_that_validate_and_prints_them(history_repo: GitRepo, tmp_path: Path) -> None:
    out = tmp_path / "h"
    result = cli("history", "v*", "--repo", str(history_repo.path), "--path", "pkg/config", "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.encode() == (out / "history.jsonl").read_bytes()
    lines = [orjson.loads(raw) for raw in result.stdout.splitlines()]
    validator = jsonschema.Draft202012Validator(json_schema("history-line.schema.json"))
    assert [list(validator.iter_errors(line)) for line in lines] == [[], []]
    manifest = json.loads((out / "history.json").read_text())
    assert list(jsonschema.Draft202012Validator(json_schema("history.schema.json")).iter_errors(manifest)) == []
    assert manifest["scope"]["paths"] == ["pkg/config", "pkg/config.py"]
    assert [(r["revision"], r["records"]) for r in manifest["revisions"]] == [
        ("v1", 2),
        ("v2", 2),
        ("v3", 2),
        ("v4", 1),
        ("v5", 2),
        ("v6", 2),
    ]
    assert "6 revisions" in result.stderr.splitlines()[-1]


def test_default_folder_names_the_scope() -> None:
    """As extraction's folders: the default scope (followed as module and package) is `history`, any other
    names its paths and classes, a path followed both ways once."""

    def name(paths: tuple[str, ...], exceptions: tuple[str, ...] = ("ValueError",)) -> str:
        return history_folder(
            ExtractOptions(paths=following(paths), exceptions=exceptions, config_from=following(("vllm/config",)))
        )

    assert name(("vllm/config",)) == "history"
    assert name(("vllm/config", "vllm/config.py")) == "history"
    assert name(("vllm",), ("*",)) == "history-vllm-all"
    # A scope is a set: in any order, the same folder.
    assert (
        name(("vllm/config", "vllm/engine"), ("ValueError", "TypeError"))
        == name(("vllm/engine", "vllm/config"), ("TypeError", "ValueError"))
        == "history-vllm.config+vllm.engine-TypeError+ValueError"
    )
    other = ExtractOptions(paths=following(("vllm/config",)), context=3, config_from=following(("vllm/config",)))
    assert history_folder(other).startswith("history-vllm.config-ValueError-")


def test_cli_histories_of_two_scopes_live_side_by_side(history_repo: GitRepo, tmp_path: Path) -> None:
    """Without --output, each scope has its own folder: the second history does not overwrite the first."""
    common = ["history", "v1..v3", "--repo", str(history_repo.path), "--quiet"]
    assert cli(*common, "--path", "pkg/config", cwd=tmp_path).returncode == 0
    assert cli(*common, "--path", "pkg", "--exception", "*", cwd=tmp_path).returncode == 0
    folders = sorted(p.parent for p in tmp_path.glob("output/*/*/*/history.json"))
    assert [p.name for p in folders] == ["history-pkg-all", "history-pkg.config-ValueError"]
    scopes = [json.loads((p / "history.json").read_text())["scope"] for p in folders]
    assert [(s["paths"], s["exceptions"]) for s in scopes] == [
        (["pkg", "pkg.py"], ["*"]),
        (["pkg/config", "pkg/config.py"], ["ValueError"]),
    ]
    assert [len((p / "history.jsonl").read_text().splitlines()) for p in folders] == [3, 2]


def test_cli_markdown_changelog_links_its_chart(history_repo: GitRepo, tmp_path: Path) -> None:
    out = tmp_path / "h"
    args = ["history", "v1", "v2", "--revisions", "v3", "--revisions", "v4", "--repo", str(history_repo.path)]
    args += ["--path", "pkg/config"]
    result = cli(*args, "--format", "markdown", "--output", str(out), "--quiet")
    assert result.returncode == 0 and result.stderr == ""
    markdown = result.stdout
    # What is printed is the folder's history.md: its chart named from there, not from where the command ran
    # (`> output/history.md` showed no chart; issue 56, 15).
    assert markdown == (out / "history.md").read_text()
    assert "![checks in scope and churn per revision](history.svg)" in markdown
    assert (out / "history.svg").read_bytes().startswith(b"<?xml")
    assert (out / "history.png").read_bytes()[:4] == b"\x89PNG"
    changelog = markdown[markdown.index("## Changelog") : markdown.index("## Timelines")]
    sections = {part.split("\n")[0]: part for part in changelog.split("### ")[1:]}
    assert list(sections) == ["v4", "v3", "v2", "v1"]  # newest first
    assert "Removed (1):" in sections["v4"] and "Added" not in sections["v4"]
    assert "Reworded (1):" in sections["v2"]
    assert "n must ~~not~~ be ~~negative.~~ → n must be **zero or positive.**" in sections["v2"]
    assert "Moved (2):" in sections["v3"] and "Added (2):" in sections["v1"]
    # The same input draws the same SVG.
    assert cli(*args, "--format", "markdown", "--output", str(tmp_path / "again")).returncode == 0
    assert (tmp_path / "again" / "history.svg").read_bytes() == (out / "history.svg").read_bytes()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        pytest.param([], "history needs revisions", id="no revision"),
        pytest.param(["nope*"], "no tag matches", id="no tag"),
        pytest.param(["v1..nope"], "unknown revision 'nope'", id="unknown end"),
        pytest.param(["v6..v1"], "no commit of v1 comes after v6: is the range backwards?", id="backwards range"),
        pytest.param(["v1..v6", "--path", "pkg/nothing"], "(nor at any of the 5 other", id="a path never there"),
        pytest.param(["v1..v2", "--exception", "ValueErorr"], "did you mean ValueError?", id="a mistyped class"),
        pytest.param(["v1..v2", "--output", "-"], "--output - (standard output) cannot hold them", id="output -"),
    ],
)
def test_cli_bad_revisions_and_scopes_are_one_line_errors(
    history_repo: GitRepo, tmp_path: Path, args: list[str], said: str
) -> None:
    scope = [] if "--path" in args else ["--path", "pkg/config"]
    place = tmp_path / "cwd"
    place.mkdir()
    result = cli("history", *args, "--repo", str(history_repo.path), *scope, "--quiet", cwd=place)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith("extractor: error: ") and len(result.stderr.splitlines()) == 1
    assert said in result.stderr
    assert list(place.iterdir()) == []


def test_write_history_writes_the_scopes_folder_and_returns_what_is_printed(
    history_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a folder, a history goes where `extractor history` puts it, output/<owner>/<name>/ and the
    scope's folder name; what the command prints of it is history.jsonl as written."""
    monkeypatch.chdir(tmp_path)
    options = ExtractOptions(paths=following(["pkg/config"]))
    history = build_history(list_revisions(["v1..v2"], repo=str(history_repo.path)), options=options)
    written = write_history(history)
    assert written.folder == Path("output", "vllm-project", "vllm", history_folder(options))
    assert sorted(path.name for path in written.folder.iterdir()) == ["history.json", "history.jsonl"]
    assert written.printed == (written.folder / "history.jsonl").read_bytes() != b""


def test_a_json_history_over_a_markdown_one_leaves_none_of_its_files(history_repo: GitRepo, tmp_path: Path) -> None:
    """history.md and its chart describe the history they were written with: a later run without them
    into the same folder removes them rather than leave them beside another history."""
    out = tmp_path / "h"
    scope = ["--repo", str(history_repo.path), "--path", "pkg/config", "--output", str(out), "--quiet"]
    assert cli("history", "v1..v6", *scope, "--format", "markdown").returncode == 0
    assert {"history.md", "history.svg", "history.png"} <= {p.name for p in out.iterdir()}
    assert cli("history", "v1..v2", *scope).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["history.json", "history.jsonl"]


def test_a_history_that_cannot_write_one_of_its_files_writes_none(history_repo: GitRepo, tmp_path: Path) -> None:
    """A directory where history.md goes: one line, exit 2, and neither the history nor its chart beside it."""
    out = tmp_path / "h"
    (out / "history.md").mkdir(parents=True)
    scope = ["--repo", str(history_repo.path), "--path", "pkg/config", "--output", str(out), "--quiet"]
    result = cli("history", "v1..v6", *scope, "--format", "markdown")
    assert (result.returncode, result.stderr) == (
        2,
        f"extractor: error: cannot write {out / 'history.md'}: a directory is in the way\n",
    )
    assert [p.name for p in out.iterdir()] == ["history.md"]


def test_nightly_keeps_a_rolling_history_advanced_night_by_night(git_repo: GitRepo, tmp_path: Path) -> None:
    """Each published night adds one revision to history.jsonl beside index.json; what is there is read
    back and kept (not recomputed), a re-run adds nothing, and a branch moving back removes a check."""
    first = git_repo.commit({"vllm/config/a.py": 'raise ValueError("first check")\n'})
    second = git_repo.commit({"vllm/config/a.py": 'raise ValueError("first check")\nraise ValueError("second")\n'})
    out = tmp_path / "pub"

    def night(sha: str) -> dict:  # type: ignore[type-arg]
        git(git_repo.path, "update-ref", "refs/heads/main", sha)
        result = cli("nightly", "--repo", str(git_repo.path), "--output", str(out), "--quiet")
        assert result.returncode == 0, result.stderr
        return json.loads((out / "history.json").read_text())

    assert [r["sha"] for r in night(first)["revisions"]] == [first]
    manifest = json.loads((out / "history.json").read_text())
    manifest["revisions"][0]["revision"] = "night one"  # read back, not recomputed: this label stays
    (out / "history.json").write_text(json.dumps(manifest))
    assert [(r["revision"], r["summary"]["introduced"]) for r in night(second)["revisions"]] == [
        ("night one", 1),
        (second[:12], 1),
    ]
    assert [r["sha"] for r in night(second)["revisions"]] == [first, second]  # already published: no-op
    assert [(r["sha"], r["records"]) for r in night(first)["revisions"]] == [(first, 1), (second, 2), (first, 1)]
    lines = [orjson.loads(raw) for raw in (out / "history.jsonl").read_bytes().splitlines()]
    assert [(line["errorMessage"], [e["kind"] for e in line["events"]], line["present"]) for line in lines] == [
        ("first check", ["introduced"], True),
        ("second", ["introduced", "removed"], False),
    ]


def test_explain_and_match_say_when_a_check_appeared_and_changed(history_repo: GitRepo, tmp_path: Path) -> None:
    """Given a written history, or revisions to follow on the fly, both add the lineage's sentence."""
    out = tmp_path / "h"
    common = ["--repo", str(history_repo.path), "--path", "pkg/config"]
    assert cli("history", "v*", *common, "--output", str(out)).returncode == 0
    sentence = (
        "present at v1 (the first revision followed), reworded in v2 (was: n must not be negative.), moved to "
        "pkg/config/model.py in v3, "
        "raised at pkg/config/model.py:6 in v6"
    )
    explained = cli("explain", "n must be zero or positive.", "--catalog", "v6", *common, "--history", str(out))
    assert explained.returncode == 0 and explained.stdout.endswith(f"\nHistory: {sentence}\n")
    matched = cli("match", "ValueError: n must be zero or positive.", "--catalog", "v6", *common, "--history", "v*")
    assert matched.returncode == 0, matched.stderr
    (match,) = json.loads(matched.stdout)["matches"]
    assert match["history"] == sentence
    as_json = cli(
        "explain", match["id"], "--catalog", "v6", *common, "--history", str(out / "history.jsonl"), "--format", "json"
    )
    assert json.loads(as_json.stdout)["history"] == sentence
    page = cli("explain", match["id"], "--catalog", "v6", *common, "--history", str(out), "--format", "markdown")
    assert page.stdout.endswith(f"\n**History**: {markdown.text(sentence)}\n")


@pytest.mark.release
def test_history_of_real_releases_counts_what_diff_counts(vllm_repo: Path) -> None:
    """Over vLLM 0.27.0, 0.28.0 and 0.33.0: each step's events are diff's changes, and counts add up."""
    from extractor.catalog.load import open_catalog
    from extractor.query.diff import diff_catalogs

    options = ExtractOptions(paths=following(["vllm/config"]), config_from=following(["vllm/config"]))
    specs = ["release:0.27.0", "release:0.28.0", "release:0.33.0"]
    history = build_history(list_revisions(specs, repo="unused"), options=options)
    assert [r.revision for r in history.revisions] == ["0.27.0", "0.28.0", "0.33.0"]
    for before, after in zip(history.revisions, history.revisions[1:], strict=False):
        s = after.summary
        assert after.records == before.records + s["introduced"] + s["reintroduced"] - s["removed"]
    old, new = (open_catalog(spec, repo="unused", options=options) for spec in specs[:2])
    diffed = diff_catalogs(old, new).summary
    assert history.revisions[1].summary == {
        "introduced": diffed["added"],
        "reworded": diffed["reworded"],
        "moved": diffed["moved"],
        "modified": diffed["modified"],
        "removed": diffed["removed"],
        "reintroduced": 0,
    }
    assert sum(lineage.present for lineage in history.lineages) == history.revisions[-1].records == 314
    (check,) = [lineage for lineage in history.lineages if lineage.slug.startswith("max-num-batched-tokens-is-smaller")]
    assert (check.filePath, check.lineNumber, check.lastSeen) == ("vllm/config/scheduler.py", 322, "0.33.0")


FIELDS_CONFIG = """\
from dataclasses import dataclass


@dataclass
class CacheConfig:
    block_size: int = 16
    swap: float = 4.0

    def verify(self, n):
        if self.block_size > n:
            raise ValueError("block_size is too large.")
        if self.swap < 0:
            raise ValueError("block_size is too large.")
        if n < 0:
            raise ValueError(f"n must not be negative, got {n}.")
"""


def test_a_historys_checks_are_those_of_each_revisions_validated_catalog(git_repo: GitRepo) -> None:
    """A history makes each revision's checks file by file, with no record built, reusing what a blob
    gave the revision before (ids, slug stems, conditions) and resolving fields again only where they may
    resolve: they are the checks of the revision's catalog, its lines validated, for a catalog built and
    for one read back from the cache. Revisions here change another file only (the config blob the same),
    the config class (a field gone), and move a file; messages repeat within a file (occurrences)
    and across files (slugs). Pairing them knowing which files are unchanged pairs them as without."""
    from extractor.model.records import CatalogLine
    from extractor.pipeline.extract import carrying_results, extract_commit, scan_revision
    from extractor.query.diff import Check, pair_checks
    from extractor.query.history.checks import ChecksByFile
    from extractor.query.history.lineage import _known
    from extractor.repo.git.commit import resolve

    other = 'def f(n):\n    if n:\n        raise ValueError("block_size is too large.")\n'
    git_repo.commit({"pkg/config/cache.py": FIELDS_CONFIG, "pkg/other.py": other}, tag="v1")
    git_repo.commit({"pkg/other.py": "import os\n\n" + other}, tag="v2")
    git_repo.commit({"pkg/config/cache.py": FIELDS_CONFIG.replace("    block_size: int = 16\n", "")}, tag="v3")
    git_repo.commit({"pkg/other.py": None, "pkg/more.py": other}, tag="v4")
    options = ExtractOptions(paths=("pkg",), config_from=("pkg/config",))
    tags = ["v1", "v2", "v3", "v4"]
    expected = []
    for tag in tags:
        commit = resolve(str(git_repo.path), tag)
        for stored in (False, True):  # built, then read back from the cache
            catalog = extract_commit(commit, options=options)
            assert (catalog.stored is not None) == stored
            validated = [CatalogLine.model_validate_json(raw) for raw in catalog.encoded.splitlines()]
            checks = [Check.of(index, line) for index, line in enumerate(validated)]
        expected.append(checks)
    assert [len(checks) for checks in expected] == [4, 4, 4, 4]
    assert [c.slug for c in expected[0]] == [
        "block-size-is-too-large",
        "block-size-is-too-large-2",
        "n-must-not-be-negative-got",
        "block-size-is-too-large-3",
    ]
    assert len({c.id for c in expected[0]}) == 4
    resolved = [(("CacheConfig", name, (), None, None),) for name in ("block_size", "swap")]
    assert [c.fields for c in expected[1][:2]] == resolved
    assert not expected[2][0].fields  # (no such field any more)

    made = ChecksByFile()
    previous = None
    with carrying_results() as carry:
        for tag, checks in zip(tags, expected, strict=True):
            revision = made.of(scan_revision(resolve(str(git_repo.path), tag), options=options, carry=carry))
            assert list(revision.checks) == checks
            if previous is not None:
                known = _known(previous, revision)
                assert known is not None and known.same  # (every revision keeps a file as it was)
                assert pair_checks(previous.checks, revision.checks, known) == pair_checks(
                    previous.checks, revision.checks
                )
            previous = revision


def test_a_sites_data_takes_the_models_defaults(history_repo: GitRepo) -> None:
    """A history reads a scan's conditions and fields as data: what leaves out what the models default
    reads as its model would (diff.Check.of)."""
    from extractor.model.records import CatalogLine
    from extractor.pipeline.extract import extract_commit
    from extractor.query.diff import Check
    from extractor.query.history.checks import conditions_of_data, fields_of_data
    from extractor.repo.git.commit import resolve

    catalog = extract_commit(resolve(str(history_repo.path), "v1"), options=ExtractOptions(paths=("pkg/config.py",)))
    line = orjson.loads(catalog.encoded.splitlines()[0])
    line["extraction"]["conditions"] = [{"kind": "if", "test": "n < 0", "line": 3}]
    line["extraction"]["fields"] = [{"expression": "self.n", "class": "C", "field": "n", "resolved": True}]
    minimal = (conditions_of_data(line["extraction"]["conditions"]), fields_of_data(line["extraction"]["fields"]))
    model = Check.of(0, CatalogLine.model_validate(line))
    assert minimal == (model.conditions, model.fields) == ((("if", "n < 0", False),), (("C", "n", (), None, None),))


def test_a_diffs_pairs_hold_each_check_of_both_catalogs_once(history_repo: GitRepo) -> None:
    """The nightly's history reads a night's checks from its diff's pairs (`sides`) rather than reading both
    catalogs again: they are the catalogs' checks, in catalog order, for every step of a history that
    rewords, moves, removes and brings back checks."""
    from extractor.catalog.load import LoadedCatalog
    from extractor.pipeline.extract import extract_commit
    from extractor.query.diff import checks_of, diff_catalogs
    from extractor.query.history.checks import sides
    from extractor.repo.git.commit import resolve

    options = ExtractOptions(paths=following(("pkg/config",)))
    catalogs = []
    for tag in ("v1", "v2", "v3", "v4", "v5", "v6"):
        commit = resolve(str(history_repo.path), tag)
        extracted = extract_commit(commit, options=options)
        catalogs.append(LoadedCatalog(extracted, extracted.manifest, commit.sha, tag))
    kinds: set[str] = set()
    for old, new in itertools.pairwise(catalogs):
        diff = diff_catalogs(old, new)
        kinds |= {pair.kind.value for pair in diff.pairs}
        assert sides(diff.pairs) == (checks_of(old), checks_of(new))
    assert {"added", "removed", "reworded", "moved"} <= kinds


def test_a_history_lists_each_revision_once(history_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scope of a revision to come is listed once and kept for when it is extracted (a revision is
    the next but one, then the next, then the one extracted); outside a history nothing is kept."""
    import importlib
    from collections import Counter

    extract = importlib.import_module(
        "extractor.pipeline.extract"
    )  # (the module: extractor.pipeline.extract is the function)

    listed: Counter[str] = Counter()
    real = extract._list_scope

    def counting(commit, options):  # type: ignore[no-untyped-def]
        listed[commit.revision] += 1
        return real(commit, options)

    monkeypatch.setattr(extract, "_list_scope", counting)
    options = ExtractOptions(paths=following(["pkg/config"]), config_from=following(["pkg/config"]))
    revisions = list_revisions(["v*"], repo=str(history_repo.path))
    build_history(revisions, options=options)
    assert len(revisions) >= 4 and set(listed.values()) == {1}, listed
    listed.clear()
    extract.scan_revision(revisions[0].commit, options=options, then=[revisions[1].commit])
    extract.extract_commit(revisions[1].commit, options=options)
    assert listed == Counter({revisions[0].commit.revision: 1, revisions[1].commit.revision: 2})


def test_releases_listed_newest_first_are_followed_as_listed_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from extractor.cli.commands.history import _warn_if_unordered
    from extractor.query.history.revisions import Revision
    from extractor.repo.git.commit import Commit

    def revision(version: str) -> Revision:
        commit = Commit(tmp_path, "a" * 40, f"release:{version}", "2026-01-01T00:00:00Z", "o/n")
        return Revision(version, commit)

    _warn_if_unordered([revision("0.9.0"), revision("0.10.1")])
    assert capsys.readouterr().err == ""
    _warn_if_unordered([revision("0.10.1"), revision("0.9.0")])
    said = capsys.readouterr().err
    assert "warning: revisions are followed in the order given" in said and "0.10.1 comes before 0.9.0" in said


def test_a_range_whose_start_is_not_an_ancestor_says_so(git_repo: GitRepo, tmp_path: Path) -> None:
    """Release commits are roots of their own: A..B then holds A and B alone, which a warning says."""
    git_repo.commit({"pkg/config/a.py": "raise ValueError('first check')\n"}, tag="v1")
    git(git_repo.path, "checkout", "--quiet", "--orphan", "other")
    git_repo.commit({"pkg/config/a.py": "raise ValueError('second check')\n"}, tag="v2")
    result = cli(
        "history", "v1..v2", "--repo", str(git_repo.path), "--path", "pkg/config", "--output", str(tmp_path / "h")
    )
    assert result.returncode == 0
    warning = "extractor: warning: v1..v2: v1 is not an ancestor of v2: the history is v1, then the 1 first-parent"
    assert result.stderr.startswith(warning)


def test_a_bare_raise_comes_back_only_in_its_own_function(git_repo: GitRepo, tmp_path: Path) -> None:
    """A removed `raise NotImplementedError` is not "reintroduced" by another one in another function (the
    two share only their class); in its own function it is."""
    bare = "def {}(self):\n    raise NotImplementedError\n"
    git_repo.commit({"vllm/config/a.py": bare.format("send")}, tag="v1")
    git_repo.commit({"vllm/config/a.py": "x = 1\n"}, tag="v2")
    git_repo.commit({"vllm/config/b.py": bare.format("forward")}, tag="v3")
    git_repo.commit({"vllm/config/b.py": None, "vllm/config/a.py": bare.format("send")}, tag="v4")
    repo = ["--repo", str(git_repo.path), "--exception", "*"]
    assert cli("history", "v1", "v2", "v3", "v4", *repo, "--output", str(tmp_path / "h"), "-q").returncode == 0
    lines = [json.loads(line) for line in (tmp_path / "h" / "history.jsonl").read_text().splitlines()]
    story = sorted((lineage["function"], [e["kind"] for e in lineage["events"]]) for lineage in lines)
    assert story == [("forward", ["introduced", "removed"]), ("send", ["introduced", "removed", "reintroduced"])]


def test_markdown_history_of_a_tag_with_dollars_draws_it_as_text(git_repo: GitRepo, tmp_path: Path) -> None:
    """`v0.2$_$x` is a legal tag: the chart shows it as text (not as mathematics, which failed the whole run)
    and the page escapes it; nothing is said on stderr under -q (no warning of matplotlib's)."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("one")\n'}, tag="v0.1")
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("one")\nraise ValueError("two")\n'})
    git(git_repo.path, "tag", "v0.2$_$x")
    out = tmp_path / "history"
    result = cli("history", "v0.1", "v0.2$_$x", "--repo", str(git_repo.path), "--output", str(out),
                 "--format", "markdown", "-q")  # fmt: skip
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert (out / "history.svg").is_file() and (out / "history.json").is_file()
    page = (out / "history.md").read_text()
    assert "v0.2$" not in page and page.count("v0.2\\$\\_\\$x") == 4  # (twice in the summary, the table, the changelog)


def test_a_tag_glob_leaves_out_a_tag_that_names_a_tree_and_says_so(git_repo: GitRepo, tmp_path: Path) -> None:
    """Linux's v2.6.11-tree names a tree: `history 'v*'` follows the tags that name commits, and names it."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("one")\n'}, tag="v1")
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("one")\nraise ValueError("two")\n'}, tag="v2")
    git(git_repo.path, "tag", "v1-tree", "v1^{tree}")
    out = tmp_path / "history"
    result = cli("history", "v*", "--repo", str(git_repo.path), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert "extractor: warning: 1 tag(s) matching 'v*' name no commit, left out: v1-tree\n" in result.stderr
    assert [r["revision"] for r in json.loads((out / "history.json").read_text())["revisions"]] == ["v1", "v2"]


def test_the_chart_of_a_long_history_is_bounded_in_size_and_in_what_it_draws() -> None:
    """5,000 revisions: one area per kind of churn, not 30,000 bars (minutes of drawing), a figure at most
    24 inches wide (not a 100,000-pixel PNG), at most 120 revisions named under its axis."""
    import re
    import struct

    from extractor.model.records import HistoryRevision
    from extractor.query.history.changelog import render_chart

    revisions = [
        HistoryRevision(
            revision=f"r{n:05d}",
            sha="a" * 40,
            committedAt=None,
            records=200 + n % 7,
            summary={"introduced": n % 3, "removed": n % 2, "reworded": 1},
        )
        for n in range(5000)
    ]
    drawn = render_chart(revisions, title="a long history")
    width = struct.unpack(">I", drawn[".png"][16:20])[0]  # (the IHDR chunk's width)
    assert width <= 24 * 150
    svg = drawn[".svg"].decode()
    assert len(re.findall(r"<!-- r\d{5} -->", svg)) <= 120
    assert svg.count('id="patch_') < 100
