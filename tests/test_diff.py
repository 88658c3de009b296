"""Catalog diffs: each kind of change on small tagged repositories, outputs and exit codes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from extractor.catalog.load import LoadedCatalog, open_catalog
from extractor.cli.main import main
from extractor.model.records import CatalogLine, Extraction, Record
from extractor.pipeline.extract import ExtractOptions
from extractor.query import rewording
from extractor.query.diff import (
    ACROSS_FUNCTIONS,
    WITHIN_FUNCTION,
    Check,
    _reworded,
    diff_catalogs,
    render_markdown,
    similarity,
)
from tests.conftest import GitRepo, cli, git

OPTIONS = ExtractOptions(paths=("pkg",))

BASE = """\
class Config:
    def check(self, n):
        if n > self.limit:
            raise ValueError(f"n ({n}) exceeds the limit ({self.limit}).")
        if n < 0:
            raise ValueError("n must not be negative.")

    def other(self):
        raise ValueError("other is not supported with this backend.")
"""


def changes(repo: GitRepo, old: str = "v1", new: str = "v2") -> list[tuple[str, str, list[str]]]:
    diff = diff_catalogs(
        open_catalog(old, repo=str(repo.path), options=OPTIONS), open_catalog(new, repo=str(repo.path), options=OPTIONS)
    )
    out = []
    for change in diff.changes:
        if change.kind.value == "unchanged":
            continue
        line = change.new or change.old
        assert line is not None
        out.append((change.kind.value, line.record.errorMessage, list(change.fields)))
    return out


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit({"pkg/a.py": BASE}, tag="v1")
    return git_repo


def test_line_shift_within_its_function_is_unchanged(repo: GitRepo) -> None:
    """Only another function or file makes a move: a shifted file shows no change at all."""
    repo.commit({"pkg/a.py": '"""A new header."""\n\nimport os\n\n' + BASE}, tag="v2")
    assert changes(repo) == []


def test_check_moved_into_another_method_is_moved(repo: GitRepo) -> None:
    source = BASE.replace(
        '        if n < 0:\n            raise ValueError("n must not be negative.")\n', "        self._sign(n)\n"
    )
    source += '\n    def _sign(self, n):\n        if n < 0:\n            raise ValueError("n must not be negative.")\n'
    repo.commit({"pkg/a.py": source}, tag="v2")
    assert ("moved", "n must not be negative.", ["lineNumber", "function"]) in changes(repo)


def test_reworded_message_is_one_change(repo: GitRepo) -> None:
    repo.commit({"pkg/a.py": BASE.replace("must not be negative.", "must be zero or positive.")}, tag="v2")
    assert changes(repo) == [("reworded", "n must be zero or positive.", ["errorMessage"])]


def test_changed_condition_is_modified(repo: GitRepo) -> None:
    repo.commit({"pkg/a.py": BASE.replace("if n < 0:", "if n < 0 and self.strict:")}, tag="v2")
    assert changes(repo) == [("modified", "n must not be negative.", ["conditions"])]


def test_renamed_module_is_moved_with_file_path(repo: GitRepo) -> None:
    repo.commit({"pkg/a.py": None, "pkg/b.py": BASE}, tag="v2")
    assert [fields for _, _, fields in changes(repo)] == [["filePath"]] * 3


def test_one_message_raised_several_times_pairs_each_with_its_own(git_repo: GitRepo) -> None:
    """Where a file raises one message several times, an occurrence reworded, inserted or removed above
    the others does not shift their pairing: each pairs with the one in the same function and conditions."""
    git_repo.commit(
        {
            "pkg/a.py": (
                "def dtype_of(dtype, known):\n"
                "    if dtype not in known:\n"
                '        raise ValueError(f"Unknown dtype: {dtype}")\n'
                "    else:\n"
                '        raise ValueError(f"Unknown dtype: {dtype}")\n'
                "class Client:\n"
                + "".join(f"    def {name}(self):\n        raise ValueError('not here')\n" for name in "bcd")
            )
        },
        tag="v1",
    )
    git_repo.commit(
        {
            "pkg/a.py": (
                "def dtype_of(dtype, known):\n"
                "    if dtype not in known:\n"
                '        raise ValueError(f"Unknown dtype: {dtype!r}")\n'
                "    else:\n"
                '        raise ValueError(f"Unknown dtype: {dtype}")\n'
                "class Client:\n"
                + "".join(f"    def {name}(self):\n        raise ValueError('not here')\n" for name in "abcd")
            )
        },
        tag="v2",
    )
    assert changes(git_repo) == [
        ("added", "not here", []),  # in `a`, the new method: those of b, c and d stay theirs
        ("reworded", "Unknown dtype: {dtype!r}", ["errorMessage"]),
    ]


def test_a_check_reworded_in_a_module_made_a_package_is_reworded(repo: GitRepo) -> None:
    """The file most of a module's checks moved to stands for it: a rewording there pairs as in one file."""
    reworded = BASE.replace("must not be negative.", "must be zero or positive.")
    repo.commit({"pkg/a.py": None, "pkg/a/__init__.py": reworded}, tag="v2")
    assert sorted((kind, fields) for kind, _, fields in changes(repo)) == [
        ("moved", ["filePath"]),
        ("moved", ["filePath"]),
        ("reworded", ["filePath", "errorMessage"]),
    ]


def test_a_module_split_into_a_package_rewords_into_any_of_its_files(repo: GitRepo) -> None:
    """`a.py` split into `a/checks.py` and `a/other.py`: a check reworded into a file that no check moved to
    unchanged is reworded still, as is one in the file most moved to."""
    check, other = BASE.split("\n    def other(self):\n")
    repo.commit(
        {
            "pkg/a.py": None,
            "pkg/a/checks.py": check.replace("must not be negative.", "must be zero or positive."),
            "pkg/a/other.py": "class Other:\n    def other(self):\n"
            + other.replace("this backend.", "this backend here."),
        },
        tag="v2",
    )
    assert sorted((kind, line) for kind, line, _ in changes(repo)) == [
        ("moved", "n ({n}) exceeds the limit ({self.limit})."),
        ("reworded", "n must be zero or positive."),
        ("reworded", "other is not supported with this backend here."),
    ]


def test_added_and_removed(repo: GitRepo) -> None:
    source = BASE.replace('        raise ValueError("other is not supported with this backend.")\n', "        pass\n")
    source += '\ndef fresh():\n    raise ValueError("a brand new check about tokens.")\n'
    repo.commit({"pkg/a.py": source}, tag="v2")
    assert changes(repo) == [
        ("added", "a brand new check about tokens.", []),
        ("removed", "other is not supported with this backend.", []),
    ]


def test_unrelated_messages_in_different_functions_are_not_paired(repo: GitRepo) -> None:
    source = BASE.replace("other is not supported with this backend.", "other requires the backend to be enabled.")
    repo.commit({"pkg/a.py": source}, tag="v2")
    assert [kind for kind, _, _ in changes(repo)] == ["added", "removed"]


def test_similarity_is_on_words() -> None:
    assert similarity("a b c d", "a b c d") == 1.0
    assert similarity("max tokens too small", "max tokens too large") == 0.75
    assert similarity("abc", "abd") == 0.0  # no shared word, however alike the characters


def test_cli_json_markdown_and_exit_codes(
    repo: GitRepo, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    repo.commit({"pkg/a.py": BASE.replace("must not be negative.", "must be zero or positive.")}, tag="v2")
    common = ["--repo", str(repo.path), "--path", "pkg"]
    assert main(["diff", "v1", "v1", *common]) == 0
    same = json.loads(capsysbinary.readouterr().out)
    assert same["summary"] == {"added": 0, "removed": 0, "reworded": 0, "moved": 0, "modified": 0, "unchanged": 3}
    assert same["changes"] == []

    assert main(["diff", "v1", "v2", *common]) == 1
    document = json.loads(capsysbinary.readouterr().out)
    assert list(document) == ["old", "new", "summary", "changes"]
    assert document["old"]["records"] == document["new"]["records"] == 3
    (change,) = document["changes"]
    assert (change["kind"], change["fields"], change["id"]) == ("reworded", ["errorMessage"], change["new"]["id"])
    assert change["old"]["errorMessage"] == "n must not be negative."

    assert main(["diff", "v1", "v2", *common, "--format", "markdown", "--output", str(tmp_path / "d.md")]) == 1
    markdown = (tmp_path / "d.md").read_text()
    assert "| reworded | 1 |" in markdown
    assert "| n must ~~not~~ be ~~negative.~~ | n must be **zero or positive.** |" in markdown


def test_written_catalogs_are_inputs_and_are_reused(
    repo: GitRepo, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    repo.commit({"pkg/a.py": BASE}, tag="v2")
    root = tmp_path / "catalogs"
    assert main(["--repo", str(repo.path), "--sha", "v1", "--path", "pkg", "--output", str(root)]) == 0
    (directory,) = root.iterdir()
    capsysbinary.readouterr()
    assert main(["diff", str(directory), str(directory / "records.jsonl")]) == 0
    # A revision whose catalog was written for the same scope is read back, not extracted again.
    records = directory / "records.jsonl"
    lines = [orjson.loads(raw) for raw in records.read_bytes().splitlines()]
    lines[0]["record"]["errorMessage"] = "tampered"
    records.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    # ... as long as it is whole: its manifest holds the checksum of what records.jsonl now holds.
    manifest = orjson.loads((directory / "manifest.json").read_bytes())
    manifest["recordsSha256"] = hashlib.sha256(records.read_bytes()).hexdigest()
    (directory / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert main(["diff", "v1", "v2", "--repo", str(repo.path), "--path", "pkg", "--catalog-root", str(root)]) == 1
    assert b"tampered" in capsysbinary.readouterr().out


def test_corrupt_catalog_is_one_line_naming_file_and_line(repo: GitRepo, tmp_path: Path) -> None:
    bad = tmp_path / "records.jsonl"
    bad.write_text('{"record": {}}\n')
    result = cli("diff", str(bad), "v1", "--repo", str(repo.path))
    assert result.returncode == 2
    assert result.stderr.startswith(f"extractor: error: {bad}:1: not a catalog line")
    assert len(result.stderr.splitlines()) == 1


def synthetic(
    entries: list[tuple[str, str, str]], *, sha: str = "a" * 40, revision: str = "r", lines: list[int] | None = None
) -> LoadedCatalog:
    """A catalog of (file, function, message) checks, built without extracting anything; each on its own
    line, or on the line `lines` gives."""
    numbers = lines or list(range(1, len(entries) + 1))
    out = []
    for number, (path, function, message) in zip(numbers, entries, strict=True):
        record = Record.model_construct(
            id=f"{hash((path, message)) & (2**64 - 1):016x}",
            repo="o/n",
            slug=f"s{number}",
            errorMessage=message,
            messagePattern=".*",
            errorType="validation",
            errorClass="ValueError",
            filePath=path,
            lineNumber=number,
            sourceCode="",
            sourceCodeStart=number,
            sourceCodeEnd=number,
            githubUrl=f"https://github.com/o/n/blob/{sha}/{path}#L{number}",
            analyzedSha=sha,
            analyzedAt="2026-01-01T00:00:00.000Z",
        )
        extraction = Extraction.model_construct(
            placeholders=[],
            conditions=[],
            function=function,
            cause=None,
            messageKind="literal",
            messageSource=None,
            column=0,
            endLineNumber=number,
            warnings=[],
        )
        out.append(CatalogLine.model_construct(record=record, extraction=extraction, datasetVersion=record.analyzedAt))
    return LoadedCatalog(tuple(out), None, sha, revision)


def test_every_check_reworded_in_few_files_pairs_each_with_its_own() -> None:
    """8,000 checks, 400 to a file, every one reworded: each old message shares half its words with every
    new one of its file (160,000 pairs of a file can score 0.5), yet each pairs with its own rewording.
    Scoring and sorting every such pair took minutes (24,000 such checks: over 15 minutes and a gigabyte)."""
    count = 8_000
    old = synthetic(
        [
            (f"pkg/m{i // 400}.py", "f", f"option opt{i} of the engine must be set when mode{i} is on")
            for i in range(count)
        ]
    )
    new = synthetic(
        [(f"pkg/m{i // 400}.py", "f", f"the engine requires opt{i} when mode{i} is on") for i in range(count)]
    )
    assert similarity(old.lines[0].record.errorMessage, new.lines[1].record.errorMessage) == 0.5
    diff = diff_catalogs(old, new)
    assert diff.summary["reworded"] == count
    pairs = {
        (c.old.record.errorMessage.split()[1], c.new.record.errorMessage.split()[3])
        for c in diff.changes
        if c.old and c.new
    }
    assert pairs == {(f"opt{i}", f"opt{i}") for i in range(count)}


def _greedy(old: LoadedCatalog, new: LoadedCatalog) -> set[tuple[int, int]]:
    """The pairing by its definition: every pair of one file and class scored, sorted best first (score,
    old line, new line, positions), taken where neither side is taken yet."""
    scored = []
    for i, a in enumerate(old.lines):
        for j, b in enumerate(new.lines):
            if (a.record.filePath, a.record.errorClass) != (b.record.filePath, b.record.errorClass):
                continue
            score = similarity(a.record.errorMessage, b.record.errorMessage)
            same = a.extraction.function == b.extraction.function
            if score >= (WITHIN_FUNCTION if same else ACROSS_FUNCTIONS):
                scored.append((-score, a.record.lineNumber, b.record.lineNumber, i, j))
    return _taken(scored)


def _taken(scored: list[tuple[float, int, int, int, int]]) -> set[tuple[int, int]]:
    taken_old: set[int] = set()
    taken_new: set[int] = set()
    out = set()
    for _, _, _, i, j in sorted(scored):
        if i not in taken_old and j not in taken_new:
            taken_old.add(i)
            taken_new.add(j)
            out.add((i, j))
    return out


@pytest.mark.parametrize("dense", [True, False])
def test_rewording_pairs_are_those_of_scoring_every_pair(dense: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Group by group, with few candidates kept per check (so they run out and are scored again), the
    pairing is exactly the greedy one over every scored pair; a large group (here every group) finds its
    candidates through the index of rarest words instead of scoring every pair."""
    import random

    monkeypatch.setattr(rewording, "_KEPT", 2)
    if not dense:
        monkeypatch.setattr(rewording, "_DENSE_CELLS", 0)
    chance = random.Random(18)
    vocabulary = ["a", "b", "c", "d", "e", "f", "g", "h"]

    def message() -> str:
        return " ".join(chance.choice(vocabulary) for _ in range(chance.randint(0, 7)))

    def checks() -> LoadedCatalog:
        rows = [
            (f"p{chance.randint(0, 2)}.py", chance.choice("fg"), message(), chance.randint(1, 30)) for _ in range(150)
        ]
        return synthetic([(path, function, text) for path, function, text, _ in rows], lines=[n for *_, n in rows])

    for _ in range(4):
        old, new = checks(), checks()
        old_checks = [Check.of(i, line) for i, line in enumerate(old.lines)]
        new_checks = [Check.of(j, line) for j, line in enumerate(new.lines)]
        found = {(a.index, b.index) for a, b in _reworded(old_checks, new_checks)}
        assert found == _greedy(old, new) and len(found) > 60


def test_markdown_titles_two_nights_of_one_branch_by_their_shas() -> None:
    old = synthetic([("p.py", "f", "x must be set")], sha="1" * 40, revision="refs/heads/main")
    new = synthetic([("p.py", "f", "x must be positive")], sha="2" * 40, revision="refs/heads/main")
    assert render_markdown(diff_catalogs(old, new)).splitlines()[0] == (
        "# Error catalog changes: 111111111111 → 222222222222"
    )


def test_numpy_is_imported_only_to_pair_rewordings() -> None:
    """numpy (about 0.1 s to import) is loaded when there are unpaired checks of one file and class on
    both sides, not before: diff, history and nightly runs that reword nothing start without it."""
    code = (
        "import sys\n"
        "from extractor import cli\n"
        "from extractor.publish import nightly, site\n"
        "from extractor.query import diff\n"
        "from extractor.query.history import checks, lineage, revisions, store\n"
        "diff.pair_checks([], [])\n"
        "print('numpy' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert found.stdout.split() == ["False"]


def test_extracted_catalogs_diff_as_the_same_catalogs_read_from_disk(git_repo: GitRepo, tmp_path: Path) -> None:
    """A diff of catalogs this run extracted pairs their lines as data and validates only those it shows:
    it renders the same bytes as the diff of the same catalogs written and read back (validated)."""
    from extractor.catalog.load import load_catalog
    from extractor.pipeline.extract import extract
    from extractor.pipeline.write import write_catalog
    from extractor.query.diff import render_json

    before = "def f(x):\n    if x:\n        raise ValueError(f'the value {x} is too large for this')\n"
    kept = "def g(y):\n    if y:\n        raise ValueError('g needs no y at all here')\n"
    git_repo.commit({"pkg/a.py": before, "pkg/b.py": kept}, tag="v1")
    after = before.replace("too large for this", "far too large for this setting")
    git_repo.commit({"pkg/a.py": after + "\n\ndef h():\n    raise ValueError('new')\n"}, tag="v2")
    options = ExtractOptions(paths=("pkg",), cache=False)
    extracted, read = [], []
    for tag in ("v1", "v2"):
        catalog = extract(repo=str(git_repo.path), revision=tag, options=options)
        extracted.append(LoadedCatalog(catalog, catalog.manifest, catalog.manifest.sha, tag))
        write_catalog(catalog.encoded, catalog.manifest, tmp_path / tag)
        read.append(load_catalog(tmp_path / tag))
    lazy, whole = diff_catalogs(*extracted), diff_catalogs(*read)
    assert {c.kind.value for c in whole.changes} == {"unchanged", "reworded", "added"}
    assert render_json(lazy) == render_json(whole) and render_markdown(lazy) == render_markdown(whole)
    assert extracted[1].lines == read[1].lines and extracted[1].count == read[1].count


def test_diff_output_writes_through_a_symlink_and_never_over_its_input(repo: GitRepo, tmp_path: Path) -> None:
    """`--output` behaves as the shell's `>`: a symlink is written through (the link kept); and a catalog's
    own records.jsonl or manifest.json is refused as the output of a diff that reads it."""
    folder = tmp_path / "cat"
    assert (
        cli("--repo", str(repo.path), "--sha", "v1", "--path", "pkg", "--output", str(tmp_path / "o")).returncode == 0
    )
    next((tmp_path / "o").iterdir()).rename(folder)
    (tmp_path / "real").mkdir()
    (tmp_path / "link.json").symlink_to("real/diff.json")
    assert cli("diff", str(folder), str(folder), "--output", str(tmp_path / "link.json")).returncode == 0
    assert (tmp_path / "link.json").is_symlink() and json.loads((tmp_path / "real" / "diff.json").read_text())
    before = (folder / "records.jsonl").read_bytes()
    for target in (folder / "records.jsonl", folder / "manifest.json"):
        refused = cli("diff", str(folder / "records.jsonl"), str(folder), "--output", str(target))
        assert refused.returncode == 2 and "is a file of the catalog" in refused.stderr
    assert (folder / "records.jsonl").read_bytes() == before


def test_a_template_of_no_words_moves_only_with_its_function(git_repo: GitRepo, tmp_path: Path) -> None:
    """Two bare `raise NotImplementedError` in other files and functions are a removal and an addition, not
    a move (the only thing they share is their class); one whose function moved with it to another file
    moved, and so does a worded one."""
    git_repo.commit(
        {
            "vllm/config/a.py": "def send(x):\n    raise NotImplementedError\n\n\n"
            "def kept(x):\n    raise NotImplementedError\n",
            "vllm/config/b.py": "def check(x):\n    raise ValueError('a check that has words of its own')\n",
        },
        tag="v1",
    )
    git_repo.commit(
        {
            "vllm/config/a.py": None,
            "vllm/config/b.py": None,
            "vllm/config/c.py": "class Op:\n    def forward(self):\n        raise NotImplementedError\n",
            "vllm/config/d.py": "def kept(x):\n    raise NotImplementedError\n\n\ndef other(x):\n"
            "    raise ValueError('a check that has words of its own')\n",
        },
        tag="v2",
    )
    result = cli("diff", "v1", "v2", "--repo", str(git_repo.path), "--exception", "*")
    changes = json.loads(result.stdout)["changes"]
    where = {
        kind: [(c["old"], c["new"]) for c in changes if c["kind"] == kind] for kind in ("moved", "removed", "added")
    }
    moved = sorted((old["filePath"], old["lineNumber"], new["filePath"]) for old, new in where["moved"])
    assert moved == [("vllm/config/a.py", 6, "vllm/config/d.py"), ("vllm/config/b.py", 2, "vllm/config/d.py")]
    assert [(old["filePath"], old["lineNumber"]) for old, _ in where["removed"]] == [("vllm/config/a.py", 2)]
    assert [new["filePath"] for _, new in where["added"]] == ["vllm/config/c.py"]


def test_the_same_words_raised_as_another_class_in_the_same_function_are_modified(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """`raise ValueError("...")` become `raise VLLMValidationError("...")` (vLLM 0.28.0 did so 29 times):
    modified, errorClass among what changed, and its history one lineage, now of the new class."""
    words = "Invalid JSON grammar specification."
    before = f"def check(x):\n    if x:\n        raise ValueError({words!r})\n"
    after = (
        f"class VLLMValidationError(ValueError):\n    pass\n\n\n{before.replace('ValueError(', 'VLLMValidationError(')}"
    )
    git_repo.commit({"vllm/config/a.py": before}, tag="v1")
    git_repo.commit({"vllm/config/a.py": after}, tag="v2")
    repo = ["--repo", str(git_repo.path), "--exception", "*"]
    changes = json.loads(cli("diff", "v1", "v2", *repo).stdout)["changes"]
    assert [(c["kind"], c["fields"], c["new"]["errorClass"]) for c in changes] == [
        ("modified", ["errorClass", "lineNumber", "errorType"], "VLLMValidationError")
    ]
    assert cli("history", "v1..v2", *repo, "--output", str(tmp_path / "h"), "-q").returncode == 0
    (lineage,) = [json.loads(line) for line in (tmp_path / "h" / "history.jsonl").read_text().splitlines()]
    assert lineage["errorClass"] == "VLLMValidationError"
    assert [(e["kind"], e["fields"]) for e in lineage["events"]] == [
        ("introduced", []),
        ("modified", ["errorClass", "errorType"]),  # (a history says where it is now, not that it moved within)
    ]


def test_markdown_shows_a_hostile_revision_label_as_text(git_repo: GitRepo, tmp_path: Path) -> None:
    """A tag is the user's text: the diff's title shows it escaped, never as HTML CommonMark passes through."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("one")\n'}, tag="v6")
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("one")\nraise ValueError("two")\n'})
    git(git_repo.path, "tag", "v7<script>alert(1)</script>")
    result = cli("diff", "v6", "v7<script>alert(1)</script>", "--repo", str(git_repo.path), "--format", "markdown")
    assert result.returncode == 1, result.stderr
    title = result.stdout.splitlines()[0]
    assert "<script>" not in result.stdout and title.startswith("# Error catalog changes: v6 (")
    assert "v7\\<script\\>alert(1)\\</script\\>" in title


def test_marking_a_reworded_message_is_not_quadratic_in_its_repeated_words() -> None:
    """A reworded message of 200 kB of repeated words is marked in well under a second (word by word it took
    a minute): the words both messages begin and end with are kept, the middle, too big to align, is one
    change; a short rewording is still marked word by word."""
    import time

    from extractor.query.diff import _marked
    from extractor.query.similarity import word_runs

    old = "value " * 40_000 + "must be positive " + "and then " * 10_000
    new = "value " * 40_000 + "must be above zero " + "and then " * 10_000
    started = time.process_time()
    left, right = _marked(old, new)
    assert time.process_time() - started < 2.0
    assert "~~positive~~" in left and "**above zero**" in right
    before, after = "a " + "x y " * 20_000, "b " + "y x " * 20_000  # (nothing shared at either end)
    assert word_runs(before, after) == [(False, before.strip(), after.strip())]
    assert word_runs("max_len is smaller than max_num_seqs", "max_len is below max_num_seqs") == [
        (True, "max_len is", "max_len is"),
        (False, "smaller than", "below"),
        (True, "max_num_seqs", "max_num_seqs"),
    ]
