"""Explain: a record found by id, slug, a unique prefix of either, or text; related errors cut cleanly."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GitRepo, cli

LONG = "The value given for the speculative decoding method is not one that this build knows about; "
SOURCE = f'''\
def check(self, value):
    if value:
        raise ValueError(f"{LONG}got {{self.method_name_given_by_the_user}} instead.")
    if self.other:
        raise ValueError("Speculative decoding needs a draft model or a method that brings its own.")
    raise ValueError("Speculative decoding cannot run with pipeline parallelism yet.")
'''


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> str:
    repo = GitRepo(tmp_path_factory.mktemp("explain") / "repo")
    repo.commit({"vllm/config/spec.py": SOURCE}, tag="v1")
    out = tmp_path_factory.mktemp("out")
    assert cli("--repo", str(repo.path), "--sha", "v1", "--output", str(out)).returncode == 0
    (directory,) = out.iterdir()
    return str(directory)


def explain(catalog: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("explain", "--catalog", catalog, *args)


def records(catalog: str) -> dict[int, dict[str, str]]:
    with open(f"{catalog}/records.jsonl") as lines:
        return {r["lineNumber"]: r for r in (json.loads(line)["record"] for line in lines)}


def test_a_unique_prefix_of_an_id_or_a_slug_is_enough(catalog: str) -> None:
    by_line = records(catalog)
    whole = explain(catalog, by_line[5]["id"])
    assert whole.returncode == 0 and "vllm/config/spec.py:5" in whole.stdout
    assert explain(catalog, by_line[5]["id"][:6]).stdout == whole.stdout
    assert explain(catalog, "speculative-decoding-needs").stdout == whole.stdout


def test_an_ambiguous_prefix_lists_what_it_could_mean(catalog: str) -> None:
    result = explain(catalog, "speculative-decoding")
    assert result.returncode == 2
    assert result.stderr.startswith("extractor: error: 'speculative-decoding' is the start of 2 records' ids or slugs")
    shown = result.stderr.split("(", 1)[1].split(")", 1)[0].split(", ")
    assert len(shown) == 2 and all(slug.startswith("speculative-decoding") for slug in shown)  # as typed: slugs


def test_the_same_catalog_named_twice_is_explained_as_one(catalog: str, tmp_path: Path) -> None:
    """A folder and its own records.jsonl, the folder spelled another way, or a copy: one catalog (match
    keeps one of them), explained as when named once; it raised "max() arg is an empty sequence"."""
    import shutil

    once = explain(catalog, "speculative-decoding-needs")
    copy = shutil.copytree(catalog, tmp_path / "copy")
    for other in (f"{catalog}/records.jsonl", f"{catalog}/.", str(copy)):
        twice = cli("explain", "--catalog", catalog, "--catalog", other, "speculative-decoding-needs")
        assert (twice.returncode, twice.stdout, twice.stderr) == (0, once.stdout, ""), other


def test_a_doctored_catalogs_text_stays_text_in_markdown(catalog: str, tmp_path: Path) -> None:
    """A condition's test, a field's flags, reason and doc, read from a catalog edited by hand (or another
    tool's), cannot end their code span or table cell, nor bring HTML or a link into the page."""
    import hashlib

    hostile = "x`\n\n[link](javascript:alert(1)) <img src=x onerror=alert(2)> | cell"
    lines = [json.loads(line) for line in Path(catalog, "records.jsonl").read_text().splitlines()]
    doctored = next(line for line in lines if line["record"]["lineNumber"] == 3)
    doctored["extraction"]["conditions"][0]["test"] = hostile
    doctored["extraction"]["fields"] = [
        {"expression": "self.a", "class": "C", "field": "a", "resolved": True, "flags": [hostile], "doc": hostile},
        {"expression": "self.b", "resolved": False, "reason": hostile},
    ]
    folder = tmp_path / "doctored"
    folder.mkdir()
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    (folder / "records.jsonl").write_bytes(data)
    manifest = json.loads(Path(catalog, "manifest.json").read_text())
    manifest["recordsSha256"] = hashlib.sha256(data).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))
    page = explain(str(folder), doctored["record"]["id"], "--format", "markdown")
    assert page.returncode == 0, page.stderr
    outside = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", page.stdout)  # the page, its code spans left out
    assert not re.search(r"(?<!\\)<img|(?<!\\)\]\(javascript:", outside), outside  # (escaped, shown as typed)
    (row,) = [line for line in page.stdout.splitlines() if line.startswith("| `C.a` |")]
    assert row.count(" | ") == 4  # five cells, the hostile text's pipes escaped, on one line
    thrown = next(line for line in page.stdout.splitlines() if line.startswith("Thrown at"))
    assert thrown.endswith(f"raised when ``{hostile.replace(chr(10), ' ')}``.")  # (a sentence: its pipe as typed)


def test_markdown_shows_code_as_written_in_a_sentence_and_in_a_docstrings_spans(catalog: str) -> None:
    """A condition's `int | float` in the page's sentence, and a docstring's own code span (`dict[str, int]`,
    `a < b`) in its table cell, are shown as written: a backslash inside code is shown, never read as an
    escape; only the pipe a table reads is escaped in a cell."""
    from extractor.model.records import CatalogLine
    from extractor.query.explain import _prose, condition_in_words
    from extractor.util.markdown import inline_code

    assert inline_code("isinstance(x, int | float)") == "`isinstance(x, int | float)`"
    assert _prose("Maps `dict[str, int]` or `a < b | c` to [x] <b>") == (
        "Maps `dict[str, int]` or `a < b \\| c` to \\[x\\] \\<b\\>"
    )
    data = json.loads(Path(catalog, "records.jsonl").read_text().splitlines()[0])
    data["extraction"]["conditions"] = [{"kind": "if", "test": "isinstance(x, int | float)", "line": 1}]
    line = CatalogLine.model_validate(data)
    assert condition_in_words(line, code=inline_code) == "raised when `isinstance(x, int | float)`"


def test_markdown_related_errors_are_never_cut_inside_a_placeholder(catalog: str) -> None:
    by_line = records(catalog)
    markdown = explain(catalog, by_line[5]["id"], "--format", "markdown").stdout
    related = [line for line in markdown.split("## Related errors\n\n")[1].splitlines() if ".py:3]" in line]
    # The 100th character falls inside `{self.method_name_given_by_the_user}`: the cut comes before it.
    assert len(LONG + "got ") < 100 < len(LONG + "got {self.method_name_given_by_the_user}")
    assert related[0] == f"- [vllm/config/spec.py:3]({by_line[3]['githubUrl']}) {LONG}got ..."


def test_a_catalog_this_run_extracted_is_searched_as_data_with_the_same_answers(tmp_path: Path) -> None:
    """explain looks a record up in an extraction's lines as data and validates only what it shows: the
    answers are those of the validated lines, by id, slug, prefix, rendered text, and for no match."""
    from extractor.catalog.load import LoadedCatalog
    from extractor.pipeline.extract import ExtractOptions, extract
    from extractor.query.explain import find, find_in

    repo = GitRepo(tmp_path / "repo")
    repo.commit({"vllm/config/spec.py": SOURCE}, tag="v1")
    catalog = extract(repo=str(repo.path), revision="v1", options=ExtractOptions(cache=False))
    loaded = LoadedCatalog(catalog, catalog.manifest, catalog.manifest.sha, "v1")
    lines = catalog.lines
    queries = [
        lines[0].record.id,
        lines[1].record.slug,
        lines[2].record.id[:6],
        f"ValueError: {LONG}got eagle7 instead.",
        "nothing like any message here",
    ]
    for query in queries:
        assert find_in(loaded, query) == find(lines, query), query
    assert find_in(loaded, queries[3]) is not None and find_in(loaded, queries[-1]) is None


def test_a_template_is_reworded_only_into_one_that_reads_like_it() -> None:
    """Between two releases, a check gone from a function that raises another, unrelated message of its
    class there is gone, not reworded (as diff and a history say)."""
    from extractor.query.explain import _fate
    from extractor.query.match.pattern import MatchTemplate, RaisePlace

    def template(message: str, release: str) -> MatchTemplate:
        site = RaisePlace((release,), "vllm/config/a.py", 3, message[:8], "slug", "", "Config.check")
        return MatchTemplate("ValueError", message, message, (), None, [site], [release])

    old = template("Speculative decoding with the inkling method needs a draft model.", "1.0")
    reworded = template("Speculative decoding with the inkling method needs a draft model first.", "1.1")
    unrelated = template("max_num_seqs must be positive.", "1.1")
    assert _fate(old, "1.0", "1.1", [old, reworded]) == "reworded"
    assert _fate(old, "1.0", "1.1", [old, unrelated]) == "gone"


def test_words_of_a_message_find_its_record_as_list_grep_would(catalog: str) -> None:
    """Words of the message in order, not as it is written (`list --grep` finds them): the record that holds
    them all; words several records hold are an error that lists them."""
    by_line = records(catalog)
    found = explain(catalog, "decoding pipeline parallelism")
    assert found.returncode == 0, found.stderr
    assert found.stdout == explain(catalog, by_line[6]["slug"]).stdout  # (the page of the record at line 6)
    several = explain(catalog, "decoding needs OR cannot")
    assert several.returncode == 1 and "no record matches" in several.stderr
    shared = explain(catalog, "speculative decoding")
    assert shared.returncode == 2 and "records' messages hold the words of 'speculative decoding'" in shared.stderr


def test_a_misspelled_slug_is_answered_with_the_slug_meant(catalog: str) -> None:
    slug = records(catalog)[5]["slug"]
    typo = slug.replace("needs", "neds")
    result = explain(catalog, typo)
    assert result.returncode == 1
    assert result.stderr == f"extractor: no record matches {typo!r}; did you mean {slug}?\n"
